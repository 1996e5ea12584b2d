# libFuzzer targets of the file parsers and the flag parser (dev/fuzz/, clang 14), and the
# sanitized run of the whole test suite.
#   make fuzz            every fuzz target (these and the tokenizer's) for FUZZ_SECONDS each, from
#                        the seed corpora under build/fuzz/corpus/<target>/ (made by
#                        dev/test/fault/fuzz_seeds.sh); findings go to build/fuzz/findings/
#   make test-sanitize   the test suite with train_gpt and prepare_data replaced by their
#                        AddressSanitizer + UndefinedBehaviorSanitizer builds (CI runs it once)
# `make test` runs each parser target for a fixed number of inputs (dev/test/t_60_fuzz.sh).
PARSER_FUZZ_CC    := clang
# --wrap=exit: die() and usage_error() return to the target instead of ending the fuzzer; fopen and
# fclose: the streams a rejected input left open are closed (fuzz_harness.h).
PARSER_FUZZ_FLAGS := -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
                     -Wall -Wno-unknown-pragmas -Wl,--wrap=exit,--wrap=fopen,--wrap=fclose
PARSER_FUZZ_DIR   := $(BUILD)/fuzz
PARSER_FUZZ_TARGETS := $(addprefix $(PARSER_FUZZ_DIR)/,fuzz_checkpoint fuzz_state fuzz_shard fuzz_args fuzz_tokenizer_files)
FUZZ_SECONDS ?= 60

TEST_DEPS += $(PARSER_FUZZ_TARGETS)

# Each target with the llmc sources its parser needs (explicit rules: they take precedence over
# the tokenizer fragment's pattern rule for $(BUILD)/fuzz/%).
$(PARSER_FUZZ_DIR)/fuzz_checkpoint: dev/fuzz/fuzz_checkpoint.c llmc/checkpoint.c llmc/model.c llmc/rng.c llmc/fileio.c llmc/utils.c
$(PARSER_FUZZ_DIR)/fuzz_state: dev/fuzz/fuzz_state.c llmc/state.c llmc/amax_history.c llmc/outlier.c llmc/fileio.c llmc/utils.c
$(PARSER_FUZZ_DIR)/fuzz_shard: dev/fuzz/fuzz_shard.c llmc/dataloader.c llmc/utils.c
$(PARSER_FUZZ_DIR)/fuzz_args: dev/fuzz/fuzz_args.c llmc/args.c llmc/schedule.c llmc/utils.c
$(PARSER_FUZZ_DIR)/fuzz_tokenizer_files: dev/fuzz/fuzz_tokenizer_files.c llmc/tokenizer.c llmc/utils.c
$(PARSER_FUZZ_TARGETS): dev/fuzz/fuzz_harness.h $(wildcard llmc/*.h)
	@mkdir -p $(dir $@)
	$(PARSER_FUZZ_CC) $(PARSER_FUZZ_FLAGS) $(filter %.c,$^) -o $@ -lpcre2-8 -ljson-c -lm

.PHONY: fuzz test-sanitize
# FUZZ_TARGETS (the tokenizer's) is defined by a fragment included after this one: expanded late.
.SECONDEXPANSION:
fuzz: $(PARSER_FUZZ_TARGETS) $$(FUZZ_TARGETS) train_gpt
	bash dev/data/nlpcorpus.sh > /dev/null  # the GPT-2 vocabulary (data/gpt2) of fuzz_tokenizer_encode
	bash dev/test/fault/fuzz_seeds.sh
	bash dev/test/fault/run_fuzz.sh -max_total_time=$(FUZZ_SECONDS) -- $(PARSER_FUZZ_TARGETS) $(FUZZ_TARGETS)

test-sanitize: deps
	$(MAKE) test-build
	bash dev/test/fault/run_sanitized.sh
