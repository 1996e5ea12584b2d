// The GPU communicators of llmc/comm_nccl.h: NCCL (built with LLMC_HAVE_NCCL) and MPI staged
// through host memory (built with LLMC_HAVE_MPI). Host code only; compiled by nvcc.
//
// STATUS: ran on an H100 at 7c74e66 and an H200 at c95ef56 (one NCCL rank, 2 and 3 staged-MPI
// ranks sharing the GPU; dev/gpu_report.md). NCCL across ranks has run only in the CPU emulator
// of dev/emu (t_45: NCCL's collectives over MPI, one emulated GPU per process).
//
// Buffers are the concatenation of the ranks' parts in rank order (comm.h): part q starts at
// offset sum_{p<q} counts[p] elements. NCCL's ReduceScatter and AllGather need equal parts; the
// whole padded flat buffer has them (zero.h: W equal slices) and takes the single NCCL call in
// place. A segment's parts (zero_split) are unequal, often empty: those take one ncclReduce
// (root q, into part q) or ncclBroadcast (root q, from part q) per non-empty part inside one
// ncclGroupStart/End, which NCCL runs as one fused launch. Each rank still sends its data about
// once (a reduce of n_q elements moves n_q per rank along the ring; sum_q n_q = the segment), the
// cost of a reduce-scatter, without the copies and the W * max_q n_q scratch that padding every
// part to the largest would take.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm_nccl.h"
#include "cuda_common.cuh"
#include "utils.h"
#ifdef LLMC_HAVE_NCCL
#include <nccl.h>
#endif
#ifdef LLMC_HAVE_MPI
#include <mpi.h>
#endif

typedef enum { GPU_COMM_SINGLE, GPU_COMM_NCCL, GPU_COMM_STAGED } GpuCommKind;

typedef struct {
    Comm host;            // the wrapped communicator: rank, size, host collectives, finalize
    GpuCommKind kind;
    cudaStream_t stream;  // where every device collective is enqueued
    cudaStream_t waited;  // the stream comm_gpu_wait is waiting for
    double timeout_s;
    void *staging;        // mpi-staged: pinned host buffer
    size_t staging_bytes;
#ifdef LLMC_HAVE_NCCL
    ncclComm_t nccl;
#endif
} GpuComm;

static GpuComm *impl(Comm *c) { return (GpuComm *)c->impl; }

static GpuCommKind gpu_comm_kind(const Comm *host) {
    const char *e = getenv("LLMC_GPU_COMM");
    const int under_mpi = strcmp(host->name, "mpi") == 0;
    if (!e || !*e) return under_mpi ? GPU_COMM_NCCL : GPU_COMM_SINGLE;
    if (strcmp(e, "nccl") == 0) return GPU_COMM_NCCL;
    if (strcmp(e, "mpi") == 0) return under_mpi ? GPU_COMM_STAGED : GPU_COMM_SINGLE;
    die("LLMC_GPU_COMM='%s': must be nccl or mpi", e);
}

int comm_gpu_device(const Comm *host) {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count < 1)
        die("no usable CUDA GPU on this machine (%s); the CPU trainer ./train_gpt takes the same flags",
            err != cudaSuccess ? cudaGetErrorString(err) : "cudaGetDeviceCount found none");
    if (gpu_comm_kind(host) != GPU_COMM_NCCL) return host->local_rank % count;
    if (host->local_rank >= count)
        die("rank %d is process %d on its node, which has %d GPU(s): NCCL needs a GPU per rank (LLMC_GPU_COMM=mpi "
            "lets ranks share GPUs, for tests)", host->rank, host->local_rank, count);
    return host->local_rank;
}

// ----------------------------------------------------------------------------------------------
// Host collectives: the wrapped communicator's.

static void host_allreduce_f64(Comm *c, double *buf, int n) { impl(c)->host.allreduce_sum_f64(&impl(c)->host, buf, n); }
static void host_barrier(Comm *c) { impl(c)->host.barrier(&impl(c)->host); }
static void host_broadcast(Comm *c, void *buf, size_t n) { impl(c)->host.broadcast_bytes(&impl(c)->host, buf, n); }

