#!/usr/bin/env bash
# Recompute policy parsing, the per-layer memory and FLOP model, and the budget planner.
set -eu
cd "$(dirname "$0")/../.."
./build/test/recompute/test_plan
