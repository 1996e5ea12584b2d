#include "logger.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "utils.h"

// Keeps the lines of an earlier run up to the resumed step: training lines of steps <= step and
// validation lines of steps < step (the resumed loop validates at `step` again). Returns 0, or
// -1 with *why set when the log cannot be rewritten (a full disk): it is then left as it was. A
// log that is not a regular file (main.log linked to /dev/null) holds no lines to keep.
static int keep_lines_up_to(const char *path, int step, const char **why) {
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return 0;
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *in = fopen(path, "r");
    FILE *out = in ? fopen(tmp, "w") : NULL;
    int failed = !out;
    if (out) {
        char line[1024];
        while (fgets(line, sizeof(line), in)) {
            int s, end = 0;
            if (sscanf(line, "s:%d %n", &s, &end) != 1) continue;
            int is_val = strncmp(line + end, "tel:", 4) == 0;
            if (s < step || (s == step && !is_val)) fputs(line, out);
        }
        failed = ferror(in) || fflush(out) != 0 || fsync(fileno(out)) != 0;
        failed |= fclose(out) != 0;
        failed = failed || rename(tmp, path) != 0;
    }
    int saved = errno;
    if (in) fclose(in);
    if (failed) {
        if (out) unlink(tmp);
        *why = strerror(saved);
    }
    return failed ? -1 : 0;
}

void logger_init(Logger *lg, const char *dir, int resume_step) {
    lg->f = NULL;
    lg->write_failed = 0;
    if (!dir || !dir[0]) return;
    char *path = lg->path;
    snprintf(path, sizeof(lg->path), "%s/main.log", dir);
    const char *why = NULL;
    if (resume_step >= 0 && keep_lines_up_to(path, resume_step, &why) != 0) {
        // Appending would leave the earlier run's lines past the resumed step: no log this run.
        fprintf(stderr, "%s: warning: cannot rewrite the log '%s' for the resume: %s; it is left as it was and "
                "this run writes no log\n", program_name(), path, why);
        return;
    }
    lg->f = fopen(path, resume_step >= 0 ? "a" : "w");
    if (!lg->f) die("cannot open the log '%s': %s", path, strerror(errno));
}

// One line, flushed at once; a line that cannot be written (a full disk) is lost, with one
// warning for the run, which goes on (its checkpoints report their own failures).
static void log_line(Logger *lg, const char *fmt, ...) {
    if (!lg->f) return;
    va_list ap;
    va_start(ap, fmt);
    int failed = vfprintf(lg->f, fmt, ap) < 0;
    va_end(ap);
    failed |= fflush(lg->f) != 0;
    if (failed && !lg->write_failed) {
        fprintf(stderr, "%s: warning: cannot write the log '%s': %s; its lines are lost until writing works again\n",
                program_name(), lg->path, strerror(errno));
        lg->write_failed = 1;
    }
    clearerr(lg->f);
}

void logger_train(Logger *lg, int step, float loss, float lr, float norm) {
    log_line(lg, "s:%d trl:%.6f lr:%.6e norm:%.6f\n", step, loss, lr, norm);
}

void logger_val(Logger *lg, int step, float loss) { log_line(lg, "s:%d tel:%.6f\n", step, loss); }

void logger_skip(Logger *lg, int step, const char *reason) { log_line(lg, "s:%d skip:%s\n", step, reason); }

void logger_close(Logger *lg) {
    if (lg->f) fclose(lg->f);
    lg->f = NULL;
}

void format_duration(double s, char *buf, size_t n) {
    if (!(s >= 0) || s > 1e8) { snprintf(buf, n, "?"); return; }
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60) snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, n, "%lds", t);
}

void print_progress(int step, int total_steps, float loss, float norm, float lr, double step_ms, double tokens_per_s,
                    double eta_s, double mfu) {
    char eta[32], mfu_field[32] = "";
    format_duration(eta_s, eta, sizeof(eta));
    if (mfu >= 0) snprintf(mfu_field, sizeof(mfu_field), " | MFU %.1f%%", 100.0 * mfu);
    printf("step %5d/%d | loss %.6f | norm %.4f | lr %.2e | %.1f ms | %.0f tok/s%s | ETA %s\n", step, total_steps,
           loss, norm, lr, step_ms, tokens_per_s, mfu_field, eta);
    fflush(stdout);
}
