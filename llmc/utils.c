#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *g_program_name = "llmc";

void set_program_name(const char *argv0) {
    const char *slash = strrchr(argv0, '/');
    g_program_name = slash ? slash + 1 : argv0;
}

const char *program_name(void) { return g_program_name; }

// prefix, the formatted message and suffix as one write: under mpirun several ranks may report
// at once, and lines written in pieces interleave.
static void write_error_line(const char *prefix, const char *suffix, const char *fmt, va_list ap) {
    char line[8192];
    int n = snprintf(line, sizeof(line), "%s: %s", g_program_name, prefix);
    if (n >= 0 && n < (int)sizeof(line)) n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    if (n >= 0 && n < (int)sizeof(line)) snprintf(line + n, sizeof(line) - (size_t)n, "%s\n", suffix);
    if (n >= (int)sizeof(line) - 1) line[sizeof(line) - 2] = '\n';  // cut, but still one line
    fflush(stdout);
    fputs(line, stderr);
}

void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    write_error_line("error: ", "", fmt, ap);
    va_end(ap);
    exit(1);
}

// Under mpirun every rank parses the same flags and finds the same error: rank 0 reports it, and
// the launcher ends the others when it exits. A secondary rank says its error only after a
// pause, in case rank 0 did not find it (a file missing on one node): had it exited at once, the
// launcher could have killed rank 0 before it printed.
int is_secondary_rank(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        if (v) return atoi(v) > 0;
    }
    return 0;
}

void usage_error(const char *fmt, ...) {
    if (is_secondary_rank()) {
        signal(SIGTERM, SIG_DFL);  // the launcher's SIGTERM ends the pause, and us, quietly
        signal(SIGINT, SIG_DFL);
        sleep(10);
    }
    va_list ap;
    va_start(ap, fmt);
    write_error_line("", " (run with -h for help)", fmt, ap);
    va_end(ap);
    exit(2);
}

void *malloc_check_at(size_t size, const char *file, int line) {
    void *p = malloc(size ? size : 1);
    if (!p) die("out of memory allocating %zu bytes at %s:%d", size, file, line);
    return p;
}

void *calloc_check_at(size_t n, size_t size, const char *file, int line) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) die("out of memory allocating %zu x %zu bytes at %s:%d", n, size, file, line);
    return p;
}

void *realloc_check_at(void *p, size_t size, const char *file, int line) {
    void *q = realloc(p, size ? size : 1);
    if (!q) die("out of memory growing a buffer to %zu bytes at %s:%d", size, file, line);
    return q;
}

FILE *fopen_regular(const char *path, const char **why) {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        *why = strerror(errno);
        return NULL;
    }
    struct stat st;
    const int stat_failed = fstat(fd, &st) != 0;
    if (stat_failed || !S_ISREG(st.st_mode)) {
        *why = stat_failed ? strerror(errno) : S_ISDIR(st.st_mode) ? "it is a directory" : "it is not a regular file";
        close(fd);
        return NULL;
    }
    FILE *f = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        *why = strerror(errno);
        close(fd);
    }
    return f;
}

FILE *fopen_check(const char *path, const char *mode) {
    const char *why = NULL;
    FILE *f = mode[0] == 'r' ? fopen_regular(path, &why) : fopen(path, mode);
    if (!f) die("cannot open '%s' for %s: %s", path, mode[0] == 'r' ? "reading" : "writing", why ? why : strerror(errno));
    return f;
}

void fread_check(void *dst, size_t size, size_t count, FILE *f, const char *path) {
    size_t got = fread(dst, size, count, f);
    if (got != count) {
        if (feof(f)) die("'%s' is truncated: wanted %zu items of %zu bytes, got %zu", path, count, size, got);
        die("reading '%s' failed: %s", path, strerror(errno));
    }
}

void fwrite_check(const void *src, size_t size, size_t count, FILE *f, const char *path) {
    if (fwrite(src, size, count, f) != count) die("writing '%s' failed: %s", path, strerror(errno));
}

void fseek_check(FILE *f, long offset, int whence, const char *path) {
    if (fseek(f, offset, whence) != 0) die("seeking in '%s' failed: %s", path, strerror(errno));
}

void fclose_check(FILE *f, const char *path) {
    if (fclose(f) != 0) die("closing '%s' failed: %s", path, strerror(errno));
}

long file_size_check(FILE *f, const char *path) {
    long here = ftell(f);
    fseek_check(f, 0, SEEK_END, path);
    long size = ftell(f);
    if (size < 0) die("cannot get the size of '%s': %s", path, strerror(errno));
    fseek_check(f, here, SEEK_SET, path);
    return size;
}

double wall_time(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

long long env_nonnegative(const char *name, long long if_unset) {
    const char *v = getenv(name);
    if (!v) return if_unset;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end != '\0' || errno || x < 0) die("%s: '%s' is not a non-negative integer", name, v);
    return x;
}
