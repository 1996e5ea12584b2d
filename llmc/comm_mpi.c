// The MPI implementation of comm.h (the CPU trainer under mpirun). Built only with LLMC_HAVE_MPI.
//
// Buffer collectives are W - 1 rounds of pairwise exchange: in round k rank r sends to rank
// r + k and receives from rank r - k (mod W). Reduce-scatter adds what it receives to its own
// part in round order, which fixes the summation order of every element by its owner (see
// comm.h); all-gather copies the received part into place. Each rank sends and receives its
// data once, the optimum for both collectives. Messages are cut into pieces of at most
// MPI_PIECE floats, which bounds the receive scratch and keeps counts inside MPI's int.
//
// Every wait polls its requests against a deadline (LLMC_COMM_TIMEOUT seconds): when a peer
// died or hangs, the rank prints which collective timed out and aborts the job (MPI_Abort, so
// mpirun ends every rank with a non-zero status). MPI errors are returned, not fatal inside
// MPI, and reported the same way with MPI's own message.
#ifdef LLMC_HAVE_MPI
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm.h"
#include "utils.h"

#define MPI_PIECE ((size_t)1 << 22)  // 16 MiB of floats per message
#define TAG_BUFFER 7

typedef struct {
    double timeout_s;
    float *piece;        // receive scratch for reduce-scatter, MPI_PIECE floats at most
    size_t piece_cap;
    size_t *offsets;     // W + 1 prefix sums of the counts of the current collective
    size_t *equal_split; // W counts for allreduce_sum_f32
    double *gathered;    // W * n doubles for allreduce_sum_f64
    int gathered_cap;
} MpiComm;

// Prints one line and ends the whole job: MPI_Abort makes mpirun stop every rank.
static void comm_fail(const Comm *c, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void comm_fail(const Comm *c, const char *fmt, ...) {
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "%s: error: rank %d of %d: ", program_name(), c->rank, c->size);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    _exit(1);  // MPI_Abort does not return; this is in case an implementation does
}

static void check_at(const Comm *c, int rc, const char *call, const char *file, int line) {
    if (rc == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    comm_fail(c, "%s failed at %s:%d: %s", call, file, line, msg);
}
#define MPI_CHECK(c, call) check_at((c), (call), #call, __FILE__, __LINE__)

// Waits for n requests, polling (with short sleeps, so that oversubscribed ranks give their core
// to the others) until they complete or the deadline passes.
static void wait_all(const Comm *c, MPI_Request *reqs, int n, const char *what) {
    const MpiComm *m = (const MpiComm *)c->impl;
    double deadline = MPI_Wtime() + m->timeout_s;
    for (int polls = 0;; polls++) {
        int done = 0;
        MPI_CHECK(c, MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE));
        if (done) return;
        if (MPI_Wtime() > deadline)
            comm_fail(c, "%s did not complete within %.0f s (LLMC_COMM_TIMEOUT): another rank has died or hangs", what,
                      m->timeout_s);
        if (polls >= 64) nanosleep(&(struct timespec){0, 50000}, NULL);
    }
}

static void fill_offsets(Comm *c, const size_t *counts) {
    MpiComm *m = (MpiComm *)c->impl;
    m->offsets[0] = 0;
    for (int q = 0; q < c->size; q++) m->offsets[q + 1] = m->offsets[q] + counts[q];
}

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

// One round of the pairwise exchange: sends nsend elements of `type` (elsize bytes each) from
// send to rank `to` and receives nrecv from rank `from`, a piece at a time; each received piece
// is passed to consume(recv_piece, offset, count, arg) (or received in place at recv + offset
// when recv). Only float exchanges consume (into the float scratch m->piece).
typedef void (*ConsumeFn)(const float *piece, size_t offset, size_t count, void *arg);
static void exchange(Comm *c, const void *send, size_t nsend, int to, void *recv, size_t nrecv, int from,
                     MPI_Datatype type, size_t elsize, ConsumeFn consume, void *arg, const char *what) {
    MpiComm *m = (MpiComm *)c->impl;
    size_t sent = 0, got = 0;
    while (sent < nsend || got < nrecv) {
        size_t s = min_size(MPI_PIECE, nsend - sent), g = min_size(MPI_PIECE, nrecv - got);
        MPI_Request reqs[2];
        int n = 0;
        void *dst = recv ? (char *)recv + got * elsize : (void *)m->piece;
        if (g > 0) MPI_CHECK(c, MPI_Irecv(dst, (int)g, type, from, TAG_BUFFER, MPI_COMM_WORLD, &reqs[n++]));
        if (s > 0)
            MPI_CHECK(c, MPI_Isend((const char *)send + sent * elsize, (int)s, type, to, TAG_BUFFER, MPI_COMM_WORLD,
                                   &reqs[n++]));
        wait_all(c, reqs, n, what);
        if (g > 0 && consume) consume((const float *)dst, got, g, arg);
        sent += s;
        got += g;
    }
}

static void add_piece(const float *piece, size_t offset, size_t count, void *arg) {
    float *own = (float *)arg + offset;
    #pragma omp parallel for if (count > 65536)
    for (size_t i = 0; i < count; i++) own[i] += piece[i];
}

