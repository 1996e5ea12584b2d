// libFuzzer target: model checkpoint files (llmc/checkpoint.h), fp32 and bf16. The input is the
// file; the header must be validated against the file size before anything is allocated or read.
#include <string.h>

#include "../../llmc/checkpoint.h"
#include "../../llmc/utils.h"
#include "fuzz_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_write_temp_file("checkpoint", data, size);
    static float *params;
    params = NULL;
    FUZZ_RUN({
        GPT2Config cfg;
        checkpoint_read_config(path, &cfg);
        params = (float *)malloc_check(gpt2_num_params(&cfg) * sizeof(float));
        checkpoint_read_params(path, &cfg, params);
    });
    free(params);
    return 0;
}
