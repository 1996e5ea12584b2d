// Surviving the mundane deaths of a long run: stop signals, a stuck-step watchdog, and the test
// hooks that let the test suite inject the faults it must prove the trainer survives.
//
// Stop signals: the first SIGTERM or SIGINT only records itself; the training loop polls
// stop_signal_received() after each step, writes a checkpoint and returns normally (exit 0). A
// second signal exits at once with status 128 + signal, as a shell reports a killed job; one that
// comes within STOP_REPEAT_NS of the first is the same request delivered twice (timeout(1), for
// one, signals the process and then its process group) and is ignored.
//
// Watchdog: armed for every step with alarm(2); the training loop names the phase it is in. When
// a step outlives the timeout, SIGALRM prints the step and phase and exits with WATCHDOG_EXIT_CODE
// so a scheduler can restart the job from its last checkpoint. Only async-signal-safe calls
// (write, _exit) run in the handlers.
#ifndef LLMC_FAULT_H
#define LLMC_FAULT_H

#ifdef __cplusplus
extern "C" {
#endif

#define STOP_REPEAT_NS 100000000LL  // 0.1 s
#define WATCHDOG_EXIT_CODE 124  // as timeout(1) reports a command that ran out of time

typedef enum {
    PHASE_STARTUP,
    PHASE_VALIDATION,
    PHASE_SAMPLING,
    PHASE_DATA,
    PHASE_FORWARD_BACKWARD,
    PHASE_GRADIENT_REDUCTION,
    PHASE_UPDATE,
    PHASE_CHECKPOINT,
    NUM_TRAIN_PHASES
} TrainPhase;

// Installs the SIGTERM/SIGINT handlers, and ignores SIGXFSZ (a write past ulimit -f fails instead).
void stop_signals_install(void);
// The first stop signal received (SIGTERM or SIGINT), or 0.
int stop_signal_received(void);

// timeout_s 0 leaves the watchdog off (every other call is then a no-op).
void watchdog_init(int timeout_s);
// Re-arms the timer for a new step (step counts from 1; 0 for work before the first step).
void watchdog_begin_step(int step);
void watchdog_set_phase(TrainPhase phase);
// Disarms the timer (the run is over).
void watchdog_disarm(void);
const char *train_phase_name(TrainPhase phase);

// Test hook LLMC_TEST_NAN_STEPS="3,7": a comma-separated list of 1-based steps whose first
// micro-batch the trainer backpropagates with a NaN loss scale, so that the backend produces a
// genuinely non-finite gradient. Returns 1 when `step` is listed. Unset in normal runs.
int test_hook_nan_step(int step);

#ifdef __cplusplus
}
#endif
#endif
