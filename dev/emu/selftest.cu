// The emulator's own checks (dev/emu/cuda_emu.h), each shown to fire: `selftest <fault>` runs a
// small kernel with that one fault, which the emulator must end with its one-line error (exit 1);
// dev/test/t_44_emulated_attention.sh runs every fault and matches the line. `selftest clean`
// runs the same kernels without the faults and must exit 0. The race_* faults are plain accesses
// of two threads with no order between them, which only the race build (build/emu/race/selftest,
// dev/emu/race.h) reports: ThreadSanitizer's report and its exit status 66 (t_44 runs them there,
// and `clean`, which must report nothing). The uninit_* faults read memory nothing wrote, which
// only valgrind reports (t_47). plain_out_of_bounds is a plain store past the launch's dynamic
// shared memory, which only the AddressSanitizer build reports (build/emu/asan/selftest, t_44).
// `selftest streams` shows what the stream orders of dev/emu/cuda_runtime.cc
// (LLMC_EMU_STREAM_ORDER) do with a consumer that waits for its producer's stream, one that does
// not, and a host that reads a copy before synchronizing; t_44 runs it under each order.
// `selftest schedule` shows what LLMC_EMU_SCHEDULE=reverse changes: a CTA that reads what the CTA
// before it writes in the same launch, and a thread that reads a shared word another writes with
// no barrier between them; t_44 runs it in both orders. `selftest overlap` enqueues collectives
// beside kernels for the overlap report (LLMC_EMU_OVERLAP), which t_44 reads. Built by g++ with
// the emulator forced in (mk/emu.mk); not a CUDA program.
#include "../../llmc/attention.cuh"

#include <string.h>

using namespace attention_detail;

// 64 threads, two warps, 4096 bytes of shared memory: a 16 x 8 bf16 tile at byte 0 (one 16-byte row
// per 8 values), read by ldmatrix and refilled by cp.async.
enum Fault {
    CLEAN, IN_FLIGHT, NO_BARRIER, WAR, NO_PROXY_FENCE, NO_STORE_FENCE, NO_WGMMA_FENCE, DIVERGENCE, DEADLOCK, OUT_OF_BOUNDS,
    RACE_SHARED, RACE_CP_ASYNC, RACE_GLOBAL, RACE_WARPGROUP,  // found only by the race build (dev/emu/race.h)
    RACE_MBARRIER, RACE_NAMED_BARRIER, RACE_SYNCWARP,
    UNINIT_GLOBAL, UNINIT_SHARED,             // found only under valgrind
    PLAIN_OUT_OF_BOUNDS                       // found only by the AddressSanitizer build
};
static const char *FAULT_NAMES[] = {"clean",          "in_flight",      "no_barrier",     "war",
                                    "no_proxy_fence", "no_store_fence", "no_wgmma_fence", "divergence",
                                    "deadlock",       "out_of_bounds",  "race_shared",    "race_cp_async",
                                    "race_global",    "race_warpgroup", "race_mbarrier",  "race_named_barrier",
                                    "race_syncwarp",  "uninit_global",  "uninit_shared",  "plain_out_of_bounds"};

static __global__ void fault_kernel(int fault, const __nv_bfloat16 *src, float *dst) {
    LLMC_DYNAMIC_SMEM(smem);
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    __nv_bfloat16 *tile = reinterpret_cast<__nv_bfloat16 *>(smem);
    // Each of the first 16 threads copies one 16-byte row of the tile.
    if (tid < 16) cp_async_16(tile + 8 * tid, src + 8 * tid, true);
    cp_async_commit();
    if (fault != IN_FLIGHT) cp_async_wait<0>();
    if (fault != NO_BARRIER) __syncthreads();
    uint32_t r[4];
    if (warp == 0) {
        if (fault == DIVERGENCE && lane >= 16) {
            r[0] = __shfl_xor_sync(0xffffffffu, 1u, 1);
        } else {
            ldmatrix_x4(r, tile + 8 * (lane % 16));  // rows 0..15, twice
        }
        dst[lane] = (float)(r[0] & 0xFF);
    }
    // Warp 1 refills the tile: after a barrier, unless the fault is the race.
    if (fault != WAR) __syncthreads();
    if (warp == 1 && lane < 16) cp_async_16(tile + 8 * lane, src + 8 * lane, true);
    cp_async_commit();
    cp_async_wait<0>();
    if (fault == DEADLOCK) {
        if (lane < 16) __syncthreads();
        else r[0] = __shfl_xor_sync(0xffffffffu, 1u, 1);
    }
    __syncthreads();
    if (fault == OUT_OF_BOUNDS && tid == 0) cp_async_16(smem + 4096, src, true);
}

