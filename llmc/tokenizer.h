// GPT-2 byte-level BPE tokenizer: load the vocabulary, encode bytes to tokens, decode tokens to
// bytes, print decoded text safely.
//
// The reference is the JavaScript GPT-2 encoder (npm gpt-3-encoder 1.1.4, Encoder.js): for valid
// UTF-8 text, tokenizer output equals it token for token. Where the JavaScript and OpenAI's Python
// original differ, this follows the JavaScript:
//   - \s in the split pattern is JavaScript's whitespace set (includes U+FEFF, excludes U+0085
//     and U+180E, which Python's `regex` treats the other way round);
//   - merge ranks are looked up by the string "first,second" (JavaScript turns the pair array into
//     an object key), so a pair such as ('",', '"') takes the rank of the merge ('"', ',"'); among
//     pairs of equal lowest rank the last one in the word wins (Python: the first).
// \p{L} and \p{N} come from PCRE2's Unicode tables (Unicode 14 in PCRE2 10.42) while Node 20 uses
// a newer Unicode: letters and digits assigned after Unicode 14 may split differently.
//
// Invalid UTF-8 (any byte not part of a well-formed sequence per Unicode table 3-7: stray
// continuation bytes, overlongs, surrogates, code points above U+10FFFF, truncated sequences)
// is kept byte for byte: for splitting, each such byte counts as one "other" character, exactly
// as the U+FFFD that JavaScript would see in its place (U+FFFD is neither letter, number nor
// space); its bytes are then byte-pair encoded like any others. So decode(encode(x)) == x for
// every byte string x, and on valid UTF-8 the output is the reference's.
//
// "<|endoftext|>" in the text is encoded as ordinary text, as in the reference; callers that want
// the document separator insert tokenizer_eot() themselves.
#ifndef LLMC_TOKENIZER_H
#define LLMC_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

// The immutable vocabulary: token bytes, merge ranks and the compiled split pattern. Shared
// read-only by any number of threads.
typedef struct Tokenizer Tokenizer;

// Per-thread encoding state: regex match data, BPE scratch and a bounded cache of encoded words.
typedef struct TokenEncoder TokenEncoder;

// A growable array of token ids.
typedef struct {
    int *data;
    size_t len, cap;
} TokenList;

// Loads <dir>/encoder.json and <dir>/vocab.bpe. On failure returns NULL and writes a one-line
// reason into reason[0..reason_size) (the caller decides whether that is fatal).
Tokenizer *tokenizer_load(const char *dir, char *reason, size_t reason_size);
// The same from the two files' contents in memory (used by the loader and its fuzz target).
Tokenizer *tokenizer_from_memory(const char *encoder_json, size_t encoder_json_len,
                                 const char *vocab_bpe, size_t vocab_bpe_len,
                                 char *reason, size_t reason_size);
void tokenizer_free(Tokenizer *t);

int tokenizer_vocab_size(const Tokenizer *t);
// Id of "<|endoftext|>" (50256 for GPT-2).
int tokenizer_eot(const Tokenizer *t);
// Bytes of one token and their count; NULL if the id is outside [0, vocab size).
const uint8_t *tokenizer_token_bytes(const Tokenizer *t, int token, size_t *len);

TokenEncoder *token_encoder_new(const Tokenizer *t);
void token_encoder_free(TokenEncoder *e);
// Appends the tokens of text[0..len) (any bytes) to *out.
void token_encoder_encode(TokenEncoder *e, const void *text, size_t len, TokenList *out);
// The pre-tokenization split alone (the pieces that BPE then encodes one by one): writes the end
// offset of each piece of text[0..len) to ends[] (room for len entries suffices) and returns the
// number of pieces. Piece i is text[ends[i-1], ends[i]), with ends[-1] = 0.
size_t token_encoder_split(TokenEncoder *e, const void *text, size_t len, size_t *ends);

void token_list_push(TokenList *list, int token);
void token_list_free(TokenList *list);

// The concatenated bytes of tokens[0..n), NUL-terminated for convenience (*len excludes the
// NUL); malloc'd, the caller frees. NULL if any id is out of range.
uint8_t *tokenizer_decode(const Tokenizer *t, const int *tokens, size_t n, size_t *len);

// Prints decoded text for a terminal, token by token as sampling produces them. A character may
// span tokens, so up to 3 bytes of an unfinished UTF-8 sequence wait for the next token. Invalid
// UTF-8 prints as U+FFFD, one per maximal ill-formed subpart (as Node and browsers decode it);
// control characters other than '\n' and '\t' (which could drive the terminal) print as one
// U+FFFD each; an id out of range prints as "<|invalid token N|>".
typedef struct {
    const Tokenizer *tokenizer;
    FILE *out;
    uint8_t held[4];
    int n_held;
} TokenPrinter;
void token_printer_init(TokenPrinter *p, const Tokenizer *t, FILE *out);
void token_printer_put(TokenPrinter *p, int token);
// Prints what is still held (an incomplete sequence, as U+FFFD) and flushes the stream.
void token_printer_finish(TokenPrinter *p);
// All of tokens[0..n) through a TokenPrinter.
void tokenizer_fprint(const Tokenizer *t, const int *tokens, size_t n, FILE *out);

// Length of the well-formed UTF-8 character at s[0..n) (n >= 1): 1 to 4; 0 if s[0] cannot start
// a well-formed sequence here; -1 if the bytes so far are a valid but incomplete prefix.
int utf8_char_len(const uint8_t *s, size_t n);

#ifdef __cplusplus
}
#endif
#endif
