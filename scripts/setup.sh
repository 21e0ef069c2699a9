#!/usr/bin/env bash
# Creates .venv (Python 3.11) with electra_tf2 installed from this clone (editable) and the
# pinned dependency set of constraints.txt. Idempotent: a second run only checks that
# everything is installed.
#   bash scripts/setup.sh            # the library and its run-time dependencies
#   bash scripts/setup.sh test       # plus the test tools and every optional feature (extra "test")
#   bash scripts/setup.sh beam       # plus Apache Beam (electra build-data --runner ..., local files)
#   bash scripts/setup.sh beam-gcp   # plus Beam's Google Cloud extras (gs://, DataflowRunner)
#   bash scripts/setup.sh gpu        # plus TensorFlow's CUDA libraries (NVIDIA GPUs, Linux)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null || PYTHON=python3
"$PYTHON" -c 'import sys; assert sys.version_info[:2] == (3, 11), "electra_tf2 needs Python 3.11"' \
  || { echo "error: $PYTHON is not Python 3.11; set PYTHON=/path/to/python3.11" >&2; exit 2; }
# Each set, the extra it installs, and the sets it includes (so installing the test set
# stamps the run-time one too, and quickstart after the tests reinstalls nothing).
case "${1:-}" in
  "") extra=""; sets="run" ;;
  test) extra="[test]"; sets="test beam run" ;;
  beam) extra="[beam]"; sets="beam run" ;;
  beam-gcp) extra="[beam-gcp]"; sets="beam-gcp beam run" ;;
  gpu) extra="[gpu]"; sets="gpu run" ;;
  *) echo "error: unknown set '$1': give none, test, beam, beam-gcp or gpu" >&2; exit 2 ;;
esac
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
pins="$(cat pyproject.toml constraints.txt scripts/setup.sh | sha1sum | cut -c1-12)"
stamp_for() { echo ".venv/.installed-$1-$pins"; }
if [ ! -f "$(stamp_for "${sets%% *}")" ]; then
  # pip byte-compiles on one core; compileall after it uses every core (half the time on 2).
  .venv/bin/python -m pip install -q --no-compile -e ".$extra" -c constraints.txt
  if [ "${1:-}" = test ]; then
    # MediaPipe Tasks (extra "mediapipe"), for tests/test_mediapipe.py: without its
    # dependencies, since its text tasks use the cv2 of opencv-python-headless that
    # tf-models-official installs; its opencv-contrib-python would be a second cv2 over it.
    .venv/bin/python -m pip install -q --no-compile --no-deps mediapipe -c constraints.txt
  fi
  # (-qq: some packages ship files that are not Python 3, as pip's own compile skips them)
  .venv/bin/python -m compileall -qq -j 0 .venv/lib/python3.11/site-packages || true
  for set in $sets; do touch "$(stamp_for "$set")"; done
fi