// One warpgroup: a 64 x 64 swizzled tile by cp.async, or with stores (no_store_fence, and a second
// clean launch), then S = A A^T by wgmma.
static __global__ void wgmma_fault_kernel(int fault, bool stores, const __nv_bfloat16 *src, float *dst) {
    LLMC_DYNAMIC_SMEM(smem);
    __nv_bfloat16 *tile = reinterpret_cast<__nv_bfloat16 *>(smem);
    if (stores) {
        for (int i = threadIdx.x; i < 64 * 32; i += 128) {  // word i: row i / 32, columns 2 (i % 32) and + 1
            const int r = i / 32, col = 2 * (i % 32);
            uint32_t pair;
            memcpy(&pair, src + 64 * r + col, sizeof(pair));
            store_for_async_proxy(reinterpret_cast<uint32_t *>(smem + wgmma::sw128_offset(64, r, col)), pair);
        }
    } else {
        load_tile_async<64, 64, true, 128>(tile, src, 64, 0, 64);
        cp_async_commit();
        cp_async_wait<0>();
    }
    if (fault != NO_PROXY_FENCE && fault != NO_STORE_FENCE) wgmma::fence_proxy_async_shared();
    __syncthreads();
    float s[8][4];
    if (fault != NO_WGMMA_FENCE) wgmma::fence();
    mma_rows_by_rows<64>(s, smem_addr(tile), 64, 0, smem_addr(tile));
    wgmma::commit();
    wgmma::wait<0>();
    dst[threadIdx.x] = s[0][0];
}

// Plain loads and stores, which only the race build checks (dev/emu/race.h). 64 threads, two warps:
// thread 0 stores a shared word that thread 32 loads after a barrier; thread 1's cp.async fills a
// shared row that thread 33 loads after another; every thread stores its own element of dst. Each
// race fault drops one of those orders (both threads store one element, for race_global).
static __global__ void race_kernel(int fault, const __nv_bfloat16 *src, float *dst) {
    LLMC_DYNAMIC_SMEM(smem);
    float *word = reinterpret_cast<float *>(smem);
    __nv_bfloat16 *row = reinterpret_cast<__nv_bfloat16 *>(smem + 16);
    const int tid = threadIdx.x;
    if (tid == 0) *word = 1.0f;
    if (fault != RACE_SHARED) __syncthreads();
    if (tid == 32) dst[0] = *word;
    if (tid == 1) cp_async_16(row, src, true);
    cp_async_commit();
    cp_async_wait<0>();
    if (fault != RACE_CP_ASYNC) __syncthreads();
    if (tid == 33) dst[1] = __bfloat162float(row[0]);
    dst[2 + (fault == RACE_GLOBAL && tid < 2 ? 0 : tid)] = (float)tid;
}

// A warpgroup's barrier (llmc/attention.cuh's warpgroup_sync) orders its own 128 threads and no
// others. 256 threads: thread 0 stores a shared word, and after its warpgroup's barrier thread 1
// loads it; thread 128, of the other warpgroup, loads it after a __syncthreads, or with the
// race_warpgroup fault after its own warpgroup's barrier alone. Before that, __syncwarp orders a
// warp's lanes: thread 2 stores another word and thread 3 loads it after the warp's __syncwarp
// (race_syncwarp: without it).
static __global__ void warpgroup_kernel(int fault, float *dst) {
    LLMC_DYNAMIC_SMEM(smem);
    float *word = reinterpret_cast<float *>(smem);
    const int tid = threadIdx.x;
    if (tid == 2) word[1] = 5.0f;
    if (fault != RACE_SYNCWARP) __syncwarp();
    if (tid == 3) dst[2] = word[1];
    if (tid == 0) *word = 2.0f;
    warpgroup_sync();
    if (tid == 1) dst[0] = *word;
    if (fault != RACE_WARPGROUP) __syncthreads();
    if (tid == 128) dst[1] = *word;
}

