// A CPU emulator of the CUDA execution model, enough to run the GPU trainer (train_gpt.cu, every
// kernel of llmc/*.cuh: the attention ones with mma.sync and with wgmma), its check against the
// CPU reference (test_gpt.cu) and the attention harness (dev/cuda/attention.cu) on a machine
// without a GPU. A program is built from the same sources by g++, with this header forced in
// first (-include dev/emu/cuda_emu.h; mk/emu.mk): it defines LLMC_EMULATE_PTX, under which
// llmc/attention.cuh, llmc/wgmma.cuh and llmc/cuda_common.cuh leave their PTX to the versions here
// and llmc/launch.cuh turns launches and dynamic shared memory into calls of this emulator. The
// host side is linked in: the CUDA runtime calls (cuda_runtime.cc), the cuBLASLt subset the
// trainer uses (cublaslt.cc) and NCCL over MPI (nccl.cc).
//
// Execution: the CTAs of a grid run one after another; the threads of a CTA are fibers (stackful
// coroutines) in one OS thread, each running the kernel's own code, switched only where a thread
// waits for others: __syncthreads, a warpgroup's barrier (llmc/attention.cuh's warpgroup_sync, a
// named bar.sync of its 128 threads), and every warp or warpgroup collective (shuffle, ldmatrix,
// mma.sync, the wgmma instructions), which completes when the last thread of its warp or
// warpgroup arrives. Scheduling is deterministic, so a run is reproducible bit for bit.
// A CTA's shared memory starts as bytes 0xFF, NaN as bf16 and as fp32, so that a kernel whose results
// depend on bytes it never wrote gives NaN (LLMC_EMU_SMEM_FILL=0xA5 fills with another byte; 0xA5
// was the default until 2026-11-29, whose bf16 -2.9e-16 hid a missing store in a product).
// LLMC_EMU_SCHEDULE=reverse runs a grid's CTAs last first and each pass over a CTA's threads in
// descending ids, another order CUDA allows: a result that depends on the order of CTAs (one CTA
// reading what another writes in the same launch, static shared memory read before it is written)
// or of a CTA's threads between two synchronizations gives other bits than the default `forward`.
// The instructions follow dev/emu/ptx_isa.h (the ISA's fragment layouts and wgmma's descriptor
// decoding); products are exact and each instruction's sum is formed in double and rounded once
// to fp32 (the tensor cores round differently: the same tolerances apply, not the same bits).
//
// What it checks, dying with one line that names the thread and the instruction:
//   - collectives of one warp (warpgroup) that disagree (divergence), and deadlock (every thread
//     waiting at a barrier that cannot complete);
//   - a launch's configuration: block size, grid, dynamic shared memory above 48 KiB without
//     cudaFuncSetAttribute, or above the 227 KiB a CTA may have;
//   - the asynchronous semantics, by executing late: cp.async writes shared memory at the
//     thread's cp.async.wait_group, and a wgmma reads its operands and writes its accumulators at
//     wgmma.wait_group, so code that reads too early sees stale values (and fails its checks);
//   - in shared memory, 4 bytes at a time, for the accesses made through the instructions above
//     (cp.async writes, ldmatrix and wgmma reads, bulk reductions' reads, and the plain stores
//     whose reader is the async proxy, which the kernels make through store_for_async_proxy;
//     other plain loads and stores are not seen): a read of bytes whose cp.async is still in
//     flight or completed since the last __syncthreads, a cp.async onto bytes another warp read
//     since the last __syncthreads, a wgmma or bulk read of bytes that their writer (cp.async or
//     store) did not pass through fence.proxy.async, and any access outside the launch's dynamic
//     shared memory;
//   - wgmma.mma_async with operands that differ across the warpgroup, or without a wgmma.fence
//     since the thread's last wgmma.wait_group.
// Plain loads and stores are checked by the builds with sanitizers (mk/emu.mk): AddressSanitizer
// sees global accesses past a cudaMalloc allocation, and shared accesses past the launch's dynamic
// shared memory (poisoned at each launch); ThreadSanitizer, with each CUDA thread a fiber
// (dev/emu/race.h), reports two threads of a CTA that access the same bytes, one writing, with no
// __syncthreads between them (racecheck's job on a GPU, in global memory too).
// What it cannot check: timing, races between CTAs (a dependence on their order shows as other
// bits under LLMC_EMU_SCHEDULE=reverse), static __shared__ arrays as shared memory (they are plain
// host statics, below), whether the real instructions agree with ptx_isa.h, and any order of
// streams but the three of cuda_runtime.cc (LLMC_EMU_STREAM_ORDER: at once, or deferred favouring
// the first or the last stream; a missing wait between streams or a host read before a
// synchronization shows there). What it reports instead of timing: which collectives CUDA's order
// lets run beside kernels (LLMC_EMU_OVERLAP, cuda_runtime.cc).
#ifndef DEV_EMU_CUDA_EMU_H
#define DEV_EMU_CUDA_EMU_H

#define LLMC_EMULATE_PTX 1

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <tuple>
#include <utility>
#include <vector>
#include <valgrind/memcheck.h>  // VALGRIND_MAKE_MEM_UNDEFINED: a no-op unless run under valgrind
#include "../../llmc/utils.h"
#include "ptx_isa.h"
#include "race.h"

// Device-code keywords the host compiler does not know (cuda_runtime.h already empties
// __global__, __device__ and __host__ for it; __shared__ is below).
#define __launch_bounds__(...)
using std::max;
using std::min;

