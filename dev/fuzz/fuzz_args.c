// libFuzzer target: the flag parser (llmc/args.h). The input is a command line, its arguments
// separated by NUL bytes (at most 64); the parsed configuration is printed (to /dev/null) so
// that every field is read back.
#include <string.h>

#include "../../llmc/args.h"
#include "fuzz_harness.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static FILE *sink;
    if (!sink && !(sink = fopen("/dev/null", "w"))) abort();
    char *text = (char *)malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    char *argv[MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = (char *)"train_gpt";
    for (size_t start = 0; start <= size && argc <= MAX_ARGS; start += strlen(text + start) + 1) argv[argc++] = text + start;
    argv[argc] = NULL;
    FUZZ_RUN({
        TrainConfig cfg;
        parse_train_args(&cfg, argc, argv);
        print_train_config(&cfg, sink);
    });
    free(text);
    return 0;
}
