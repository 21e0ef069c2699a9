#!/usr/bin/env bash
# Sets up .venv with the test dependencies and runs the whole test suite, then (with no
# arguments) the install check: the wheel in a fresh environment, used from outside the
# checkout (scripts/check_install.sh). Arguments go to pytest and skip the install check,
# e.g. `bash scripts/test.sh -m "not slow" tests/test_config.py`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
export CUDA_VISIBLE_DEVICES="" TF_CPP_MIN_LOG_LEVEL=2
if [ $# -gt 0 ]; then
  exec .venv/bin/python -m pytest -q --durations=15 "$@"
fi
.venv/bin/python -m pytest -q --durations=15
bash scripts/check_install.sh