namespace emu {

// Code that touches only the emulator's own data, never the program's memory: its bookkeeping
// (schedule, barriers, the shared-memory words' state) and an instruction's register operands
// (the emulator's copies, or the register arrays a kernel hands over). Not instrumented by
// AddressSanitizer or UBSan either, whose checks there cost more than the work (shuffles and
// barriers ran 2-3x slower under them) and keep the compiler from vectorizing the arithmetic.
// What reads or writes the program's memory for an instruction (cp.async, bulk reductions,
// wgmma's accumulators, the atomics) stays EMU_UNCHECKED: checked by AddressSanitizer and UBSan,
// unseen by ThreadSanitizer.
#define EMU_OWN __attribute__((no_sanitize("address", "undefined", "thread")))
// Small helpers that both kinds of code call: GCC inlines nothing across a difference in the
// sanitizer attributes unless told to.
#define EMU_INLINE inline __attribute__((always_inline))

// ---------------------------------------------------------------------------------------------
// Fibers: emu_switch_stack saves the callee-saved registers and the FP control words on the
// current stack, stores the stack pointer in *save_sp and resumes the fiber whose stack pointer is
// load_sp (System V x86-64). Defined once, in dev/emu/cuda_runtime.cc.
extern "C" void emu_switch_stack(void **save_sp, void *load_sp);

// A fiber's stack. Fibers switch to each other, so the stack pointer jumps between neighbouring
// stacks: under valgrind pass --max-stackframe=131072 (below STACK_BYTES; t_47 does), or valgrind
// takes such a jump for a frame pushed or popped and reports the stacks' bytes unaddressable.
// (VALGRIND_STACK_REGISTER would say so too, at a linear search of the stacks per switch: 3x slower.)
constexpr size_t STACK_BYTES = 256 * 1024;
constexpr size_t SMEM_LIMIT = 227 * 1024, SMEM_DEFAULT_LIMIT = 48 * 1024;
constexpr int MAX_THREADS = 1024, MAX_WARPS = MAX_THREADS / 32, MAX_WARPGROUPS = MAX_THREADS / 128;
constexpr int NO_THREAD = -1;

struct AsyncCopy {
    uint32_t dst;  // shared address
    const void *src;
    int bytes;
    bool valid;  // false: zero-fill, no read
};

// A bulk reduction (cp.reduce.async.bulk ... .add.u32): shared bytes [src, src + bytes) added as
// u32 to global memory at dst, when the issuing thread waits for its group.
struct BulkReduce {
    uint32_t *dst;
    uint32_t src;  // shared address
    uint32_t bytes;
};

// A wgmma.mma_async of one warpgroup, executed at its wgmma.wait_group.
struct WgmmaOp {
    int n;                  // N of m64nNk16
    bool a_in_registers, a_mn_major, b_mn_major, accumulate;
    uint64_t desc_a, desc_b;
    float (*d[128])[4];     // each thread's accumulators
    const uint32_t *a[128]; // each thread's A fragment (a_in_registers)
};

struct Barrier {
    int expected = 0, arrived = 0;
    uint64_t generation = 0;
    const char *what = nullptr;
    bool orders_memory = false;  // __syncthreads: for race.h, its threads' accesses before happen before those after
    char sync[2];                // race.h's sync objects, by generation parity
};

// An mbarrier (mbarrier.init/arrive/try_wait.parity on 8 bytes of shared memory): a phase completes
// when `pending` arrivals of the `expected` have come; waiters name the parity of the phase they
// wait for. Kept beside shared memory, by address.
struct Mbar {
    int expected = 0, pending = 0;
    uint64_t completed = 0;  // phases completed; the current phase's parity is completed % 2
    char sync[2];            // race.h: arrivals release, a completed wait acquires (by phase parity)
};

struct Thread {
    void *sp = nullptr;
    uint3 idx;
    int id;  // linear thread index in the CTA
    bool done = false;
    const char *waiting_at = nullptr;
    std::vector<AsyncCopy> uncommitted;
    std::vector<std::vector<AsyncCopy>> copy_groups;  // committed, oldest first (a few at most)
    std::vector<uint32_t> unfenced;  // shared words of this thread's completed copies and stores, not yet fenced
    std::vector<BulkReduce> bulk_uncommitted;
    std::vector<std::vector<BulkReduce>> bulk_groups;  // committed, oldest first
    bool wgmma_fenced = false;       // a wgmma.fence since the last wgmma.wait_group
    // Operands a thread hands to a collective, and what the collective hands back.
    uint64_t in[8];
    const void *in_ptr[2];
    uint32_t out[4];
};

// The bookkeeping of one 4-byte shared-memory word (see the checks above).
struct Word {
    uint64_t write_epoch = UINT64_MAX, read_epoch = UINT64_MAX;
    int writer = NO_THREAD, pending = 0;
    bool fenced = true;
    bool stored = false;  // the last write was a plain store (store_for_async_proxy), not a cp.async
    uint64_t reader_warps = 0;
};

struct Cta {
    // Fixed arrays, not vectors: the EMU_OWN code that indexes them on every instruction could not
    // inline a vector's (sanitized) operator[].
    Thread threads[MAX_THREADS];
    int n_threads = 0, n_warpgroups = 0;  // n_warpgroups: the whole ones (a CTA may end with single warps)
    Barrier warp[MAX_WARPS], warpgroup[MAX_WARPGROUPS];
    Barrier warp_bar[MAX_WARPS];            // __syncwarp (bar.warp.sync): orders the warp's memory
    Barrier warpgroup_bar[MAX_WARPGROUPS];  // bar.sync 1 + warpgroup, 128: orders memory, as block
    Barrier named[16];                   // bar.sync / bar.arrive ID, COUNT (ID 0 is __syncthreads')
    std::map<uint32_t, Mbar> mbars;      // by shared address
    Barrier block;
    uint64_t epoch = 0;  // __syncthreads passed so far
    std::vector<WgmmaOp> wgmma_uncommitted[8];
    std::deque<std::vector<WgmmaOp>> wgmma_groups[8];
    char end_sync;  // race.h: the threads release here as they exit, the host acquires when the CTA ends
};

struct State {
    alignas(1024) unsigned char smem[SMEM_LIMIT];
    Word words[SMEM_LIMIT / 4];
    size_t smem_bytes = 0;  // this launch's dynamic shared memory
    Cta cta;
    Thread *cur = nullptr;
    int live = 0;  // threads of the CTA not finished
    void *scheduler_sp = nullptr;
    void *scheduler_fiber = nullptr;  // race.h
    void *fibers[MAX_THREADS] = {};   // race.h: thread i of every CTA runs as fibers[i]
    char launch_sync;                 // race.h: the host releases here before a CTA's threads start
    const std::function<void()> *body = nullptr;
    uint64_t progress = 0;
    dim3 block_idx, block_dim, grid_dim;
    unsigned char *stacks[MAX_THREADS] = {};  // made as a CTA first needs them, kept
    double wgmma_sum[64][256];  // wgmma_execute's sums (128 KiB: too large for a fiber's stack)
    std::map<const void *, int> max_dynamic_smem;  // cudaFuncSetAttribute
    int step = 1;  // LLMC_EMU_SCHEDULE: 1 forward (CTAs and threads in ascending order), -1 reverse
    int smem_fill = 0xFF;  // LLMC_EMU_SMEM_FILL: the byte a CTA's shared memory starts as
};
// Every emulated instruction asks for the state: the construction stays out of line, so that
// state() itself is a load (under AddressSanitizer, not a stack frame with redzones each call).
__attribute__((noinline)) inline State *new_state() {
    State *s = new State();
    const char *e = getenv("LLMC_EMU_SCHEDULE");
    if (e && *e && strcmp(e, "forward") != 0) {
        if (strcmp(e, "reverse") != 0) die("emulator: LLMC_EMU_SCHEDULE=%s: expected forward or reverse", e);
        s->step = -1;
    }
    if (const char *f = getenv("LLMC_EMU_SMEM_FILL")) {
        char *end;
        const long v = strtol(f, &end, 0);
        if (!*f || *end || v < 0 || v > 255) die("emulator: LLMC_EMU_SMEM_FILL=%s: expected a byte, e.g. 0xFF", f);
        s->smem_fill = (int)v;
    }
    return s;
}
EMU_UNCHECKED EMU_INLINE State &state() {
    static State *const s = new_state();
    return *s;
}

[[noreturn]] inline void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
inline void fail(const char *fmt, ...) {
    State &s = state();
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (s.cur)
        die("emulator: block (%u,%u,%u) thread %d (warp %d lane %d): %s", s.block_idx.x, s.block_idx.y, s.block_idx.z,
            s.cur->id, s.cur->id / 32, s.cur->id % 32, msg);
    die("emulator: %s", msg);
}

// The first unfinished thread of the CTA from id `from` on, in the schedule's direction; nullptr
// when there is none.
EMU_OWN inline Thread *unfinished_from(int from) {
    State &s = state();
    const int n = s.cta.n_threads;
    for (int i = from; i >= 0 && i < n; i += s.step)
        if (!s.cta.threads[i].done) return &s.cta.threads[i];
    return nullptr;
}

// A waiting thread hands the core to the next unfinished thread of this pass (ids ascending, or
// descending under LLMC_EMU_SCHEDULE=reverse), or back to the scheduler at the pass's end
// (run_cta): one switch per wait, not two.
EMU_OWN inline void yield() {
    State &s = state();
    Thread *me = s.cur, *next = unfinished_from(me->id + s.step);
    if (!next) {
        race::switch_to(s.scheduler_fiber);
        emu_switch_stack(&me->sp, s.scheduler_sp);
        return;
    }
    s.cur = next;
    race::switch_to(s.fibers[next->id]);
    emu_switch_stack(&me->sp, next->sp);
}

// Arrive at b; the last thread to arrive runs on_complete() (with every thread's operands in place)
// and releases the others. Where b orders memory (race.h), what each thread did before arriving
// happens before what any of them does after.
template <typename F> EMU_OWN inline void arrive(Barrier &b, const char *what, F on_complete) {
    State &s = state();
    if (b.arrived == 0) b.what = what;
    else if (b.what != what && strcmp(b.what, what) != 0)  // the same literal is mostly the same pointer
        fail("divergence: arrives at %s while its group waits at %s", what, b.what);
    s.progress++;
    char *sync = b.orders_memory ? &b.sync[b.generation % 2] : nullptr;
    if (sync) race::release(sync);
    if (++b.arrived == b.expected) {
        if (sync) race::acquire(sync);
        on_complete();
        b.arrived = 0;
        b.generation++;
        return;
    }
    const uint64_t generation = b.generation;
    s.cur->waiting_at = what;
    while (b.generation == generation) yield();
    s.cur->waiting_at = nullptr;
    if (sync) race::acquire(sync);
}

EMU_OWN inline int warp_of(const Thread &t) { return t.id / 32; }
EMU_OWN inline Thread *warp_lanes() { return &state().cta.threads[32 * warp_of(*state().cur)]; }

// A collective of the current thread's whole warp (all 32 lanes must be alive).
template <typename F> EMU_OWN inline void warp_collective(const char *what, F on_complete) {
    State &s = state();
    Barrier &b = s.cta.warp[warp_of(*s.cur)];
    if (b.expected != 32) fail("%s in a warp with exited lanes", what);
    arrive(b, what, on_complete);
}
template <typename F> EMU_OWN inline void warpgroup_collective(const char *what, F on_complete) {
    State &s = state();
    if (s.cur->id / 128 >= s.cta.n_warpgroups)
        fail("%s by a thread of an incomplete warpgroup (CTA of %d threads)", what, s.cta.n_threads);
    Barrier &b = s.cta.warpgroup[s.cur->id / 128];
    if (b.expected != 128) fail("%s in a warpgroup with exited threads", what);
    arrive(b, what, on_complete);
}

// ---------------------------------------------------------------------------------------------
// Shared memory

EMU_OWN inline uint32_t shared_address(const void *p) {
    State &s = state();
    const unsigned char *c = (const unsigned char *)p;
    if (c < s.smem || c >= s.smem + SMEM_LIMIT) fail("address %p is not in shared memory", p);
    return (uint32_t)(c - s.smem);
}

EMU_OWN inline void check_range(uint32_t addr, int bytes, const char *what) {
    if ((size_t)addr + bytes > state().smem_bytes)
        fail("%s of shared bytes %u..%u, outside the launch's %zu bytes of dynamic shared memory", what, addr,
             addr + bytes - 1, state().smem_bytes);
}

// A read of shared bytes [addr, addr + bytes) by the warps in reader_warps (an ldmatrix, or a
// wgmma: async_proxy).
EMU_OWN inline void check_read(uint32_t addr, int bytes, uint64_t reader_warps, bool async_proxy, const char *what) {
    State &s = state();
    check_range(addr, bytes, what);
    for (uint32_t w = addr / 4; w <= (addr + bytes - 1) / 4; w++) {
        Word &word = s.words[w];
        if (word.pending)
            fail("%s reads shared byte %u while a cp.async to it (thread %d) is in flight", what, 4 * w, word.writer);
        if (word.write_epoch == s.cta.epoch)
            fail("%s reads shared byte %u, which thread %d's cp.async wrote since the last __syncthreads", what, 4 * w,
                 word.writer);
        if (async_proxy && !word.fenced)
            fail("%s reads shared byte %u, written by thread %d's %s without fence.proxy.async", what, 4 * w,
                 word.writer, word.stored ? "st.shared" : "cp.async");
        if (word.read_epoch != s.cta.epoch) word.read_epoch = s.cta.epoch, word.reader_warps = 0;
        word.reader_warps |= reader_warps;
    }
}

EMU_UNCHECKED inline void copy_complete(const AsyncCopy &c) {
    State &s = state();
    if (c.valid) race::program_read(c.src, c.bytes);
    race::program_write(s.smem + c.dst, c.bytes);
    if (c.valid) memcpy(s.smem + c.dst, c.src, c.bytes);
    else memset(s.smem + c.dst, 0, c.bytes);
    for (uint32_t w = c.dst / 4; w < (c.dst + c.bytes) / 4; w++) {
        Word &word = s.words[w];
        word.pending--;
        word.write_epoch = s.cta.epoch, word.writer = s.cur->id, word.fenced = false, word.stored = false;
        s.cur->unfenced.push_back(w);
    }
}

// A plain store of 4 or 8 bytes to shared memory that the async proxy reads next (a wgmma operand,
// a bulk reduction's source): llmc/attention.cuh's store_for_async_proxy. It writes at once, as a
// store does (the barriers that order it are race.h's to check), and its words stay unfenced until
// this thread's fence.proxy.async, as a completed cp.async's do.
EMU_UNCHECKED inline void store_for_async_proxy(void *dst, const void *value, int bytes) {
    State &s = state();
    const uint32_t a = shared_address(dst);
    if (a % bytes) fail("st.shared of %d bytes to shared byte %u: misaligned", bytes, a);
    check_range(a, bytes, "st.shared");
    race::program_write(s.smem + a, bytes);
    memcpy(s.smem + a, value, bytes);
    for (uint32_t w = a / 4; w < (a + bytes) / 4; w++) {
        Word &word = s.words[w];
        if (word.pending)
            fail("st.shared to shared byte %u while a cp.async to it (thread %d) is in flight", 4 * w, word.writer);
        word.writer = s.cur->id, word.fenced = false, word.stored = true;
        s.cur->unfenced.push_back(w);
    }
}

EMU_UNCHECKED inline void cp_async(void *dst, const void *src, int bytes, bool valid) {
    State &s = state();
    const uint32_t a = shared_address(dst);
    if (a % bytes) fail("cp.async of %d bytes to shared byte %u: misaligned", bytes, a);
    if (valid && (uintptr_t)src % bytes) fail("cp.async of %d bytes from %p: misaligned", bytes, src);
    check_range(a, bytes, "cp.async");
    const uint64_t my_warp = 1ull << warp_of(*s.cur);
    for (uint32_t w = a / 4; w < (a + bytes) / 4; w++) {
        Word &word = s.words[w];
        if (word.read_epoch == s.cta.epoch && (word.reader_warps & ~my_warp))
            fail("cp.async overwrites shared byte %u, which another warp read since the last __syncthreads", 4 * w);
        word.pending++, word.writer = s.cur->id;
    }
    s.cur->uncommitted.push_back({a, src, bytes, valid});
}

EMU_UNCHECKED inline void cp_async_commit() {
    Thread &t = *state().cur;
    t.copy_groups.push_back(std::move(t.uncommitted));
    t.uncommitted.clear();
}

EMU_UNCHECKED inline void cp_async_wait(int pending) {
    Thread &t = *state().cur;
    while ((int)t.copy_groups.size() > pending) {
        for (const AsyncCopy &c : t.copy_groups.front()) copy_complete(c);
        t.copy_groups.erase(t.copy_groups.begin());
    }
}

// Bulk reductions execute late, as cp.async does: at the issuing thread's wait_group.read,
// reading shared memory then, so that a kernel that overwrites the
// source before waiting adds the wrong values. The adds are relaxed atomics (CTAs' adds to one
// element may come in any order; integer sums do not depend on it).
EMU_UNCHECKED inline void bulk_reduce_add_u32(void *dst, const void *src, uint32_t bytes) {
    const uint32_t a = shared_address(src);
    if (a % 16 || (uintptr_t)dst % 16 || bytes % 16)
        fail("cp.reduce.async.bulk of %u bytes from shared byte %u to %p: not 16-byte aligned", bytes, a, dst);
    check_range(a, bytes, "cp.reduce.async.bulk");
    race::program_read(state().smem + a, bytes);  // for race.h: the source must be published by now
    state().cur->bulk_uncommitted.push_back({(uint32_t *)dst, a, bytes});
}
EMU_UNCHECKED inline void bulk_commit() {
    Thread &t = *state().cur;
    t.bulk_groups.push_back(std::move(t.bulk_uncommitted));
    t.bulk_uncommitted.clear();
}
EMU_UNCHECKED inline void bulk_wait(int pending) {
    State &s = state();
    Thread &t = *s.cur;
    while ((int)t.bulk_groups.size() > pending) {
        for (const BulkReduce &r : t.bulk_groups.front()) {
            check_read(r.src, r.bytes, 1ull << warp_of(t), true, "cp.reduce.async.bulk");
            race::program_read(s.smem + r.src, r.bytes);
            for (uint32_t i = 0; i < r.bytes / 4; i++) {
                uint32_t v;
                memcpy(&v, s.smem + r.src + 4 * i, 4);
                __atomic_fetch_add(r.dst + i, v, __ATOMIC_RELAXED);
            }
        }
        t.bulk_groups.erase(t.bulk_groups.begin());
    }
}

EMU_UNCHECKED inline void fence_proxy_async() {
    State &s = state();
    for (uint32_t w : s.cur->unfenced) s.words[w].fenced = true;
    s.cur->unfenced.clear();
}

// ---------------------------------------------------------------------------------------------
// Warp instructions

// Four doubles, one AVX2 register (mk/emu.mk builds for x86-64-v3): the sums of the matrix
// instructions (here and in cublaslt.cc) are formed four side by side.
typedef double Double4 __attribute__((vector_size(32)));

EMU_INLINE float bf16_bits_to_float(uint16_t h) {
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
EMU_INLINE uint16_t half_of(uint32_t reg, int h) { return (uint16_t)(h ? reg >> 16 : reg & 0xFFFF); }

EMU_OWN inline void ldmatrix_x4(uint32_t r[4], const void *p, bool trans) {
    State &s = state();
    race::program_read(p, 16);  // race.h: this lane's row, read by this lane
    s.cur->in_ptr[0] = p;
    warp_collective(trans ? "ldmatrix.x4.trans" : "ldmatrix.x4", [trans] () EMU_OWN {
        Thread *lanes = warp_lanes();
        const uint64_t warp = 1ull << warp_of(lanes[0]);
        uint32_t rows[32];
        for (int l = 0; l < 32; l++) {
            rows[l] = shared_address(lanes[l].in_ptr[0]);
            if (rows[l] % 16) fail("ldmatrix: lane %d's row address (shared byte %u) is not 16-byte aligned", l, rows[l]);
            check_read(rows[l], 16, warp, false, "ldmatrix");
        }
        for (int l = 0; l < 32; l++)
            for (int m = 0; m < 4; m++) {
                uint32_t reg = 0;
                for (int h = 0; h < 2; h++) {
                    const ptx_isa::RowCol e = ptx_isa::ldmatrix_element(l, h, trans);
                    uint16_t v;
                    memcpy(&v, state().smem + rows[8 * m + e.row] + 2 * e.col, 2);
                    reg |= (uint32_t)v << (16 * h);
                }
                lanes[l].out[m] = reg;
            }
    });
    memcpy(r, s.cur->out, 4 * sizeof(uint32_t));
}

// c += a b, m16n8k16, bf16 inputs, fp32 accumulators.
EMU_OWN inline void mma_16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
    Thread &me = *state().cur;
    for (int i = 0; i < 4; i++) me.in[i] = a[i];
    me.in[4] = b0, me.in[5] = b1;
    for (int e = 0; e < 4; e++) {
        uint32_t u;
        memcpy(&u, &c[e], 4);
        me.in[6 + e / 2] = e % 2 ? (me.in[6 + e / 2] | (uint64_t)u << 32) : u;
    }
    warp_collective("mma.sync.m16n8k16", [] () EMU_OWN {
        Thread *lanes = warp_lanes();
        // bf16 values, exact in double as are their products; B's rows as two vectors of 4 columns
        double A[16][16];
        Double4 B[16][2];
        for (int l = 0; l < 32; l++) {
            for (int r = 0; r < 4; r++)
                for (int h = 0; h < 2; h++) {
                    const ptx_isa::RowCol e = ptx_isa::mma_a_element(l, r, h);
                    A[e.row][e.col] = bf16_bits_to_float(half_of((uint32_t)lanes[l].in[r], h));
                }
            for (int r = 0; r < 2; r++)
                for (int h = 0; h < 2; h++) {
                    const ptx_isa::RowCol e = ptx_isa::mma_b_element(l, r, h);
                    B[e.row][e.col / 4][e.col % 4] = bf16_bits_to_float(half_of((uint32_t)lanes[l].in[4 + r], h));
                }
        }
        // sum[m][n] = A[m][0] B[0][n] + ... + A[m][15] B[15][n], added in that order; a row's 8
        // sums side by side in two vector registers through its loop over k.
        Double4 sum[16][2];
        for (int m = 0; m < 16; m++) {
            Double4 left = {}, right = {};  // columns 0-3 and 4-7
            for (int k = 0; k < 16; k++) {
                left += A[m][k] * B[k][0];
                right += A[m][k] * B[k][1];
            }
            sum[m][0] = left, sum[m][1] = right;
        }
        for (int l = 0; l < 32; l++)
            for (int e = 0; e < 4; e++) {
                const ptx_isa::RowCol rc = ptx_isa::mma_c_element(l, e);
                const uint32_t cu = (uint32_t)(lanes[l].in[6 + e / 2] >> (32 * (e % 2)));
                float cf;
                memcpy(&cf, &cu, 4);
                const float d = (float)((double)cf + sum[rc.row][rc.col / 4][rc.col % 4]);
                memcpy(&lanes[l].out[e], &d, 4);
            }
    });
    memcpy(c, me.out, 4 * sizeof(float));
}

template <typename T> EMU_OWN inline T shfl_xor(unsigned mask, T v, int lane_mask) {
    static_assert(sizeof(T) <= 8, "shuffled values fit 8 bytes");
    if (mask != 0xffffffffu) fail("__shfl_xor_sync with mask %08x (only full warps are emulated)", mask);
    Thread &me = *state().cur;
    memcpy(&me.in[0], &v, sizeof(T));
    me.in[1] = (uint64_t)lane_mask;
    warp_collective("shfl.sync.bfly", [] () EMU_OWN {
        Thread *lanes = warp_lanes();
        for (int l = 0; l < 32; l++) {
            if (lanes[l].in[1] != lanes[0].in[1]) fail("__shfl_xor_sync: lanes disagree on the lane mask");
            const uint64_t v = lanes[l ^ (int)(lanes[l].in[1] & 31)].in[0];
            memcpy(lanes[l].out, &v, 8);
        }
    });
    T r;
    memcpy(&r, me.out, sizeof(T));
    return r;
}

// redux.sync.max.u32 over the warp.
EMU_OWN inline unsigned reduce_max(unsigned mask, unsigned v) {
    if (mask != 0xffffffffu) fail("__reduce_max_sync with mask %08x (only full warps are emulated)", mask);
    Thread &me = *state().cur;
    me.in[0] = v;
    warp_collective("redux.sync.max", [] () EMU_OWN {
        Thread *lanes = warp_lanes();
        uint32_t m = 0;
        for (int l = 0; l < 32; l++) m = std::max(m, (uint32_t)lanes[l].in[0]);
        for (int l = 0; l < 32; l++) lanes[l].out[0] = m;
    });
    return me.out[0];
}

inline float exp2_ftz(float x) {
    const float y = exp2f(x);
    return fpclassify(y) == FP_SUBNORMAL ? 0.0f : y;
}

// ---------------------------------------------------------------------------------------------
// wgmma

EMU_UNCHECKED inline void wgmma_fence() { state().cur->wgmma_fenced = true; }

// Issue: every thread of the warpgroup hands its accumulator (and A fragment) pointers and the
// descriptors; the op joins the warpgroup's open group.
EMU_UNCHECKED inline void wgmma_issue(int n, bool a_in_registers, bool a_mn_major, bool b_mn_major, bool accumulate,
                                      uint64_t desc_a, uint64_t desc_b, float (*d)[4], const uint32_t *a) {
    Thread &me = *state().cur;
    if (!me.wgmma_fenced) fail("wgmma.mma_async without a wgmma.fence since the last wgmma.wait_group");
    me.in[0] = desc_a, me.in[1] = desc_b, me.in[2] = (uint64_t)n | (uint64_t)a_in_registers << 16 |
                                                     (uint64_t)b_mn_major << 17 | (uint64_t)accumulate << 18 |
                                                     (uint64_t)a_mn_major << 19;
    me.in_ptr[0] = d, me.in_ptr[1] = a;
    warpgroup_collective("wgmma.mma_async", [] () EMU_UNCHECKED {
        State &s = state();
        const int wg = s.cur->id / 128;
        Thread *threads = &s.cta.threads[128 * wg];
        WgmmaOp op;
        const uint64_t shape = threads[0].in[2];
        op.n = (int)(shape & 0xFFFF), op.a_in_registers = shape >> 16 & 1, op.b_mn_major = shape >> 17 & 1,
        op.accumulate = shape >> 18 & 1, op.a_mn_major = shape >> 19 & 1, op.desc_a = threads[0].in[0], op.desc_b = threads[0].in[1];
        for (int i = 0; i < 128; i++) {
            if (threads[i].in[2] != shape || threads[i].in[1] != op.desc_b ||
                (!op.a_in_registers && threads[i].in[0] != op.desc_a))
                fail("wgmma.mma_async: thread %d of the warpgroup has other operands than thread 0", i);
            op.d[i] = (float (*)[4])threads[i].in_ptr[0];
            op.a[i] = (const uint32_t *)threads[i].in_ptr[1];
        }
        race::Unchecked queue;
        s.cta.wgmma_uncommitted[wg].push_back(op);
    });
}

EMU_UNCHECKED inline void wgmma_commit() {
    warpgroup_collective("wgmma.commit_group", [] () EMU_UNCHECKED {
        State &s = state();
        const int wg = s.cur->id / 128;
        race::Unchecked queue;
        s.cta.wgmma_groups[wg].push_back(std::move(s.cta.wgmma_uncommitted[wg]));
        s.cta.wgmma_uncommitted[wg].clear();
    });
}

EMU_UNCHECKED inline float smem_bf16(uint32_t addr) {
    race::program_read(state().smem + addr, 2);
    uint16_t v;
    memcpy(&v, state().smem + addr, 2);
    return bf16_bits_to_float(v);
}

// sum[m][n] = 0 + A[m][0] B[0][n] + ... + A[m][15] B[15][n] for the n_cols columns, added in that
// order; n innermost, so that a row's sums are formed side by side. (No separate zeroing: the
// compiler would make it a memset, which ThreadSanitizer sees, of a buffer every warpgroup writes.)
EMU_OWN inline void wgmma_sums(const float (*A)[16], const float (*B)[256], int n_cols, double (*sum)[256]) {
    for (int m = 0; m < 64; m++)
        for (int k = 0; k < 16; k++)
            for (int n = 0; n < n_cols; n++) sum[m][n] = (k == 0 ? 0.0 : sum[m][n]) + (double)A[m][k] * B[k][n];
}

EMU_UNCHECKED inline void wgmma_execute(const WgmmaOp &op, int wg) {
    const uint64_t warps = 0xFull << (4 * wg);
    float A[64][16], B[16][256];  // B[k][n]
    for (int m = 0; m < 64; m++)
        for (int k = 0; k < 16; k++)
            if (!op.a_in_registers) {
                const uint32_t addr = ptx_isa::wgmma_read_address(op.desc_a, op.a_mn_major, m, k);
                check_read(addr, 2, warps, true, "wgmma (A)");
                A[m][k] = smem_bf16(addr);
            }
    if (op.a_in_registers)
        for (int i = 0; i < 128; i++)
            for (int r = 0; r < 4; r++)
                for (int h = 0; h < 2; h++) {
                    const ptx_isa::RowCol e = ptx_isa::wgmma_a_element(i, r, h);
                    A[e.row][e.col] = bf16_bits_to_float(half_of(op.a[i][r], h));
                }
    for (int n = 0; n < op.n; n++)
        for (int k = 0; k < 16; k++) {
            const uint32_t addr = ptx_isa::wgmma_read_address(op.desc_b, op.b_mn_major, n, k);
            check_read(addr, 2, warps, true, "wgmma (B)");
            B[k][n] = smem_bf16(addr);
        }
    double (*sum)[256] = state().wgmma_sum;
    wgmma_sums(A, B, op.n, sum);
    for (int i = 0; i < 128; i++)
        for (int nb = 0; nb < op.n / 8; nb++)
            for (int e = 0; e < 4; e++) {
                const ptx_isa::RowCol rc = ptx_isa::wgmma_d_element(i, nb, e);
                float &d = op.d[i][nb][e];
                d = (float)((op.accumulate ? (double)d : 0.0) + sum[rc.row][rc.col]);
            }
}

EMU_UNCHECKED inline void wgmma_wait(int pending) {
    warpgroup_collective("wgmma.wait_group", [pending] () EMU_UNCHECKED {
        State &s = state();
        const int wg = s.cur->id / 128;
        for (;;) {
            std::vector<WgmmaOp> group;
            {
                race::Unchecked queue;
                if ((int)s.cta.wgmma_groups[wg].size() <= pending) break;
                group = std::move(s.cta.wgmma_groups[wg].front());
                s.cta.wgmma_groups[wg].pop_front();
            }
            for (const WgmmaOp &op : group) wgmma_execute(op, wg);  // its reads are the program's
        }
    });
    state().cur->wgmma_fenced = false;
}

// ---------------------------------------------------------------------------------------------
// Launch

EMU_OWN inline void syncthreads() {
    State &s = state();
    arrive(s.cta.block, "__syncthreads", [&s] () EMU_OWN { s.cta.epoch++; });
}

// __syncwarp: the barrier of the calling thread's warp (all 32 lanes; only the full mask is
// emulated), which orders the lanes' accesses for race.h, as bar.warp.sync orders memory among
// them. Like warpgroup_sync below, it does not publish cp.async data.
EMU_OWN inline void syncwarp(unsigned mask) {
    State &s = state();
    if (mask != 0xffffffffu) fail("__syncwarp with mask %08x (only full warps are emulated)", mask);
    Barrier &b = s.cta.warp_bar[warp_of(*s.cur)];
    if (b.expected != 32) fail("__syncwarp in a warp with exited lanes");
    arrive(b, "__syncwarp", [] () EMU_OWN {});
}

// llmc/attention.cuh's warpgroup_sync: the barrier of the calling thread's warpgroup alone. It
// orders the warpgroup's accesses for race.h; it does not publish cp.async data (the checks of
// in-flight or unpublished bytes count __syncthreads alone, so a kernel relying on it for that
// fails them: stricter than CUDA, where it would suffice among the warpgroup's own threads).
EMU_OWN inline void warpgroup_sync() {
    State &s = state();
    if (s.cur->id / 128 >= s.cta.n_warpgroups)
        fail("bar.sync of a warpgroup by a thread of an incomplete warpgroup (CTA of %d threads)", s.cta.n_threads);
    Barrier &b = s.cta.warpgroup_bar[s.cur->id / 128];
    if (b.expected != 128) fail("bar.sync of a warpgroup with exited threads");
    arrive(b, "bar.sync (warpgroup)", [] () EMU_OWN {});
}

// bar.sync ID, COUNT (wait) and bar.arrive ID, COUNT (no wait), IDs 1..15: the barrier completes
// when COUNT threads have arrived, whichever instruction each used; the arrivals release what their
// threads did before, the waiters acquire it (race.h), as the PTX ISA orders a barrier's memory.
// Like warpgroup_sync, it does not publish cp.async data for the checks above.
EMU_OWN inline void named_barrier(int id, int count, bool wait) {
    State &s = state();
    if (id <= 0 || id >= 16 || count <= 0 || count % 32 || count > s.cta.n_threads)
        fail("bar.%s %d, %d: barrier 1..15 and a thread count, a multiple of 32, at most the CTA's", wait ? "sync" : "arrive",
             id, count);
    Barrier &b = s.cta.named[id];
    if (b.arrived == 0) b.expected = count;
    else if (b.expected != count) fail("bar %d: %d threads expected, this arrival says %d", id, b.expected, count);
    if (wait) {
        arrive(b, "bar.sync/bar.arrive", [] () EMU_OWN {});
        return;
    }
    s.progress++;
    race::release(&b.sync[b.generation % 2]);
    if (b.arrived == 0) b.what = "bar.sync/bar.arrive";
    if (++b.arrived == b.expected) b.arrived = 0, b.generation++;
}

// mbarriers. init by one thread before a __syncthreads; arrive counts one arrival (release), and a
// phase that gets its last arrival completes: the next begins with `expected` pending again. A
// completion publishes cp.async data for the checks above, as __syncthreads does (a CTA-wide epoch:
// weaker than CUDA's, where it publishes to the waiters alone; race.h sees the exact order).
// wait(parity) returns once the phase of that parity has completed (the current phase's parity is
// the other), yielding to the other threads until then.
EMU_OWN inline Mbar &mbar_at(const void *bar, const char *what) {
    State &s = state();
    const uint32_t a = shared_address(bar);
    if (a % 8) fail("%s at shared byte %u: not 8-byte aligned", what, a);
    check_range(a, 8, what);
    const auto it = s.cta.mbars.find(a);
    if (it == s.cta.mbars.end()) fail("%s at shared byte %u: no mbarrier.init there", what, a);
    return it->second;
}
EMU_OWN inline void mbar_init(void *bar, int count) {
    State &s = state();
    const uint32_t a = shared_address(bar);
    if (a % 8 || count <= 0) fail("mbarrier.init at shared byte %u with count %d", a, count);
    check_range(a, 8, "mbarrier.init");
    Mbar &m = s.cta.mbars[a];
    m.expected = m.pending = count, m.completed = 0;
}
EMU_OWN inline void mbar_arrive(void *bar) {
    State &s = state();
    Mbar &m = mbar_at(bar, "mbarrier.arrive");
    s.progress++;
    race::release(&m.sync[m.completed % 2]);
    if (--m.pending == 0) m.completed++, m.pending = m.expected, s.cta.epoch++;
}
EMU_OWN inline void mbar_wait(void *bar, int parity) {
    State &s = state();
    Mbar *m = &mbar_at(bar, "mbarrier.try_wait.parity");
    s.cur->waiting_at = "mbarrier.try_wait.parity";
    while ((int)(m->completed % 2) == (parity & 1)) {  // the phase of this parity is still the current one
        yield();
        m = &mbar_at(bar, "mbarrier.try_wait.parity");
    }
    s.cur->waiting_at = nullptr;
    race::acquire(&m->sync[parity & 1]);
}

// A finished thread leaves its barriers; one that leaves a warp or warpgroup collective waiting is
// an error (the collectives here need every lane).
EMU_OWN inline void thread_exit() {
    State &s = state();
    Thread &t = *s.cur;
    if (!t.bulk_uncommitted.empty() || !t.bulk_groups.empty())
        fail("exits with bulk reductions not waited for (their shared source would be gone)");
    t.done = true;
    s.live--;
    s.progress++;
    const bool whole_warpgroup = t.id / 128 < s.cta.n_warpgroups;
    Barrier *groups[4] = {&s.cta.warp[warp_of(t)], &s.cta.warp_bar[warp_of(t)],
                          whole_warpgroup ? &s.cta.warpgroup[t.id / 128] : nullptr,
                          whole_warpgroup ? &s.cta.warpgroup_bar[t.id / 128] : nullptr};
    for (Barrier *b : groups)
        if (b) {
            if (b->arrived) fail("exits while its warp or warpgroup waits at %s", b->what);
            b->expected--;
        }
    s.cta.block.expected--;
    if (s.cta.block.arrived && s.cta.block.arrived == s.cta.block.expected) {
        s.cta.block.arrived = 0, s.cta.block.generation++, s.cta.epoch++;
    }
    // race.h, last (the out-of-line reads above are the thread's too): what it did happens before
    // the host's next work (not before a barrier its exit completes: exited threads order nothing).
    race::release(&s.cta.end_sync);
}

[[noreturn]] EMU_OWN inline void fiber_main() {
    race::acquire(&state().launch_sync);
    (*state().body)();
    thread_exit();
    yield();
    abort();  // a finished fiber is never resumed
}

EMU_OWN inline void run_cta(int n_threads) {
    State &s = state();
    Cta &cta = s.cta;
    const int n_warps = (n_threads + 31) / 32;
    cta.n_threads = n_threads;  // each thread reset below, keeping its vectors' storage
    cta.n_warpgroups = n_threads / 128;
    for (int g = 0; g < cta.n_warpgroups; g++) {
        cta.warpgroup[g] = Barrier(), cta.warpgroup[g].expected = 128;
        cta.warpgroup_bar[g] = Barrier();
        cta.warpgroup_bar[g].expected = 128, cta.warpgroup_bar[g].orders_memory = true;
    }
    for (Barrier &b : cta.named) b = Barrier(), b.orders_memory = true;
    cta.mbars.clear();
    cta.block = Barrier();
    cta.block.expected = n_threads;
    cta.block.orders_memory = true;
    cta.epoch = 0;
    for (int w = 0; w < n_warps; w++) {
        cta.warp[w] = Barrier(), cta.warp_bar[w] = Barrier();
        cta.warp[w].expected = cta.warp_bar[w].expected = std::min(32, n_threads - 32 * w);
        cta.warp_bar[w].orders_memory = true;
    }
    for (int i = 0; i < 8; i++) cta.wgmma_uncommitted[i].clear(), cta.wgmma_groups[i].clear();
    std::fill(s.words, s.words + (s.smem_bytes + 3) / 4, Word());  // checked accesses stay below
    memset(s.smem, s.smem_fill, s.smem_bytes);  // garbage, as a GPU's shared memory starts
    VALGRIND_MAKE_MEM_UNDEFINED(s.smem, s.smem_bytes);  // and so valgrind reads it (cuda_runtime.cc)
    for (int i = 0; i < n_threads; i++)
        if (!s.stacks[i]) s.stacks[i] = (unsigned char *)aligned_alloc(64, STACK_BYTES);
    // race.h: a fiber per thread index, kept for every CTA (creating one costs TSan megabytes)
    for (int i = 0; i < n_threads; i++)
        if (!s.fibers[i]) s.fibers[i] = race::create_fiber();
    s.scheduler_fiber = race::current_fiber();
    for (int i = 0; i < n_threads; i++) {
        Thread &t = cta.threads[i];
        t.done = false, t.waiting_at = nullptr, t.wgmma_fenced = false;
        t.uncommitted.clear(), t.copy_groups.clear(), t.unfenced.clear();
        t.bulk_uncommitted.clear(), t.bulk_groups.clear();
        t.id = i;
        t.idx = {(unsigned)(i % s.block_dim.x), (unsigned)(i / s.block_dim.x % s.block_dim.y),
                 (unsigned)(i / (s.block_dim.x * s.block_dim.y))};
        // Initial frame, popped by emu_switch_stack: FP control words, six registers, the entry
        // as return address, and a slot that keeps the stack 16-byte aligned as at a call.
        uint64_t *top = (uint64_t *)(s.stacks[i] + STACK_BYTES);
        top[-1] = 0;
        top[-2] = (uint64_t)(uintptr_t)&fiber_main;
        for (int r = 3; r <= 8; r++) top[-r] = 0;
        const uint32_t control[2] = {0x1F80, 0x037F};  // MXCSR and x87 control word at reset
        memcpy(&top[-9], control, 8);
        t.sp = &top[-9];
    }
    // Passes over the unfinished threads in id order (LLMC_EMU_SCHEDULE): the scheduler starts the
    // first, each hands over to the next as it waits or ends (yield), and the last returns here.
    s.live = n_threads;
    race::release(&s.launch_sync);  // the host's work so far (the resets above too) happens before the CTA's
    while (s.live > 0) {
        const uint64_t before = s.progress;
        Thread *first = unfinished_from(s.step > 0 ? 0 : n_threads - 1);
        s.cur = first;
        race::switch_to(s.fibers[first->id]);
        emu_switch_stack(&s.scheduler_sp, first->sp);
        s.cur = nullptr;
        if (s.live > 0 && s.progress == before) {
            for (int i = 0; i < n_threads; i++)
                if (!cta.threads[i].done)
                    die("emulator: block (%u,%u,%u): deadlock: thread %d waits at %s (and %d others)", s.block_idx.x,
                        s.block_idx.y, s.block_idx.z, i, cta.threads[i].waiting_at, s.live - 1);
        }
    }
    race::acquire(&cta.end_sync);  // what the CTA did happens before the host's next work
}

// AddressSanitizer's interface, weak: present only in a program linked with ASan (mk/emu.mk's
// sanitized builds), whichever object this inline code ends up in.
extern "C" void __asan_poison_memory_region(void const volatile *addr, size_t size) __attribute__((weak));
extern "C" void __asan_unpoison_memory_region(void const volatile *addr, size_t size) __attribute__((weak));

// Shared memory past this launch's dynamic bytes is poisoned for AddressSanitizer, so that a plain
// load or store of a kernel beyond them is reported (use-after-poison), as compute-sanitizer's
// memcheck reports an out-of-bounds shared access. The emulated instructions check their own
// ranges first (check_range).
EMU_UNCHECKED inline void poison_beyond_dynamic_smem() {
    State &s = state();
    if (!__asan_poison_memory_region) return;
    __asan_unpoison_memory_region(s.smem, SMEM_LIMIT);
    __asan_poison_memory_region(s.smem + s.smem_bytes, SMEM_LIMIT - s.smem_bytes);
}

inline void launch(dim3 grid, dim3 block, size_t smem_bytes, const void *kernel, const std::function<void()> &body) {
    State &s = state();
    const size_t n_threads = (size_t)block.x * block.y * block.z;
    if (n_threads == 0 || n_threads > 1024) fail("launch with %zu threads per block", n_threads);
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535)
        fail("launch with grid (%u,%u,%u)", grid.x, grid.y, grid.z);
    const auto set = s.max_dynamic_smem.find(kernel);
    const size_t allowed = set == s.max_dynamic_smem.end() ? SMEM_DEFAULT_LIMIT : (size_t)set->second;
    if (smem_bytes > allowed)
        fail("launch with %zu bytes of dynamic shared memory, above the kernel's limit of %zu (cudaFuncSetAttribute)",
             smem_bytes, allowed);
    s.smem_bytes = smem_bytes;
    poison_beyond_dynamic_smem();
    s.body = &body;
    s.grid_dim = grid, s.block_dim = block;
    const uint64_t n_ctas = (uint64_t)grid.x * grid.y * grid.z;
    for (uint64_t i = 0; i < n_ctas; i++) {
        const uint64_t c = s.step > 0 ? i : n_ctas - 1 - i;  // x fastest, as CUDA numbers CTAs
        s.block_idx = {(unsigned)(c % grid.x), (unsigned)(c / grid.x % grid.y), (unsigned)(c / grid.x / grid.y)};
        run_cta((int)n_threads);
    }
    s.body = nullptr;
}