// An mbarrier and a named barrier between threads that play different parts (llmc/attention.cuh's
// mbar_* and named_barrier_*, as its warp-specialized backward uses them). 128 threads: thread 0
// stores a shared word and arrives at an mbarrier of one arrival, warp 2 waits for its phase and
// thread 64 loads the word (race_mbarrier: without waiting); warp 1 stores another (thread 32)
// and arrives at named barrier 3 of 64 threads, warp 3 waits there and loads it
// (race_named_barrier: warp 3 does not wait, and the barrier never completes, as bar.arrive
// allows).
static __global__ void handoff_kernel(int fault, float *dst) {
    LLMC_DYNAMIC_SMEM(smem);
    float *words = reinterpret_cast<float *>(smem);
    uint64_t *bar = reinterpret_cast<uint64_t *>(smem + 8);
    const int tid = threadIdx.x, warp = tid / 32;
    if (tid == 0) mbar_init(bar, 1);
    __syncthreads();
    if (tid == 0) {
        words[0] = 3.0f;
        mbar_arrive(bar);
    }
    if (warp == 2) {  // a whole warp waits (mbar_wait ends with __syncwarp)
        if (fault != RACE_MBARRIER) mbar_wait(bar, 0);
        if (tid == 64) dst[0] = words[0];
    }
    if (warp == 1) {
        if (tid == 32) words[1] = 4.0f;
        named_barrier_arrive(3, 64);
    }
    if (warp == 3) {
        if (fault != RACE_NAMED_BARRIER) named_barrier_sync(3, 64);
        if (tid == 96) dst[1] = words[1];
    }
}

// One thread branches on a global word and a shared word. Each uninit fault leaves one of them
// unwritten: the emulator reads its garbage (cuda_runtime.cc, cuda_emu.h) and reports nothing, but
// valgrind's memcheck reports the branch, as compute-sanitizer's initcheck would on a GPU (t_47
// runs them, and `clean`, under valgrind).
static __global__ void uninit_kernel(int fault, const float *unwritten, float *dst) {
    LLMC_DYNAMIC_SMEM(smem);
    float *word = reinterpret_cast<float *>(smem);
    if (fault != UNINIT_SHARED) *word = 1.0f;
    const float global = fault == UNINIT_GLOBAL ? unwritten[0] : 1.0f;
    if (*word > 0.0f && global > 0.0f) dst[0] = 1.0f;
}

// Two CTAs of 64 threads, each missing a synchronization: CTA 1's thread 0 reads the global word
// CTA 0's thread 0 writes (seen[0]), and thread 32 reads the shared word thread 31 writes after
// the barrier (seen[1]). 1: the write came first; 0: it did not.
static __global__ void schedule_kernel(int *cta_word, int *seen) {
    LLMC_DYNAMIC_SMEM(smem);
    int *words = reinterpret_cast<int *>(smem);
    const int t = threadIdx.x;
    words[t] = 0;
    __syncthreads();
    words[t] = 1;
    if (blockIdx.x == 0 && t == 0) *cta_word = 1;
    if (blockIdx.x == 1 && t == 0) seen[0] = *cta_word;
    if (blockIdx.x == 1 && t == 32) seen[1] = words[31];
}

// One thread stores the last of the launch's 64 bytes of dynamic shared memory, or (the fault) the
// byte after them: cuda_emu.h poisons what lies beyond for AddressSanitizer.
static __global__ void bounds_kernel(int fault, float *dst) {
    LLMC_DYNAMIC_SMEM(smem);
    smem[fault == PLAIN_OUT_OF_BOUNDS ? 64 : 63] = 1;
    dst[0] = smem[63];
}

static __global__ void store_kernel(int *p, int v) { *p = v; }
static __global__ void copy_kernel(int *dst, const int *src) { *dst = *src; }

