// prepare_data: text -> GPT-2 token shards.
//
// Input: plain text files (one document each), directories of them (every file below, sorted by
// path, hidden names skipped), or JSON lines (one document per record, its text in a field).
// Output: shards in the common format (256 x int32 header: magic 20240520, version 1, token
// count; then the tokens as uint16), each document preceded by <|endoftext|>:
//   PREFIX_val_000000.bin ...   the validation split: the first shard, or the first documents
//                               making up --val-fraction of the input bytes
//   PREFIX_train_000000.bin ... the rest
// Memory is bounded: documents are read in batches of about 16 pieces; a long document is cut
// into pieces of about --chunk-bytes at line breaks where the cut provably does not change the
// tokens (see safe_cut); only a stretch of text without such a line break, or one JSON line, is
// held whole. The pieces of a batch are encoded in parallel (OpenMP) and written in
// input order, so the shards do not depend on the number of threads. Shards are written under
// temporary names (NAME.tmp.PID), fsync'ed, and renamed only when everything succeeded (then the
// directory is fsync'ed): a failed run or a crash leaves no shard under a final name that is not
// complete. Existing shards of the prefix, whatever their number, are refused.
#include "../../llmc/dataloader.h"
#include "../../llmc/fileio.h"
#include "../../llmc/tokenizer.h"
#include "../../llmc/utils.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <libgen.h>
#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { HEADER_INTS = 256 };  // the shard header (llmc/dataloader.h: magic, version, token count)
enum Split { VAL = 0, TRAIN = 1 };
static const char *SPLIT_NAME[2] = {"val", "train"};

typedef struct {
    const char **inputs;
    int n_inputs;
    const char *prefix;
    const char *tokenizer_dir;
    const char *format;  // auto, text or jsonl
    const char *jsonl_field;
    size_t shard_tokens;
    double val_fraction;  // < 0: the first shard is the validation split
    size_t chunk_bytes;
} Options;

static void print_usage(void) {
    printf(
        "usage: prepare_data -i INPUT [-i INPUT ...] -o PREFIX [options]\n"
        "Encodes text with the GPT-2 tokenizer into token shards PREFIX_val_%%06d.bin and\n"
        "PREFIX_train_%%06d.bin; every document is preceded by <|endoftext|>.\n"
        "  -i, --input PATH        a text file (one document), a directory (all files below it, sorted)\n"
        "                          or a JSON lines file (one document per record); repeatable\n"
        "  -o, --output PREFIX     output path prefix, e.g. data/mydata/mydata (its directory must exist,\n"
        "                          holding no shard of PREFIX: a new run never mixes with an old one)\n"
        "  -t, --tokenizer DIR     directory with encoder.json and vocab.bpe (default data/gpt2)\n"
        "  -f, --format FORMAT     auto (default: *.jsonl is JSON lines, anything else text), text, jsonl\n"
        "      --jsonl-field NAME  the record field holding the text (default text)\n"
        "  -s, --shard-tokens N    tokens per shard (default 100000000)\n"
        "  -v, --val-fraction F    validation = the first documents up to fraction F of the input bytes,\n"
        "                          0 <= F < 1 (default: validation = the first shard)\n"
        "      --chunk-bytes N     a long document is encoded in pieces of about N bytes, cut at line\n"
        "                          breaks that cannot change the tokens (default 1048576)\n"
        "  -h, --help              this help\n"
        "Threads: OpenMP (OMP_NUM_THREADS); the output does not depend on their number.\n");
}

static size_t parse_size(const char *flag, const char *text, size_t min, size_t max) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text || *end || text[0] == '-' || v < min || v > max)
        usage_error("%s must be an integer in [%zu, %zu], got '%s'", flag, min, max, text);
    return (size_t)v;
}

// Whether arg names an option ("-s", "-s5", "--shard-tokens=5", "--shard"): then "-o -s 5" lacks
// -o's value rather than naming the output "-s" (as train_gpt decides).
static bool names_option(const char *arg, const char *shortopts, const struct option *longopts) {
    if (arg[0] != '-' || !arg[1]) return false;
    if (arg[1] != '-') return arg[1] != ':' && strchr(shortopts, arg[1]);
    size_t n = strcspn(arg + 2, "=");
    for (const struct option *o = longopts; o->name; o++)
        if (strncmp(o->name, arg + 2, n) == 0) return true;
    return false;
}

