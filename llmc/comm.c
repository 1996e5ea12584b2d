#include "comm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "utils.h"

// The single-process communicator: the sum over one rank is the rank's own value, its part of
// every buffer is the whole buffer. The MPI implementation (llmc/comm_mpi.c) replaces comm_init
// when the build has MPI.
static void single_allreduce_f64(Comm *c, double *buf, int n) { (void)c; (void)buf; (void)n; }
static void single_barrier(Comm *c) { (void)c; }
static void single_broadcast(Comm *c, void *buf, size_t n) { (void)c; (void)buf; (void)n; }
static void single_allreduce_f32(Comm *c, float *buf, size_t n) { (void)c; (void)buf; (void)n; }
static void single_buffer_collective(Comm *c, float *buf, const size_t *counts) { (void)c; (void)buf; (void)counts; }
static void single_allgather_u16(Comm *c, uint16_t *buf, const size_t *counts) { (void)c; (void)buf; (void)counts; }
static void single_finalize(Comm *c) { (void)c; }

void comm_init_single(Comm *c) {
    memset(c, 0, sizeof(*c));
    c->name = "single";
    c->size = 1;
    c->allreduce_sum_f64 = single_allreduce_f64;
    c->barrier = single_barrier;
    c->broadcast_bytes = single_broadcast;
    c->allreduce_sum_f32 = single_allreduce_f32;
    c->reduce_scatter_sum_f32 = single_buffer_collective;
    c->allgather_f32 = single_buffer_collective;
    c->allgather_u16 = single_allgather_u16;
    c->finalize = single_finalize;
}

void comm_equal_split(size_t n, int world, size_t *counts) {
    for (int q = 0; q < world; q++) counts[q] = n * (size_t)(q + 1) / (size_t)world - n * (size_t)q / (size_t)world;
}

void comm_allreduce_sum_f64_fn(double *buf, int n, void *ctx) {
    Comm *c = (Comm *)ctx;
    c->allreduce_sum_f64(c, buf, n);
}

double comm_timeout_from_env(void) {
    const char *s = getenv("LLMC_COMM_TIMEOUT");
    if (!s || !*s) return COMM_DEFAULT_TIMEOUT_S;
    char *end;
    errno = 0;
    double t = strtod(s, &end);
    if (errno || *end || !(t > 0) || t > 1e7) die("LLMC_COMM_TIMEOUT='%s': must be a number of seconds in (0, 1e7]", s);
    return t;
}

#ifndef LLMC_HAVE_MPI
void comm_init(Comm *c, int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    comm_init_single(c);
}
#endif
