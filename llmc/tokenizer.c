// GPT-2 byte-level BPE; see tokenizer.h for the exact behaviour and how it relates to the
// JavaScript reference encoder (npm gpt-3-encoder, Encoder.js).
#include "tokenizer.h"
#include "utils.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <pcre2.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------------------------------------
// Growable buffers

// Ensures *buf has room for `need` elements of `size` bytes, growing geometrically.
static void reserve(void *buf, size_t *cap, size_t need, size_t size) {
    void **p = (void **)buf;
    if (need <= *cap) return;
    size_t new_cap = *cap ? *cap : 16;
    while (new_cap < need) new_cap *= 2;
    *p = realloc_check(*p, new_cap * size);
    *cap = new_cap;
}

void token_list_push(TokenList *list, int token) {
    reserve(&list->data, &list->cap, list->len + 1, sizeof(int));
    list->data[list->len++] = token;
}

void token_list_free(TokenList *list) {
    free(list->data);
    *list = (TokenList){0};
}

// ---------------------------------------------------------------------------------------------
// A hash map from byte strings to int32 values: open addressing with linear probing, FNV-1a
// hashes, keys copied into one arena. Built for a known maximum number of entries (load <= 1/2),
// so it never rehashes; no key is empty.

typedef struct {
    uint32_t hash, key_len;
    size_t key_off;
    int32_t value;
} MapSlot;

typedef struct {
    MapSlot *slots;  // key_len == 0 marks an empty slot
    size_t mask, count, max_count;
    uint8_t *keys;
    size_t keys_len, keys_cap;
} BytesMap;

static uint32_t fnv1a(const uint8_t *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 16777619u;
    return h;
}

static void map_init(BytesMap *m, size_t max_count) {
    size_t cap = 16;
    while (cap < 2 * max_count) cap *= 2;
    m->slots = calloc_check(cap, sizeof(MapSlot));
    m->mask = cap - 1;
    m->count = 0;
    m->max_count = max_count;
    m->keys = NULL;
    m->keys_len = m->keys_cap = 0;
}

static void map_clear(BytesMap *m) {
    memset(m->slots, 0, (m->mask + 1) * sizeof(MapSlot));
    m->count = 0;
    m->keys_len = 0;
}

static void map_free(BytesMap *m) {
    free(m->slots);
    free(m->keys);
}

// The slot holding key, or the empty slot where it would go.
static MapSlot *map_slot(const BytesMap *m, const uint8_t *key, size_t len, uint32_t hash) {
    for (size_t i = hash & m->mask;; i = (i + 1) & m->mask) {
        MapSlot *s = &m->slots[i];
        if (s->key_len == 0) return s;
        if (s->hash == hash && s->key_len == len && memcmp(m->keys + s->key_off, key, len) == 0) return s;
    }
}

static int32_t map_get(const BytesMap *m, const uint8_t *key, size_t len) {
    MapSlot *s = map_slot(m, key, len, fnv1a(key, len));
    return s->key_len ? s->value : -1;
}

// Inserts or overwrites (later wins, like assigning an object key in JavaScript).
static void map_put(BytesMap *m, const uint8_t *key, size_t len, int32_t value) {
    uint32_t hash = fnv1a(key, len);
    MapSlot *s = map_slot(m, key, len, hash);
    if (s->key_len == 0) {
        if (m->count == m->max_count) die("internal error: hash map full (%zu entries)", m->count);
        reserve(&m->keys, &m->keys_cap, m->keys_len + len, 1);
        memcpy(m->keys + m->keys_len, key, len);
        *s = (MapSlot){.hash = hash, .key_len = (uint32_t)len, .key_off = m->keys_len};
        m->keys_len += len;
        m->count++;
    }
    s->value = value;
}

// ---------------------------------------------------------------------------------------------
// UTF-8

