# Fused causal attention (llmc/attention.cuh): its GPU harness dev/cuda/attention.cu, built when
# nvcc is present (compiling and linking it is part of `make test`; running it needs a GPU):
#   make attention-gpu    build and run the checks and the benchmark (GPU machine)
# Built for an NVCC_ARCH other than sm_90 (mk/gpu.mk: sm_90 builds for sm_90a),
# `attention --wgmma` fails: no sm_90a code.
ATTENTION_HARNESS := $(BUILD)/dev/cuda/attention
CUDA_TARGETS += $(ATTENTION_HARNESS)

$(ATTENTION_HARNESS): dev/cuda/attention.cu dev/cuda/common.h llmc/attention.cuh llmc/wgmma.cuh llmc/launch.cuh llmc/utils.h $(BUILD)/llmc/utils.o
	@mkdir -p $(dir $@)
	$(NVCC) $(GPU_NVCCFLAGS) dev/cuda/attention.cu $(BUILD)/llmc/utils.o -o $@

.PHONY: attention-gpu
attention-gpu: $(ATTENTION_HARNESS)
	$(ATTENTION_HARNESS)

# Host-side checks of the index arithmetic of the attention and quantization kernels (the dK/dV
# kernel's first query tile per key block, the transpose's swizzle, the wgmma descriptors): built
# with nvcc, run by `make test` without a GPU.
KERNEL_INDEXING_TEST := $(BUILD)/test/cuda_host/kernel_indexing
CUDA_TARGETS += $(KERNEL_INDEXING_TEST)

$(KERNEL_INDEXING_TEST): dev/test/cuda_host/kernel_indexing.cu dev/test/check.h dev/emu/ptx_isa.h llmc/attention.cuh llmc/wgmma.cuh llmc/quant.cuh llmc/utils.h $(BUILD)/llmc/utils.o
	@mkdir -p $(dir $@)
	$(NVCC) $(GPU_NVCCFLAGS) dev/test/cuda_host/kernel_indexing.cu $(BUILD)/llmc/utils.o -o $@
