#!/usr/bin/env bash
# The PyTorch reference checks itself (against torch.nn modules, float64 finite differences and
# torch.optim.AdamW) before the C trainer is compared with it.
cd "$(dirname "$0")/../torch" && exec /usr/bin/python3 test_reference.py
