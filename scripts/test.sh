#!/usr/bin/env bash
# Sets up .venv with the test dependencies and runs the whole test suite (pytest-xdist: a
# worker per core, up to 4), then (with no arguments) the install check: the wheel in a
# fresh environment, used from outside the checkout (scripts/check_install.sh; its install
# runs beside the suite). Arguments go to pytest (one process) and skip the install check,
# e.g. `bash scripts/test.sh -m "not slow" tests/test_config.py`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
export CUDA_VISIBLE_DEVICES="" TF_CPP_MIN_LOG_LEVEL=2
if [ $# -gt 0 ]; then
  exec .venv/bin/python -m pytest -q --durations=15 "$@"
fi
# The wheel's fresh environment is installed (mostly file copies) while the suite runs.
# Its 3 GB in a temporary directory go when the script ends, however it ends (a full disk
# fails every later test run on the machine).
work="$(mktemp -d)"
bash scripts/check_install.sh --install-only "$work" > "$work/install.log" 2>&1 &
install=$!
trap 'kill "$install" 2>/dev/null || true; wait "$install" 2>/dev/null || true; rm -rf "$work"' EXIT
# Two workers (CI has 2 cores; more where there are more, up to 4), each test file on one,
# the longest files first (tests/conftest.py LONGEST_FIRST).
.venv/bin/python -m pytest -q --durations=15 -n auto --maxprocesses 4 --dist loadfile \
  --no-loadscope-reorder
wait "$install" || { cat "$work/install.log"; echo "error: installing the wheel failed" >&2; exit 1; }
cat "$work/install.log"
bash scripts/check_install.sh --use-only "$work"
