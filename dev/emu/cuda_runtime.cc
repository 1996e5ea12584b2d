// The CUDA runtime calls of the programs the emulator runs (dev/emu/cuda_emu.h), on host memory:
// device memory is host memory and a copy is memcpy. Linked once into each emulated program
// (mk/emu.mk).
//
// Streams. Each stream is a queue of work (kernels, copies, memsets, matmuls, collectives, event
// records) that runs in order, after what it waits for: events (cudaStreamWaitEvent) and, for the
// legacy default stream 0 and the blocking streams, each other (CUDA's legacy-stream rule: work on
// stream 0 waits for all work enqueued before it on blocking streams, and their later work waits
// for it; cudaStreamNonBlocking streams take no part). When the work runs is set by
// LLMC_EMU_STREAM_ORDER:
//   enqueue  (the default) it runs when it is enqueued, in program order;
//   first    nothing runs until the host must see it (a synchronization, a blocking copy, cudaFree,
//            a query); then, one piece at a time, the head of a stream whose waits are done runs,
//            of the streams created first (stream 0, then in creation order);
//   last     the same, of the streams created last.
// Each order is one the hardware may choose, so a correct program computes the same bits under all
// three. A missing wait between streams shows under one of the deferred orders: a consumer that
// does not wait for its producer's stream runs before it under the order that prefers the
// consumer's stream, and a producer that overwrites what another stream has still to read runs
// first under the order that prefers the producer's. A host that reads what a copy or a kernel
// writes without synchronizing reads it before it is written (both deferred orders). A query
// (cudaStreamQuery, cudaEventQuery) runs one piece of work, as time passes on a GPU, so the host's
// polling loops end. Copies follow CUDA's synchronization rules: a copy to the host returns when
// done unless both the copy is async and the host memory pinned; a host source is read when an
// async copy is enqueued unless pinned (then when it runs).
//
// LLMC_EMU_OVERLAP=DIR (off when unset or empty): at exit each process writes DIR/overlap_<pid>.txt,
// one line per collective in the order enqueued: its name and bytes (dev/emu/nccl.cc), then
// "beside K": the kernels and matmuls of the other streams that CUDA's order leaves free to run
// while it does, being neither before it nor after it (as ordered by each stream, the events waited
// for, the legacy stream's rule and the host's synchronizations), whatever LLMC_EMU_STREAM_ORDER
// runs. That is the work a GPU can overlap the collective with, at any speeds; "beside 0" is a
// collective exposed, the other streams idle or waiting while it runs. The order is kept as a
// vector clock per piece of work: clock[i], how many pieces of stream i come before it or are it.
//
// Memory the trainer asks about (cudaMemGetInfo) is counted: "in use" is the bytes cudaMalloc
// holds, of an 80 GiB device; the device count is 8 (below).
#include "cuda_emu.h"

#include <unistd.h>

#include <memory>
#include <string>

// emu::emu_switch_stack (cuda_emu.h).
namespace emu {
asm(R"(
    .text
    .p2align 4
    .globl emu_switch_stack
    .type emu_switch_stack, @function
emu_switch_stack:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size emu_switch_stack, .-emu_switch_stack
)");
}  // namespace emu

// Done once the stream has completed seq pieces of work.
struct StreamPoint {
    CUstream_st *stream;
    uint64_t seq;
};
struct Work {
    std::function<void()> run;
    std::vector<StreamPoint> after;  // what it waits for on other streams
};
using Clock = std::vector<uint64_t>;  // LLMC_EMU_OVERLAP's vector clocks, by stream index
struct CUstream_st {
    unsigned flags;
    size_t index;  // in streams()
    uint64_t enqueued = 0, completed = 0;
    std::deque<Work> queue;
    // LLMC_EMU_OVERLAP: the clock of each piece enqueued, and computes[k], how many of the first
    // k + 1 are kernels or matmuls.
    std::vector<Clock> clocks;
    std::vector<uint64_t> computes;
};
struct CUevent_st {
    bool recorded = false;
    StreamPoint at;  // the last record
    std::shared_ptr<std::chrono::steady_clock::time_point> when = std::make_shared<std::chrono::steady_clock::time_point>();
};

