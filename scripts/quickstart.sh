#!/usr/bin/env bash
# From a fresh clone: set up .venv, build the embedded default data (docstrings of
# the installed Python packages -> WordPiece vocab -> TFRecords, no download), pre-train
# a debug-size ELECTRA on it, then evaluate it with the official metrics.
#   bash scripts/quickstart.sh [DATA_DIR]          (default: runs/default)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA_DIR="${1:-runs/default}"
bash scripts/setup.sh
export TF_CPP_MIN_LOG_LEVEL=2
.venv/bin/electra default-data --data-dir "$DATA_DIR" --vocab-size 8000
HPARAMS='{"debug": true, "vocab_size": 8000, "train_batch_size": 32, "num_train_steps": 300,
          "num_warmup_steps": 30, "learning_rate": 1e-3, "iterations_per_loop": 25,
          "save_checkpoints_steps": 100}'
.venv/bin/electra pretrain --data-dir "$DATA_DIR" --model-name electra_small \
  --hparams "$HPARAMS"
.venv/bin/electra pretrain --data-dir "$DATA_DIR" --model-name electra_small \
  --hparams "$(echo "$HPARAMS" | sed 's/"debug": true/"debug": true, "do_train": false, "do_eval": true, "num_eval_steps": 20, "eval_batch_size": 32/')"
echo "model, checkpoints, TensorBoard logs and results: $DATA_DIR/models/electra_small"
