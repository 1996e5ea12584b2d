// libFuzzer target: training-state files (llmc/state.h). The input is the file; the header must
// be validated against the file size before the optimizer moments are allocated and read.
#include "../../llmc/state.h"
#include "../../llmc/utils.h"
#include "fuzz_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_write_temp_file("state", data, size);
    static float *moments;
    moments = NULL;
    FUZZ_RUN({
        TrainState st;
        int has_master;
        state_read_header(path, &st, &has_master);
        size_t n = (size_t)(st.end - st.begin);
        moments = (float *)malloc_check(3 * n * sizeof(float));
        state_read(path, &st, moments, moments + n, moments + 2 * n);
    });
    free(moments);
    return 0;
}
