#!/usr/bin/env bash
# Creates .venv (Python 3.11) with the pinned dependency set. Idempotent: a
# second run only checks that everything is installed.
#   bash scripts/setup.sh          # run-time dependencies
#   bash scripts/setup.sh test     # plus the test-only ones (pytest, hypothesis, torch, transformers)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null || PYTHON=python3
"$PYTHON" -c 'import sys; assert sys.version_info[:2] == (3, 11), "electra_tf2 needs Python 3.11"' \
  || { echo "error: $PYTHON is not Python 3.11; set PYTHON=/path/to/python3.11" >&2; exit 2; }
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# One stamp per requirements set; the test set includes the run-time one, so
# installing it stamps both (quickstart after the tests reinstalls nothing).
stamp_for() { echo ".venv/.installed-$(cat "$1" requirements.txt constraints.txt | sha1sum | cut -c1-12)"; }
requirements=requirements.txt
[ "${1:-}" = "test" ] && requirements=requirements-test.txt
stamp="$(stamp_for "$requirements")"
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r "$requirements" -c constraints.txt
  touch "$stamp" "$(stamp_for requirements.txt)"
fi