namespace {
enum class Order { ENQUEUE, FIRST, LAST };
Order order() {
    static const Order o = [] {
        const char *e = getenv("LLMC_EMU_STREAM_ORDER");
        if (!e || !*e || !strcmp(e, "enqueue")) return Order::ENQUEUE;
        if (!strcmp(e, "first")) return Order::FIRST;
        if (!strcmp(e, "last")) return Order::LAST;
        emu::fail("LLMC_EMU_STREAM_ORDER=%s: expected enqueue, first or last", e);
    }();
    return o;
}
// Every stream ever created, in creation order, stream 0 first. A destroyed stream stays (its work
// still runs, as on a GPU); the streams are never reused, so a StreamPoint never dangles.
std::vector<CUstream_st *> &streams() {
    static std::vector<CUstream_st *> *all = new std::vector<CUstream_st *>{new CUstream_st{0, 0}};
    return *all;
}
CUstream_st *resolve(cudaStream_t s) {
    if (s == cudaStreamLegacy || s == cudaStreamPerThread) emu::fail("cudaStreamLegacy and cudaStreamPerThread are not emulated");
    return s ? s : streams()[0];
}
bool blocking(const CUstream_st *s) { return !(s->flags & cudaStreamNonBlocking); }
bool done(const StreamPoint &p) { return p.stream->completed >= p.seq; }
bool runnable(const CUstream_st *s) {
    return !s->queue.empty() && std::all_of(s->queue.front().after.begin(), s->queue.front().after.end(), done);
}

// Runs one piece of work, the head of a runnable stream in the order's preference; false when no
// work is pending. Some stream is always runnable then: the earliest enqueued pending work waits
// only for work enqueued before it, all done.
bool advance() {
    std::vector<CUstream_st *> &all = streams();
    for (size_t i = 0; i < all.size(); i++) {
        CUstream_st *s = all[order() == Order::LAST ? all.size() - 1 - i : i];
        if (!runnable(s)) continue;
        Work w = std::move(s->queue.front());
        s->queue.pop_front();
        w.run();
        s->completed++;
        return true;
    }
    for (const CUstream_st *s : all)
        if (!s->queue.empty()) emu::fail("stream scheduler: work is pending but no stream can run");
    return false;
}
void run_until(const StreamPoint &p) {
    while (!done(p))
        if (!advance()) emu::fail("stream scheduler: waits for work never enqueued");
}
void run_all() {
    while (advance()) {
    }
}
StreamPoint tail(CUstream_st *s) { return {s, s->enqueued}; }

// LLMC_EMU_OVERLAP (the top of this file).
const char *overlap_dir() {
    static const char *dir = [] {
        const char *e = getenv("LLMC_EMU_OVERLAP");
        return e && *e ? e : nullptr;
    }();
    return dir;
}
Clock host_clock;  // the work the host has seen complete, and what came before it
struct Collective {
    CUstream_st *stream;
    uint64_t seq;
    std::string name;
};
std::vector<Collective> collectives;
void join(Clock &c, const Clock &other) {
    if (other.size() > c.size()) c.resize(other.size());
    for (size_t i = 0; i < other.size(); i++) c[i] = std::max(c[i], other[i]);
}
uint64_t entry(const Clock &c, size_t stream) { return stream < c.size() ? c[stream] : 0; }
const Clock &clock_of(const StreamPoint &p) {
    static const Clock nothing;
    return p.seq ? p.stream->clocks[p.seq - 1] : nothing;
}
// The host has waited for p: whatever it enqueues from now on comes after p.
void host_waited(const StreamPoint &p) {
    if (overlap_dir()) join(host_clock, clock_of(p));
}
uint64_t computes_in_first(const CUstream_st *u, uint64_t pieces) { return pieces ? u->computes[pieces - 1] : 0; }
void write_overlap_report() {
    char path[4096];
    snprintf(path, sizeof path, "%s/overlap_%d.txt", overlap_dir(), (int)getpid());
    FILE *f = fopen(path, "w");
    if (!f) emu::fail("LLMC_EMU_OVERLAP: cannot write %s", path);
    for (const Collective &x : collectives) {
        const Clock &cx = x.stream->clocks[x.seq - 1];
        uint64_t beside = 0;
        for (const CUstream_st *u : streams()) {
            if (u == x.stream) continue;
            // u's pieces 1..before come before x; from the first whose clock has seen x on, after it
            // (u's clocks only grow along u).
            const uint64_t before = entry(cx, u->index);
            const uint64_t not_after = std::partition_point(u->clocks.begin(), u->clocks.end(), [&](const Clock &c) {
                                           return entry(c, x.stream->index) < x.seq;
                                       }) - u->clocks.begin();
            beside += computes_in_first(u, not_after) - computes_in_first(u, before);
        }
        fprintf(f, "%s beside %llu\n", x.name.c_str(), (unsigned long long)beside);
    }
    if (fclose(f)) emu::fail("LLMC_EMU_OVERLAP: cannot write %s", path);
}
// The clock of the piece of work about to be enqueued on s after `after`.
void record_clock(CUstream_st *s, const std::vector<StreamPoint> &after, emu::WorkKind kind, const char *name) {
    static const bool registered = atexit(write_overlap_report) == 0;
    if (!registered) emu::fail("LLMC_EMU_OVERLAP: atexit failed");
    Clock c = host_clock;
    if (!s->clocks.empty()) join(c, s->clocks.back());
    for (const StreamPoint &p : after) join(c, clock_of(p));
    if (c.size() <= s->index) c.resize(s->index + 1);
    c[s->index] = s->enqueued + 1;
    s->clocks.push_back(std::move(c));
    s->computes.push_back(computes_in_first(s, s->enqueued) + (kind == emu::WorkKind::COMPUTE));
    if (kind == emu::WorkKind::COLLECTIVE) collectives.push_back({s, s->enqueued + 1, name});
}

// Enqueues work on s after `after` and the legacy-stream rule; returns the point of its completion.
StreamPoint enqueue(CUstream_st *s, std::function<void()> work, std::vector<StreamPoint> after = {},
                    emu::WorkKind kind = emu::WorkKind::OTHER, const char *name = "") {
    if (s == streams()[0]) {
        for (CUstream_st *b : streams())
            if (b != s && blocking(b)) after.push_back(tail(b));
    } else if (blocking(s)) {
        after.push_back(tail(streams()[0]));
    }
    if (overlap_dir()) record_clock(s, after, kind, name);
    if (order() == Order::ENQUEUE) {
        work();
        s->enqueued++, s->completed++;
        return tail(s);
    }
    s->queue.push_back(Work{std::move(work), std::move(after)});
    s->enqueued++;
    return tail(s);
}
// The host waits for p, or for everything enqueued.
void host_wait(const StreamPoint &p) {
    run_until(p);
    host_waited(p);
}
void host_wait_all() {
    run_all();
    for (CUstream_st *s : streams()) host_waited(tail(s));
}
// A query: the device runs one piece of work (time passes), then answers.
cudaError_t query(const StreamPoint &p) {
    if (!done(p)) advance();
    if (!done(p)) return cudaErrorNotReady;
    host_waited(p);
    return cudaSuccess;
}
}  // namespace