int utf8_char_len(const uint8_t *s, size_t n) {
    uint8_t b = s[0];
    if (b < 0x80) return 1;
    // Unicode table 3-7: the second byte's range depends on the first (no overlongs, no
    // surrogates U+D800..U+DFFF, nothing above U+10FFFF); later bytes are 80..BF.
    int need;
    uint8_t lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
        need = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
        need = 2;
        if (b == 0xE0) lo = 0xA0;
        if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 3;
        if (b == 0xF0) lo = 0x90;
        if (b == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    for (int i = 1; i <= need; i++) {
        if ((size_t)i >= n) return -1;
        if (s[i] < lo || s[i] > hi) return 0;
        lo = 0x80;
        hi = 0xBF;
    }
    return need + 1;
}

static uint32_t utf8_code_point(const uint8_t *s, int len) {
    static const uint8_t lead_mask[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
    uint32_t cp = s[0] & lead_mask[len];
    for (int i = 1; i < len; i++) cp = (cp << 6) | (s[i] & 0x3F);
    return cp;
}

// ---------------------------------------------------------------------------------------------
// The vocabulary

// GPT-2 writes token bytes as printable code points: bytes 21-7E, A1-AC and AE-FF stand for
// themselves, the other 68 bytes, in increasing order, for U+0100..U+0143.
enum { BYTE_CODE_POINTS = 0x144 };

static void build_byte_decoder(int16_t decoder[BYTE_CODE_POINTS]) {
    for (int i = 0; i < BYTE_CODE_POINTS; i++) decoder[i] = -1;
    int n = 0;
    for (int b = 0; b < 256; b++) {
        bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        decoder[printable ? b : 0x100 + n++] = (int16_t)b;
    }
}

// Raw bytes of a byte-encoded string s[0..n) into out (n bytes suffice); the count, or -1 if a
// character is not one of the 256 byte code points.
static long decode_byte_string(const int16_t decoder[BYTE_CODE_POINTS], const uint8_t *s, size_t n,
                               uint8_t *out) {
    long len = 0;
    for (size_t i = 0; i < n;) {
        int c = utf8_char_len(s + i, n - i);
        if (c <= 0) return -1;
        uint32_t cp = utf8_code_point(s + i, c);
        if (cp >= BYTE_CODE_POINTS || decoder[cp] < 0) return -1;
        out[len++] = (uint8_t)decoder[cp];
        i += (size_t)c;
    }
    return len;
}

// JavaScript's \s (WhiteSpace and LineTerminator of ECMA-262, with the Zs of current Unicode),
// spelled out because PCRE2's \s is a different set (it has U+0085 and U+180E, lacks U+FEFF).
#define JS_SPACE "\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}"
// GPT-2's split pattern with \s as above and (?!\S) as (?![^\s]).
static const char SPLIT_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" JS_SPACE "\\p{L}\\p{N}]+"
    "|[" JS_SPACE "]+(?![^" JS_SPACE "])|[" JS_SPACE "]+";

struct Tokenizer {
    int vocab_size, eot;
    uint8_t *token_bytes;   // all tokens' raw bytes
    uint32_t *token_start;  // [vocab_size] offset of each token's bytes in token_bytes
    uint32_t *token_len;    // [vocab_size]
    BytesMap token_ids;     // raw bytes -> id
    BytesMap merge_ranks;   // raw first ',' raw second -> rank (the key Encoder.js uses)
    size_t max_merge_key_len;
    int byte_token[256];    // id of each single byte
    pcre2_code *pattern;
};

int tokenizer_vocab_size(const Tokenizer *t) { return t->vocab_size; }
int tokenizer_eot(const Tokenizer *t) { return t->eot; }

const uint8_t *tokenizer_token_bytes(const Tokenizer *t, int token, size_t *len) {
    if (token < 0 || token >= t->vocab_size) return NULL;
    *len = t->token_len[token];
    return t->token_bytes + t->token_start[token];
}

void tokenizer_free(Tokenizer *t) {
    if (!t) return;
    free(t->token_bytes);
    free(t->token_start);
    free(t->token_len);
    map_free(&t->token_ids);
    map_free(&t->merge_ranks);
    pcre2_code_free(t->pattern);
    free(t);
}

// Writes a one-line reason and returns false, for the loader's error paths.
static bool fail(char *reason, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(char *reason, size_t size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (size) vsnprintf(reason, size, fmt, ap);
    va_end(ap);
    return false;
}

// The first 40 bytes of a token string for an error message, control characters as '?' so that
// the message stays on one line.
static const char *quote_token(const char *key, char out[41]) {
    size_t i = 0;
    for (; i < 40 && key[i]; i++) out[i] = ((uint8_t)key[i] < 0x20 || key[i] == 0x7F) ? '?' : key[i];
    out[i] = 0;
    return out;
}

// encoder.json: an object from byte-encoded token strings to ids 0..n-1, each id once.
static bool load_encoder_json(Tokenizer *t, const int16_t decoder[BYTE_CODE_POINTS],
                              const char *json, size_t len, char *reason, size_t rsize) {
    if (len > INT_MAX) return fail(reason, rsize, "encoder.json is too large (%zu bytes)", len);
    struct json_tokener *tok = json_tokener_new();
    if (!tok) die("out of memory creating a JSON parser");
    json_object *root = json_tokener_parse_ex(tok, json, (int)len);
    enum json_tokener_error err = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    bool ok = false;
    if (!root || err != json_tokener_success) {
        fail(reason, rsize, "encoder.json is not valid JSON: %s",
             err == json_tokener_continue ? "unexpected end of file" : json_tokener_error_desc(err));
        goto done;
    }
    for (; end < len; end++) {
        if (!memchr(" \t\r\n", json[end], 4)) {
            fail(reason, rsize, "encoder.json has trailing data at byte %zu", end);
            goto done;
        }
    }
    if (!json_object_is_type(root, json_type_object)) {
        fail(reason, rsize, "encoder.json is not a JSON object");
        goto done;
    }
    int n = json_object_object_length(root);
    if (n < 257 || n > (1 << 24)) {
        fail(reason, rsize, "encoder.json has %d tokens; expected the 256 bytes, merges and <|endoftext|>", n);
        goto done;
    }
    t->vocab_size = n;
    t->token_start = calloc_check((size_t)n, sizeof(uint32_t));
    t->token_len = calloc_check((size_t)n, sizeof(uint32_t));
    bool *seen = calloc_check((size_t)n, sizeof(bool));
    size_t arena_size = 0;
    json_object_object_foreach(root, key0, val0) {
        (void)val0;
        arena_size += strlen(key0);
    }
    t->token_bytes = malloc_check(arena_size);
    map_init(&t->token_ids, (size_t)n);
    size_t used = 0;
    char quoted[41];
    json_object_object_foreach(root, key, val) {
        if (!json_object_is_type(val, json_type_int)) {
            fail(reason, rsize, "encoder.json: the id of token \"%.40s\" is not an integer", quote_token(key, quoted));
            goto free_seen;
        }
        int64_t id = json_object_get_int64(val);
        if (id < 0 || id >= n || seen[id]) {
            fail(reason, rsize, "encoder.json: token \"%.40s\" has id %lld, %s", quote_token(key, quoted), (long long)id,
                 (id < 0 || id >= n) ? "outside [0, number of tokens)" : "already taken");
            goto free_seen;
        }
        long blen = decode_byte_string(decoder, (const uint8_t *)key, strlen(key), t->token_bytes + used);
        if (blen <= 0) {
            fail(reason, rsize, "encoder.json: token \"%.40s\" is %s", quote_token(key, quoted),
                 blen == 0 ? "empty" : "not made of GPT-2 byte characters");
            goto free_seen;
        }
        // JSON keys are unique, but json-c cuts a key at an escaped NUL ("\u0000"): two keys
        // could then name the same bytes.
        if (map_get(&t->token_ids, t->token_bytes + used, (size_t)blen) >= 0) {
            fail(reason, rsize, "encoder.json: token \"%.40s\" appears twice", quote_token(key, quoted));
            goto free_seen;
        }
        seen[id] = true;
        t->token_start[id] = (uint32_t)used;
        t->token_len[id] = (uint32_t)blen;
        map_put(&t->token_ids, t->token_bytes + used, (size_t)blen, (int32_t)id);
        used += (size_t)blen;
    }
    for (int b = 0; b < 256; b++) {
        uint8_t byte = (uint8_t)b;
        t->byte_token[b] = map_get(&t->token_ids, &byte, 1);
        if (t->byte_token[b] < 0) {
            fail(reason, rsize, "encoder.json has no token for the byte 0x%02X", b);
            goto free_seen;
        }
    }
    t->eot = map_get(&t->token_ids, (const uint8_t *)"<|endoftext|>", 13);
    if (t->eot < 0) {
        fail(reason, rsize, "encoder.json has no <|endoftext|> token");
        goto free_seen;
    }
    ok = true;
free_seen:
    free(seen);
done:
    json_object_put(root);
    return ok;
}

// Every split of a merge key "x,y" at another comma gives a pair (x', y') that Encoder.js also
// ranks; when both halves are tokens that pair can occur in a word and be merged, so x'y' must
// be a token too, or the reference itself would emit an undefined id.
static bool check_alias_merges(const Tokenizer *t, char *reason, size_t rsize) {
    const BytesMap *m = &t->merge_ranks;
    uint8_t *joined = malloc_check(t->max_merge_key_len);
    bool ok = true;
    for (size_t i = 0; i <= m->mask && ok; i++) {
        const MapSlot *s = &m->slots[i];
        const uint8_t *key = m->keys + s->key_off;
        for (size_t c = 1; c + 1 < s->key_len && ok; c++) {
            if (key[c] != ',') continue;
            size_t a_len = c, b_len = s->key_len - c - 1;
            if (map_get(&t->token_ids, key, a_len) < 0 || map_get(&t->token_ids, key + c + 1, b_len) < 0) continue;
            memcpy(joined, key, a_len);
            memcpy(joined + a_len, key + c + 1, b_len);
            if (map_get(&t->token_ids, joined, a_len + b_len) < 0)
                ok = fail(reason, rsize, "vocab.bpe: merge rank %d can also join a pair into a string that is no token",
                          s->value);
        }
    }
    free(joined);
    return ok;
}

// vocab.bpe: as Encoder.js reads it, the lines of split('\n') without the first (#version) and
// the last (what follows the final newline); each line is two byte-encoded symbols separated by
// whitespace, ranked by position. Every token but the bytes and <|endoftext|> must be the
// product of a merge, which also catches a truncated file.
static bool is_bpe_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

static bool load_vocab_bpe(Tokenizer *t, const int16_t decoder[BYTE_CODE_POINTS],
                           const char *text, size_t len, char *reason, size_t rsize) {
    size_t max_merges = 0;
    for (size_t i = 0; i < len; i++) max_merges += text[i] == '\n';
    map_init(&t->merge_ranks, max_merges ? max_merges : 1);
    bool *made = calloc_check((size_t)t->vocab_size, sizeof(bool));
    uint8_t *key = malloc_check(len + 1), *product = malloc_check(len);
    bool ok = true;
    const char *first_newline = memchr(text, '\n', len);
    const char *line = first_newline ? first_newline + 1 : text + len;
    int rank = 0;
    for (const char *nl; ok && (nl = memchr(line, '\n', (size_t)(text + len - line))); line = nl + 1, rank++) {
        const char *field[2];
        size_t field_len[2];
        int nfields = 0;
        for (const char *p = line; p < nl;) {
            while (p < nl && is_bpe_space(*p)) p++;
            if (p == nl) break;
            const char *q = p;
            while (q < nl && !is_bpe_space(*q)) q++;
            if (nfields < 2) {
                field[nfields] = p;
                field_len[nfields] = (size_t)(q - p);
            }
            nfields++;
            p = q;
        }
        if (nfields != 2) {
            ok = fail(reason, rsize, "vocab.bpe line %d: expected two symbols, found %d", rank + 2, nfields);
            break;
        }
        long a = decode_byte_string(decoder, (const uint8_t *)field[0], field_len[0], key);
        long b = a < 0 ? -1 : decode_byte_string(decoder, (const uint8_t *)field[1], field_len[1], key + a + 1);
        if (a < 0 || b < 0) {
            ok = fail(reason, rsize, "vocab.bpe line %d: a symbol is not made of GPT-2 byte characters", rank + 2);
            break;
        }
        key[a] = ',';
        size_t key_len = (size_t)(a + 1 + b);
        memcpy(product, key, (size_t)a);
        memcpy(product + a, key + a + 1, (size_t)b);
        int id = map_get(&t->token_ids, product, (size_t)(a + b));
        if (id < 0) {
            ok = fail(reason, rsize, "vocab.bpe line %d: the merge makes a string that is not in encoder.json", rank + 2);
            break;
        }
        made[id] = true;
        map_put(&t->merge_ranks, key, key_len, rank);
        if (key_len > t->max_merge_key_len) t->max_merge_key_len = key_len;
    }
    for (int id = 0; ok && id < t->vocab_size; id++) {
        if (!made[id] && t->token_len[id] > 1 && id != t->eot)
            ok = fail(reason, rsize, "vocab.bpe has no merge making token %d (%d merges read; truncated file?)", id, rank);
    }
    if (ok) ok = check_alias_merges(t, reason, rsize);
    free(key);
    free(product);
    free(made);
    return ok;
}

Tokenizer *tokenizer_from_memory(const char *encoder_json, size_t encoder_json_len,
                                 const char *vocab_bpe, size_t vocab_bpe_len,
                                 char *reason, size_t reason_size) {
    int16_t decoder[BYTE_CODE_POINTS];
    build_byte_decoder(decoder);
    Tokenizer *t = calloc_check(1, sizeof(Tokenizer));
    if (!load_encoder_json(t, decoder, encoder_json, encoder_json_len, reason, reason_size) ||
        !load_vocab_bpe(t, decoder, vocab_bpe, vocab_bpe_len, reason, reason_size)) {
        tokenizer_free(t);
        return NULL;
    }
    int err;
    PCRE2_SIZE err_offset;
    t->pattern = pcre2_compile((PCRE2_SPTR)SPLIT_PATTERN, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &err, &err_offset, NULL);
    if (!t->pattern) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(err, msg, sizeof msg);
        fail(reason, reason_size, "cannot compile the split pattern at offset %zu: %s", (size_t)err_offset, (char *)msg);
        tokenizer_free(t);
        return NULL;
    }
    // JIT is an optimization: where it is unavailable pcre2_match interprets the pattern.
    pcre2_jit_compile(t->pattern, PCRE2_JIT_COMPLETE);
    return t;
}

// The whole file in a malloc'd buffer, or NULL with a reason.
static char *read_file(const char *dir, const char *name, size_t *len, char *reason, size_t rsize) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    const char *why;
    FILE *f = fopen_regular(path, &why);
    if (!f) {
        fail(reason, rsize, "cannot open '%s': %s", path, why);
        return NULL;
    }
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        reserve(&buf, &cap, n + 65536, 1);
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    bool error = ferror(f);
    fclose(f);
    if (error) {
        fail(reason, rsize, "reading '%s' failed", path);
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

Tokenizer *tokenizer_load(const char *dir, char *reason, size_t reason_size) {
    size_t json_len, bpe_len;
    char *json = read_file(dir, "encoder.json", &json_len, reason, reason_size);
    if (!json) return NULL;
    char *bpe = read_file(dir, "vocab.bpe", &bpe_len, reason, reason_size);
    if (!bpe) {
        free(json);
        return NULL;
    }
    Tokenizer *t = tokenizer_from_memory(json, json_len, bpe, bpe_len, reason, reason_size);
    free(json);
    free(bpe);
    return t;
}

// ---------------------------------------------------------------------------------------------
// Encoding

enum {
    NO_RANK = INT32_MAX,
    CACHE_MAX_PIECE = 64,           // longer pieces are rare: not cached
    CACHE_MAX_ENTRIES = 1 << 16,    // the cache is emptied when full: bounded memory
};

struct TokenEncoder {
    const Tokenizer *t;
    pcre2_match_data *match;
    pcre2_match_context *match_context;
    pcre2_jit_stack *jit_stack;
    uint8_t *clean;  // text with invalid UTF-8 bytes replaced, when it has any
    size_t clean_cap;
    // BPE state of one piece (bpe_piece): a symbol is named by the offset of its first byte;
    // len[i] is its length (0 once merged into the symbol on its left), prev[i] the offset of the
    // symbol before it. heap holds the ranked adjacent pairs, batch one merge step's.
    uint32_t *len, *prev;
    struct BpePair *heap, *batch;
    size_t heap_len;
    size_t sym_cap;  // elements of len, prev and key (at least bytes + 1); heap and batch hold 3 x as many
    uint8_t *key;  // a pair's merge key
    // Cache: piece bytes -> offset in cache_tokens of [count, id, id, ...].
    BytesMap cache;
    int32_t *cache_tokens;
    size_t cache_tokens_len, cache_tokens_cap;
};

TokenEncoder *token_encoder_new(const Tokenizer *t) {
    TokenEncoder *e = calloc_check(1, sizeof(TokenEncoder));
    e->t = t;
    e->match = pcre2_match_data_create_from_pattern(t->pattern, NULL);
    e->match_context = pcre2_match_context_create(NULL);
    e->jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, NULL);
    if (!e->match || !e->match_context || !e->jit_stack) die("out of memory creating regex match data");
    pcre2_jit_stack_assign(e->match_context, NULL, e->jit_stack);
    map_init(&e->cache, CACHE_MAX_ENTRIES);
    return e;
}

void token_encoder_free(TokenEncoder *e) {
    if (!e) return;
    pcre2_match_data_free(e->match);
    pcre2_match_context_free(e->match_context);
    pcre2_jit_stack_free(e->jit_stack);
    free(e->clean);
    free(e->len);
    free(e->prev);
    free(e->heap);
    free(e->batch);
    free(e->key);
    map_free(&e->cache);
    free(e->cache_tokens);
    free(e);
}

// Encoder.js's rank of the pair (piece[a,b), piece[b,c)): the rank of the key "first,second".
static int32_t pair_rank(TokenEncoder *e, const uint8_t *piece, uint32_t a, uint32_t b, uint32_t c) {
    size_t key_len = (size_t)(c - a) + 1;
    if (key_len > e->t->max_merge_key_len) return NO_RANK;
    memcpy(e->key, piece + a, b - a);
    e->key[b - a] = ',';
    memcpy(e->key + (b - a) + 1, piece + b, c - b);
    int32_t r = map_get(&e->t->merge_ranks, e->key, key_len);
    return r < 0 ? NO_RANK : r;
}

// Byte-pair encodes one piece of the split and appends its tokens to out, as Encoder.js's bpe():
// take the lowest-ranked adjacent pair (the last one among equal ranks), merge each occurrence of
// that pair of strings from left to right, repeat until no pair is ranked. Encoder.js rescans the
// whole word per step (quadratic in its length); here the ranked pairs wait in a heap ordered by
// (rank, offset), so a word of n bytes costs O(n log n). One step pops every pair of the lowest
// rank r (in offset order, as the rescan meets them), merges those whose strings are the last
// one's, and puts back the others of rank r: their key "first,second" is r's only by the comma's
// place (Encoder.js ranks the string), and it takes them in later steps. A pair the step creates
// waits for the next step, as in the rescan. A heap entry goes stale when either of its symbols
// changes: both lengths are kept in it and compared when it comes out.
typedef struct BpePair {
    int32_t rank;
    uint32_t at, first_len, second_len;  // the pair piece[at, at + first_len + second_len)
} BpePair;

static bool pair_before(const BpePair *a, const BpePair *b) {
    return a->rank != b->rank ? a->rank < b->rank : a->at < b->at;
}

static void heap_push(TokenEncoder *e, BpePair p) {
    BpePair *h = e->heap;
    size_t i = e->heap_len++;
    for (; i > 0 && pair_before(&p, &h[(i - 1) / 2]); i = (i - 1) / 2) h[i] = h[(i - 1) / 2];
    h[i] = p;
}

static BpePair heap_pop(TokenEncoder *e) {
    BpePair *h = e->heap, top = h[0], last = h[--e->heap_len];
    size_t i = 0, n = e->heap_len;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && pair_before(&h[c + 1], &h[c])) c++;
        if (!pair_before(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (n > 0) h[i] = last;
    return top;
}

static void reserve_word(TokenEncoder *e, size_t n) {
    if (n + 1 <= e->sym_cap) return;
    size_t cap = 2 * (n + 1);
    e->len = realloc_check(e->len, cap * sizeof(uint32_t));
    e->prev = realloc_check(e->prev, cap * sizeof(uint32_t));
    e->heap = realloc_check(e->heap, 3 * cap * sizeof(BpePair));  // n - 1 pairs, 2 more per merge
    e->batch = realloc_check(e->batch, 3 * cap * sizeof(BpePair));
    e->key = realloc_check(e->key, cap);
    e->sym_cap = cap;
}

// Ranks the pair of the symbols at `at` and the one after it, if there is one, and queues it.
static void queue_pair(TokenEncoder *e, const uint8_t *piece, uint32_t n, uint32_t at) {
    uint32_t second = at + e->len[at];
    if (second >= n) return;
    int32_t r = pair_rank(e, piece, at, second, second + e->len[second]);
    if (r != NO_RANK) heap_push(e, (BpePair){r, at, e->len[at], e->len[second]});
}

// The pair still joins two current symbols of those lengths.
static bool pair_current(const TokenEncoder *e, uint32_t n, const BpePair *p) {
    uint32_t second = p->at + p->first_len;
    return e->len[p->at] == p->first_len && second < n && e->len[second] == p->second_len;
}

static void bpe_piece(TokenEncoder *e, const uint8_t *piece, uint32_t n, TokenList *out) {
    reserve_word(e, n);
    uint32_t *len = e->len, *prev = e->prev;
    for (uint32_t i = 0; i < n; i++) {
        len[i] = 1;
        prev[i] = i - 1;  // wraps for the first symbol, which has none
    }
    e->heap_len = 0;
    for (uint32_t i = 0; i + 1 < n; i++) queue_pair(e, piece, n, i);
    while (e->heap_len > 0) {
        const int32_t r = e->heap[0].rank;
        size_t count = 0;
        while (e->heap_len > 0 && e->heap[0].rank == r) {
            BpePair p = heap_pop(e);
            if (pair_current(e, n, &p)) e->batch[count++] = p;
        }
        if (count == 0) continue;
        const BpePair last = e->batch[count - 1];
        const uint8_t *first = piece + last.at, *second = first + last.first_len;
        size_t kept = 0;  // pairs of rank r with other strings, back to the heap after the step
        for (size_t k = 0; k < count; k++) {
            const BpePair p = e->batch[k];
            const bool same = p.first_len == last.first_len && p.second_len == last.second_len &&
                              memcmp(piece + p.at, first, p.first_len) == 0 &&
                              memcmp(piece + p.at + p.first_len, second, p.second_len) == 0;
            if (!same) {
                e->batch[kept++] = p;
                continue;
            }
            if (!pair_current(e, n, &p)) continue;  // its left symbol was the right of the last merge
            const uint32_t right = p.at + p.first_len, after = right + p.second_len;
            len[p.at] += len[right];
            len[right] = 0;
            if (after < n) prev[after] = p.at;
            if (p.at > 0) queue_pair(e, piece, n, prev[p.at]);
            queue_pair(e, piece, n, p.at);
        }
        for (size_t k = 0; k < kept; k++)
            if (pair_current(e, n, &e->batch[k])) heap_push(e, e->batch[k]);
    }
    for (uint32_t i = 0; i < n; i += len[i]) {
        // Every symbol is a single byte or the product of a merge, and the loader checked that
        // both are tokens.
        int32_t id = map_get(&e->t->token_ids, piece + i, len[i]);
        if (id < 0) die("internal error: BPE produced a symbol that is not a token");
        token_list_push(out, id);
    }
}

static void encode_piece(TokenEncoder *e, const uint8_t *piece, size_t n, TokenList *out) {
    if (n == 1) {
        token_list_push(out, e->t->byte_token[piece[0]]);
        return;
    }
    if (n > UINT32_MAX - 2) die("a word of %zu bytes is too long to encode", n);
    if (n > CACHE_MAX_PIECE) {
        bpe_piece(e, piece, (uint32_t)n, out);
        return;
    }
    int32_t at = map_get(&e->cache, piece, n);
    if (at >= 0) {
        const int32_t *cached = e->cache_tokens + at;
        for (int32_t i = 1; i <= cached[0]; i++) token_list_push(out, cached[i]);
        return;
    }
    size_t before = out->len;
    bpe_piece(e, piece, (uint32_t)n, out);
    size_t count = out->len - before;
    if (e->cache.count == e->cache.max_count) {
        map_clear(&e->cache);
        e->cache_tokens_len = 0;
    }
    reserve(&e->cache_tokens, &e->cache_tokens_cap, e->cache_tokens_len + count + 1, sizeof(int32_t));
    map_put(&e->cache, piece, n, (int32_t)e->cache_tokens_len);
    e->cache_tokens[e->cache_tokens_len++] = (int32_t)count;
    for (size_t i = 0; i < count; i++) e->cache_tokens[e->cache_tokens_len++] = out->data[before + i];
}

// The text the split pattern runs on: text itself when it is valid UTF-8, else a copy in which
// every byte outside a well-formed sequence is 0x01. 0x01 is a control character, so an "other"
// character for the pattern like the U+FFFD JavaScript sees there, and one byte long, so match
// offsets in the copy are offsets in text.
static const uint8_t *split_subject(TokenEncoder *e, const uint8_t *text, size_t len) {
    size_t i = 0;
    int c = 1;
    while (i < len) {
        if (text[i] < 0x80) {
            i++;
            continue;
        }
        c = utf8_char_len(text + i, len - i);
        if (c <= 0) break;
        i += (size_t)c;
    }
    if (i == len) return text;
    reserve(&e->clean, &e->clean_cap, len, 1);
    memcpy(e->clean, text, len);
    while (i < len) {
        c = utf8_char_len(text + i, len - i);
        if (c <= 0) {
            e->clean[i++] = 0x01;
        } else {
            i += (size_t)c;
        }
    }
    return e->clean;
}

// End of the piece of the split that starts at offset (< len) in subject.
static size_t piece_end(TokenEncoder *e, const uint8_t *subject, size_t len, size_t offset) {
    int rc = pcre2_match(e->t->pattern, subject, len, offset, PCRE2_NO_UTF_CHECK, e->match, e->match_context);
    if (rc < 0) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(rc, msg, sizeof msg);
        die("splitting text at byte %zu failed: %s", offset, (char *)msg);
    }
    const PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(e->match);
    // Each alternative starts with one class of character (letter, number, space, other) and
    // together they cover all of them, so every match starts where the last one ended.
    if (ovector[0] != offset || ovector[1] <= offset) die("internal error: the split pattern skipped bytes at %zu", offset);
    return ovector[1];
}

size_t token_encoder_split(TokenEncoder *e, const void *text, size_t len, size_t *ends) {
    const uint8_t *subject = split_subject(e, text, len);
    size_t count = 0;
    for (size_t offset = 0; offset < len; offset = ends[count++]) ends[count] = piece_end(e, subject, len, offset);
    return count;
}

void token_encoder_encode(TokenEncoder *e, const void *text_, size_t len, TokenList *out) {
    const uint8_t *text = text_;
    const uint8_t *subject = split_subject(e, text, len);
    for (size_t offset = 0, end; offset < len; offset = end) {
        end = piece_end(e, subject, len, offset);
        encode_piece(e, text + offset, end - offset, out);
    }
}

// ---------------------------------------------------------------------------------------------
// Decoding and printing

uint8_t *tokenizer_decode(const Tokenizer *t, const int *tokens, size_t n, size_t *len) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= t->vocab_size) return NULL;
        total += t->token_len[tokens[i]];
    }
    uint8_t *bytes = malloc_check(total + 1);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(bytes + at, t->token_bytes + t->token_start[tokens[i]], t->token_len[tokens[i]]);
        at += t->token_len[tokens[i]];
    }
    bytes[total] = 0;
    *len = total;
    return bytes;
}

