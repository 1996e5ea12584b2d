// Error handling and checked system calls shared by every program in the project.
// Conventions: a usage error (bad flag or value) exits with status 2 through usage_error() (under
// mpirun rank 0 alone reports it); any other failure (missing file, corrupt data, out of memory)
// exits with status 1 through die().
// Every message is one line, starts with the program's name, and says what to fix.
#ifndef LLMC_UTILS_H
#define LLMC_UTILS_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Name printed before every error message; set once from argv[0] by main().
void set_program_name(const char *argv0);
const char *program_name(void);

// Print "<program>: error: <message>" and exit(1).
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
// Print "<program>: <message>" plus a hint to run -h, and exit(2).
void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
// Under mpirun, whether this process is a rank other than 0 (from the launcher's environment, so
// that it can be asked before the communicator exists).
int is_secondary_rank(void);

// Checked allocation: never returns NULL (dies naming the caller's file:line and the size).
#define malloc_check(size) malloc_check_at((size), __FILE__, __LINE__)
#define calloc_check(n, size) calloc_check_at((n), (size), __FILE__, __LINE__)
#define realloc_check(p, size) realloc_check_at((p), (size), __FILE__, __LINE__)
void *malloc_check_at(size_t size, const char *file, int line);
void *calloc_check_at(size_t n, size_t size, const char *file, int line);
void *realloc_check_at(void *p, size_t size, const char *file, int line);

// A regular file opened for reading ("rb"), or NULL with *why set: a directory, FIFO or device is
// refused (a FIFO would block the open, a device might never end).
FILE *fopen_regular(const char *path, const char **why);
// Checked stdio: die with the path and the reason (strerror) on failure or short read/write.
// Reading ("r..." modes) opens regular files only (fopen_regular).
FILE *fopen_check(const char *path, const char *mode);
void fread_check(void *dst, size_t size, size_t count, FILE *f, const char *path);
void fwrite_check(const void *src, size_t size, size_t count, FILE *f, const char *path);
void fseek_check(FILE *f, long offset, int whence, const char *path);
void fclose_check(FILE *f, const char *path);
// Size in bytes of an open file (dies on error).
long file_size_check(FILE *f, const char *path);

// Wall-clock seconds from a monotonic clock.
double wall_time(void);

// The environment variable `name` as a non-negative integer, if_unset when it is not set; any
// other value is a clear error.
long long env_nonnegative(const char *name, long long if_unset);

#ifdef __cplusplus
}
#endif
#endif
