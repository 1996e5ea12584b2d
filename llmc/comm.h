// Collective communication between the ranks of a data-parallel run. One small interface with
// two implementations: MPI (the CPU trainer) and NCCL (the GPU trainer, device buffers), and a
// single-process one where every collective is the identity. The training loop uses only the
// host-side scalar collectives below; ZeRO uses the buffer collectives of its implementation.
#ifndef LLMC_COMM_H
#define LLMC_COMM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct Comm Comm;
struct Comm {
    int rank, size;
    int local_rank;  // rank among the processes on this node (picks the GPU)
    void *impl;
    // Host collectives (double precision sums; every rank gets the result).
    void (*allreduce_sum_f64)(Comm *c, double *buf, int n);
    void (*barrier)(Comm *c);
    // Rank 0's value of buf (n bytes) on every rank.
    void (*broadcast_bytes)(Comm *c, void *buf, size_t n);
    void (*finalize)(Comm *c);
};

// MPI when the program was built with it and launched under mpirun; otherwise one process.
void comm_init(Comm *c, int *argc, char ***argv);
// A single-process communicator.
void comm_init_single(Comm *c);

#ifdef __cplusplus
}
#endif
#endif
