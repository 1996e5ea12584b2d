# Sourced by the run and launch scripts, from the checkout's root.
# gpu_trainer_usable: train_gptcu is built here and an NVIDIA GPU answers.
# pick_trainer: sets `trainer` to $TRAINER, else ./train_gptcu where gpu_trainer_usable, else
# ./train_gpt, as an absolute path (mpirun starts it on other nodes); exits 1 when that program is
# not built.
gpu_trainer_usable() { [ -x ./train_gptcu ] && command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1; }
pick_trainer() {
    trainer=${TRAINER:-./train_gpt}
    if [ -z "${TRAINER:-}" ] && gpu_trainer_usable; then trainer=./train_gptcu; fi
    [ -x "$trainer" ] || { echo "$0: $trainer is not built (run make)" >&2; exit 1; }
    [[ $trainer == /* ]] || trainer=$PWD/${trainer#./}
}
