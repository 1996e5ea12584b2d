# The CPU emulator of the CUDA execution model (dev/emu/cuda_emu.h) and the programs it runs, built
# by the host C++ compiler with the emulator forced in, so that `make test` runs CUDA code without
# a GPU. They need the CUDA headers (cuda_runtime.h, cuda_bf16.h, cuda_fp8.h, cublasLt.h), not
# nvcc's compiler, and link no CUDA library: the runtime calls and the cuBLASLt subset are
# dev/emu/cuda_runtime.cc and dev/emu/cublaslt.cc.
#   build/emu/selftest     the emulator's own checks, each shown to fire (t_44)
#   build/emu/asan/selftest  the same under AddressSanitizer: a plain access past a launch's dynamic
#                          shared memory is reported (t_44)
#   build/emu/attention    the attention harness dev/cuda/attention.cu (t_44), under AddressSanitizer
#                          and UBSan as test_gptcu: a bulk reduction or plain store past the end of
#                          dq's accumulator or an output is reported
#   build/emu/<k>          the harnesses dev/cuda/<k>.cu of the kernels that write the gradients,
#                          k in encoder, layernorm and matmul (with colsum.cuh), and of the FP8 and
#                          int8 path, quant and matmul_lowp (t_46)
#   build/emu/gelu, classifier  dev/cuda/gelu.cu and classifier.cu at small sizes (t_46); these
#                          and the others of t_46 under UBSan's alignment check (EMU_ALIGNMENT)
#   build/emu/optimizer    dev/cuda/optimizer.cu's small model: AdamW (llmc/adamw.cuh) and the global
#                          norm against the CPU optimizer (t_46)
#   build/emu/test_gptcu   test_gpt.cu: the whole GPU trainer against the CPU reference (t_45),
#                          under AddressSanitizer and UBSan: a kernel's access past its cudaMalloc
#                          allocation or a misaligned one is reported, as compute-sanitizer would
#   build/emu/train_gptcu  the GPU trainer itself (t_45: ZeRO over NCCL with 2 ranks)
#   build/test/cuda_host/kernel_indexing  the kernels' index arithmetic, from the host (t_42)
#   build/emu/race/...     selftest, attention, test_gptcu and train_gptcu under ThreadSanitizer,
#                          which sees each CUDA thread as a fiber (dev/emu/race.h): unordered plain
#                          loads and stores of a CTA's threads are reported, as compute-sanitizer's
#                          racecheck would (t_44, t_45). Every object holding the emulator's inline
#                          code is built so, or the linker could keep an unannotated copy of it.
# The GPU communicators (llmc/comm_nccl.cu) are built as for a GPU: NCCL (dev/emu/nccl.cc, over
# MPI, where the toolkit has nccl.h) and MPI staged through host memory (LLMC_GPU_COMM=mpi).
EMU_HARNESSES := $(addprefix $(BUILD)/emu/,encoder layernorm matmul quant matmul_lowp gelu classifier)
EMU_PROGRAMS := $(BUILD)/emu/attention $(BUILD)/emu/selftest $(BUILD)/emu/asan/selftest $(BUILD)/emu/test_gptcu \
                $(BUILD)/emu/train_gptcu \
                $(EMU_HARNESSES) $(BUILD)/emu/optimizer
CUDA_TARGETS += $(EMU_PROGRAMS)
# -march=x86-64-v3: AVX2 for the matrix instructions' sums (dev/emu/cuda_emu.h's Double4), and no
# AVX-512, which valgrind 3.19 cannot decode (mk/valgrind.mk links these objects too);
# -fno-strict-aliasing: the kernels pun through int4 (128-bit loads), which nvcc allows;
# -ffp-contract=off: no fused multiply-adds where the kernels wrote none; OMPI_SKIP_MPICXX: mpi.h
# without Open MPI's C++ bindings (not linked).
EMU_CXXFLAGS := -O2 -march=x86-64-v3 -std=c++17 -Wall -Werror -Wno-unknown-pragmas -ffp-contract=off -fno-strict-aliasing \
                -DOMPI_SKIP_MPICXX -I$(CUDA_HOME)/include