// Stream `producer` (created first) stores 1 where `consumer` (created last) reads it, with and
// without waiting for the producer's event; then the host reads a pinned copy of it before and
// after synchronizing. Prints what each read saw (0 or -1: the value before the write).
static void stream_orders() {
    int *data, *seen, *host;
    cudaMalloc((void **)&data, 2 * sizeof(int));
    cudaMalloc((void **)&seen, 2 * sizeof(int));
    cudaMallocHost((void **)&host, sizeof(int));
    cudaMemset(data, 0, 2 * sizeof(int));
    cudaMemset(seen, 0, 2 * sizeof(int));
    cudaStream_t producer, consumer;
    cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking);
    cudaEvent_t stored;
    cudaEventCreate(&stored);
    cudaDeviceSynchronize();
    for (int waits = 1; waits >= 0; waits--) {
        LLMC_LAUNCH(1, 1, 0, producer, store_kernel)(data + waits, 1);
        cudaEventRecord(stored, producer);
        if (waits) cudaStreamWaitEvent(consumer, stored, 0);
        LLMC_LAUNCH(1, 1, 0, consumer, copy_kernel)(seen + waits, data + waits);
    }
    *host = -1;
    cudaMemcpyAsync(host, data, sizeof(int), cudaMemcpyDeviceToHost, producer);
    const int before_sync = *host;
    cudaStreamSynchronize(producer);
    const int after_sync = *host;
    int h_seen[2];
    cudaDeviceSynchronize();  // the copy below, on stream 0, does not wait for non-blocking streams
    cudaMemcpy(h_seen, seen, sizeof h_seen, cudaMemcpyDeviceToHost);
    printf("streams: consumer with wait %d, without wait %d; host read before sync %d, after %d\n", h_seen[1], h_seen[0],
           before_sync, after_sync);
}

// Four collectives on a stream `comm` beside the kernels k1..k10 of a blocking stream `compute`,
// for the overlap report (LLMC_EMU_OVERLAP, dev/emu/cuda_runtime.cc), which must say: A beside 2
// (k3 and k4: it waits for k1 and k2 through an event, and k5 waits for it), B beside 3 (after A on
// its stream, before the host's synchronization that k6 follows), C beside 0 (on the legacy stream
// 0, which the blocking stream waits for and is waited for by), D beside 2 (k8 and k9, before the
// device synchronization).
static void overlap() {
    int *word;
    cudaMalloc((void **)&word, sizeof(int));
    cudaStream_t compute, comm;
    cudaStreamCreate(&compute);
    cudaStreamCreateWithFlags(&comm, cudaStreamNonBlocking);
    cudaEvent_t compute_mark, comm_done;
    cudaEventCreate(&compute_mark);
    cudaEventCreate(&comm_done);
    const auto kernel = [&] { LLMC_LAUNCH(1, 1, 0, compute, store_kernel)(word, 1); };
    const auto collective = [](cudaStream_t s, const char *name) {
        emu::stream_enqueue(s, [] {}, emu::WorkKind::COLLECTIVE, name);
    };
    kernel(), kernel();  // k1, k2
    cudaEventRecord(compute_mark, compute);
    cudaStreamWaitEvent(comm, compute_mark, 0);
    collective(comm, "A");
    cudaEventRecord(comm_done, comm);
    kernel(), kernel();  // k3, k4
    cudaStreamWaitEvent(compute, comm_done, 0);
    kernel();  // k5
    collective(comm, "B");
    cudaStreamSynchronize(comm);
    kernel();  // k6
    collective(0, "C");
    kernel();  // k7
    cudaEventRecord(compute_mark, compute);
    cudaStreamWaitEvent(comm, compute_mark, 0);
    collective(comm, "D");
    kernel(), kernel();  // k8, k9
    cudaDeviceSynchronize();
    kernel();  // k10
    cudaDeviceSynchronize();
}

