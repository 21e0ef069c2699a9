#!/usr/bin/env bash
# What a user gets from `pip install electra-tf2`: builds the wheel, installs it with the pinned
# constraints into a fresh virtual environment outside the checkout, and from an empty
# directory runs `electra --help`, every subcommand's --help, `import electra_tf2` (which must
# resolve to the installed copy), `pip check`, and a tiny build-vocab -> build-data ->
# pretrain -> score flow. Part of .ci/run.
#   bash scripts/check_install.sh [--install-only | --use-only] [WORK_DIR]
# WORK_DIR defaults to a new temporary directory, removed at the end. --install-only stops after the install
# (scripts/test.sh runs it beside the test suite); --use-only uses what it installed there.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
mode=all
case "${1:-}" in --install-only|--use-only) mode="${1#--}"; shift ;; esac
if [ -n "${1:-}" ]; then
  work="$1"
else  # a directory of its own: removed when the check ends
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
fi
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null || PYTHON=python3
export TF_CPP_MIN_LOG_LEVEL=3 CUDA_VISIBLE_DEVICES=""
step() { echo "[check_install] $*"; }

if [ "$mode" != use-only ]; then
  step "building the wheel"
  "$PYTHON" -m pip wheel -qq --no-deps -w "$work/dist" "$repo"  # (needs no .venv)
  step "installing it into a fresh environment ($work/venv)"
  "$PYTHON" -m venv "$work/venv"
  "$work/venv/bin/python" -m pip install -qq "$work"/dist/electra_tf2-*.whl -c "$repo/constraints.txt"
  "$work/venv/bin/python" -m pip check
fi
[ "$mode" != install-only ] || exit 0

mkdir -p "$work/empty" && cd "$work/empty"
export PATH="$work/venv/bin:$PATH"
installed="$(python -c 'import electra_tf2, os; print(os.path.realpath(electra_tf2.__file__))')"
case "$installed" in
  "$work/venv/"*) step "import electra_tf2 -> $installed" ;;
  *) echo "error: import electra_tf2 resolved to $installed, not the installed copy" >&2; exit 1 ;;
esac
electra --help >/dev/null
# The absl commands' --help: their usage line and their own flags.
for name in pretrain finetune; do
  usage="$(electra "$name" --help)"
  flag="--model-name"; [ "$name" = pretrain ] || flag="--task"
  case "$usage" in
    *"electra $name --data-dir DIR"*"$flag"*) ;;
    *) echo "error: electra $name --help lacks its usage line or $flag" >&2; exit 1 ;;
  esac
done
# The other subcommands' --help, as `electra SUB --help` runs them, in one process (TensorFlow
# loads once; pretrain and finetune define absl's global flags, so they run on their own).
python - >/dev/null <<'PY'
import sys
from electra_tf2.cli import commands
for name in commands.SUBCOMMANDS:
  if name in ("pretrain", "finetune"):
    continue
  try:
    code = commands.main([name, "--help"])
  except SystemExit as exit_:
    code = exit_.code
  if code not in (0, None):
    sys.exit(f"error: electra {name} --help exited {code}")
PY
step "every subcommand has --help"

step "tiny flow: build-vocab -> build-data -> pretrain -> score"
mkdir -p corpus
python - <<'PY'
import random
random.seed(0)
words = ("the a chef cook ate made meal soup bread fresh hot cold small large kitchen table "
         "served guests quickly slowly with and in on of for").split()
with open("corpus/text.txt", "w") as f:
  for doc in range(40):
    for _ in range(8):
      f.write(" ".join(random.choice(words) for _ in range(random.randint(6, 14))) + ".\n")
    f.write("\n")
PY
electra build-vocab --corpus-dir corpus --vocab-size 200 --output data/vocab.txt
vocab_size="$(wc -l < data/vocab.txt)"
electra build-data --corpus-dir corpus --vocab-file data/vocab.txt \
  --output-dir data/pretrain_tfrecords --max-seq-length 32 --num-shards 8 --no-progress
electra pretrain --data-dir data --model-name electra_small --hparams "{\"debug\": true, \
  \"vocab_size\": $vocab_size, \"max_seq_length\": 32, \"train_batch_size\": 8, \
  \"num_train_steps\": 4, \"num_warmup_steps\": 1, \"iterations_per_loop\": 2}"
electra score show --model-dir data/models/electra_small "the chef ate the soup."
step "done: the wheel installs and runs from outside the repository"
