# ZeRO over MPI (llmc/comm_mpi.c, llmc/zero.c, train_gpt -z): when mpicc is present every C object
# is built with LLMC_HAVE_MPI and MPI's include path, and every program links MPI, so train_gpt
# runs data-parallel under mpirun (and as one process without it: MPI is initialized only when a
# process manager launched it). Without mpicc the same sources build single-process.
MPICC := $(shell command -v mpicc 2>/dev/null)
ifneq ($(MPICC),)
CPPFLAGS += -DLLMC_HAVE_MPI $(shell $(MPICC) --showme:compile 2>/dev/null || $(MPICC) -compile_info | cut -d' ' -f2-)
LDLIBS   += $(shell $(MPICC) --showme:link 2>/dev/null || $(MPICC) -link_info | cut -d' ' -f2-)
endif
# Whether the objects under $(BUILD) were built with MPI is in $(BUILD)/mpi (flags do not make
# objects out of date): where that changed, as when `make test` has just installed MPI after a
# `make train_gpt` without it, $(BUILD) is emptied, so that no object built without MPI is linked
# with it (train_gpt would run each rank of an mpirun as a job of its own). This happens as the
# makefile is read, so a `make -n` there empties it too.
MPI_BUILT := $(if $(MPICC),with MPI,without MPI)
$(if $(strip $(BUILD)),,$(error BUILD is empty: the build directory must be named))
ifneq ($(shell cat $(BUILD)/mpi 2>/dev/null),$(MPI_BUILT))
$(shell rm -rf $(BUILD)/* && mkdir -p $(BUILD) && echo '$(MPI_BUILT)' > $(BUILD)/mpi)
endif

# Unit tests of the shard plan and of the collectives (dev/test/t_50_zero_comm.sh runs them as
# one process and under mpirun).
TEST_DEPS += $(BUILD)/test/zero/test_comm

$(BUILD)/test/zero/test_comm: dev/test/zero/test_comm.c $(LLMC_OBJS) $(wildcard llmc/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) dev/test/zero/test_comm.c $(LLMC_OBJS) -o $@ $(LDLIBS)
