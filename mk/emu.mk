# The CPU emulator of the CUDA execution model (dev/emu/cuda_emu.h): the attention harness
# dev/cuda/attention.cu, and the emulator's self-test, built by the host C++ compiler with the
# emulator forced in, so that `make test` runs the attention kernels, the default mma.sync ones and
# the wgmma ones, without a GPU (dev/test/t_44_emulated_attention.sh). They need the CUDA headers
# (cuda_runtime.h, cuda_bf16.h), not nvcc's compiler, and link no CUDA library.
EMU_PROGRAMS := $(BUILD)/emu/attention $(BUILD)/emu/selftest
CUDA_TARGETS += $(EMU_PROGRAMS)
EMU_CXXFLAGS := -O2 -std=c++17 -Wall -Werror -Wno-unknown-pragmas -I$(CUDA_HOME)/include
EMU_HEADERS  := dev/emu/cuda_emu.h dev/emu/ptx_isa.h llmc/attention.cuh llmc/wgmma.cuh llmc/launch.cuh llmc/utils.h

# $(1): the program's source.
EMU_BUILD = mkdir -p $(dir $@) && $(CXX) $(EMU_CXXFLAGS) -x c++ -include dev/emu/cuda_emu.h $(1) -x none $(BUILD)/llmc/utils.o -o $@

$(BUILD)/emu/attention: dev/cuda/attention.cu dev/cuda/common.h $(EMU_HEADERS) $(BUILD)/llmc/utils.o
	$(call EMU_BUILD,dev/cuda/attention.cu)
$(BUILD)/emu/selftest: dev/emu/selftest.cu $(EMU_HEADERS) $(BUILD)/llmc/utils.o
	$(call EMU_BUILD,dev/emu/selftest.cu)
