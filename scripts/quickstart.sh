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
echo "This model is a smoke test of the pipeline, not a useful encoder: a debug-size ELECTRA"
echo "(3 layers) pre-trained for 300 steps on a small corpus. Fine-tuned on SST-2 it stays near"
echo "chance (about 51%, one class for every sentence), and its replaced-token scores are flat."
echo "A real model on this corpus: the electra_small preset (12 layers, 1M steps of 128 sequences):"
echo "  electra pretrain --data-dir $DATA_DIR --model-name electra_small \\"
echo "      --hparams '{\"vocab_size\": 8000}'"
echo "On a CPU that is not practical: a 12-step run of it on the 2-core build host (shared, load"
echo "about 8) took 47 s a step (2.7 seq/s), i.e. about 1.5 years for 1M steps (extrapolated)."
echo "On a GPU: add --backend jax --mixed-precision mixed_bfloat16 to that command. On one"
echo "NVIDIA H200 the trainer ran electra_small at length 128, batch 128 at 5,392 seq/s"
echo "(2026-11-28): about 6.6 hours for 1M steps (docs/benchmarks.md#gpu). Or convert a released"
echo "checkpoint: electra convert to-tf2 (docs/interop.md)."
