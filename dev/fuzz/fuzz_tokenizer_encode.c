// libFuzzer target: the GPT-2 encoder, decoder and safe printer on arbitrary bytes, with the real
// vocabulary (loaded once from $TOKENIZER_DIR, default data/gpt2, relative to the working
// directory). The properties checked are in fuzz_tokenizer_common.h. One encoder serves every
// input, so its word cache carries over from input to input as it does in prepare_data.
#include "fuzz_tokenizer_common.h"

static Tokenizer *tokenizer;
static TokenEncoder *encoder;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    const char *dir = getenv("TOKENIZER_DIR");
    char reason[512];
    tokenizer = tokenizer_load(dir && dir[0] ? dir : "data/gpt2", reason, sizeof reason);
    if (!tokenizer) {
        fprintf(stderr, "fuzz_tokenizer_encode: %s (run dev/data/nlpcorpus.sh, or set TOKENIZER_DIR)\n", reason);
        exit(1);
    }
    encoder = token_encoder_new(tokenizer);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    check_encoding(tokenizer, encoder, data, size);
    return 0;
}
