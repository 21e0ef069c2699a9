#!/usr/bin/env bash
# Issue 35's GPU run: every figure (pre-training, profile, fine-tuning, numerics, inference,
# the paper-scale projection) measured into $OUT; docs/benchmarks.md#gpu says how to call it.
#   bash scripts/gpu_run.sh prepare        # here, before a device call: .gpu/study (the data)
#   bash scripts/gpu_run.sh wheels         # here: .gpu/wheels (packages the device lacks)
#   bash scripts/gpu_run.sh [ITEM ...]     # on the GPU machine (default: every item)
#   bash scripts/gpu_run.sh --dry [ITEM ...]   # on a CPU, tiny sizes: the whole run, tested
#   bash scripts/gpu_run.sh report RESULTS.jsonl ...   # tables and plot of fetched results
# ITEM: a key prefix, e.g. pretrain, pretrain:base128, profile, finetune, numerics, inference,
# study, env (bench/gpu_suite.py). Environment: OUT (default ./gpu_out; the device sets it),
# MINUTES (the call's time, default 9; items that would not fit are skipped), RESUME (an
# earlier call's results.jsonl: its ok items are not run again), PYTHON (default: .venv's,
# else python3). DRY=1 is --dry. Writes $OUT/results.jsonl (one line per item, as it ends),
# results.md, numerics.png, run.log (every item's output) and install.log.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PYTHON:-}" ]; then
  PYTHON=python3
  [ -x .venv/bin/python ] && PYTHON=.venv/bin/python
fi
OUT="${OUT:-$PWD/gpu_out}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" TF_CPP_MIN_LOG_LEVEL=2 PYTHONUNBUFFERED=1
dry="${DRY:-}"
[ "${1:-}" = "--dry" ] && { dry=1; shift; }

case "${1:-}" in
  prepare)
    shift
    exec "$PYTHON" bench/gpu_suite.py prepare "$@" ;;
  wheels)
    rm -rf .gpu/wheels && mkdir -p .gpu/wheels
    grep -v '^#' scripts/gpu_wheels.txt | xargs "$PYTHON" -m pip download -q --no-deps \
      --only-binary=:all: --python-version 3.12 --implementation cp -c constraints.txt \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .gpu/wheels
    du -sh .gpu/wheels
    exit 0 ;;
  report)
    shift
    mkdir -p "$OUT"
    exec "$PYTHON" bench/gpu_suite.py report --out "$OUT" "$@" ;;
esac

mkdir -p "$OUT"
if [ -n "$dry" ]; then
  export CUDA_VISIBLE_DEVICES=""
  exec "$PYTHON" bench/gpu_suite.py --dry --out "$OUT" --minutes "${MINUTES:-30}" \
    ${RESUME:+--resume "$RESUME"} "$@"
fi

# The device machine has no registry: packages it lacks come as carried wheels, after
# the image's own on the path.
install() {
  echo "python: $("$PYTHON" --version 2>&1) at $(command -v "$PYTHON")"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  if compgen -G ".gpu/wheels/*.whl" > /dev/null; then
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/electra_site .gpu/wheels/*.whl || return 1
    echo "installed $(ls .gpu/wheels | wc -l) carried wheels into /tmp/electra_site"
  fi
}
if ! install > "$OUT/install.log" 2>&1; then
  cat "$OUT/install.log"
  echo "error: installing the carried wheels (.gpu/wheels, made for Python 3.12) failed:" \
       "see above" >&2
  exit 3
fi
if [ -d /tmp/electra_site ]; then export PYTHONPATH="$PYTHONPATH:/tmp/electra_site"; fi
check='import sys, tensorflow as tf
gpus = tf.config.list_physical_devices("GPU")
print("tensorflow", tf.__version__, "GPUs:", gpus)
sys.exit(0 if gpus else 4)'
if ! "$PYTHON" -c "$check" >> "$OUT/install.log" 2>&1; then
  cat "$OUT/install.log"
  echo "error: $PYTHON has no TensorFlow that sees a GPU (see above). TensorFlow 2.20 and its" \
       "CUDA 12 wheels (tensorflow[and-cuda], about 3 GB) must be on the machine; they" \
       "cannot travel with a call (64 MiB): docs/benchmarks.md#gpu" >&2
  exit 3
fi
cat "$OUT/install.log"
exec "$PYTHON" bench/gpu_suite.py --out "$OUT" --minutes "${MINUTES:-9}" \
  ${RESUME:+--resume "$RESUME"} "$@"
