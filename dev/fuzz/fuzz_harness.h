// Shared by the libFuzzer targets of the file parsers and the flag parser (dev/fuzz/fuzz_*.c,
// mk/fuzz.mk). The parsers report bad input the project's way, die() or usage_error(), which
// exit the process; a fuzz target must instead return and take the next input. So the targets
// are linked with -Wl,--wrap=exit: inside FUZZ_RUN, exit() jumps back to the target (an orderly
// rejection), and everywhere else (libFuzzer's own exit) it is the real exit. A crash, a
// sanitizer report or a hang is then a real defect of the parser.
//
// A rejected input leaves what the parser had open. The targets are also linked with
// -Wl,--wrap=fopen,--wrap=fclose: streams opened inside FUZZ_RUN are recorded (fclose forgets
// them), and those still open when the next FUZZ_RUN starts, after the target's own clean-up
// (which may close a stream the parser kept, as dataloader_free does), are closed: leaked, they
// exhausted descriptors and grew memory by megabytes a second until libFuzzer's RSS limit
// stopped a long `make fuzz`. (The parsers open files only as streams.) Other allocations of a
// rejected parse still leak: run with -detect_leaks=0.
#ifndef FUZZ_HARNESS_H
#define FUZZ_HARNESS_H

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

enum { FUZZ_MAX_STREAMS = 64 };
static FILE *fuzz_streams[FUZZ_MAX_STREAMS];

FILE *__real_fopen(const char *path, const char *mode);
int __real_fclose(FILE *f);
FILE *__wrap_fopen(const char *path, const char *mode);
int __wrap_fclose(FILE *f);
FILE *__wrap_fopen(const char *path, const char *mode) {
    FILE *f = __real_fopen(path, mode);
    for (int i = 0; f && fuzz_inside_run && i < FUZZ_MAX_STREAMS; i++)
        if (!fuzz_streams[i]) {
            fuzz_streams[i] = f;
            break;
        }
    return f;
}
int __wrap_fclose(FILE *f) {
    for (int i = 0; i < FUZZ_MAX_STREAMS; i++)
        if (fuzz_streams[i] == f) fuzz_streams[i] = NULL;
    return __real_fclose(f);
}

static void fuzz_close_leaked_streams(void) {
    for (int i = 0; i < FUZZ_MAX_STREAMS; i++)
        if (fuzz_streams[i]) {
            __real_fclose(fuzz_streams[i]);
            fuzz_streams[i] = NULL;
        }
}

// Runs the statement (a braced block); returns normally whether it completes or the code under test calls exit().
// Expands to a statement; what it sets for later use must be static (longjmp may lose locals).
#define FUZZ_RUN(...)                                \
    do {                                             \
        fuzz_close_leaked_streams();                 \
        if (setjmp(fuzz_rejected) == 0) {            \
            fuzz_inside_run = 1;                     \
            __VA_ARGS__;                             \
        }                                            \
        fuzz_inside_run = 0;                         \
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