// Work a stream runs in order: at once, or when the stream scheduler of cuda_runtime.cc reaches it
// (LLMC_EMU_STREAM_ORDER). Stream 0 is the legacy default stream. kind and name: what the
// overlap report counts (LLMC_EMU_OVERLAP, cuda_runtime.cc): kernels and matmuls as compute, and
// each collective by its name.
enum class WorkKind { COMPUTE, COLLECTIVE, OTHER };
void stream_enqueue(cudaStream_t stream, std::function<void()> work, WorkKind kind, const char *name = "");

// LLMC_LAUNCH(grid, block, smem, stream, kernel)(args...) (llmc/launch.cuh). The arguments are
// converted to the kernel's parameters and copied at the launch, as CUDA copies them; the kernel
// runs when its stream gets to it.
template <typename... Params> struct Launcher {
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;
    void (*kernel)(Params...);
    template <typename... Args> void operator()(Args &&...args) const {
        void (*k)(Params...) = kernel;
        const dim3 g = grid, b = block;
        const size_t bytes = smem;
        stream_enqueue(stream, [=, values = std::tuple<std::decay_t<Params>...>(std::forward<Args>(args)...)] {
            const std::function<void()> body = [&] { std::apply(k, values); };
            launch(g, b, bytes, (const void *)k, body);
        }, WorkKind::COMPUTE);
    }
};
template <typename... Params>
inline Launcher<Params...> launcher(dim3 grid, dim3 block, size_t smem, cudaStream_t stream, void (*kernel)(Params...)) {
    return {grid, block, smem, stream, kernel};
}