void emu::stream_enqueue(cudaStream_t stream, std::function<void()> work, WorkKind kind, const char *name) {
    enqueue(resolve(stream), std::move(work), {}, kind, name);
}

namespace {
// A node of 8 GPUs of 80 GiB, as an HGX H100: under mpirun each process emulates its own GPU, so
// NCCL's one GPU per rank holds up to 8 ranks.
constexpr int DEVICES = 8;
int current_device = 0;
constexpr size_t DEVICE_BYTES = (size_t)80 << 30;
constexpr size_t ALLOC_ALIGN = 256;  // cudaMalloc's alignment
std::map<void *, size_t> &device_allocations() {
    static std::map<void *, size_t> *m = new std::map<void *, size_t>();
    return *m;
}
size_t device_bytes_in_use = 0;
std::map<void *, size_t> &pinned_allocations() {
    static std::map<void *, size_t> *m = new std::map<void *, size_t>();
    return *m;
}
// Whether [p, p + bytes) lies in one allocation of the map.
bool inside(const std::map<void *, size_t> &m, const void *p, size_t bytes) {
    auto it = m.upper_bound(const_cast<void *>(p));
    if (it == m.begin()) return false;
    --it;
    const char *base = (const char *)it->first;
    return (const char *)p >= base && (const char *)p + bytes <= base + it->second;
}
bool on_device(const void *p, size_t bytes) { return inside(device_allocations(), p, bytes); }
bool pinned(const void *p, size_t bytes) { return inside(pinned_allocations(), p, bytes); }

// A copy on stream s, by CUDA's rules for when the host may go on (see the top of this file).
cudaError_t copy(void *dst, const void *src, size_t bytes, CUstream_st *s, bool async) {
    if (bytes == 0) return cudaSuccess;
    const bool from_host = !on_device(src, bytes), to_host = !on_device(dst, bytes);
    StreamPoint at;
    if (from_host && !(async && pinned(src, bytes))) {
        auto snapshot = std::make_shared<std::vector<unsigned char>>((const unsigned char *)src, (const unsigned char *)src + bytes);
        at = enqueue(s, [=] { memcpy(dst, snapshot->data(), bytes); });
    } else {
        at = enqueue(s, [=] { memmove(dst, src, bytes); });
    }
    // A blocking copy returns when done, except device to device; an async one to pageable host
    // memory too.
    if (to_host ? !(async && pinned(dst, bytes)) : (!async && from_host)) host_wait(at);
    return cudaSuccess;
}
}  // namespace