static Options parse_options(int argc, char **argv) {
    Options o = {.prefix = NULL, .tokenizer_dir = "data/gpt2", .format = "auto", .jsonl_field = "text",
                 .shard_tokens = 100000000, .val_fraction = -1, .chunk_bytes = 1 << 20};
    o.inputs = malloc_check((size_t)argc * sizeof(char *));
    enum { OPT_JSONL_FIELD = 1000, OPT_CHUNK_BYTES };
    static const struct option longopts[] = {
        {"input", required_argument, 0, 'i'},         {"output", required_argument, 0, 'o'},
        {"tokenizer", required_argument, 0, 't'},     {"format", required_argument, 0, 'f'},
        {"jsonl-field", required_argument, 0, OPT_JSONL_FIELD},
        {"shard-tokens", required_argument, 0, 's'},  {"val-fraction", required_argument, 0, 'v'},
        {"chunk-bytes", required_argument, 0, OPT_CHUNK_BYTES},
        {"help", no_argument, 0, 'h'},                {0, 0, 0, 0}};
    static const char shortopts[] = ":i:o:t:f:s:v:h";
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        // A value given as its own argument that is an option; one attached ("--output=-s") is taken.
        if (optarg && optarg == argv[optind - 1] && names_option(optarg, shortopts, longopts))
            usage_error("option %s needs a value", argv[optind - 2]);
        switch (c) {
        case 'i': o.inputs[o.n_inputs++] = optarg; break;
        case 'o': o.prefix = optarg; break;
        case 't': o.tokenizer_dir = optarg; break;
        case 'f':
            if (strcmp(optarg, "auto") && strcmp(optarg, "text") && strcmp(optarg, "jsonl"))
                usage_error("--format must be auto, text or jsonl, got '%s'", optarg);
            o.format = optarg;
            break;
        case OPT_JSONL_FIELD: o.jsonl_field = optarg; break;
        case 's': o.shard_tokens = parse_size("--shard-tokens", optarg, 1, 0x7FFFFFFF); break;
        case 'v': {
            char *end;
            errno = 0;
            o.val_fraction = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(o.val_fraction >= 0 && o.val_fraction < 1))
                usage_error("--val-fraction must be a number in [0, 1), got '%s'", optarg);
            break;
        }
        case OPT_CHUNK_BYTES: o.chunk_bytes = parse_size("--chunk-bytes", optarg, 16, (size_t)1 << 30); break;
        case 'h': print_usage(); exit(0);
        case ':': usage_error("option %s needs a value", argv[optind - 1]);
        default: usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) usage_error("unexpected argument '%s'", argv[optind]);
    if (o.n_inputs == 0) usage_error("no input: give -i PATH");
    if (!o.prefix || !*o.prefix) usage_error("no output: give -o PREFIX");
    if (o.prefix[strlen(o.prefix) - 1] == '/')
        usage_error("-o takes a path prefix such as %smydata (the shards are PREFIX_train_000000.bin, ...), got '%s'",
                    o.prefix, o.prefix);
    return o;
}

// ---------------------------------------------------------------------------------------------
// Input files

typedef struct {
    char *path;
    size_t size;
    bool jsonl;
} InputFile;

typedef struct {
    InputFile *files;
    size_t count, cap;
} FileList;

