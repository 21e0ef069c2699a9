#!/usr/bin/env bash
# Sets up .venv with the test dependencies and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
export CUDA_VISIBLE_DEVICES="" TF_CPP_MIN_LOG_LEVEL=2
exec .venv/bin/python -m pytest -q --durations=15 "$@"
