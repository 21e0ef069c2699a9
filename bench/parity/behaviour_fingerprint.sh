#!/usr/bin/env bash
# Behaviour fingerprint of a checkout, for refactors that must change nothing:
#   bash bench/parity/behaviour_fingerprint.sh TREE OUT        (then compare two OUTs:)
#   python -m bench.parity.behaviour_fingerprint compare OUT_A/fingerprint.npz OUT_B/fingerprint.npz
# TREE's electra_tf2 runs (PYTHONPATH=TREE) with this clone's .venv: a deterministic 20-step
# pre-training on ../shared text with the BERT vocab, 10-step fine-tunings of rte, squadv1,
# squad (2.0) and chunk from it, SavedModel exports of the discriminator and of each
# fine-tuned model; OUT/fingerprint.npz holds every checkpoint tensor, every signature's
# outputs on fixed texts, and the bytes of the results files.
set -euo pipefail
TREE="$(cd "$1" && pwd)"; OUT="$2"
here="$(cd "$(dirname "$0")/../.." && pwd)"  # the repository root
S="${ELECTRA_SHARED_DATA:-$here/../shared/data}"
PY="$here/.venv/bin/python"
export PYTHONPATH="$TREE" CUDA_VISIBLE_DEVICES="" TF_CPP_MIN_LOG_LEVEL=2
rm -rf "$OUT"; mkdir -p "$OUT"/data/corpus "$OUT"/data/finetuning_data/{rte,squadv1,squad,chunk}
cd "$OUT"
cp "$S/corpus/bert_sample_text.txt" data/corpus/
cp "$S/vocab/vocab.txt" data/vocab.txt
cp "$S"/glue/RTE/*.tsv data/finetuning_data/rte/
cp "$S/squad/train-v1.1.first1article.json" data/finetuning_data/squadv1/train.json
cp "$S/squad/dev-v1.1.json" data/finetuning_data/squadv1/dev.json
v2="$S/squad/dev-v2.0.subset-Normans-Computational_complexity_theory.json"
cp "$v2" data/finetuning_data/squad/train.json; cp "$v2" data/finetuning_data/squad/dev.json
cp "$S/conll2000/train.txt" data/finetuning_data/chunk/train.txt
cp "$S/conll2000/test.txt" data/finetuning_data/chunk/dev.txt
"$PY" -m electra_tf2 build-data --corpus-dir data/corpus --vocab-file data/vocab.txt \
  --output-dir data/pretrain_tfrecords --max-seq-length 64 --seed 1 --num-processes 1 --no-progress
"$PY" -m electra_tf2 pretrain --data-dir data --model-name electra_small --hparams '{"debug": true,
  "train_batch_size": 8, "max_seq_length": 64, "num_train_steps": 20, "num_warmup_steps": 5,
  "deterministic": true, "seed": 3, "iterations_per_loop": 5}'
for task in rte squadv1 squad chunk; do  # 24 examples, batch 8, 3.4 epochs: 10 steps
  "$PY" -m electra_tf2 finetune --data-dir data --model-name electra_small --hparams \
    "{\"task_names\": [\"$task\"], \"max_examples_per_split\": 24, \"train_batch_size\": 8,
      \"num_train_epochs\": 3.4, \"seed\": 5, \"iterations_per_loop\": 5}" > "ft_$task.log" 2>&1
done
"$PY" -m electra_tf2 export --model-dir data/models/electra_small --output-dir exp_disc
for task in rte squadv1 squad chunk; do
  "$PY" -m electra_tf2 export --output-dir "exp_$task" \
    --model-dir "data/models/electra_small/finetuning_models/${task}_model_1"
done
"$PY" "$here/bench/parity/behaviour_fingerprint.py" dump "$OUT"
