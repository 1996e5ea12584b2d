# The GPU trainer and its check against the CPU reference (both need nvcc; running them needs a GPU):
#   train_gptcu            the GPU trainer (train_gpt.cu + llmc/*.cuh, linked with the llmc objects)
#   test_gptcu             test_gpt.cu: the GPU trainer against train_gpt.c on the same weights and batch
#   build/dev/cuda/<k>     one harness per kernel family of the trainer (dev/cuda/<k>.cu)
#   make test-gpu          runs all of them (for sm_90 also the wgmma attention's checks), the
#                          attention, quant and matmul_lowp harnesses, and compute-sanitizer
#                          (memcheck, racecheck, initcheck) on test_gptcu tiny (GPU machine;
#                          scripts/gpu_suite.sh runs it and writes the report)
# Warnings are errors for every CUDA target (host code through -Xcompiler, device code through
# -Werror all-warnings).
# For sm_90 (the default) every GPU program is built for sm_90a, the arch-specific target whose
# wgmma instructions the wgmma attention uses (llmc/wgmma.cuh, --attention wgmma); such code runs
# on compute capability 9.0 only (H100, H200). Other kernels compile as for sm_90.
GPU_ARCH      := $(patsubst sm_90,sm_90a,$(NVCC_ARCH))
GPU_NVCCFLAGS := -O3 -std=c++17 -arch=$(GPU_ARCH) -lineinfo -Werror all-warnings -Xcompiler -Wall,-Werror,-fopenmp
GPU_HEADERS   := $(wildcard llmc/*.cuh) $(wildcard llmc/*.h)
# The Makefile's LDLIBS with gcc's -Wl, spelled for nvcc (recursive: other fragments extend LDLIBS).
GPU_COMMA     := ,
GPU_LIBS       = -lcublasLt -lcublas $(subst -Wl$(GPU_COMMA),-Xlinker ,$(LDLIBS)) -lgomp $(if $(GPU_HAVE_NCCL),-lnccl)
# The GPU communicators (llmc/comm_nccl.cu, host code): NCCL when the toolkit has nccl.h, MPI
# staged through host memory when the build has MPI (mk/zero.mk adds LLMC_HAVE_MPI and MPI's
# include path to CPPFLAGS and MPI's libraries to LDLIBS). train_gptcu and test_gptcu link it.
GPU_HAVE_NCCL := $(if $(wildcard $(CUDA_HOME)/include/nccl.h),1)
GPU_COMM_OBJ  := $(BUILD)/llmc/comm_nccl.o
GPU_KERNEL_HARNESSES := $(addprefix $(BUILD)/dev/cuda/,encoder layernorm gelu classifier optimizer matmul)

# Where train_gptcu and test_gptcu go: the repository's root (make strips the "./"), or, for
# scripts/gpu_bundle.sh, its own build folder, so that neither build's programs pass for the other's.
GPU_BIN ?= .
CUDA_TARGETS += $(GPU_BIN)/train_gptcu $(GPU_BIN)/test_gptcu $(GPU_KERNEL_HARNESSES)

$(GPU_COMM_OBJ): llmc/comm_nccl.cu $(GPU_HEADERS)
	@mkdir -p $(dir $@)
	$(NVCC) $(GPU_NVCCFLAGS) $(CPPFLAGS) $(if $(GPU_HAVE_NCCL),-DLLMC_HAVE_NCCL) -c $< -o $@

$(GPU_BIN)/train_gptcu: train_gpt.cu $(GPU_HEADERS) $(LLMC_OBJS) $(GPU_COMM_OBJ)
	$(NVCC) $(GPU_NVCCFLAGS) train_gpt.cu $(LLMC_OBJS) $(GPU_COMM_OBJ) -o $@ $(GPU_LIBS)

# The CPU reference (train_gpt.c, fp32, OpenMP) compiled by gcc behind a small C interface.
$(BUILD)/dev/test/cpu_reference.o: dev/test/cpu_reference.c dev/test/cpu_reference.h train_gpt.c $(wildcard llmc/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(GPU_BIN)/test_gptcu: test_gpt.cu train_gpt.cu dev/test/cpu_reference.h dev/test/check.h $(GPU_HEADERS) $(BUILD)/dev/test/cpu_reference.o $(LLMC_OBJS) $(GPU_COMM_OBJ)
	$(NVCC) $(GPU_NVCCFLAGS) test_gpt.cu $(BUILD)/dev/test/cpu_reference.o $(LLMC_OBJS) $(GPU_COMM_OBJ) -o $@ $(GPU_LIBS)

$(BUILD)/dev/cuda/%: dev/cuda/%.cu dev/cuda/common.h $(GPU_HEADERS) $(LLMC_OBJS)
	@mkdir -p $(dir $@)
	$(NVCC) $(GPU_NVCCFLAGS) $< $(LLMC_OBJS) -o $@ $(GPU_LIBS)

# The GPU checks. compute-sanitizer runs test_gptcu on its small odd configuration only (it is
# slow): memcheck for out-of-bounds and misaligned accesses, racecheck for shared-memory races.
SANITIZER ?= $(if $(NVCC),$(CUDA_HOME)/bin/compute-sanitizer,compute-sanitizer)
.PHONY: test-gpu
# (mk/quant.mk, read after this file, builds the low-precision harnesses: named here by path.)
GPU_LOWP_HARNESSES := $(BUILD)/cuda/quant $(BUILD)/cuda/matmul_lowp
# The wgmma attention's checks, where the build has sm_90a code (NVCC_ARCH=sm_90).
WGMMA_CHECKS = $(if $(filter sm_90,$(NVCC_ARCH)),$(ATTENTION_HARNESS) --wgmma && $(GPU_BIN)/test_gptcu tiny wgmma && $(GPU_BIN)/test_gptcu tiny recompute wgmma)
test-gpu: $(GPU_BIN)/train_gptcu $(GPU_BIN)/test_gptcu $(GPU_KERNEL_HARNESSES) $(ATTENTION_HARNESS) $(GPU_LOWP_HARNESSES)
	$(GPU_BIN)/test_gptcu small
	$(GPU_BIN)/test_gptcu d12
	$(GPU_BIN)/test_gptcu small recompute
	set -e; for h in $(GPU_KERNEL_HARNESSES) $(GPU_LOWP_HARNESSES); do $$h; done
	$(ATTENTION_HARNESS)
	$(WGMMA_CHECKS)
	$(SANITIZER) --tool memcheck --error-exitcode 1 $(GPU_BIN)/test_gptcu tiny
	$(SANITIZER) --tool racecheck --error-exitcode 1 $(GPU_BIN)/test_gptcu tiny
	$(SANITIZER) --tool initcheck --error-exitcode 1 $(GPU_BIN)/test_gptcu tiny