// Prints what schedule_kernel's two reads saw.
static void schedule() {
    int *cta_word, *seen, h_seen[2];
    cudaMalloc((void **)&cta_word, sizeof(int));
    cudaMalloc((void **)&seen, sizeof h_seen);
    cudaMemset(cta_word, 0, sizeof(int));
    LLMC_LAUNCH(2, 64, 64 * sizeof(int), 0, schedule_kernel)(cta_word, seen);
    cudaMemcpy(h_seen, seen, sizeof h_seen, cudaMemcpyDeviceToHost);
    printf("schedule: CTA 1 saw CTA 0's global write %d, thread 32 saw thread 31's shared write %d\n", h_seen[0],
           h_seen[1]);
}

int main(int argc, char **argv) {
    set_program_name(argv[0]);
    if (argc == 2 && !strcmp(argv[1], "streams")) {
        stream_orders();
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "schedule")) {
        schedule();
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "overlap")) {
        overlap();
        return 0;
    }
    int fault = -1;
    for (int f = 0; argc == 2 && f < (int)(sizeof FAULT_NAMES / sizeof *FAULT_NAMES); f++)
        if (!strcmp(argv[1], FAULT_NAMES[f])) fault = f;
    if (fault < 0) usage_error("usage: %s streams|schedule|overlap|clean|in_flight|no_barrier|war|no_proxy_fence|"
                               "no_store_fence|no_wgmma_fence|divergence|deadlock|out_of_bounds|race_shared|"
                               "race_cp_async|race_global|race_warpgroup|race_mbarrier|race_named_barrier|"
                               "race_syncwarp|uninit_global|uninit_shared|plain_out_of_bounds", argv[0]);
    __nv_bfloat16 *src;
    float *dst, *unwritten;
    cudaMalloc((void **)&src, 64 * 64 * sizeof(__nv_bfloat16));
    cudaMalloc((void **)&dst, 128 * sizeof(float));
    cudaMalloc((void **)&unwritten, sizeof(float));
    for (int i = 0; i < 64 * 64; i++) src[i] = __float2bfloat16((float)(i % 7));
    const bool handoff = fault == RACE_MBARRIER || fault == RACE_NAMED_BARRIER;
    const bool race = fault == RACE_SHARED || fault == RACE_CP_ASYNC || fault == RACE_GLOBAL || fault == RACE_WARPGROUP ||
                      fault == RACE_SYNCWARP || handoff;
    const bool uninit = fault == UNINIT_GLOBAL || fault == UNINIT_SHARED;
    const bool in_warpgroup_kernel = fault == RACE_WARPGROUP || fault == RACE_SYNCWARP;
    if (fault == CLEAN || (race && !in_warpgroup_kernel && !handoff))
        LLMC_LAUNCH(1, 64, 64, 0, race_kernel)(fault, src, dst);
    if (fault == CLEAN || handoff) LLMC_LAUNCH(1, 128, 16, 0, handoff_kernel)(fault, dst);
    if (fault == CLEAN || in_warpgroup_kernel) LLMC_LAUNCH(1, 256, 16, 0, warpgroup_kernel)(fault, dst);
    if (fault == CLEAN || uninit) LLMC_LAUNCH(1, 1, 4, 0, uninit_kernel)(fault, unwritten, dst);
    if (fault == CLEAN || fault == PLAIN_OUT_OF_BOUNDS) LLMC_LAUNCH(1, 1, 64, 0, bounds_kernel)(fault, dst);
    const bool wgmma_fault = fault == NO_PROXY_FENCE || fault == NO_STORE_FENCE || fault == NO_WGMMA_FENCE;
    if (!wgmma_fault && !race && !uninit && fault != PLAIN_OUT_OF_BOUNDS)
        LLMC_LAUNCH(1, 64, 4096, 0, fault_kernel)(fault, src, dst);
    if (fault == CLEAN || (wgmma_fault && fault != NO_STORE_FENCE))
        LLMC_LAUNCH(1, 128, 8192, 0, wgmma_fault_kernel)(fault, false, src, dst);
    if (fault == CLEAN || fault == NO_STORE_FENCE) LLMC_LAUNCH(1, 128, 8192, 0, wgmma_fault_kernel)(fault, true, src, dst);
    cudaDeviceSynchronize();  // the kernels have run, whatever LLMC_EMU_STREAM_ORDER says
    printf("%s: no fault reported\n", FAULT_NAMES[fault]);
    return 0;
}
