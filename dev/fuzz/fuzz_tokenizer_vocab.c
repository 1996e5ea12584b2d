// libFuzzer target: the vocabulary loader from memory (tokenizer_from_memory) and then the
// encoder with whatever vocabulary it accepted. The input holds encoder.json, a NUL byte, then
// vocab.bpe (the layout of fuzz_tokenizer_files.c, so seeds serve both). A refusal must come
// with a reason; an accepted vocabulary must encode the input itself and a fixed text with every
// property of fuzz_tokenizer_common.h (BPE on odd merge tables must still round-trip).
#include "fuzz_tokenizer_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t json_len = nul ? (size_t)(nul - data) : size;
    const char *bpe = nul ? (const char *)nul + 1 : "";
    size_t bpe_len = nul ? size - json_len - 1 : 0;
    char reason[256] = "";
    Tokenizer *t = tokenizer_from_memory((const char *)data, json_len, bpe, bpe_len, reason, sizeof reason);
    if (!t) {
        FUZZ_CHECK(reason[0] && !strchr(reason, '\n'));  // one line saying why
        return 0;
    }
    TokenEncoder *e = token_encoder_new(t);
    static const char text[] = "Hello, world! It's 2024: \"quoted\",\"comma\" \xF0\x9F\x98\x80 \xFF  \n";
    check_encoding(t, e, (const uint8_t *)text, sizeof text - 1);
    check_encoding(t, e, data, size);
    token_encoder_free(e);
    tokenizer_free(t);
    return 0;
}
