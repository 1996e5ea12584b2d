// The CUDA runtime calls of the programs the emulator runs (dev/emu/cuda_emu.h), on host memory:
// device memory is host memory, a copy is memcpy, and every stream is the host thread, so work
// runs when it is enqueued, in program order (a stream never overtakes another: missing waits
// between streams are not found here; scripts/gpu_zero_check.sh looks for them on a GPU).
// Linked once into each emulated program (mk/emu.mk).
//
// Memory the trainer asks about (cudaMemGetInfo) is counted: "in use" is the bytes cudaMalloc
// holds, of an 80 GiB device; the device count is 8 (below).
#include "cuda_emu.h"

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

struct CUevent_st {
    std::chrono::steady_clock::time_point at;
};
struct CUstream_st {
    unsigned flags;
};

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
}  // namespace

extern "C" {
cudaError_t cudaMalloc(void **p, size_t bytes) {
    const size_t rounded = (std::max<size_t>(bytes, 1) + ALLOC_ALIGN - 1) / ALLOC_ALIGN * ALLOC_ALIGN;
    if (device_bytes_in_use + rounded > DEVICE_BYTES) return *p = nullptr, cudaErrorMemoryAllocation;
    // Exactly the bytes asked for, 256-byte aligned: under AddressSanitizer an access past them is
    // reported, as compute-sanitizer's memcheck reports it (the rounding is only counted).
    if (posix_memalign(p, ALLOC_ALIGN, std::max<size_t>(bytes, 1))) return *p = nullptr, cudaErrorMemoryAllocation;
    device_allocations()[*p] = rounded;
    device_bytes_in_use += rounded;
    return cudaSuccess;
}
cudaError_t cudaFree(void *p) {
    if (!p) return cudaSuccess;
    const auto it = device_allocations().find(p);
    if (it == device_allocations().end()) emu::fail("cudaFree(%p): not a pointer cudaMalloc returned", p);
    device_bytes_in_use -= it->second;
    device_allocations().erase(it);
    free(p);
    return cudaSuccess;
}
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned) {
    *p = aligned_alloc(ALLOC_ALIGN, (std::max<size_t>(bytes, 1) + ALLOC_ALIGN - 1) / ALLOC_ALIGN * ALLOC_ALIGN);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaMallocHost(void **p, size_t bytes) { return cudaHostAlloc(p, bytes, cudaHostAllocDefault); }
cudaError_t cudaFreeHost(void *p) { return free(p), cudaSuccess; }
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
    *free_bytes = DEVICE_BYTES - device_bytes_in_use, *total_bytes = DEVICE_BYTES;
    return cudaSuccess;
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind) {
    return memmove(dst, src, bytes), cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t) {
    return cudaMemcpy(dst, src, bytes, kind);
}
cudaError_t cudaMemset(void *dst, int value, size_t bytes) { return memset(dst, value, bytes), cudaSuccess; }
cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes, cudaStream_t) { return cudaMemset(dst, value, bytes); }
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
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
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) { return *s = new CUstream_st{flags}, cudaSuccess; }
cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, cudaStreamDefault); }
cudaError_t cudaStreamDestroy(cudaStream_t s) { return delete s, cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamQuery(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned) { return cudaSuccess; }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned) { return *e = new CUevent_st(), cudaSuccess; }
cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }
cudaError_t cudaEventDestroy(cudaEvent_t e) { return delete e, cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
    return e->at = std::chrono::steady_clock::now(), cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t stop) {
    return *ms = std::chrono::duration<float, std::milli>(stop->at - start->at).count(), cudaSuccess;
}
}
