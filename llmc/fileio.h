// Crash-safe file writing and payload checksums.
// A file is written to "<path>.tmp.<pid>", flushed, fsync'ed, renamed over <path>, and the
// directory is fsync'ed, so a reader sees either the previous complete file or the new complete
// file, never a torn one. Errors (a full disk, an unwritable directory) are returned, not fatal:
// the trainer decides whether to go on; the temporary file is removed on failure.
//
// Test hooks (environment variables, read once; unset in normal runs), so that the tests can
// reproduce a full disk and kill a process in the middle of a checkpoint:
//   LLMC_TEST_FAIL_WRITE_AFTER_BYTES=N  atomic writes of this process fail with ENOSPC once N
//                                       bytes in all have been written (the disk stays "full")
//   LLMC_TEST_WRITE_DELAY_MS=D          sleep D ms in every atomic_write and before each rename,
//                                       which stretches checkpoint writing for the kill -9 test
#ifndef LLMC_FILEIO_H
#define LLMC_FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

// FNV-1a over the bytes, 64-bit (Fowler, Noll, Vo): fast and enough to detect corruption.
// Chainable: pass the previous result as `hash`, start from FNV1A64_INIT.
#define FNV1A64_INIT 0xcbf29ce484222325ULL
uint64_t fnv1a64(uint64_t hash, const void *data, size_t n);

typedef struct {
    FILE *f;
    char *path;      // final name
    char *tmp_path;  // name while being written
    int failed;      // sticky: set by the first failing write
    char error[256]; // why it failed
} AtomicFile;

// Opens the temporary file. Returns 0, or -1 with af->error set.
int atomic_open(AtomicFile *af, const char *path);
// Appends bytes; a failure is remembered and reported by atomic_commit.
void atomic_write(AtomicFile *af, const void *data, size_t n);
// Overwrites bytes at an absolute offset (used to patch a header with the payload checksum).
void atomic_pwrite(AtomicFile *af, const void *data, size_t n, long offset);
// Flushes, fsyncs, renames, fsyncs the directory. Returns 0, or -1 with af->error set and the
// file removed (under either name: a failed directory fsync removes the renamed file). Frees
// af's resources either way.
int atomic_commit(AtomicFile *af);

// fsyncs a directory, making the creation, rename or removal of its entries durable. Returns 0
// (also where the filesystem does not fsync directories: EINVAL, ENOTSUP), or -1 with errno set.
int sync_directory(const char *dir);
// 1 when name is a temporary left by atomic_open ("<name>.tmp.<pid>"), say by a killed writer.
int is_atomic_temporary(const char *name);

// Reads a whole file into a malloc'ed buffer; dies with a clear message on failure.
void *read_file_or_die(const char *path, size_t *size);
int file_exists(const char *path);

#ifdef __cplusplus
}
#endif
#endif