inline unsigned char *dynamic_smem() { return state().smem; }
EMU_UNCHECKED EMU_INLINE uint3 thread_index() { return state().cur->idx; }  // threadIdx, below

}  // namespace emu

// ---------------------------------------------------------------------------------------------
// What kernels see

#define threadIdx (emu::thread_index())
#define blockIdx (emu::state().block_idx)
#define blockDim (emu::state().block_dim)
#define gridDim (emu::state().grid_dim)
inline void __syncthreads() { emu::syncthreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { emu::syncwarp(mask); }
template <typename T> inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask) { return emu::shfl_xor(mask, v, lane_mask); }
inline unsigned __reduce_max_sync(unsigned mask, unsigned v) { return emu::reduce_max(mask, v); }

// Static shared memory: a __shared__ variable exists once per CTA, and the CTAs of a launch run one
// after another on one OS thread, so a function-local static is exactly that. (It keeps the previous
// CTA's values instead of garbage; the race build orders the CTAs, so reusing it races with nothing.)
#undef __shared__
#define __shared__ static

// Relaxed atomics, as CUDA's (one fiber runs at a time, so any read-modify-write would be atomic;
// these are also atomic to race.h's ThreadSanitizer, which must not see a race between them).
template <typename T> inline T atomicAdd(T *p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
inline unsigned atomicMax(unsigned *p, unsigned v) {
    unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (old < v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    return old;
}

// Loads with cache hints are loads; the float intrinsics are IEEE fp32 operations rounded to
// nearest even, which the host's SSE arithmetic is (built with -ffp-contract=off: no fused
// multiply-adds where the kernels wrote none).
template <typename T> inline T __ldcs(const T *p) { return *p; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
// cvt.rn.f32.s32 (the host's conversion rounds to nearest even) and cvt.rni.s32.f32: to nearest
// even, NaN to 0, out of range saturated.
inline float __int2float_rn(int i) { return (float)i; }
inline int __float2int_rn(float x) {
    if (x != x) return 0;
    if (x >= 0x1p31f) return INT32_MAX;
    if (x < -0x1p31f) return INT32_MIN;
    return (int)nearbyintf(x);
}
inline unsigned __float_as_uint(float f) {
    unsigned u;
    memcpy(&u, &f, 4);
    return u;
}
inline float __uint_as_float(unsigned u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
// Byte n of the result is byte ((s >> 4n) & 7) of the 8 bytes y:x (x the low word), as CUDA's
// __byte_perm documents (the selector's upper 16 bits are not used).
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    const uint64_t bytes = (uint64_t)y << 32 | x;
    unsigned r = 0;
    for (int n = 0; n < 4; n++) r |= (unsigned)(bytes >> (8 * ((s >> (4 * n)) & 7)) & 0xFF) << (8 * n);
    return r;
}
// llmc/cuda_common.cuh's %globaltimer read.
inline uint64_t global_timer_ns() {
    const auto now = std::chrono::steady_clock::now().time_since_epoch();
    return (uint64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
}

// The PTX wrappers of llmc/attention.cuh (same names and contracts).
namespace attention_detail {
inline uint32_t smem_addr(const void *p) { return emu::shared_address(p); }
inline void cp_async_16(void *dst, const void *src, bool valid) { emu::cp_async(dst, src, 16, valid); }
inline void cp_async_4(void *dst, const void *src, bool valid) { emu::cp_async(dst, src, 4, valid); }
inline void cp_async_commit() { emu::cp_async_commit(); }
template <typename T> inline void store_for_async_proxy(T *dst, T value) {
    emu::store_for_async_proxy(dst, &value, sizeof(T));
}
inline void red_add_u32(uint32_t *p, uint32_t v) { __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
inline void bulk_reduce_add_u32(void *dst, const void *src, uint32_t bytes) {
    emu::bulk_reduce_add_u32(dst, src, bytes);
}
inline void bulk_commit() { emu::bulk_commit(); }
template <int PENDING> inline void bulk_wait_read() { emu::bulk_wait(PENDING); }
template <int PENDING> inline void cp_async_wait() { emu::cp_async_wait(PENDING); }
inline void ldmatrix_x4(uint32_t r[4], const void *p) { emu::ldmatrix_x4(r, p, false); }
inline void ldmatrix_x4_trans(uint32_t r[4], const void *p) { emu::ldmatrix_x4(r, p, true); }
inline void mma_16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) { emu::mma_16816(c, a, b0, b1); }
inline float exp2_ftz(float x) { return emu::exp2_ftz(x); }
inline void warpgroup_sync() { emu::warpgroup_sync(); }
inline void named_barrier_sync(int id, int count) { emu::named_barrier(id, count, true); }
inline void named_barrier_arrive(int id, int count) { emu::named_barrier(id, count, false); }
inline void mbar_init(uint64_t *bar, int count) { emu::mbar_init(bar, count); }
inline void mbar_arrive(uint64_t *bar) { emu::mbar_arrive(bar); }
inline void mbar_wait(uint64_t *bar, int parity) {  // ends with __syncwarp, as llmc/attention.cuh's
    emu::mbar_wait(bar, parity);
    __syncwarp();
}
}  // namespace attention_detail

// The instruction wrappers of llmc/wgmma.cuh (same names and contracts).
namespace wgmma {
inline void fence() { emu::wgmma_fence(); }
inline void commit() { emu::wgmma_commit(); }
template <int N> inline void wait() { emu::wgmma_wait(N); }
template <int BLOCKS> inline void hold_registers(float (*)[4]) {}
template <int BLOCKS> inline void hold_registers(uint32_t (*)[4]) {}
inline void fence_proxy_async_shared() { emu::fence_proxy_async(); }
template <bool MN_MAJOR = false> inline void mma_ss_n64(float (*d)[4], uint64_t desc_a, uint64_t desc_b, bool accumulate) {
    emu::wgmma_issue(64, false, MN_MAJOR, MN_MAJOR, accumulate, desc_a, desc_b, d, nullptr);
}
inline void mma_ss_n128(float (*d)[4], uint64_t desc_a, uint64_t desc_b, bool accumulate) {
    emu::wgmma_issue(128, false, false, false, accumulate, desc_a, desc_b, d, nullptr);
}
template <int N> inline void mma_rs_mn_major_b(float (*d)[4], const uint32_t a[4], uint64_t desc_b) {
    emu::wgmma_issue(N, true, false, true, true, 0, desc_b, d, a);
}
constexpr int wgmma_compiled_in() { return 1; }
// setmaxnreg: a warpgroup collective (its threads must agree), registers are the host's.
template <int REGS> inline void raise_registers() { emu::warpgroup_collective("setmaxnreg.inc", [] {}); }
template <int REGS> inline void lower_registers() { emu::warpgroup_collective("setmaxnreg.dec", [] {}); }
}  // namespace wgmma

// ---------------------------------------------------------------------------------------------
// The CUDA runtime: dev/emu/cuda_runtime.cc, linked into every emulated program.

// cuda_runtime.h's overload for a kernel, which it declares for nvcc only.
template <typename... Params> cudaError_t cudaFuncSetAttribute(void (*kernel)(Params...), cudaFuncAttribute attr, int value) {
    return cudaFuncSetAttribute((const void *)kernel, attr, value);
}
template <typename... Params> cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *attr, void (*kernel)(Params...)) {
    return cudaFuncGetAttributes(attr, (const void *)kernel);
}

#endif  // DEV_EMU_CUDA_EMU_H
