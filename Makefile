# Builds the CPU trainer, the tools, the tests and (when nvcc is present) the CUDA targets.
# Every object goes under build/; sanitizer builds of the same sources under build/san/.
#   make train_gpt    CPU trainer (-O3, OpenMP, OpenBLAS)
#   make run          prepare the default dataset if missing, build, train a small GPT (on the GPU
#                     when the node has one and nvcc)
#   make test         build everything and run dev/test/t_*.sh (no GPU needed; the CUDA toolkit is:
#                     t_40 checks against cuda_fp8.h, t_42 runs nvcc-built host code)
#   make bench        CPU throughput beside the PyTorch reference
#   make bench-tiles  the CPU matmuls' fixed tiles beside OpenBLAS's own threading
#   make clean
CC       := gcc
# -fno-math-errno: nothing reads errno after a math call, and without it sqrtf's errno branch
# keeps loops such as AdamW's from vectorizing (sqrt is correctly rounded either way).
# -Werror=implicit-function-declaration,int-conversion: gcc 12 only warns (gcc 14 refuses) and
# takes an undeclared function to return int. So it did when llmc/blas_kernels.c, built before
# libopenblas-dev was installed, found netlib's cblas.h (libblas-dev) without
# openblas_get_corename: train_gpt crashed at startup on the pointer cut to 32 bits.
# HOST_ARCH: the instruction set of the C objects; native by default. scripts/gpu_bundle.sh builds
# the programs it carries to the GPU machine, whose CPU is another, for x86-64-v3 (AVX2, FMA).
HOST_ARCH ?= native
CWARN    := -Wall -Wextra -Wno-unused-parameter -Werror=implicit-function-declaration -Werror=int-conversion
CFLAGS   := -O3 -march=$(HOST_ARCH) -fno-math-errno -fopenmp -std=gnu11 $(CWARN) -g
SANFLAGS := -O1 -fopenmp -std=gnu11 $(CWARN) -g \
            -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
# OpenBLAS built for OpenMP: inside our parallel regions, where train_gpt.c calls it on fixed tiles
# so that the thread count changes no bit, it runs single-threaded (the pthread build would spin
# its own threads against ours).
BLAS_DIR := /usr/lib/x86_64-linux-gnu/openblas-openmp
CPPFLAGS := -I/usr/include/x86_64-linux-gnu/openblas-pthread
LDLIBS   := -L$(BLAS_DIR) -Wl,-rpath,$(BLAS_DIR) -l:libopenblas.so.0 -lpcre2-8 -ljson-c -lm
BUILD    := build

LLMC_SRCS := $(wildcard llmc/*.c)
LLMC_OBJS := $(LLMC_SRCS:%.c=$(BUILD)/%.o)
LLMC_SAN_OBJS := $(LLMC_SRCS:%.c=$(BUILD)/san/%.o)

# Fragments in mk/ add programs to these lists and define their rules.
ALL_TARGETS := train_gpt $(BUILD)/san/train_gpt $(BUILD)/bench_tiles
TEST_DEPS   :=
CUDA_TARGETS :=

NVCC := $(shell command -v nvcc 2>/dev/null || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; })
NVCC_ARCH ?= sm_90
# The toolkit root as nvcc itself reports it (its TOP), so that a wrapper script named nvcc on
# PATH (CI has /usr/local/bin/nvcc exec'ing the real one) still finds the headers and tools.
ifeq ($(origin CUDA_HOME),undefined)
CUDA_HOME := $(if $(NVCC),$(shell $(NVCC) --dryrun -c llmc_probe.cu 2>&1 | sed -n 's/^\#\$$ TOP=//p' | head -1),/usr/local/cuda)
endif

.PHONY: all deps run test test-build bench bench-tiles clean cuda
all: $(ALL_TARGETS) cuda

$(BUILD)/%.o: %.c $(wildcard llmc/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/san/%.o: %.c $(wildcard llmc/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(SANFLAGS) -c $< -o $@

train_gpt: $(BUILD)/train_gpt.o $(LLMC_OBJS)
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# The same trainer under AddressSanitizer and UndefinedBehaviorSanitizer, for the bad-input tests.
$(BUILD)/san/train_gpt: $(BUILD)/san/train_gpt.o $(LLMC_SAN_OBJS)
	$(CC) $(SANFLAGS) $^ -o $@ $(LDLIBS)

include $(sort $(wildcard mk/*.mk))

ifeq ($(NVCC),)
cuda:
	@echo "nvcc not found: skipping the CUDA targets ($(CUDA_TARGETS))"
else
cuda: $(CUDA_TARGETS)
endif

# run and test work on a fresh machine: they install missing packages before building.
deps:
	bash scripts/install_deps.sh

# On a node with a working NVIDIA GPU and nvcc, train_gptcu is built too and run_default.sh uses it.
run: deps
	$(MAKE) train_gpt
	@if [ -n "$(NVCC)" ] && command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then \
	    $(MAKE) train_gptcu; fi
	bash scripts/run_default.sh $(ARGS)

test: deps
	$(MAKE) test-build
	bash dev/test/run_all.sh

test-build: $(ALL_TARGETS) $(TEST_DEPS) cuda

bench: train_gpt
	bash dev/bench/bench_cpu.sh

$(BUILD)/bench_tiles: dev/bench/bench_tiles.c $(LLMC_OBJS) $(wildcard llmc/*.h)
	$(CC) $(CPPFLAGS) $(CFLAGS) dev/bench/bench_tiles.c $(LLMC_OBJS) -o $@ $(LDLIBS)

# d12 at B 4, T 64 and L4 C256 at B 4, T 256: make bench's two configurations.
bench-tiles: $(BUILD)/bench_tiles
	$(BUILD)/bench_tiles 4 64 12 768 9
	$(BUILD)/bench_tiles 4 256 4 256 9

clean:
	rm -rf $(BUILD) train_gpt train_gptcu test_gptcu
