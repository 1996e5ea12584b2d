// Test driver for llmc/tokenizer: encodes and splits strings for comparison with the reference
// encoder (dev/test/tokenizer/js_encode.js) and checks decode(encode(x)) == x.
//   tokenizer_check encode VOCAB_DIR < strings.hex > ids.txt
//       one string per line as hex of its bytes; prints one line of token ids per string and
//       fails if any string does not decode back to its bytes.
//   tokenizer_check split VOCAB_DIR < strings.hex > ends.txt
//       prints the end offsets (in bytes) of the pieces of the pre-tokenization split.
//   tokenizer_check codepoints > strings.hex
//       one string per code point c that PCRE2's Unicode tables assign (no surrogates): "a" c "1"
//       c "!" c " " c "x", whose split shows whether c is a letter, number, space or other.
//   tokenizer_check roundtrip VOCAB_DIR SEED COUNT
//       COUNT random byte strings (seeded): uniform bytes, UTF-8 fragments and ASCII letter runs
//       mixed, so that well-formed text, ill-formed sequences and long words all occur (every
//       200th string is up to 20,000 bytes with words of thousands of letters).
//   tokenizer_check print VOCAB_DIR ID...
//       prints the ids' text through the safe printer.
#include "../../../llmc/tokenizer.h"
#include "../../../llmc/utils.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <pcre2.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static Tokenizer *load(const char *dir) {
    char reason[512];
    Tokenizer *t = tokenizer_load(dir, reason, sizeof reason);
    if (!t) die("%s", reason);
    return t;
}

static void check_roundtrip(const Tokenizer *t, const TokenList *tokens, const uint8_t *text, size_t len,
                            const char *what) {
    size_t back_len;
    uint8_t *back = tokenizer_decode(t, tokens->data, tokens->len, &back_len);
    if (!back) die("%s: encoding produced an out-of-range id", what);
    if (back_len != len || memcmp(back, text, len) != 0) die("%s: decode(encode(x)) != x", what);
    free(back);
}

static int hex_value(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Reads strings as hex lines from stdin and prints, per string, its token ids (split == false)
// or the end offsets of its pieces (split == true).
static void process_hex_lines(const Tokenizer *t, bool split) {
    TokenEncoder *e = token_encoder_new(t);
    TokenList tokens = {0};
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long number = 0;
    uint8_t *bytes = NULL;
    size_t *ends = NULL;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        number++;
        if (n > 0 && line[n - 1] == '\n') n--;
        if (n % 2) die("stdin line %ld: odd number of hex digits", number);
        size_t len = (size_t)n / 2;
        bytes = realloc(bytes, len + 1);
        ends = realloc(ends, (len + 1) * sizeof(size_t));
        if (!bytes || !ends) die("out of memory");
        for (size_t i = 0; i < len; i++) {
            int hi = hex_value(line[2 * i]), lo = hex_value(line[2 * i + 1]);
            if (hi < 0 || lo < 0) die("stdin line %ld: not hex", number);
            bytes[i] = (uint8_t)(hi * 16 + lo);
        }
        if (split) {
            size_t count = token_encoder_split(e, bytes, len, ends);
            for (size_t i = 0; i < count; i++) printf(i ? " %zu" : "%zu", ends[i]);
        } else {
            tokens.len = 0;
            token_encoder_encode(e, bytes, len, &tokens);
            char what[64];
            snprintf(what, sizeof what, "stdin line %ld", number);
            check_roundtrip(t, &tokens, bytes, len, what);
            for (size_t i = 0; i < tokens.len; i++) printf(i ? " %d" : "%d", tokens.data[i]);
        }
        putchar('\n');
    }
    free(ends);
    free(bytes);
    free(line);
    token_list_free(&tokens);
    token_encoder_free(e);
}

static size_t put_utf8(uint8_t *out, uint32_t cp) {
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | cp >> 6);
        out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | cp >> 12);
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | cp >> 18);
    out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

