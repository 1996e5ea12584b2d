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
