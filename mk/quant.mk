# Quantizers (llmc/quant.h, llmc/quant.cuh): the CPU tests, and the GPU harnesses.
#   build/test/quant/test_quant       unit tests of scales, amax, int8, FP8 fake quantization, bf16 (also under ASan/UBSan)
#   build/test/quant/fp8_exhaustive   all 2^32 fp32 inputs vs NVIDIA's cuda_fp8.h/cuda_bf16.h host conversions
#   build/cuda/quant, build/cuda/matmul_lowp   GPU harnesses (compile-only without a GPU)
# The exhaustive test compiles NVIDIA's headers for the host with g++; without them `make test`
# fails with a message saying so (it never skips). QUANT_CUDA_INC overrides where they are.
QUANT_CUDA_INC ?= $(CUDA_HOME)/include
QUANT_CXXFLAGS := -O3 -march=native -fopenmp -std=c++17 -Wall -Wextra -g

TEST_DEPS += $(BUILD)/test/quant/test_quant $(BUILD)/san/test/quant/test_quant $(BUILD)/test/quant/fp8_exhaustive

$(BUILD)/test/quant/test_quant: dev/test/quant/test_quant.c $(LLMC_OBJS) $(wildcard llmc/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) dev/test/quant/test_quant.c $(LLMC_OBJS) -o $@ $(LDLIBS)

$(BUILD)/san/test/quant/test_quant: dev/test/quant/test_quant.c $(LLMC_SAN_OBJS) $(wildcard llmc/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(SANFLAGS) dev/test/quant/test_quant.c $(LLMC_SAN_OBJS) -o $@ $(LDLIBS)

$(BUILD)/test/quant/fp8_exhaustive: dev/test/quant/fp8_exhaustive.cpp llmc/quant.h
	@test -f $(QUANT_CUDA_INC)/cuda_fp8.h || { echo "error: $(QUANT_CUDA_INC)/cuda_fp8.h not found: the exhaustive FP8 test needs NVIDIA's CUDA headers (install the CUDA toolkit or set QUANT_CUDA_INC)" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(CXX) $(QUANT_CXXFLAGS) -I$(QUANT_CUDA_INC) $< -o $@

# GPU harnesses: host reference code links quant.o and utils.o (compiled by gcc with OpenMP).
QUANT_NVCCFLAGS := $(GPU_NVCCFLAGS)
QUANT_CUDA_OBJS := $(BUILD)/llmc/quant.o $(BUILD)/llmc/utils.o
CUDA_TARGETS += $(BUILD)/cuda/quant $(BUILD)/cuda/matmul_lowp

$(BUILD)/cuda/quant: dev/cuda/quant.cu dev/cuda/common.h llmc/quant.cuh llmc/quant.h $(QUANT_CUDA_OBJS)
	@mkdir -p $(dir $@)
	$(NVCC) $(QUANT_NVCCFLAGS) $< $(QUANT_CUDA_OBJS) -o $@ -lgomp

$(BUILD)/cuda/matmul_lowp: dev/cuda/matmul_lowp.cu dev/cuda/common.h $(wildcard llmc/*.cuh) llmc/quant.h llmc/profile.h \
                          $(QUANT_CUDA_OBJS)
	@mkdir -p $(dir $@)
	$(NVCC) $(QUANT_NVCCFLAGS) $< $(QUANT_CUDA_OBJS) -o $@ -lcublasLt -lcublas -lgomp