extern "C" {
cudaError_t cudaMalloc(void **p, size_t bytes) {
    const size_t rounded = (std::max<size_t>(bytes, 1) + ALLOC_ALIGN - 1) / ALLOC_ALIGN * ALLOC_ALIGN;
    if (device_bytes_in_use + rounded > DEVICE_BYTES) return *p = nullptr, cudaErrorMemoryAllocation;
    // Exactly the bytes asked for, 256-byte aligned: under AddressSanitizer an access past them is
    // reported, as compute-sanitizer's memcheck reports it (the rounding is only counted).
    if (posix_memalign(p, ALLOC_ALIGN, std::max<size_t>(bytes, 1))) return *p = nullptr, cudaErrorMemoryAllocation;
    // cudaMalloc's memory holds whatever was there: here bytes 0xFF, NaN in fp32, bf16, E4M3 and
    // E5M2 and -1 in the integers, so that a kernel reading what nothing wrote gives NaN or a bad
    // index, not a harmless 0. Under valgrind the bytes are marked undefined again and memcheck
    // reports such a read where a value decides a branch, an address or a write to a file (as
    // compute-sanitizer's initcheck reports it on a GPU).
    memset(*p, 0xFF, bytes);
    VALGRIND_MAKE_MEM_UNDEFINED(*p, bytes);
    device_allocations()[*p] = rounded;
    device_bytes_in_use += rounded;
    return cudaSuccess;
}
cudaError_t cudaFree(void *p) {
    if (!p) return cudaSuccess;
    const auto it = device_allocations().find(p);
    if (it == device_allocations().end()) emu::fail("cudaFree(%p): not a pointer cudaMalloc returned", p);
    host_wait_all();  // cudaFree waits for the device
    device_bytes_in_use -= it->second;
    device_allocations().erase(it);
    free(p);
    return cudaSuccess;
}
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned) {
    const size_t rounded = (std::max<size_t>(bytes, 1) + ALLOC_ALIGN - 1) / ALLOC_ALIGN * ALLOC_ALIGN;
    if (!(*p = aligned_alloc(ALLOC_ALIGN, rounded))) return cudaErrorMemoryAllocation;
    pinned_allocations()[*p] = rounded;
    return cudaSuccess;
}
cudaError_t cudaMallocHost(void **p, size_t bytes) { return cudaHostAlloc(p, bytes, cudaHostAllocDefault); }
cudaError_t cudaFreeHost(void *p) {
    if (!p) return cudaSuccess;
    if (!pinned_allocations().erase(p)) emu::fail("cudaFreeHost(%p): not a pointer cudaHostAlloc returned", p);
    host_wait_all();  // cudaFreeHost waits for the device
    return free(p), cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
    *free_bytes = DEVICE_BYTES - device_bytes_in_use, *total_bytes = DEVICE_BYTES;
    return cudaSuccess;
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind) {
    return copy(dst, src, bytes, streams()[0], false);
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind, cudaStream_t s) {
    return copy(dst, src, bytes, resolve(s), true);
}
cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes, cudaStream_t s) {
    enqueue(resolve(s), [=] { memset(dst, value, bytes); });
    return cudaSuccess;
}
cudaError_t cudaMemset(void *dst, int value, size_t bytes) { return cudaMemsetAsync(dst, value, bytes, 0); }
cudaError_t cudaDeviceSynchronize(void) { return host_wait_all(), cudaSuccess; }
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
const char *cudaGetErrorString(cudaError_t err) { return err == cudaSuccess ? "no error" : "emulated error"; }
cudaError_t cudaGetDeviceCount(int *count) { return *count = DEVICES, cudaSuccess; }
cudaError_t cudaGetDevice(int *device) { return *device = current_device, cudaSuccess; }
cudaError_t cudaSetDevice(int device) {
    if (device < 0 || device >= DEVICES) return cudaErrorInvalidDevice;
    return current_device = device, cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int) {
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "CPU emulator of compute capability 9.0 (dev/emu)");
    prop->major = 9, prop->minor = 0, prop->multiProcessorCount = 1;
    prop->totalGlobalMem = DEVICE_BYTES;
    prop->sharedMemPerBlockOptin = emu::SMEM_LIMIT;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int) {
    switch (attr) {
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    case cudaDevAttrMultiProcessorCount: *value = 1; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = (int)emu::SMEM_LIMIT; break;
    default: emu::fail("cudaDeviceGetAttribute(%d) is not emulated", (int)attr);
    }
    return cudaSuccess;
}
cudaError_t cudaFuncSetAttribute(const void *func, cudaFuncAttribute attr, int value) {
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize)
        emu::fail("cudaFuncSetAttribute(%d) is not emulated", (int)attr);
    if (value < 0 || (size_t)value > emu::SMEM_LIMIT) return cudaErrorInvalidValue;
    emu::state().max_dynamic_smem[func] = value;
    return cudaSuccess;
}
// A kernel's attributes, of which only the registers a thread has are asked for
// (attention_backward_wgmma_ws): the emulator has none to count, so the most a thread may, 255.
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *attr, const void *) {
    memset(attr, 0, sizeof *attr);
    attr->numRegs = 255;
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
    streams().push_back(*s = new CUstream_st{flags, streams().size()});
    return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, cudaStreamDefault); }
cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }  // kept (streams())
cudaError_t cudaStreamSynchronize(cudaStream_t s) { return host_wait(tail(resolve(s))), cudaSuccess; }
cudaError_t cudaStreamQuery(cudaStream_t s) { return query(tail(resolve(s))); }
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned) {
    if (e->recorded) enqueue(resolve(s), [] {}, {e->at});  // waiting for an event never recorded waits for nothing
    return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned) { return *e = new CUevent_st(), cudaSuccess; }
cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }
cudaError_t cudaEventDestroy(cudaEvent_t e) { return delete e, cudaSuccess; }  // a pending record keeps `when`
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    auto when = e->when = std::make_shared<std::chrono::steady_clock::time_point>();
    e->at = enqueue(resolve(s), [when] { *when = std::chrono::steady_clock::now(); });
    e->recorded = true;
    return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
    if (e->recorded) host_wait(e->at);
    return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e) { return e->recorded ? query(e->at) : cudaSuccess; }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t stop) {
    if (!start->recorded || !stop->recorded) return cudaErrorInvalidResourceHandle;
    if (!done(start->at) || !done(stop->at)) return cudaErrorNotReady;
    return *ms = std::chrono::duration<float, std::milli>(*stop->when - *start->when).count(), cudaSuccess;
}
}