// ----------------------------------------------------------------------------------------------
// MPI staged through pinned host memory. Each call synchronizes the stream (the device data must
// be on the host before MPI sees it) and leaves the copy back queued on the stream; the host
// writes the staging buffer only after a synchronization, so a queued copy never reads it torn.
#ifdef LLMC_HAVE_MPI
static size_t part_offset(const size_t *counts, int q) {
    size_t off = 0;
    for (int p = 0; p < q; p++) off += counts[p];
    return off;
}

static void *staging(GpuComm *g, size_t bytes) {
    if (bytes > g->staging_bytes) {
        cudaCheck(cudaStreamSynchronize(g->stream));  // no queued copy still reads the old buffer
        if (g->staging) cudaCheck(cudaFreeHost(g->staging));
        cudaCheck(cudaMallocHost(&g->staging, bytes));
        g->staging_bytes = bytes;
    }
    return g->staging;
}

static void to_host(GpuComm *g, void *h, const void *d, size_t bytes) {
    cudaCheck(cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, g->stream));
    cudaCheck(cudaStreamSynchronize(g->stream));
}
static void to_device(GpuComm *g, void *d, const void *h, size_t bytes) {
    cudaCheck(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, g->stream));
}

static void staged_allreduce_f32(Comm *c, float *buf, size_t n) {
    GpuComm *g = impl(c);
    float *h = (float *)staging(g, n * sizeof(float));
    to_host(g, h, buf, n * sizeof(float));
    g->host.allreduce_sum_f32(&g->host, h, n);
    to_device(g, buf, h, n * sizeof(float));
}

static void staged_reduce_scatter(Comm *c, float *buf, const size_t *counts) {
    GpuComm *g = impl(c);
    const size_t n = part_offset(counts, c->size), own = part_offset(counts, c->rank);
    float *h = (float *)staging(g, n * sizeof(float));
    to_host(g, h, buf, n * sizeof(float));
    g->host.reduce_scatter_sum_f32(&g->host, h, counts);
    to_device(g, buf + own, h + own, counts[c->rank] * sizeof(float));
}

// Either element type: this rank's part to the host, the host communicator's all-gather of that
// type (`gather`), the whole buffer back.
template <typename T>
static void staged_allgather(Comm *c, T *buf, const size_t *counts, void (*gather)(Comm *, T *, const size_t *)) {
    GpuComm *g = impl(c);
    const size_t n = part_offset(counts, c->size), own = part_offset(counts, c->rank);
    T *h = (T *)staging(g, n * sizeof(T));
    to_host(g, h + own, buf + own, counts[c->rank] * sizeof(T));
    gather(&g->host, h, counts);
    to_device(g, buf, h, n * sizeof(T));
}
static void staged_allgather_f32(Comm *c, float *buf, const size_t *counts) {
    staged_allgather(c, buf, counts, impl(c)->host.allgather_f32);
}
static void staged_allgather_u16(Comm *c, uint16_t *buf, const size_t *counts) {
    staged_allgather(c, buf, counts, impl(c)->host.allgather_u16);
}
#endif

