#!/usr/bin/env bash
# Sets up .venv with the test dependencies and runs the whole test suite (pytest-xdist: a
# worker per core, up to 4), then (with no arguments) the install check: the wheel in a
# fresh environment, used from outside the checkout (scripts/check_install.sh, run beside
# the set-up and the suite). Arguments go to pytest (one process) and skip the install check,
# e.g. `bash scripts/test.sh -m "not slow" tests/test_config.py`.
set -euo pipefail
cd "$(dirname "$0")/.."
export CUDA_VISIBLE_DEVICES="" TF_CPP_MIN_LOG_LEVEL=2
if [ $# -gt 0 ]; then
  bash scripts/setup.sh test
  exec .venv/bin/python -m pytest -q --durations=15 "$@"
fi
# The install check (a wheel in a fresh environment, used from an empty directory) runs from
# the start, beside the set-up (pip is mostly one core) and then the suite; its 3 GB in a
# temporary directory go when this script ends, however it ends (a full disk fails every
# later test run on the machine).
work="$(mktemp -d)"
setsid bash scripts/check_install.sh "$work" > "$work/check.log" 2>&1 &  # its own group
check=$!
trap 'kill -- -"$check" 2>/dev/null || true; wait "$check" 2>/dev/null || true; rm -rf "$work"' EXIT
bash scripts/setup.sh test
# Two workers (CI has 2 cores; more where there are more, up to 4), each test file on one,
# the longest files first (tests/conftest.py LONGEST_FIRST).
.venv/bin/python -m pytest -q --durations=15 -n auto --maxprocesses 4 --dist loadfile \
  --no-loadscope-reorder
status=0
wait "$check" || status=$?
cat "$work/check.log"
[ "$status" = 0 ] || { echo "error: the install check failed (above)" >&2; exit 1; }
