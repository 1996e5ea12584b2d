#include "comm.h"

#include <string.h>

// The single-process communicator; the MPI implementation (llmc/comm_mpi.c) replaces comm_init
// when the build has MPI.
static void single_allreduce(Comm *c, double *buf, int n) { (void)c; (void)buf; (void)n; }
static void single_barrier(Comm *c) { (void)c; }
static void single_broadcast(Comm *c, void *buf, size_t n) { (void)c; (void)buf; (void)n; }
static void single_finalize(Comm *c) { (void)c; }

void comm_init_single(Comm *c) {
    memset(c, 0, sizeof(*c));
    c->size = 1;
    c->allreduce_sum_f64 = single_allreduce;
    c->barrier = single_barrier;
    c->broadcast_bytes = single_broadcast;
    c->finalize = single_finalize;
}

#ifndef LLMC_HAVE_MPI
void comm_init(Comm *c, int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    comm_init_single(c);
}
#endif
