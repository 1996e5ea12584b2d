// Race detection for emulated kernels: a program built with -fsanitize=thread (build/emu/race/,
// mk/emu.mk) runs each CUDA thread as a ThreadSanitizer fiber, so that TSan sees every plain load
// and store of the kernels, in shared and in global memory, as the access of one thread, and
// reports two accesses to the same bytes by different threads of a CTA, at least one a write, that
// no synchronization orders: what compute-sanitizer's racecheck reports on a GPU, and more (global
// memory, cp.async's copies read by plain loads).
//
// The model of CUDA's ordering given to TSan (cuda_emu.h makes the calls):
//   - A CTA's threads are fibers switched without synchronizing, so the emulator's serial
//     schedule orders nothing by itself.
//   - __syncthreads orders its CTA: each thread releases at arrival and acquires when the barrier
//     completes (a sync object per generation parity, so that a thread already arrived at the next
//     barrier releases nothing to a slower one leaving this one). A thread that exits orders
//     nothing before the kernel ends.
//   - Warp and warpgroup collectives order no memory, as in CUDA (only __syncwarp would, which no
//     kernel here uses): shuffles and mma.sync exchange registers, which the emulator hands over
//     unchecked.
//   - Atomics are TSan atomics (relaxed, as CUDA's): they never race with each other and order
//     nothing.
//   - The instructions' own memory accesses are reported as the thread's: a cp.async reads global
//     and writes shared memory when its issuing thread waits for it (a moment the hardware may
//     choose); an ldmatrix reads each lane's 16-byte row as that lane's read at the instruction; a
//     wgmma reads its shared operands as the read of the thread that completes its wait_group.
//   - The emulator's bookkeeping (barrier counts, the schedule, the copies' queues) is not the
//     program's: its functions are built unchecked (EMU_UNCHECKED, or cuda_emu.h's EMU_OWN).
//   - The host, and the CTAs of a launch one after another, are ordered: a CTA's threads start
//     after the host's work before it, and the host acquires what they did when the CTA ends.
//     So races between CTAs of one launch are NOT reported (each CTA's shared memory, static
//     __shared__ included, is the same host memory reused, which only this order keeps apart); a
//     result that depends on their order shows as other bits under LLMC_EMU_SCHEDULE=reverse.
// Without -fsanitize=thread every call here is empty.
#ifndef DEV_EMU_RACE_H
#define DEV_EMU_RACE_H

#include <stddef.h>

// The emulator's own functions: TSan does not check their loads and stores (it still sees their
// calls into TSan, the C library and out-of-line templates: Unchecked below). An attribute, not
// TSan's ignore regions, which record a stack at each entry: around every collective, 5x slower.
#define EMU_UNCHECKED __attribute__((no_sanitize("thread")))

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
extern "C" {
// Exported by TSan's runtime, not declared by its public header in GCC 12.
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
void __tsan_read_range(void *addr, unsigned long size);
void __tsan_write_range(void *addr, unsigned long size);
}
#endif

namespace emu::race {

#if defined(__SANITIZE_THREAD__)
inline void *current_fiber() { return __tsan_get_current_fiber(); }
inline void *create_fiber() { return __tsan_create_fiber(0); }
// Called right before the stack switch to `fiber`; orders nothing.
inline void switch_to(void *fiber) { __tsan_switch_to_fiber(fiber, __tsan_switch_to_fiber_no_sync); }
inline void release(void *sync) { __tsan_release(sync); }
inline void acquire(void *sync) { __tsan_acquire(sync); }
// The program's access made by an instruction the emulator executes.
inline void program_read(const void *p, size_t bytes) { __tsan_read_range(const_cast<void *>(p), bytes); }
inline void program_write(void *p, size_t bytes) { __tsan_write_range(p, bytes); }
// A scope in which not even out-of-line code is checked: for the emulator's containers that
// several threads update without an order (the wgmma queues of a warpgroup). Costly; rare here.
struct Unchecked {
    Unchecked() { __tsan_ignore_thread_begin(); }
    ~Unchecked() { __tsan_ignore_thread_end(); }
    Unchecked(const Unchecked &) = delete;
    Unchecked &operator=(const Unchecked &) = delete;
};
#else
inline void *current_fiber() { return nullptr; }
inline void *create_fiber() { return nullptr; }
inline void switch_to(void *) {}
inline void release(void *) {}
inline void acquire(void *) {}
inline void program_read(const void *, size_t) {}
inline void program_write(void *, size_t) {}
struct Unchecked {
    Unchecked() {}
    Unchecked(const Unchecked &) = delete;
    Unchecked &operator=(const Unchecked &) = delete;
};
#endif

}  // namespace emu::race

#endif
