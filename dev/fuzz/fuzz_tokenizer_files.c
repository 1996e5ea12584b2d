// libFuzzer target: the tokenizer's vocabulary files read from disk through the public loader
// (tokenizer_load, as the trainer calls it). The input holds encoder.json, a NUL byte, then
// vocab.bpe; a loaded vocabulary is read back token by token and decoded whole.
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "../../llmc/tokenizer.h"
#include "fuzz_harness.h"

static void write_file(const char *dir, const char *name, const uint8_t *data, size_t size) {
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror(path);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char dir[512];
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof(dir), "%s/llmc_fuzz_tokenizer_%d", tmp && tmp[0] ? tmp : "/tmp", (int)getpid());
        if (mkdir(dir, 0700) != 0 && errno != EEXIST) abort();
    }
    const uint8_t *nul = memchr(data, 0, size);
    size_t json_len = nul ? (size_t)(nul - data) : size;
    write_file(dir, "encoder.json", data, json_len);
    write_file(dir, "vocab.bpe", nul ? nul + 1 : data + size, nul ? size - json_len - 1 : 0);
    FUZZ_RUN({
        char why[256];
        Tokenizer *t = tokenizer_load(dir, why, sizeof(why));
        if (t) {
            int n = tokenizer_vocab_size(t);
            int *all = (int *)malloc((size_t)n * sizeof(int));
            for (int i = 0; i < n; i++) {
                size_t len;
                if (!tokenizer_token_bytes(t, i, &len)) abort();  // every id below the size has bytes
                all[i] = i;
            }
            size_t len;
            free(tokenizer_decode(t, all, (size_t)n, &len));
            free(all);
            tokenizer_free(t);
        } else if (!why[0]) {
            abort();  // a refusal must say why
        }
    });
    return 0;
}
