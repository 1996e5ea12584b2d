#include "fault.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "utils.h"

static const char *const kPhaseNames[NUM_TRAIN_PHASES] = {
    "startup", "validation", "sampling", "data loading", "forward/backward", "gradient reduction", "update", "checkpoint",
};

const char *train_phase_name(TrainPhase phase) {
    return phase >= 0 && phase < NUM_TRAIN_PHASES ? kPhaseNames[phase] : "unknown";
}

// Async-signal-safe output: write(2) of a NUL-terminated string, and of a non-negative integer.
static void write_string(const char *s) {
    ssize_t unused = write(STDERR_FILENO, s, strlen(s));
    (void)unused;
}

static void write_int(long x) {
    char buf[24];
    int n = (int)sizeof(buf);
    buf[--n] = '\0';
    if (x < 0) x = 0;
    do {
        buf[--n] = (char)('0' + x % 10);
        x /= 10;
    } while (x > 0 && n > 0);
    write_string(buf + n);
}

// ---------------------------------------------------------------------------------------------
// Stop signals

static volatile sig_atomic_t g_stop_signal = 0;
static long long g_stop_ns = 0;  // when the first stop signal came (CLOCK_MONOTONIC), 0 until known

static long long monotonic_ns(void) {  // clock_gettime is async-signal-safe
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// The handler may run on several threads at once (the signal goes to the process, and any
// OpenMP thread can take it): the first is chosen by a compare-and-swap. A repeat within
// STOP_REPEAT_NS of the first, or while the first has not yet stored its time, is the same
// request delivered twice (timeout(1) signals the process and then its process group).
static void on_stop_signal(int sig) {
    const char *name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
    const long long now = monotonic_ns();
    sig_atomic_t none = 0;
    if (__atomic_compare_exchange_n(&g_stop_signal, &none, sig, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
        __atomic_store_n(&g_stop_ns, now, __ATOMIC_SEQ_CST);
        write_string(program_name());
        write_string(": received ");
        write_string(name);
        write_string(": finishing this step, then a checkpoint and exit (signal again to exit at once)\n");
        return;
    }
    const long long first = __atomic_load_n(&g_stop_ns, __ATOMIC_SEQ_CST);
    if (first == 0 || now - first < STOP_REPEAT_NS) return;
    write_string(program_name());
    write_string(": second ");
    write_string(name);
    write_string(": exiting now, without a checkpoint\n");
    _exit(128 + sig);
}

void stop_signals_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;  // reads and writes in progress continue rather than fail with EINTR
    if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0)
        die("cannot install the SIGTERM/SIGINT handlers");
    // A file-size limit (ulimit -f) would kill the run silently in a checkpoint write; ignored, the
    // write fails with EFBIG and the checkpoint is reported and skipped, as on a full disk.
    signal(SIGXFSZ, SIG_IGN);
}

int stop_signal_received(void) { return g_stop_signal; }

// ---------------------------------------------------------------------------------------------
// Watchdog

static int g_watchdog_s = 0;
static volatile sig_atomic_t g_step = 0;
static volatile sig_atomic_t g_phase = PHASE_STARTUP;

static void on_watchdog_alarm(int sig) {
    (void)sig;
    write_string(program_name());
    write_string(": error: watchdog: step ");
    write_int(g_step);
    write_string(" has been in phase '");
    write_string(train_phase_name((TrainPhase)g_phase));
    write_string("' and has taken more than ");
    write_int(g_watchdog_s);
    write_string(" s (-w); exiting so that the job can be restarted from its last checkpoint\n");
    _exit(WATCHDOG_EXIT_CODE);
}

void watchdog_init(int timeout_s) {
    g_watchdog_s = timeout_s;
    if (timeout_s <= 0) return;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_watchdog_alarm;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGALRM, &sa, NULL) != 0) die("cannot install the watchdog's SIGALRM handler");
}

void watchdog_begin_step(int step) {
    g_step = step;
    if (g_watchdog_s > 0) alarm((unsigned)g_watchdog_s);
}

void watchdog_set_phase(TrainPhase phase) { g_phase = phase; }

void watchdog_disarm(void) {
    if (g_watchdog_s > 0) alarm(0);
}

// ---------------------------------------------------------------------------------------------
// Test hooks

int test_hook_nan_step(int step) {
    const char *list = getenv("LLMC_TEST_NAN_STEPS");
    if (!list) return 0;
    for (const char *p = list; *p;) {
        char *end;
        long s = strtol(p, &end, 10);
        if (end == p) die("LLMC_TEST_NAN_STEPS: '%s' is not a comma-separated list of steps", list);
        if (s == step) return 1;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') die("LLMC_TEST_NAN_STEPS: '%s' is not a comma-separated list of steps", list);
    }
    return 0;
}
