// libFuzzer target: token shards (llmc/dataloader.h) read by a 2-rank world of B=1, T=4 (rank 1,
// so the window offsets are exercised) with V = 300, through up to 64 micro-steps (wrapping
// around the shard). The input is the shard file.
#include "../../llmc/dataloader.h"
#include "fuzz_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_write_temp_file("shard", data, size);
    static DataLoader dl;
    FUZZ_RUN({
        int inputs[4], targets[4];
        dataloader_init(&dl, path, 1, 4, 1, 2, 300);
        for (int i = 0; i < 64; i++) {
            dataloader_next_batch(&dl, inputs, targets);
            for (int j = 0; j < 4; j++)
                if (inputs[j] < 0 || inputs[j] >= 300 || targets[j] < 0 || targets[j] >= 300) abort();
        }
    });
    dataloader_free(&dl);  // also a loader whose init refused the shard (dataloader.c)
    return 0;
}
