# Model tests: train_gpt.c against the PyTorch reference and finite differences.
ALL_TARGETS += $(BUILD)/test_model

$(BUILD)/test_model: dev/test/test_model.c dev/test/check.h train_gpt.c $(LLMC_OBJS) $(wildcard llmc/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) dev/test/test_model.c $(LLMC_OBJS) -o $@ $(LDLIBS)
