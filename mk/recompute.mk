# Recompute policies and the memory-budget planner (llmc/recompute.h).
TEST_DEPS += $(BUILD)/test/recompute/test_plan

$(BUILD)/test/recompute/test_plan: dev/test/recompute/test_plan.c $(LLMC_OBJS) $(wildcard llmc/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) dev/test/recompute/test_plan.c $(LLMC_OBJS) -o $@ $(LDLIBS)
