// Checks shared by the tokenizer's libFuzzer targets (fuzz_tokenizer_encode.c,
// fuzz_tokenizer_vocab.c): any violated property aborts, which libFuzzer reports as a crash.
#ifndef FUZZ_TOKENIZER_COMMON_H
#define FUZZ_TOKENIZER_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../llmc/tokenizer.h"

#define FUZZ_CHECK(cond)                                                             \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                 \
        }                                                                            \
    } while (0)

// Encodes text[0..len) and checks: every id is in the vocabulary, decode(encode(x)) == x, the
// split covers the text in increasing offsets, encoding the pieces one by one gives the same
// tokens, and the safe printer writes well-formed UTF-8 without control characters other than
// '\n' and '\t'.
static void check_encoding(const Tokenizer *t, TokenEncoder *e, const uint8_t *text, size_t len) {
    TokenList tokens = {0}, by_piece = {0};
    token_encoder_encode(e, text, len, &tokens);
    for (size_t i = 0; i < tokens.len; i++) FUZZ_CHECK(tokens.data[i] >= 0 && tokens.data[i] < tokenizer_vocab_size(t));
    size_t back_len;
    uint8_t *back = tokenizer_decode(t, tokens.data, tokens.len, &back_len);
    FUZZ_CHECK(back && back_len == len && (len == 0 || memcmp(back, text, len) == 0));
    free(back);

    size_t *ends = malloc((len + 1) * sizeof(size_t));
    FUZZ_CHECK(ends);
    size_t pieces = token_encoder_split(e, text, len, ends);
    for (size_t i = 0, start = 0; i < pieces; start = ends[i++]) {
        FUZZ_CHECK(ends[i] > start && ends[i] <= len);
        token_encoder_encode(e, text + start, ends[i] - start, &by_piece);
    }
    FUZZ_CHECK(pieces == 0 ? len == 0 : ends[pieces - 1] == len);
    FUZZ_CHECK(by_piece.len == tokens.len &&
               (tokens.len == 0 || memcmp(by_piece.data, tokens.data, tokens.len * sizeof(int)) == 0));
    free(ends);

    char *printed = NULL;
    size_t printed_len = 0;
    FILE *out = open_memstream(&printed, &printed_len);
    FUZZ_CHECK(out);
    tokenizer_fprint(t, tokens.data, tokens.len, out);
    fclose(out);
    for (size_t i = 0; i < printed_len;) {
        int c = utf8_char_len((const uint8_t *)printed + i, printed_len - i);
        FUZZ_CHECK(c > 0);
        uint8_t b = (uint8_t)printed[i];
        FUZZ_CHECK(b >= 0x20 || b == '\n' || b == '\t');
        FUZZ_CHECK(b != 0x7F && !(b == 0xC2 && (uint8_t)printed[i + 1] < 0xA0));  // DEL, C1 controls
        i += (size_t)c;
    }
    free(printed);
    token_list_free(&tokens);
    token_list_free(&by_piece);
}

#endif