// Code points unassigned in PCRE2's Unicode version (\p{Cn}) are left out: newer Unicode (as in
// Node) may make them letters or numbers; tokenizer.h documents that difference.
static void print_code_point_strings(void) {
    int err;
    PCRE2_SIZE err_offset;
    pcre2_code *unassigned = pcre2_compile((PCRE2_SPTR) "^\\p{Cn}$", PCRE2_ZERO_TERMINATED, PCRE2_UTF, &err, &err_offset, NULL);
    pcre2_match_data *match = pcre2_match_data_create(1, NULL);
    if (!unassigned || !match) die("cannot compile \\p{Cn}");
    long printed = 0, skipped = 0;
    for (uint32_t cp = 0; cp < 0x110000; cp++) {
        if (cp >= 0xD800 && cp < 0xE000) continue;
        uint8_t c[4], s[32];
        size_t n = put_utf8(c, cp);
        if (pcre2_match(unassigned, c, n, 0, 0, match, NULL) >= 0) {
            skipped++;
            continue;
        }
        size_t len = 0;
        static const char between[] = "a1! x";
        for (int i = 0; i < 5; i++) {
            if (i > 0) {
                memcpy(s + len, c, n);
                len += n;
            }
            s[len++] = (uint8_t)between[i];
        }
        for (size_t i = 0; i < len; i++) printf("%02x", s[i]);
        putchar('\n');
        printed++;
    }
    fprintf(stderr, "%ld code points, %ld unassigned in PCRE2's Unicode left out\n", printed, skipped);
    pcre2_match_data_free(match);
    pcre2_code_free(unassigned);
}

static uint64_t rng_state;
static uint32_t next_random(void) {  // xorshift64*
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}

static void roundtrip_random(const Tokenizer *t, uint64_t seed, long count) {
    static const char *fragments[] = {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\xCC\x81", "\xE4\xB8\xAD",
                                      "\xEF\xBB\xBF", "\xE3\x80\x80", "\xC2\xA0", "\xC2\x85", "\xED\xA0\x80",
                                      "\xF4\x90\x80\x80", "\xC0\xAF", "'s", "'ll", " ", "\n", "\r\n", "\t", "123", "the"};
    const size_t n_fragments = sizeof fragments / sizeof *fragments;
    rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
    TokenEncoder *e = token_encoder_new(t);
    TokenList tokens = {0};
    uint8_t *text = malloc_check(1 << 16);
    size_t total = 0;
    for (long c = 0; c < count; c++) {
        size_t len = 0, target = next_random() % (c % 200 == 0 ? 20000 : 300);
        while (len < target) {
            uint32_t kind = next_random() % 4;
            if (kind == 0) {
                text[len++] = (uint8_t)next_random();
            } else if (kind == 1) {
                const char *f = fragments[next_random() % n_fragments];
                size_t fl = strlen(f);
                if (len + fl > target) break;
                memcpy(text + len, f, fl);
                len += fl;
            } else {  // a run of letters: long words in the long strings
                size_t run = 1 + next_random() % (target / 4 + 1);
                for (size_t i = 0; i < run && len < target; i++) text[len++] = (uint8_t)('a' + next_random() % 26);
            }
        }
        tokens.len = 0;
        token_encoder_encode(e, text, len, &tokens);
        char what[64];
        snprintf(what, sizeof what, "random string %ld (seed %llu)", c, (unsigned long long)seed);
        check_roundtrip(t, &tokens, text, len, what);
        total += len;
    }
    printf("%ld random strings, %zu bytes: decode(encode(x)) == x for all\n", count, total);
    free(text);
    token_list_free(&tokens);
    token_encoder_free(e);
}

static long parse_long(const char *what, const char *text) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < 0) usage_error("%s must be a non-negative integer, got '%s'", what, text);
    return v;
}

int main(int argc, char **argv) {
    set_program_name(argv[0]);
    if (argc == 2 && strcmp(argv[1], "codepoints") == 0) {
        print_code_point_strings();
        return 0;
    }
    if (argc < 3) usage_error("usage: %s encode|split|roundtrip|print VOCAB_DIR [ARGS] or %s codepoints", argv[0], argv[0]);
    Tokenizer *t = load(argv[2]);
    if ((strcmp(argv[1], "encode") == 0 || strcmp(argv[1], "split") == 0) && argc == 3) {
        process_hex_lines(t, strcmp(argv[1], "split") == 0);
    } else if (strcmp(argv[1], "roundtrip") == 0 && argc == 5) {
        roundtrip_random(t, (uint64_t)parse_long("SEED", argv[3]), parse_long("COUNT", argv[4]));
    } else if (strcmp(argv[1], "print") == 0) {
        TokenPrinter p;
        token_printer_init(&p, t, stdout);
        for (int i = 3; i < argc; i++) token_printer_put(&p, atoi(argv[i]));
        token_printer_finish(&p);
    } else {
        usage_error("unknown mode or wrong arguments: %s", argv[1]);
    }
    tokenizer_free(t);
    return 0;
}