static bool has_suffix(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int compare_paths(const void *a, const void *b) {
    return strcmp(((const InputFile *)a)->path, ((const InputFile *)b)->path);
}

static void add_path(FileList *list, const char *path, const char *format) {
    struct stat st;
    if (stat(path, &st) != 0) die("cannot read input '%s': %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        DIR *dir = opendir(path);
        if (!dir) die("cannot list directory '%s': %s", path, strerror(errno));
        size_t first = list->count;
        for (struct dirent *entry; (entry = readdir(dir));) {
            if (entry->d_name[0] == '.') continue;
            char *child = malloc_check(strlen(path) + strlen(entry->d_name) + 2);
            sprintf(child, "%s/%s", path, entry->d_name);
            add_path(list, child, format);
            free(child);
        }
        closedir(dir);
        // Sorted, so that the output does not depend on the order readdir happens to return.
        if (list->count > first)  // (an empty directory: files may still be NULL)
            qsort(list->files + first, list->count - first, sizeof(InputFile), compare_paths);
        return;
    }
    if (!S_ISREG(st.st_mode)) die("input '%s' is neither a regular file nor a directory", path);
    if (list->count == list->cap) {
        list->cap = list->cap ? 2 * list->cap : 16;
        InputFile *grown = realloc(list->files, list->cap * sizeof(InputFile));
        if (!grown) die("out of memory listing input files");
        list->files = grown;
    }
    char *copy = malloc_check(strlen(path) + 1);
    strcpy(copy, path);
    bool jsonl = strcmp(format, "jsonl") == 0 || (strcmp(format, "auto") == 0 && has_suffix(path, ".jsonl"));
    list->files[list->count++] = (InputFile){.path = copy, .size = (size_t)st.st_size, .jsonl = jsonl};
}

// ---------------------------------------------------------------------------------------------
// Output shards

// The shards under temporary names, newest first. They are removed if the program ends before
// renaming them all: by an atexit handler (die() exits through exit()) or by a terminating
// signal. Only the main thread changes the list and only it takes the signals (install_handlers),
// a node is complete before one release store publishes it, and a renamed one is only marked: so
// the handler, interrupting the main thread anywhere, walks a consistent list.
typedef struct TempShard {
    char *temp, *final;
    volatile sig_atomic_t renamed;
    struct TempShard *next;
} TempShard;
static TempShard *volatile g_temp_shards;

static void publish_temp_shards(TempShard *head) { __atomic_store_n(&g_temp_shards, head, __ATOMIC_RELEASE); }

static void remove_temp_shards(void) {
    for (TempShard *s = g_temp_shards; s; s = s->next)
        if (!s->renamed) unlink(s->temp);  // unlink is async-signal-safe
}

// Remove the temporaries, then die of the signal as the default would.
static void on_terminating_signal(int sig) {
    remove_temp_shards();
    signal(sig, SIG_DFL);
    raise(sig);
}

// SIGINT, SIGTERM and SIGHUP, except where ignored on entry (nohup; a shell's background job
// ignores SIGINT), go to on_terminating_signal on the main thread: the OpenMP workers, started
// here, block them for good. Call before the first parallel region. (Each worker blocks them
// itself: at -O1 and above GCC's empty parallel region started no thread, so the workers were
// created later, unblocked, and a signal taken by one removed the temporaries while the main
// thread went on creating shards, some of which were left behind.)
static void install_handlers(void) {
    static const int signals[] = {SIGINT, SIGTERM, SIGHUP};
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        struct sigaction old, sa = {.sa_handler = on_terminating_signal};
        sigemptyset(&sa.sa_mask);
        if (sigaction(signals[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaction(signals[i], &sa, NULL);
        sigaddset(&set, signals[i]);
    }
    signal(SIGXFSZ, SIG_IGN);  // past ulimit -f a write fails (EFBIG) and is reported, not a silent death
#pragma omp parallel
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);  // the main thread, the team's thread 0, takes them
}

typedef struct {
    const char *prefix;
    size_t shard_tokens;
    bool first_shard_is_val;
    enum Split split;
    int next_index[2];
    FILE *file;  // the open shard: g_temp_shards->temp
    size_t count;
    uint16_t buffer[1 << 15];
    size_t buffered;
    size_t tokens[2];
} ShardWriter;

// The temporary name carries the process id, as AtomicFile's do: no other run's temporary, nor an
// input so named, is overwritten.
static char *shard_path(const char *prefix, enum Split split, int index, bool temp) {
    size_t n = strlen(prefix) + 48;
    char *path = malloc_check(n);
    if (temp) snprintf(path, n, "%s_%s_%06d.bin.tmp.%d", prefix, SPLIT_NAME[split], index, (int)getpid());
    else snprintf(path, n, "%s_%s_%06d.bin", prefix, SPLIT_NAME[split], index);
    return path;
}

static void open_shard(ShardWriter *w) {
    int index = w->next_index[w->split]++;
    TempShard *shard = malloc_check(sizeof(TempShard));
    *shard = (TempShard){shard_path(w->prefix, w->split, index, true), shard_path(w->prefix, w->split, index, false),
                         0, g_temp_shards};
    publish_temp_shards(shard);  // before the file exists: a signal removes it from here on
    w->file = fopen(shard->temp, "wb");
    if (!w->file) die("cannot create shard '%s': %s", shard->temp, strerror(errno));
    int32_t header[HEADER_INTS] = {0};  // rewritten with the count when the shard is complete
    fwrite_check(header, sizeof header, 1, w->file, shard->temp);
    w->count = 0;
}

static void flush_tokens(ShardWriter *w) {
    fwrite_check(w->buffer, sizeof(uint16_t), w->buffered, w->file, g_temp_shards->temp);
    w->buffered = 0;
}

// Completes the open shard; an empty one is dropped (its index is given back).
static void close_shard(ShardWriter *w) {
    TempShard *shard = g_temp_shards;
    flush_tokens(w);
    if (w->count == 0) {
        fclose_check(w->file, shard->temp);
        unlink(shard->temp);
        publish_temp_shards(shard->next);
        free(shard->temp);
        free(shard->final);
        free(shard);
        w->next_index[w->split]--;
    } else {
        int32_t header[HEADER_INTS] = {SHARD_MAGIC, SHARD_VERSION, (int32_t)w->count};
        fseek_check(w->file, 0, SEEK_SET, shard->temp);
        fwrite_check(header, sizeof header, 1, w->file, shard->temp);
        if (fflush(w->file) != 0 || fsync(fileno(w->file)) != 0)
            die("cannot write shard '%s': %s", shard->temp, strerror(errno));
        fclose_check(w->file, shard->temp);
    }
    w->file = NULL;
}

static void writer_switch_split(ShardWriter *w, enum Split split) {
    if (split == w->split) return;
    close_shard(w);
    w->split = split;
    open_shard(w);
}

static void writer_put(ShardWriter *w, int token) {
    if (w->count == w->shard_tokens) {
        close_shard(w);
        if (w->first_shard_is_val) w->split = TRAIN;
        open_shard(w);
    }
    w->buffer[w->buffered++] = (uint16_t)token;
    if (w->buffered == sizeof w->buffer / sizeof w->buffer[0]) flush_tokens(w);
    w->count++;
    w->tokens[w->split]++;
}

// Completes the last shard and gives every shard its final name, the first one (PREFIX_val_000000
// or PREFIX_train_000000) last: scripts take its presence to mean that all shards are there.
static void writer_finish(ShardWriter *w) {
    close_shard(w);
    size_t n_shards = 0;
    for (TempShard *s = g_temp_shards; s; s = s->next, n_shards++) {
        if (rename(s->temp, s->final) != 0) die("cannot rename '%s' to '%s': %s", s->temp, s->final, strerror(errno));
        s->renamed = 1;
    }
    char *dir = strdup(w->prefix);
    if (!dir) die("out of memory");
    if (n_shards > 0 && sync_directory(dirname(dir)) != 0)
        die("cannot sync the directory of '%s': %s", w->prefix, strerror(errno));
    free(dir);
    TempShard *list = g_temp_shards, *oldest_first = NULL;
    publish_temp_shards(NULL);
    while (list) {  // reversed, to print the names in order
        TempShard *next = list->next;
        list->next = oldest_first;
        oldest_first = list;
        list = next;
    }
    while (oldest_first) {
        TempShard *next = oldest_first->next;
        printf("%s\n", oldest_first->final);
        free(oldest_first->temp);
        free(oldest_first->final);
        free(oldest_first);
        oldest_first = next;
    }
}

// ---------------------------------------------------------------------------------------------
// Pieces: documents, or parts of long ones, collected in a batch and encoded in parallel

typedef struct {
    size_t offset, len;  // in the batch's text
    bool starts_document;
    enum Split split;    // with --val-fraction: the split of the piece's document
    TokenList tokens;
} Piece;

typedef struct {
    uint8_t *text;
    size_t used, cap;
    Piece *pieces;
    size_t count, cap_pieces;
} Batch;

typedef struct {
    Options opt;
    const Tokenizer *tokenizer;
    TokenEncoder **encoders;  // one per thread
    Batch batch;
    ShardWriter writer;
    size_t total_bytes, consumed_bytes, documents, empty_documents;
    double start_time, last_progress;
    size_t progress_tokens;  // the token count of the last progress line
    enum Split document_split;
} Run;

static void print_progress(Run *r, bool final) {
    double now = wall_time(), elapsed = now - r->start_time;
    if (!final && now - r->last_progress < 1.0) return;
    size_t tokens = r->writer.tokens[VAL] + r->writer.tokens[TRAIN];
    if (final && !isatty(2) && r->last_progress > r->start_time && tokens == r->progress_tokens) return;  // said
    r->last_progress = now;
    r->progress_tokens = tokens;
    fprintf(stderr, "%s%.1f of %.1f MB, %zu documents, %zu tokens, %.2f M tokens/s%s",
            isatty(2) ? "\r" : "", r->consumed_bytes / 1e6, r->total_bytes / 1e6, r->documents, tokens,
            elapsed > 0 ? tokens / elapsed / 1e6 : 0.0, (final || !isatty(2)) ? "\n" : "");
}

static void encode_batch(Run *r) {
    Batch *b = &r->batch;
#pragma omp parallel
    {
        TokenEncoder *e = r->encoders[omp_get_thread_num()];
#pragma omp for schedule(dynamic, 1)
        for (size_t i = 0; i < b->count; i++) {
            Piece *p = &b->pieces[i];
            p->tokens.len = 0;
            token_encoder_encode(e, b->text + p->offset, p->len, &p->tokens);
        }
    }
    int eot = tokenizer_eot(r->tokenizer);
    for (size_t i = 0; i < b->count; i++) {
        Piece *p = &b->pieces[i];
        if (p->starts_document) {
            if (r->opt.val_fraction >= 0) writer_switch_split(&r->writer, p->split);
            writer_put(&r->writer, eot);
        }
        for (size_t k = 0; k < p->tokens.len; k++) writer_put(&r->writer, p->tokens.data[k]);
        // Bounded memory: a slot that once held a long piece does not keep its buffer.
        if (p->tokens.cap > (1 << 16)) token_list_free(&p->tokens);
    }
    b->count = 0;
    b->used = 0;
    print_progress(r, false);
}

static void add_piece(Run *r, const uint8_t *text, size_t len, bool starts_document) {
    Batch *b = &r->batch;
    if (b->count > 0 && (b->used + len > b->cap || b->count == b->cap_pieces)) encode_batch(r);
    if (len > b->cap) {  // one piece larger than a batch (a long stretch without a safe cut)
        free(b->text);
        b->text = malloc_check(len);
        b->cap = len;
    }
    memcpy(b->text + b->used, text, len);
    b->pieces[b->count].offset = b->used;
    b->pieces[b->count].len = len;
    b->pieces[b->count].starts_document = starts_document;
    b->pieces[b->count].split = r->document_split;
    b->count++;
    b->used += len;
}

static bool is_graphic_ascii(uint8_t c) { return c > 0x20 && c < 0x7F; }

// Cutting text before position p leaves the tokens unchanged when text[p-2] and text[p] are
// printable ASCII and text[p-1] is '\n': the token holding text[p-2] ends there (a letter,
// number or symbol run stops at whitespace), "\n" is a token of its own both when a non-space
// follows and at the end of a text (the pattern's \s+(?!\S) and \s+ give the same one-character
// match), and matching resumes at p either way; the pattern looks ahead at most one character
// and never behind. No UTF-8 sequence is split, and the validity of those before p-2 does not
// depend on what follows an ASCII byte.
static bool safe_cut(const uint8_t *text, size_t p) {
    return is_graphic_ascii(text[p - 2]) && text[p - 1] == '\n' && is_graphic_ascii(text[p]);
}

// Length of the next piece of text[0..len): up to the last safe cut at or before max_len, else
// up to the first one after it; at the end of the document everything that is left; 0 when more
// text is needed to find a cut.
static size_t next_piece_length(const uint8_t *text, size_t len, size_t max_len, bool at_end) {
    if (at_end && len <= max_len) return len;
    size_t limit = len - 1 < max_len ? len - 1 : max_len;  // safe_cut(p) reads text[p]
    for (size_t p = limit; p >= 2; p--) {
        if (safe_cut(text, p)) return p;
    }
    for (size_t p = limit + 1; p < len; p++) {
        if (safe_cut(text, p)) return p;
    }
    return at_end ? len : 0;
}

// Splits one document held in memory into pieces.
static void add_document(Run *r, const uint8_t *text, size_t len, size_t document_bytes) {
    if (len == 0) {
        r->empty_documents++;
        r->consumed_bytes += document_bytes;
        return;
    }
    // --val-fraction: a document belongs to validation while the input before it is < F.
    r->document_split = r->consumed_bytes < r->opt.val_fraction * (double)r->total_bytes ? VAL : TRAIN;
    bool first = true;
    while (len > 0) {
        size_t n = next_piece_length(text, len, r->opt.chunk_bytes, true);
        add_piece(r, text, n, first);
        first = false;
        text += n;
        len -= n;
    }
    r->documents++;
    r->consumed_bytes += document_bytes;
}

// A text file is one document, read in blocks so that its size does not matter.
static void read_text_file(Run *r, const InputFile *in) {
    FILE *f = fopen_check(in->path, "rb");
    size_t cap = 2 * r->opt.chunk_bytes, len = 0, total = 0;
    uint8_t *buf = malloc_check(cap);
    bool first = true, at_end = false;
    r->document_split = r->consumed_bytes < r->opt.val_fraction * (double)r->total_bytes ? VAL : TRAIN;
    while (!at_end) {
        if (cap - len < r->opt.chunk_bytes) {  // a long stretch without a safe cut: hold more
            cap *= 2;
            uint8_t *grown = realloc(buf, cap);
            if (!grown) die("out of memory reading '%s'", in->path);
            buf = grown;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        if (got < cap - len) {
            if (ferror(f)) die("reading '%s' failed: %s", in->path, strerror(errno));
            at_end = true;
        }
        len += got;
        total += got;
        size_t n;
        while (len > 0 && (n = next_piece_length(buf, len, r->opt.chunk_bytes, at_end)) > 0) {
            add_piece(r, buf, n, first);
            first = false;
            memmove(buf, buf + n, len - n);
            len -= n;
            if (!at_end && len < r->opt.chunk_bytes) break;  // read more before cutting again
        }
    }
    fclose(f);
    free(buf);
    if (first) r->empty_documents++;
    else r->documents++;
    r->consumed_bytes += total;
}

// JSON lines: every non-blank line is an object whose field opt.jsonl_field is a string.
static void read_jsonl_file(Run *r, const InputFile *in) {
    FILE *f = fopen_check(in->path, "rb");
    struct json_tokener *tok = json_tokener_new();
    if (!tok) die("out of memory creating a JSON parser");
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long number = 0;
    while ((n = getline(&line, &cap, f)) >= 0) {
        number++;
        size_t len = (size_t)n;
        while (len > 0 && memchr(" \t\r\n", line[len - 1], 4)) len--;
        if (len == 0) {
            r->consumed_bytes += (size_t)n;
            continue;
        }
        if (len > 0x7FFFFFFF) die("%s:%ld: line too long for the JSON parser", in->path, number);
        json_tokener_reset(tok);
        json_object *record = json_tokener_parse_ex(tok, line, (int)len);
        enum json_tokener_error err = json_tokener_get_error(tok);
        if (!record || err != json_tokener_success || json_tokener_get_parse_end(tok) != len)
            die("%s:%ld: malformed JSON: %s", in->path, number,
                record && err == json_tokener_success ? "trailing characters"
                : err == json_tokener_continue     ? "unexpected end of line"
                                                   : json_tokener_error_desc(err));
        json_object *field;
        if (!json_object_is_type(record, json_type_object) ||
            !json_object_object_get_ex(record, r->opt.jsonl_field, &field) ||
            !json_object_is_type(field, json_type_string))
            die("%s:%ld: the record has no string field \"%s\" (set it with --jsonl-field)", in->path, number,
                r->opt.jsonl_field);
        add_document(r, (const uint8_t *)json_object_get_string(field), (size_t)json_object_get_string_len(field),
                     (size_t)n);
        json_object_put(record);
    }
    if (ferror(f)) die("reading '%s' failed: %s", in->path, strerror(errno));
    free(line);
    json_tokener_free(tok);
    fclose(f);
}

// Any file the trainer's globs PREFIX_val_*.bin and PREFIX_train_*.bin would match, not only the
// first shards: an older run's shard 7 would be mixed into this run's data, or overwritten (were it
// an input).
static void refuse_existing_output(const char *prefix) {
    char *dir_copy = strdup(prefix), *base_copy = strdup(prefix);
    if (!dir_copy || !base_copy) die("out of memory");
    const char *dir_path = dirname(dir_copy), *base = basename(base_copy);
    size_t n = strlen(base);
    DIR *dir = opendir(dir_path);  // when it cannot be listed, open_shard says why
    for (struct dirent *entry; dir && (entry = readdir(dir));) {
        if (strncmp(entry->d_name, base, n) != 0) continue;
        const char *rest = entry->d_name + n;
        if (has_suffix(rest, ".bin") && (strncmp(rest, "_val_", 5) == 0 || strncmp(rest, "_train_", 7) == 0))
            die("'%s/%s' already exists: remove the old shards or choose another -o prefix", dir_path, entry->d_name);
    }
    if (dir) closedir(dir);
    free(dir_copy);
    free(base_copy);
}

int main(int argc, char **argv) {
    set_program_name(argv[0]);
    Run r = {.opt = parse_options(argc, argv)};
    refuse_existing_output(r.opt.prefix);
    FileList files = {0};
    for (int i = 0; i < r.opt.n_inputs; i++) add_path(&files, r.opt.inputs[i], r.opt.format);
    for (size_t i = 0; i < files.count; i++) r.total_bytes += files.files[i].size;

    char reason[512];
    Tokenizer *tokenizer = tokenizer_load(r.opt.tokenizer_dir, reason, sizeof reason);
    if (!tokenizer) die("cannot load the tokenizer: %s", reason);
    if (tokenizer_vocab_size(tokenizer) > 65536)
        die("the vocabulary has %d tokens; shards store uint16 tokens", tokenizer_vocab_size(tokenizer));
    r.tokenizer = tokenizer;
    install_handlers();
    int threads = omp_get_max_threads();
    r.encoders = malloc_check((size_t)threads * sizeof(TokenEncoder *));
    for (int i = 0; i < threads; i++) r.encoders[i] = token_encoder_new(tokenizer);
    r.batch.cap = 16 * r.opt.chunk_bytes;
    r.batch.text = malloc_check(r.batch.cap);
    r.batch.cap_pieces = 1 << 16;
    r.batch.pieces = calloc_check(r.batch.cap_pieces, sizeof(Piece));

    atexit(remove_temp_shards);
    ShardWriter *w = &r.writer;
    w->prefix = r.opt.prefix;
    w->shard_tokens = r.opt.shard_tokens;
    w->first_shard_is_val = r.opt.val_fraction < 0;
    w->split = r.opt.val_fraction == 0 ? TRAIN : VAL;
    open_shard(w);  // before reading: an unwritable output fails at once

    r.start_time = r.last_progress = wall_time();
    for (size_t i = 0; i < files.count; i++) {
        if (files.files[i].jsonl) read_jsonl_file(&r, &files.files[i]);
        else read_text_file(&r, &files.files[i]);
    }
    if (r.batch.count) encode_batch(&r);
    if (r.documents == 0) die("the input holds no text (%zu empty documents)", r.empty_documents);
    print_progress(&r, true);
    if (w->tokens[TRAIN] == 0)
        fprintf(stderr, "%s: warning: all %zu tokens went to the validation split; for training shards use a "
                "smaller --shard-tokens or --val-fraction\n", program_name(), w->tokens[VAL]);
    writer_finish(w);
    fprintf(stderr, "%zu documents (%zu empty ones skipped), %zu validation and %zu training tokens, %d threads\n",
            r.documents, r.empty_documents, w->tokens[VAL], w->tokens[TRAIN], threads);

    for (int i = 0; i < threads; i++) token_encoder_free(r.encoders[i]);
    free(r.encoders);
    for (size_t i = 0; i < r.batch.cap_pieces; i++) token_list_free(&r.batch.pieces[i].tokens);
    free(r.batch.pieces);
    free(r.batch.text);
    for (size_t i = 0; i < files.count; i++) free(files.files[i].path);
    free(files.files);
    free(r.opt.inputs);
    tokenizer_free(tokenizer);
    return 0;
}