static const char REPLACEMENT[] = "\xEF\xBF\xBD";  // U+FFFD

void token_printer_init(TokenPrinter *p, const Tokenizer *t, FILE *out) {
    *p = (TokenPrinter){.tokenizer = t, .out = out};
}

// Prints the complete characters held; with at_end also an incomplete tail (as U+FFFD).
static void printer_drain(TokenPrinter *p, bool at_end) {
    while (p->n_held > 0) {
        int c = utf8_char_len(p->held, (size_t)p->n_held);
        if (c < 0 && !at_end) return;
        if (c <= 0) {
            // One U+FFFD for the maximal ill-formed subpart (as Node and browsers decode): the
            // longest prefix that could still begin a character, at least one byte.
            c = 1;
            while (c < p->n_held && utf8_char_len(p->held, (size_t)c + 1) < 0) c++;
            fputs(REPLACEMENT, p->out);
        } else {
            uint32_t cp = utf8_code_point(p->held, c);
            bool control = (cp < 0x20 && cp != '\n' && cp != '\t') || (cp >= 0x7F && cp < 0xA0);
            if (control) fputs(REPLACEMENT, p->out);
            else fwrite(p->held, 1, (size_t)c, p->out);
        }
        p->n_held -= c;
        memmove(p->held, p->held + c, (size_t)p->n_held);
    }
}

void token_printer_put(TokenPrinter *p, int token) {
    size_t len;
    const uint8_t *bytes = tokenizer_token_bytes(p->tokenizer, token, &len);
    if (!bytes) {
        printer_drain(p, true);
        fprintf(p->out, "<|invalid token %d|>", token);
        return;
    }
    for (size_t i = 0; i < len; i++) {
        p->held[p->n_held++] = bytes[i];
        printer_drain(p, false);
    }
}

void token_printer_finish(TokenPrinter *p) {
    printer_drain(p, true);
    fflush(p->out);
}

void tokenizer_fprint(const Tokenizer *t, const int *tokens, size_t n, FILE *out) {
    TokenPrinter p;
    token_printer_init(&p, t, out);
    for (size_t i = 0; i < n; i++) token_printer_put(&p, tokens[i]);
    token_printer_finish(&p);
}
