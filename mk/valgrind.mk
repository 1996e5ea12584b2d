# Builds for valgrind's memcheck, which reports a read of memory that nothing wrote where its value
# decides a branch, an address or what is written to a file: what AddressSanitizer does not see.
# In the emulated GPU trainer, device and shared memory start undefined (dev/emu/cuda_runtime.cc,
# cuda_emu.h), so this is compute-sanitizer's initcheck without a GPU. valgrind 3.19 (Debian 12)
# decodes no AVX-512, so the host code targets x86-64-v3 (AVX2, FMA) here; OpenBLAS picks its
# kernels from the CPUID valgrind shows (Haswell). dev/test/t_47_uninitialized_reads.sh runs them;
# by hand, run the emulated ones with valgrind --max-stackframe=131072 (dev/emu/cuda_emu.h says why).
#   build/vg/train_gpt         the CPU trainer
#   build/vg/emu/train_gptcu   the GPU trainer in the CPU emulator (mk/emu.mk)
VG_CFLAGS    := -O1 -g -march=x86-64-v3 -fno-math-errno -fopenmp -std=gnu11 $(CWARN)
VG_LLMC_OBJS := $(LLMC_SRCS:%.c=$(BUILD)/vg/%.o)
TEST_DEPS    += $(BUILD)/vg/train_gpt
CUDA_TARGETS += $(BUILD)/vg/emu/train_gptcu

$(BUILD)/vg/%.o: %.c $(wildcard llmc/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(VG_CFLAGS) -c $< -o $@
$(BUILD)/vg/train_gpt: $(BUILD)/vg/train_gpt.o $(VG_LLMC_OBJS)
	$(CC) $(VG_CFLAGS) $^ -o $@ $(LDLIBS)
$(BUILD)/vg/emu/train_gptcu: $(BUILD)/emu/train_gpt.o $(EMU_RUNTIME) $(BUILD)/emu/comm_nccl.o $(EMU_NCCL) $(VG_LLMC_OBJS)
	@mkdir -p $(dir $@)
	$(call EMU_TRAIN_GPTCU,$(VG_LLMC_OBJS))
