// Shared by the libFuzzer targets of the file parsers and the flag parser (dev/fuzz/fuzz_*.c,
// mk/fuzz.mk). The parsers report bad input the project's way, die() or usage_error(), which
// exit the process; a fuzz target must instead return and take the next input. So the targets
// are linked with -Wl,--wrap=exit: inside FUZZ_RUN, exit() jumps back to the target (an orderly
// rejection), and everywhere else (libFuzzer's own exit) it is the real exit. A crash, a
// sanitizer report or a hang is then a real defect of the parser.
//
// A rejected input leaves what the parser had open: fuzz_close_leaked_fds() closes descriptors
// opened during the run, so that thousands of rejections cannot exhaust them (the FILE structs
// themselves leak a few hundred bytes each; run with -detect_leaks=0).
#ifndef FUZZ_HARNESS_H
#define FUZZ_HARNESS_H

#include <fcntl.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static jmp_buf fuzz_rejected;
static int fuzz_inside_run = 0;
static int fuzz_exit_status = 0;

void __real_exit(int status) __attribute__((noreturn));
void __wrap_exit(int status) __attribute__((noreturn));
void __wrap_exit(int status) {
    if (!fuzz_inside_run) __real_exit(status);
    fuzz_exit_status = status;
    longjmp(fuzz_rejected, 1);
}

// Every descriptor above those open before the first run, once it is over.
static int fuzz_first_free_fd = -1;
static void fuzz_close_leaked_fds(void) {
    if (fuzz_first_free_fd < 0) {
        fuzz_first_free_fd = dup(0);  // the lowest free descriptor before any run
        close(fuzz_first_free_fd);
        return;
    }
    for (int fd = fuzz_first_free_fd; fd < fuzz_first_free_fd + 64; fd++) close(fd);
}

// Runs the statement (a braced block); returns normally whether it completes or the code under test calls exit().
// Expands to a statement; what it sets for later use must be static (longjmp may lose locals).
#define FUZZ_RUN(...)                                \
    do {                                             \
        if (fuzz_first_free_fd < 0) fuzz_close_leaked_fds(); \
        if (setjmp(fuzz_rejected) == 0) {            \
            fuzz_inside_run = 1;                     \
            __VA_ARGS__;                             \
        }                                            \
        fuzz_inside_run = 0;                         \
        fuzz_close_leaked_fds();                     \
    } while (0)

// Writes data to a file of this process's own (under $TMPDIR or /tmp) and returns its path.
__attribute__((unused)) static const char *fuzz_write_temp_file(const char *tag, const uint8_t *data, size_t size) {
    static char path[512];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof(path), "%s/llmc_fuzz_%s_%d.bin", tmp && tmp[0] ? tmp : "/tmp", tag, (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror(path);
        abort();  // the harness itself failed: stop rather than fuzz nothing
    }
    return path;
}

#endif
