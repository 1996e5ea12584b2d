#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "utils.h"

uint64_t fnv1a64(uint64_t hash, const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    for (size_t i = 0; i < n; i++) {
        hash ^= p[i];
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

static char *dup_string(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = (char *)malloc_check(n);
    memcpy(d, s, n);
    return d;
}

// The test hooks of fileio.h, read on first use.
typedef struct {
    int loaded;
    long long fail_after_bytes;  // -1: off
    long long bytes_written;
    unsigned delay_us;
} WriteHooks;
static WriteHooks g_hooks;

static WriteHooks *hooks(void) {
    if (!g_hooks.loaded) {
        g_hooks.fail_after_bytes = env_nonnegative("LLMC_TEST_FAIL_WRITE_AFTER_BYTES", -1);
        g_hooks.delay_us = (unsigned)env_nonnegative("LLMC_TEST_WRITE_DELAY_MS", 0) * 1000u;
        g_hooks.loaded = 1;
    }
    return &g_hooks;
}

static void test_delay(void) {
    if (hooks()->delay_us) usleep(hooks()->delay_us);
}

// 1 when the injected full disk refuses n more bytes (errno is then ENOSPC, as a real one sets).
static int injected_disk_full(size_t n) {
    WriteHooks *h = hooks();
    if (h->fail_after_bytes < 0) return 0;
    if (h->bytes_written + (long long)n > h->fail_after_bytes) {
        errno = ENOSPC;
        return 1;
    }
    h->bytes_written += (long long)n;
    return 0;
}

static void set_error(AtomicFile *af, const char *what) {
    if (af->failed) return;
    af->failed = 1;
    // The reason before the path: a long path is what a short buffer cuts.
    snprintf(af->error, sizeof(af->error), "%s (%s) '%s'", what, strerror(errno), af->tmp_path);
}

// Frees af's names; the file is closed or was never opened.
static void release(AtomicFile *af) {
    free(af->path);
    free(af->tmp_path);
    af->path = af->tmp_path = NULL;
    af->f = NULL;
}

int atomic_open(AtomicFile *af, const char *path) {
    memset(af, 0, sizeof(*af));
    af->path = dup_string(path);
    size_t n = strlen(path) + 32;
    af->tmp_path = (char *)malloc_check(n);
    snprintf(af->tmp_path, n, "%s.tmp.%d", path, (int)getpid());
    af->f = fopen(af->tmp_path, "wb");
    if (!af->f) {
        set_error(af, "cannot create");
        release(af);
        return -1;
    }
    return 0;
}

void atomic_write(AtomicFile *af, const void *data, size_t n) {
    if (af->failed || n == 0) return;
    test_delay();
    if (injected_disk_full(n) || fwrite(data, 1, n, af->f) != n) set_error(af, "cannot write");
}

void atomic_pwrite(AtomicFile *af, const void *data, size_t n, long offset) {
    if (af->failed) return;
    long here = ftell(af->f);
    if (here < 0 || fseek(af->f, offset, SEEK_SET) != 0) { set_error(af, "cannot seek in"); return; }
    atomic_write(af, data, n);
    if (!af->failed && fseek(af->f, here, SEEK_SET) != 0) set_error(af, "cannot seek in");
}

int atomic_commit(AtomicFile *af) {
    if (!af->failed && fflush(af->f) != 0) set_error(af, "cannot flush");
    if (!af->failed && fsync(fileno(af->f)) != 0) set_error(af, "cannot fsync");
    if (fclose(af->f) != 0) set_error(af, "cannot close");
    af->f = NULL;
    test_delay();
    if (!af->failed && rename(af->tmp_path, af->path) != 0) set_error(af, "cannot rename");
    if (!af->failed) {
        // Make the rename itself durable: fsync the directory that holds the entry. If that
        // fails the file may not survive a crash: it goes, as any file whose commit failed.
        char *dir_copy = dup_string(af->path);
        const char *dir = dirname(dir_copy);
        if (sync_directory(dir) != 0) {
            af->failed = 1;
            snprintf(af->error, sizeof(af->error), "cannot fsync (%s) the directory '%s'", strerror(errno), dir);
            unlink(af->path);
        }
        free(dir_copy);
    }
    if (af->failed) unlink(af->tmp_path);
    release(af);
    return af->failed ? -1 : 0;
}

int sync_directory(const char *dir) {
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd < 0) return -1;
    int rc = fsync(dfd);
    // A filesystem that cannot fsync a directory (some FUSE and network ones) makes its entries
    // durable its own way: only a real failure counts.
    if (rc != 0 && (errno == EINVAL || errno == ENOTSUP)) rc = 0;
    int saved = errno;
    close(dfd);
    errno = saved;
    return rc;
}

int is_atomic_temporary(const char *name) {
    const char *tag = strstr(name, ".tmp.");
    if (!tag || tag == name) return 0;
    const char *pid = tag + strlen(".tmp.");
    if (!*pid) return 0;
    for (; *pid; pid++)
        if (*pid < '0' || *pid > '9') return 0;
    return 1;
}

void *read_file_or_die(const char *path, size_t *size) {
    FILE *f = fopen_check(path, "rb");
    long n = file_size_check(f, path);
    void *buf = malloc_check((size_t)n);
    fread_check(buf, 1, (size_t)n, f, path);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}
