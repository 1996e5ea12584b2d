// Collective communication between the ranks of a data-parallel run. One small interface with
// four implementations: MPI (llmc/comm_mpi.c, the CPU trainer, host buffers), NCCL and MPI
// staged through host memory (llmc/comm_nccl.h, the GPU trainer, device buffers), and a single
// process, where every collective is the identity.
//
// Buffer collectives work in place on a buffer that is the concatenation of the ranks' parts in
// rank order: counts[q] elements for rank q (the same counts array on every rank). ZeRO passes
// the parts of a segment or of the whole flat buffer (llmc/zero.h's zero_split).
//
// Determinism (MPI): element i of rank q's part is summed in the fixed order
//     ((x_q + x_{q-1}) + x_{q-2}) + ... + x_{q+1}      (rank indices mod W)
// which depends only on the rank that owns the element: never on how a buffer is split into
// calls, on message sizes or on timing. So a gradient reduced segment by segment (ZeRO 2, 3)
// is bit-identical to one reduced in one call (ZeRO 1) or all-reduced (ZeRO 0), and runs
// repeat bit for bit. The host sums of doubles add the ranks' values in rank order 0..W-1.
//
// Failure handling (MPI): every collective waits with a deadline of LLMC_COMM_TIMEOUT seconds
// (default COMM_DEFAULT_TIMEOUT_S): a rank that died or hangs makes the others stop with a
// one-line error naming the collective and exit non-zero, never a silent hang.
#ifndef LLMC_COMM_H
#define LLMC_COMM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define COMM_DEFAULT_TIMEOUT_S 600.0

typedef struct Comm Comm;
struct Comm {
    const char *name;  // "single", "mpi", "nccl" or "mpi-staged"
    int rank, size;
    int local_rank;  // rank among the processes on this node (picks the GPU)
    void *impl;
    // Host collectives (double precision sums; every rank gets the same result).
    void (*allreduce_sum_f64)(Comm *c, double *buf, int n);
    void (*barrier)(Comm *c);
    // Rank 0's value of buf (n bytes) on every rank.
    void (*broadcast_bytes)(Comm *c, void *buf, size_t n);
    // Float buffers (host memory for MPI, device memory for NCCL).
    // Every rank gets the sum over ranks of buf[0..n); the owner of element i (for the summation
    // order) is the rank whose part of an equal split of n into W parts holds i.
    void (*allreduce_sum_f32)(Comm *c, float *buf, size_t n);
    // On return this rank's part of buf holds the sum over ranks of that part; the other parts
    // are left unspecified.
    void (*reduce_scatter_sum_f32)(Comm *c, float *buf, const size_t *counts);
    // On entry this rank's part of buf holds its data; on return every part holds its rank's.
    void (*allgather_f32)(Comm *c, float *buf, const size_t *counts);
    // The same for 16-bit elements (bf16 weights: ZeRO gathers them as they are, half the bytes
    // of fp32, and a copy is exact whatever the element's meaning).
    void (*allgather_u16)(Comm *c, uint16_t *buf, const size_t *counts);
    void (*finalize)(Comm *c);
};

// MPI when the program was built with it (LLMC_HAVE_MPI) and launched by mpirun; otherwise
// one process.
void comm_init(Comm *c, int *argc, char ***argv);
// A single-process communicator.
void comm_init_single(Comm *c);
// Rank q's part [q n / W, (q + 1) n / W) of an equal split of n elements, as its count per rank.
void comm_equal_split(size_t n, int world, size_t *counts);
// comm->allreduce_sum_f64 as llmc/optimizer.h's AllReduceSumFn (ctx: the Comm).
void comm_allreduce_sum_f64_fn(double *buf, int n, void *ctx);
// LLMC_COMM_TIMEOUT in seconds (COMM_DEFAULT_TIMEOUT_S when unset); exits 1 on a bad value.
double comm_timeout_from_env(void);

#ifdef __cplusplus
}
#endif
#endif
