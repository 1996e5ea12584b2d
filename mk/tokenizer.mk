# The GPT-2 tokenizer's programs: the data preparation tool, its sanitizer build, the tokenizer
# test driver and the libFuzzer targets (clang; run for a fixed number of inputs by
# dev/test/t_30_tokenizer_fuzz.sh).
TOKENIZER_OBJS     := $(BUILD)/llmc/tokenizer.o $(BUILD)/llmc/utils.o
TOKENIZER_SAN_OBJS := $(BUILD)/san/llmc/tokenizer.o $(BUILD)/san/llmc/utils.o
TOKENIZER_LIBS     := -lpcre2-8 -ljson-c
FUZZ_CC            := clang
FUZZ_FLAGS         := -g -O1 -std=gnu11 -Wall -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_TARGETS       := $(BUILD)/fuzz/fuzz_tokenizer_encode $(BUILD)/fuzz/fuzz_tokenizer_vocab

ALL_TARGETS += prepare_data $(BUILD)/san/prepare_data
TEST_DEPS   += $(BUILD)/tokenizer_check $(FUZZ_TARGETS)

prepare_data: $(BUILD)/dev/data/prepare_data.o $(TOKENIZER_OBJS) $(BUILD)/llmc/fileio.o
	$(CC) $(CFLAGS) $^ -o $@ $(TOKENIZER_LIBS)

$(BUILD)/san/prepare_data: $(BUILD)/san/dev/data/prepare_data.o $(TOKENIZER_SAN_OBJS) $(BUILD)/san/llmc/fileio.o
	$(CC) $(SANFLAGS) $^ -o $@ $(TOKENIZER_LIBS)

# The test driver runs under the sanitizers too: every test string goes through them.
$(BUILD)/tokenizer_check: $(BUILD)/san/dev/test/tokenizer/tokenizer_check.o $(TOKENIZER_SAN_OBJS)
	$(CC) $(SANFLAGS) $^ -o $@ $(TOKENIZER_LIBS)

# A static pattern rule: it applies to these targets only, whatever other fragments define.
$(FUZZ_TARGETS): $(BUILD)/fuzz/%: dev/fuzz/%.c dev/fuzz/fuzz_tokenizer_common.h llmc/tokenizer.c llmc/utils.c \
                 llmc/tokenizer.h llmc/utils.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) $(filter %.c,$^) -o $@ $(TOKENIZER_LIBS)

.PHONY: bench-tokenizer
bench-tokenizer: prepare_data
	bash dev/bench/bench_tokenizer.sh
