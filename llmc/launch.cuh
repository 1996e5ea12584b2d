// Kernel launches and dynamic shared memory, spelled so that the same kernel code also runs in the
// CPU emulator of dev/emu (which defines LLMC_EMULATE_PTX and supplies emu::launcher and
// emu::dynamic_smem); on a GPU they are the plain CUDA forms:
//   LLMC_LAUNCH(grid, block, smem, stream, kernel)(args...)  is  kernel<<<grid, block, smem, stream>>>(args...)
//   LLMC_DYNAMIC_SMEM(name);                                 is  extern __shared__ __align__(16) unsigned char name[];
// (the kernel comes last because a template's argument list may hold commas).
#ifndef LLMC_LAUNCH_CUH
#define LLMC_LAUNCH_CUH

#ifdef LLMC_EMULATE_PTX
#define LLMC_LAUNCH(grid, block, smem, stream, ...) emu::launcher((grid), (block), (smem), (stream), __VA_ARGS__)
#define LLMC_DYNAMIC_SMEM(name) unsigned char *name = emu::dynamic_smem()
#else
#define LLMC_LAUNCH(grid, block, smem, stream, ...) __VA_ARGS__<<<(grid), (block), (smem), (stream)>>>
#define LLMC_DYNAMIC_SMEM(name) extern __shared__ __align__(16) unsigned char name[]
#endif

#endif  // LLMC_LAUNCH_CUH