// ----------------------------------------------------------------------------------------------
// NCCL
#ifdef LLMC_HAVE_NCCL
// Prints one line and ends the job: every rank must stop, or the others wait in a collective.
static void gpu_comm_fail(Comm *c, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void gpu_comm_fail(Comm *c, const char *fmt, ...) {
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "%s: error: rank %d of %d (%s): ", program_name(), c->rank, c->size, c->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    ncclCommAbort(impl(c)->nccl);  // frees this rank's GPU side of the hang
#ifdef LLMC_HAVE_MPI
    if (strcmp(impl(c)->host.name, "mpi") == 0) MPI_Abort(MPI_COMM_WORLD, 1);
#endif
    _exit(1);
}

// Polls fn(c, ...) until it answers done (1), fails (-1: ends the job with its message) or the
// deadline passes; short sleeps after the first polls leave the core to the other work.
static void poll_until(Comm *c, int (*fn)(Comm *c, char *why, size_t n), const char *what) {
    const double deadline = wall_time() + impl(c)->timeout_s;
    char why[256] = "";
    for (int polls = 0;; polls++) {
        const int r = fn(c, why, sizeof(why));
        if (r > 0) return;
        if (r < 0) gpu_comm_fail(c, "%s failed: %s", what, why);
        if (wall_time() > deadline)
            gpu_comm_fail(c, "%s did not complete within %.0f s (LLMC_COMM_TIMEOUT): another rank has died or hangs", what,
                          impl(c)->timeout_s);
        if (polls >= 64) {
            const struct timespec pause = {0, 50000};
            nanosleep(&pause, NULL);
        }
    }
}

static int nccl_ready(Comm *c, char *why, size_t n) {
    ncclResult_t state;
    ncclResult_t rc = ncclCommGetAsyncError(impl(c)->nccl, &state);
    if (rc == ncclSuccess && state == ncclInProgress) return 0;
    if (rc == ncclSuccess && state == ncclSuccess) return 1;
    snprintf(why, n, "%s (%s)", ncclGetErrorString(rc != ncclSuccess ? rc : state), ncclGetLastError(impl(c)->nccl));
    return -1;
}

// A non-blocking call may answer ncclInProgress: it is done when the communicator is ready.
static void nccl_check_at(Comm *c, ncclResult_t rc, const char *call, const char *file, int line) {
    char what[256];
    snprintf(what, sizeof(what), "%s at %s:%d", call, file, line);
    if (rc == ncclInProgress) poll_until(c, nccl_ready, what);
    else if (rc != ncclSuccess) gpu_comm_fail(c, "%s failed: %s (%s)", what, ncclGetErrorString(rc), ncclGetLastError(impl(c)->nccl));
}
#define NCCL_CHECK(c, call) nccl_check_at((c), (call), #call, __FILE__, __LINE__)

static int all_equal(const size_t *counts, int W) {
    for (int q = 1; q < W; q++)
        if (counts[q] != counts[0]) return 0;
    return 1;
}

static void nccl_allreduce_f32(Comm *c, float *buf, size_t n) {
    if (n) NCCL_CHECK(c, ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, impl(c)->nccl, impl(c)->stream));
}

static void nccl_reduce_scatter(Comm *c, float *buf, const size_t *counts) {
    GpuComm *g = impl(c);
    const int W = c->size;
    if (all_equal(counts, W)) {  // in place: this rank's part is buf + rank * count
        if (counts[0]) NCCL_CHECK(c, ncclReduceScatter(buf, buf + (size_t)c->rank * counts[0], counts[0], ncclFloat, ncclSum,
                                                       g->nccl, g->stream));
        return;
    }
    NCCL_CHECK(c, ncclGroupStart());
    size_t off = 0;
    for (int q = 0; q < W; off += counts[q], q++)
        if (counts[q]) NCCL_CHECK(c, ncclReduce(buf + off, buf + off, counts[q], ncclFloat, ncclSum, q, g->nccl, g->stream));
    NCCL_CHECK(c, ncclGroupEnd());
}

// All-gather of elements of elsize bytes, moved as bytes (a copy: the type does not matter).
static void nccl_allgather_bytes(Comm *c, void *buf, const size_t *counts, size_t elsize) {
    GpuComm *g = impl(c);
    const int W = c->size;
    char *base = (char *)buf;
    if (all_equal(counts, W)) {  // in place: this rank's part is buf + rank * count
        const size_t n = counts[0] * elsize;
        if (n) NCCL_CHECK(c, ncclAllGather(base + (size_t)c->rank * n, base, n, ncclUint8, g->nccl, g->stream));
        return;
    }
    NCCL_CHECK(c, ncclGroupStart());
    size_t off = 0;
    for (int q = 0; q < W; off += counts[q] * elsize, q++)
        if (counts[q])
            NCCL_CHECK(c, ncclBroadcast(base + off, base + off, counts[q] * elsize, ncclUint8, q, g->nccl, g->stream));
    NCCL_CHECK(c, ncclGroupEnd());
}

static void nccl_allgather_f32(Comm *c, float *buf, const size_t *counts) { nccl_allgather_bytes(c, buf, counts, sizeof(float)); }
static void nccl_allgather_u16(Comm *c, uint16_t *buf, const size_t *counts) { nccl_allgather_bytes(c, buf, counts, 2); }