static void mpi_reduce_scatter(Comm *c, float *buf, const size_t *counts) {
    MpiComm *m = (MpiComm *)c->impl;
    const int W = c->size, r = c->rank;
    fill_offsets(c, counts);
    float *own = buf + m->offsets[r];
    size_t need = min_size(MPI_PIECE, counts[r]);
    if (need > m->piece_cap) {
        free(m->piece);
        m->piece = (float *)malloc_check(need * sizeof(float));
        m->piece_cap = need;
    }
    for (int k = 1; k < W; k++) {
        int to = (r + k) % W, from = (r - k + W) % W;
        exchange(c, buf + m->offsets[to], counts[to], to, NULL, counts[r], from, MPI_FLOAT, sizeof(float), add_piece,
                 own, "reduce-scatter");
    }
}

// All-gather of elements of `type` (elsize bytes): in round k, this rank's part goes to rank
// r + k and rank r - k's part arrives in place.
static void allgather_typed(Comm *c, void *buf, const size_t *counts, MPI_Datatype type, size_t elsize) {
    MpiComm *m = (MpiComm *)c->impl;
    const int W = c->size, r = c->rank;
    fill_offsets(c, counts);
    char *base = (char *)buf;
    for (int k = 1; k < W; k++) {
        int to = (r + k) % W, from = (r - k + W) % W;
        exchange(c, base + m->offsets[r] * elsize, counts[r], to, base + m->offsets[from] * elsize, counts[from], from,
                 type, elsize, NULL, NULL, "all-gather");
    }
}

static void mpi_allgather(Comm *c, float *buf, const size_t *counts) {
    allgather_typed(c, buf, counts, MPI_FLOAT, sizeof(float));
}

static void mpi_allgather_u16(Comm *c, uint16_t *buf, const size_t *counts) {
    allgather_typed(c, buf, counts, MPI_UINT16_T, sizeof(uint16_t));
}

static void mpi_allreduce_f32(Comm *c, float *buf, size_t n) {
    MpiComm *m = (MpiComm *)c->impl;
    comm_equal_split(n, c->size, m->equal_split);
    mpi_reduce_scatter(c, buf, m->equal_split);
    mpi_allgather(c, buf, m->equal_split);
}

// Every rank gathers every rank's values and adds them in rank order: the same sum on all ranks.
static void mpi_allreduce_f64(Comm *c, double *buf, int n) {
    MpiComm *m = (MpiComm *)c->impl;
    if (n <= 0) return;
    if ((long)n * c->size > m->gathered_cap) {
        free(m->gathered);
        m->gathered_cap = n * c->size;
        m->gathered = (double *)malloc_check((size_t)m->gathered_cap * sizeof(double));
    }
    MPI_Request req;
    MPI_CHECK(c, MPI_Iallgather(buf, n, MPI_DOUBLE, m->gathered, n, MPI_DOUBLE, MPI_COMM_WORLD, &req));
    wait_all(c, &req, 1, "all-reduce of host values");
    for (int i = 0; i < n; i++) {
        double s = m->gathered[i];
        for (int q = 1; q < c->size; q++) s += m->gathered[(size_t)q * n + i];
        buf[i] = s;
    }
}

static void mpi_barrier(Comm *c) {
    MPI_Request req;
    MPI_CHECK(c, MPI_Ibarrier(MPI_COMM_WORLD, &req));
    wait_all(c, &req, 1, "barrier");
}

static void mpi_broadcast(Comm *c, void *buf, size_t n) {
    for (size_t done = 0; done < n;) {
        size_t len = min_size(n - done, (size_t)1 << 30);
        MPI_Request req;
        MPI_CHECK(c, MPI_Ibcast((char *)buf + done, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD, &req));
        wait_all(c, &req, 1, "broadcast");
        done += len;
    }
}

static void mpi_finalize(Comm *c) {
    MpiComm *m = (MpiComm *)c->impl;
    free(m->piece);
    free(m->offsets);
    free(m->equal_split);
    free(m->gathered);
    free(m);
    MPI_Finalize();
}

// True when a process manager started us (Open MPI, MPICH/Hydra, PMIx): only then is MPI
// initialized, so a plain ./train_gpt never pays for (or depends on) MPI's start-up.
static int launched_by_mpirun(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        if (getenv(vars[i])) return 1;
    return 0;
}

void comm_init(Comm *c, int *argc, char ***argv) {
    if (!launched_by_mpirun()) {
        comm_init_single(c);
        return;
    }
    double timeout = comm_timeout_from_env();
    int provided;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) die("MPI_Init_thread failed");
    memset(c, 0, sizeof(*c));
    c->name = "mpi";
    MpiComm *m = (MpiComm *)calloc_check(1, sizeof(MpiComm));
    c->impl = m;
    m->timeout_s = timeout;
    MPI_CHECK(c, MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_CHECK(c, MPI_Comm_rank(MPI_COMM_WORLD, &c->rank));
    MPI_CHECK(c, MPI_Comm_size(MPI_COMM_WORLD, &c->size));
    MPI_Comm node;
    MPI_CHECK(c, MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &node));
    MPI_CHECK(c, MPI_Comm_rank(node, &c->local_rank));
    MPI_CHECK(c, MPI_Comm_free(&node));
    m->offsets = (size_t *)malloc_check((size_t)(c->size + 1) * sizeof(size_t));
    m->equal_split = (size_t *)malloc_check((size_t)c->size * sizeof(size_t));
    c->allreduce_sum_f64 = mpi_allreduce_f64;
    c->barrier = mpi_barrier;
    c->broadcast_bytes = mpi_broadcast;
    c->allreduce_sum_f32 = mpi_allreduce_f32;
    c->reduce_scatter_sum_f32 = mpi_reduce_scatter;
    c->allgather_f32 = mpi_allgather;
    c->allgather_u16 = mpi_allgather_u16;
    c->finalize = mpi_finalize;
}
#endif
