#!/usr/bin/env bash
# Issue 35's GPU run: every figure (pre-training, profile, fine-tuning, numerics, inference,
# the paper-scale projection) measured into $OUT; docs/benchmarks.md#gpu says how to call it.
#   bash scripts/gpu_run.sh prepare        # here, before a device call: .gpu/study (the data)
#   bash scripts/gpu_run.sh wheels         # here: .gpu/wheels (packages the device lacks)
#   bash scripts/gpu_run.sh [ITEM ...]     # on the GPU machine (default: every item)
#   bash scripts/gpu_run.sh --dry [ITEM ...]   # on a CPU, tiny sizes: the whole run, tested
#   bash scripts/gpu_run.sh report RESULTS.jsonl ...   # tables and plot of fetched results
# --backend jax (issue 41; anywhere before ITEM or `wheels`): the JAX trainer's items for a
# machine with JAX and PyTorch but no TensorFlow (bench/gpu/gpu_suite.py --backend jax): only
# keras, namex and optree travel (scripts/gpu_wheels_jax.txt -> .gpu/wheels_jax), the
# machine's own JAX, torch and transformers run, nothing imports TensorFlow, no `prepare`.
#   bash scripts/gpu_run.sh wheels --backend jax        # here: .gpu/wheels_jax
#   bash scripts/gpu_run.sh --backend jax [ITEM ...]    # on the GPU machine
#   bash scripts/gpu_run.sh --dry --backend jax [ITEM ...]  # on a CPU, tiny sizes, no TF
# JAX ITEMs: env, throughput (throughput:base128, throughput:small128/bf16, ...), numerics,
# projection, profile (profile:small1024, ...), throughput:base512, language (after
# `python -m bench.studies.language_gpu carry`; a call of its own); named ITEMs run in the order
# named.
# ITEM: a key prefix, e.g. pretrain, pretrain:base128, profile, finetune, numerics, inference,
# study, env (bench/gpu/gpu_suite.py). Environment: OUT (default ./gpu_out; the device sets it),
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
backend=tensorflow
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dry) dry=1 ;;
    --backend) backend="${2:?--backend takes tensorflow or jax}"; shift ;;
    --backend=*) backend="${1#--backend=}" ;;
    *) args+=("$1") ;;
  esac
  shift
done
set -- ${args[@]+"${args[@]}"}
case "$backend" in
  tensorflow) wheels_list=scripts/gpu_wheels.txt; wheels_dir=.gpu/wheels ;;
  jax) wheels_list=scripts/gpu_wheels_jax.txt; wheels_dir=.gpu/wheels_jax ;;
  *) echo "error: --backend $backend: use tensorflow or jax" >&2; exit 2 ;;
esac

case "${1:-}" in
  prepare)
    shift
    exec "$PYTHON" -m bench.gpu.gpu_suite prepare "$@" ;;
  wheels)
    rm -rf "$wheels_dir" && mkdir -p "$wheels_dir"
    grep -v '^#' "$wheels_list" | xargs "$PYTHON" -m pip download -q --no-deps \
      --only-binary=:all: --python-version 3.12 --implementation cp -c constraints.txt \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$wheels_dir"
    du -sh "$wheels_dir"
    exit 0 ;;
  report)
    shift
    mkdir -p "$OUT"
    exec "$PYTHON" -m bench.gpu.gpu_suite report --out "$OUT" "$@" ;;
esac

mkdir -p "$OUT"
if [ -n "$dry" ]; then
  export CUDA_VISIBLE_DEVICES=""
  [ "$backend" = jax ] && export JAX_PLATFORMS=cpu ELECTRA_BLOCK_TENSORFLOW=1
  exec "$PYTHON" -m bench.gpu.gpu_suite --dry --backend "$backend" --out "$OUT" \
    --minutes "${MINUTES:-30}" ${RESUME:+--resume "$RESUME"} "$@"
fi

# The device machine has no registry: packages it lacks come as carried wheels, after
# the image's own on the path.
install() {
  echo "python: $("$PYTHON" --version 2>&1) at $(command -v "$PYTHON")"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  if compgen -G "$wheels_dir/*.whl" > /dev/null; then
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/electra_site "$wheels_dir"/*.whl || return 1
    echo "installed $(ls "$wheels_dir" | wc -l) carried wheels into /tmp/electra_site"
  fi
}
if ! install > "$OUT/install.log" 2>&1; then
  cat "$OUT/install.log"
  echo "error: installing the carried wheels ($wheels_dir, made for Python 3.12) failed:" \
       "see above" >&2
  exit 3
fi
if [ -d /tmp/electra_site ]; then export PYTHONPATH="$PYTHONPATH:/tmp/electra_site"; fi
if [ "$backend" = jax ]; then
  export KERAS_BACKEND=jax
  check='import sys, jax, keras
print("jax", jax.__version__, "keras", keras.__version__, "devices:", jax.devices())
sys.exit(0 if jax.default_backend() == "gpu" else 4)'
  if ! "$PYTHON" -c "$check" >> "$OUT/install.log" 2>&1; then
    cat "$OUT/install.log"
    echo "error: $PYTHON has no JAX that sees a GPU, or no keras (carry $wheels_dir: bash" \
         "scripts/gpu_run.sh wheels --backend jax): see above" >&2
    exit 3
  fi
  cat "$OUT/install.log"
  exec "$PYTHON" -m bench.gpu.gpu_suite --backend jax --out "$OUT" --minutes "${MINUTES:-9}" \
    ${RESUME:+--resume "$RESUME"} "$@"
fi
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
exec "$PYTHON" -m bench.gpu.gpu_suite --out "$OUT" --minutes "${MINUTES:-9}" \
  ${RESUME:+--resume "$RESUME"} "$@"