EMU_HEADERS  := dev/emu/cuda_emu.h dev/emu/ptx_isa.h dev/emu/race.h $(wildcard llmc/*.cuh) $(wildcard llmc/*.h)
EMU_RUNTIME  := $(BUILD)/emu/cuda_runtime.o $(BUILD)/emu/cublaslt.o
EMU_NCCL     := $(if $(wildcard $(CUDA_HOME)/include/nccl.h),$(BUILD)/emu/nccl.o)
# -O1 (after EMU_CXXFLAGS' -O2): the sanitized test_gptcu compiles in 94 s instead of 158 s (the
# longest program to build), and its t_45 cases run 9% slower (77 against 71 s), with the same output.
# -fno-sanitize-address-use-after-scope: GCC 12 poisons a scoped local at its scope's end (shadow
# 0xf8) in the emulator's unsanitized lambdas too (EMU_OWN: the collectives' bodies, such as
# ldmatrix_x4's `uint16_t v`) but clears nothing when they return, as it does for a sanitized
# frame; a later sanitized frame on the same stack then reads a live local of its own as out of
# scope (seen in the attention harness, inside wgmma_issue's collective). CUDA has no such check
# (compute-sanitizer's memcheck sees the bounds of allocations, which this build keeps).
EMU_SANITIZE := -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-sanitize-address-use-after-scope \
                -fno-omit-frame-pointer
# The harnesses of t_46 check their accesses' alignment (UBSan's check alone), as a GPU faults on
# a misaligned vector access and x86 does not: their odd shapes (111 rows) reach the conditions of
# the kernels' vector paths, which the trainer's shapes do not. t_46: 11 s before, 14 s with it
# (and the cases added with it).
EMU_ALIGNMENT := -fsanitize=alignment -fno-sanitize-recover=alignment
EMU_RACE     := -fsanitize=thread -g
EMU_RACE_RUNTIME := $(BUILD)/emu/race/cuda_runtime.o $(BUILD)/emu/race/cublaslt.o
EMU_RACE_NCCL    := $(if $(EMU_NCCL),$(BUILD)/emu/race/nccl.o)
EMU_RACE_PROGRAMS := $(BUILD)/emu/race/selftest $(BUILD)/emu/race/attention $(BUILD)/emu/race/test_gptcu \
                     $(BUILD)/emu/race/train_gptcu
CUDA_TARGETS += $(EMU_RACE_PROGRAMS)
# Compiles $(1) as CUDA source with the emulator forced in.
EMU_CUDA_SOURCE = $(CXX) $(EMU_CXXFLAGS) -x c++ -include dev/emu/cuda_emu.h $(1) -x none

$(BUILD)/emu/%.o: dev/emu/%.cc dev/emu/cuda_emu.h dev/emu/ptx_isa.h dev/emu/race.h llmc/utils.h
	@mkdir -p $(dir $@)
	$(CXX) $(EMU_CXXFLAGS) $(CPPFLAGS) -c $< -o $@
$(BUILD)/emu/race/%.o: dev/emu/%.cc dev/emu/cuda_emu.h dev/emu/ptx_isa.h dev/emu/race.h llmc/utils.h
	@mkdir -p $(dir $@)
	$(CXX) $(EMU_CXXFLAGS) $(EMU_RACE) $(CPPFLAGS) -c $< -o $@

$(BUILD)/emu/attention: dev/cuda/attention.cu dev/cuda/common.h $(EMU_HEADERS) $(EMU_RUNTIME) $(BUILD)/llmc/utils.o
	$(call EMU_CUDA_SOURCE,$(EMU_SANITIZE) dev/cuda/attention.cu) $(EMU_RUNTIME) $(BUILD)/llmc/utils.o -o $@
$(EMU_HARNESSES): $(BUILD)/emu/%: dev/cuda/%.cu dev/cuda/check.h dev/cuda/common.h $(EMU_HEADERS) $(EMU_RUNTIME) \
                  $(BUILD)/llmc/quant.o $(BUILD)/llmc/utils.o
	$(call EMU_CUDA_SOURCE,$(EMU_ALIGNMENT) -fopenmp dev/cuda/$*.cu) $(EMU_RUNTIME) $(BUILD)/llmc/quant.o $(BUILD)/llmc/utils.o -o $@ -lgomp
# The optimizer's harness links the CPU optimizer it checks against (llmc/optimizer.c and the rest).
$(BUILD)/emu/optimizer: dev/cuda/optimizer.cu dev/cuda/check.h dev/cuda/common.h $(EMU_HEADERS) $(EMU_RUNTIME) $(LLMC_OBJS)
	$(call EMU_CUDA_SOURCE,$(CPPFLAGS) $(EMU_ALIGNMENT) -fopenmp dev/cuda/optimizer.cu) $(EMU_RUNTIME) $(LLMC_OBJS) -o $@ $(LDLIBS) -lgomp
$(BUILD)/emu/selftest: dev/emu/selftest.cu $(EMU_HEADERS) $(EMU_RUNTIME) $(BUILD)/llmc/utils.o
	$(call EMU_CUDA_SOURCE,dev/emu/selftest.cu) $(EMU_RUNTIME) $(BUILD)/llmc/utils.o -o $@
$(BUILD)/emu/asan/selftest: dev/emu/selftest.cu $(EMU_HEADERS) $(EMU_RUNTIME) $(BUILD)/llmc/utils.o
	@mkdir -p $(dir $@)
	$(call EMU_CUDA_SOURCE,$(EMU_SANITIZE) dev/emu/selftest.cu) $(EMU_RUNTIME) $(BUILD)/llmc/utils.o -o $@

# Host-side checks of the index arithmetic of the attention and quantization kernels (the dK/dV
# kernel's first query tile per key block, the transpose's swizzle, the wgmma descriptors; t_42).
# Only host code runs, so it is built here against the emulator's CUDA in 4 s (nvcc took 39 s,
# most of them compiling kernels for sm_90a that never ran).
KERNEL_INDEXING_TEST := $(BUILD)/test/cuda_host/kernel_indexing
CUDA_TARGETS += $(KERNEL_INDEXING_TEST)
$(KERNEL_INDEXING_TEST): dev/test/cuda_host/kernel_indexing.cu dev/test/check.h $(EMU_HEADERS) $(BUILD)/llmc/utils.o
	@mkdir -p $(dir $@)
	$(call EMU_CUDA_SOURCE,dev/test/cuda_host/kernel_indexing.cu) $(BUILD)/llmc/utils.o -o $@

$(BUILD)/emu/comm_nccl.o: llmc/comm_nccl.cu $(EMU_HEADERS)
	@mkdir -p $(dir $@)
	$(call EMU_CUDA_SOURCE,$(CPPFLAGS) $(if $(EMU_NCCL),-DLLMC_HAVE_NCCL) -c llmc/comm_nccl.cu) -o $@
$(BUILD)/emu/test_gptcu: test_gpt.cu train_gpt.cu dev/test/cpu_reference.h dev/test/check.h $(EMU_HEADERS) $(EMU_RUNTIME) \
                         $(BUILD)/emu/comm_nccl.o $(EMU_NCCL) $(BUILD)/dev/test/cpu_reference.o $(LLMC_OBJS)
	$(call EMU_CUDA_SOURCE,$(CPPFLAGS) $(EMU_SANITIZE) -fopenmp test_gpt.cu) $(BUILD)/emu/comm_nccl.o $(EMU_NCCL) $(EMU_RUNTIME) \
	    $(BUILD)/dev/test/cpu_reference.o $(LLMC_OBJS) -o $@ $(LDLIBS) -lgomp
# The GPU trainer's object, compiled once for two links: with the host objects here and with
# mk/valgrind.mk's. -g1: line tables for valgrind's reports, 5 s more than none (-g: 27 s more);
# GCC's code is the same with or without them.
$(BUILD)/emu/train_gpt.o: train_gpt.cu $(EMU_HEADERS)
	@mkdir -p $(dir $@)
	$(call EMU_CUDA_SOURCE,$(CPPFLAGS) -g1 -fopenmp -c train_gpt.cu) -o $@
# The GPU trainer linked with the host objects $(1).
EMU_TRAIN_GPTCU = $(CXX) $(BUILD)/emu/train_gpt.o $(BUILD)/emu/comm_nccl.o $(EMU_NCCL) $(EMU_RUNTIME) $(1) -o $@ \
                  $(LDLIBS) -fopenmp
$(BUILD)/emu/train_gptcu: $(BUILD)/emu/train_gpt.o $(EMU_RUNTIME) $(BUILD)/emu/comm_nccl.o $(EMU_NCCL) $(LLMC_OBJS)
	$(call EMU_TRAIN_GPTCU,$(LLMC_OBJS))

$(BUILD)/emu/race/attention: dev/cuda/attention.cu dev/cuda/common.h $(EMU_HEADERS) $(EMU_RACE_RUNTIME) $(BUILD)/llmc/utils.o
	$(call EMU_CUDA_SOURCE,$(EMU_RACE) dev/cuda/attention.cu) $(EMU_RACE_RUNTIME) $(BUILD)/llmc/utils.o -o $@
$(BUILD)/emu/race/selftest: dev/emu/selftest.cu $(EMU_HEADERS) $(EMU_RACE_RUNTIME) $(BUILD)/llmc/utils.o
	$(call EMU_CUDA_SOURCE,$(EMU_RACE) dev/emu/selftest.cu) $(EMU_RACE_RUNTIME) $(BUILD)/llmc/utils.o -o $@
$(BUILD)/emu/race/comm_nccl.o: llmc/comm_nccl.cu $(EMU_HEADERS)
	@mkdir -p $(dir $@)
	$(call EMU_CUDA_SOURCE,$(CPPFLAGS) $(EMU_RACE) $(if $(EMU_NCCL),-DLLMC_HAVE_NCCL) -c llmc/comm_nccl.cu) -o $@
# OpenMP: run with OMP_NUM_THREADS=1 (TSan cannot see libgomp's own synchronization).
$(BUILD)/emu/race/test_gptcu: test_gpt.cu train_gpt.cu dev/test/cpu_reference.h dev/test/check.h $(EMU_HEADERS) \
                              $(EMU_RACE_RUNTIME) $(BUILD)/emu/race/comm_nccl.o $(EMU_RACE_NCCL) \
                              $(BUILD)/dev/test/cpu_reference.o $(LLMC_OBJS)
	$(call EMU_CUDA_SOURCE,$(CPPFLAGS) $(EMU_RACE) -fopenmp test_gpt.cu) $(BUILD)/emu/race/comm_nccl.o $(EMU_RACE_NCCL) \
	    $(EMU_RACE_RUNTIME) $(BUILD)/dev/test/cpu_reference.o $(LLMC_OBJS) -o $@ $(LDLIBS) -lgomp
$(BUILD)/emu/race/train_gptcu: train_gpt.cu $(EMU_HEADERS) $(EMU_RACE_RUNTIME) $(BUILD)/emu/race/comm_nccl.o $(EMU_RACE_NCCL) \
                               $(LLMC_OBJS)
	$(call EMU_CUDA_SOURCE,$(CPPFLAGS) $(EMU_RACE) -fopenmp train_gpt.cu) $(BUILD)/emu/race/comm_nccl.o $(EMU_RACE_NCCL) \
	    $(EMU_RACE_RUNTIME) $(LLMC_OBJS) -o $@ $(LDLIBS) -lgomp