static void nccl_setup(Comm *c) {
    GpuComm *g = impl(c);
    ncclUniqueId id;
    if (c->rank == 0) {
        ncclResult_t rc = ncclGetUniqueId(&id);
        if (rc != ncclSuccess) die("ncclGetUniqueId failed: %s", ncclGetErrorString(rc));
    }
    g->host.broadcast_bytes(&g->host, &id, sizeof(id));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // calls return at once; nccl_check_at and comm_gpu_wait poll with a deadline
    NCCL_CHECK(c, ncclCommInitRankConfig(&g->nccl, c->size, id, c->rank, &config));
    poll_until(c, nccl_ready, "NCCL communicator set-up");
}

static int stream_done(Comm *c, char *why, size_t n) {
    const cudaError_t e = cudaStreamQuery(impl(c)->waited);
    if (e == cudaSuccess) return 1;
    if (e != cudaErrorNotReady) {
        snprintf(why, n, "CUDA: %s", cudaGetErrorString(e));
        return -1;
    }
    return nccl_ready(c, why, n) < 0 ? -1 : 0;
}
#endif

// ----------------------------------------------------------------------------------------------

static void gpu_finalize(Comm *c) {
    GpuComm *g = impl(c);
#ifdef LLMC_HAVE_NCCL
    if (g->kind == GPU_COMM_NCCL) {
        comm_gpu_wait(c, g->stream);
        NCCL_CHECK(c, ncclCommFinalize(g->nccl));
        NCCL_CHECK(c, ncclCommDestroy(g->nccl));
    }
#endif
    if (g->staging) cudaCheck(cudaFreeHost(g->staging));
    Comm host = g->host;
    free(g);
    host.finalize(&host);
}

void comm_gpu_init(Comm *gpu, const Comm *host, cudaStream_t stream) {
    const GpuCommKind kind = gpu_comm_kind(host);
    if (kind == GPU_COMM_SINGLE) {  // the single-process communicator's collectives touch no memory
        *gpu = *host;
        return;
    }
    GpuComm *g = (GpuComm *)calloc_check(1, sizeof(GpuComm));
    g->host = *host;
    g->kind = kind;
    g->stream = stream;
    g->timeout_s = comm_timeout_from_env();
    memset(gpu, 0, sizeof(*gpu));
    gpu->rank = host->rank;
    gpu->size = host->size;
    gpu->local_rank = host->local_rank;
    gpu->impl = g;
    gpu->allreduce_sum_f64 = host_allreduce_f64;
    gpu->barrier = host_barrier;
    gpu->broadcast_bytes = host_broadcast;
    gpu->finalize = gpu_finalize;
    if (kind == GPU_COMM_NCCL) {
#ifdef LLMC_HAVE_NCCL
        gpu->name = "nccl";
        gpu->allreduce_sum_f32 = nccl_allreduce_f32;
        gpu->reduce_scatter_sum_f32 = nccl_reduce_scatter;
        gpu->allgather_f32 = nccl_allgather_f32;
        gpu->allgather_u16 = nccl_allgather_u16;
        nccl_setup(gpu);
#else
        die("LLMC_GPU_COMM: this train_gptcu was built without NCCL (nccl.h was not found)");
#endif
    } else {
#ifdef LLMC_HAVE_MPI
        gpu->name = "mpi-staged";
        gpu->allreduce_sum_f32 = staged_allreduce_f32;
        gpu->reduce_scatter_sum_f32 = staged_reduce_scatter;
        gpu->allgather_f32 = staged_allgather_f32;
        gpu->allgather_u16 = staged_allgather_u16;
#else  // the host communicator is MPI's, this file was not built with it: a stale object
        die("LLMC_GPU_COMM=mpi: llmc/comm_nccl.cu was built without MPI (LLMC_HAVE_MPI), the rest with it: "
            "`make clean`, then build again");
#endif
    }
}

void comm_gpu_wait(Comm *gpu, cudaStream_t stream) {
#ifdef LLMC_HAVE_NCCL
    if (gpu->name && strcmp(gpu->name, "nccl") == 0) {
        impl(gpu)->waited = stream;
        poll_until(gpu, stream_done, "waiting for the GPU (collectives queued)");
        return;
    }
#endif
    cudaCheck(cudaStreamSynchronize(stream));
}
