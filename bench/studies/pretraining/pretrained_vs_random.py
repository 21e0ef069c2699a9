"""Does pre-training help? SST-2 dev accuracy of a debug-size ELECTRA, pre-trained vs random.

The study's quick comparison (`pretrained-vs-random`, its own flags):

  python -m bench.studies.pretraining_study pretrained-vs-random [--work-dir /tmp/electra_sst_bench] \\
      [--shared-data ../shared/data] [--pretrain-steps 1500] [--train-examples 6000] \\
      [--trials 3] [--finetune-hparams '{"layerwise_lr_decay": 0}'] [--reinit 'encoder/layer_']

1. learns a WordPiece vocab of --vocab-size tokens from <shared-data>/corpus
   (Gutenberg, Tiny Shakespeare, WikiText-2 valid, BERT's sample text) with
   data_prep/build_vocab.py (or, with --vocab bert, takes the BERT uncased
   vocab), and builds pre-training TFRecords with
   data_prep/build_pretraining_dataset.py. Why a corpus vocab: with the BERT
   vocab most rows never occur in this 1.2M-token corpus, yet the tied MLM
   softmax gives every row a small gradient in the same direction, which Adam
   turns into full-size steps; after 1500 steps those rows have drifted
   together (mean pairwise cosine 0.64), so the rare words of SST-2 become
   indistinguishable and fine-tuning starts worse than from random rows;
2. pre-trains the debug model (3 layers, hidden 144, embedding 128) with
   run_pretraining.py for --pretrain-steps steps;
3. fine-tunes it on the first --train-examples SST-2 training sentences and
   evaluates on the whole SST-2 dev set (872 sentences), then does the same
   from random initialisation (init_checkpoint null, the same encoder shape),
   with the same seed, data and hyperparameters;
4. measures how much the pre-trained encoder's states vary across and within
   sentences (`state_spread`).

Each fine-tuning runs --trials seeds (seed, seed+1, ...); the report gives
every trial's accuracy and the median. --reinit REGEX is an ablation: before
fine-tuning, the pre-trained discriminator variables whose official name
(`electra/encoder/layer_0/attention/self/query/kernel`, ...) matches REGEX are
reset to a fresh model's initial values, so `encoder/layer_` keeps only the
pre-trained embeddings and `attention/self/(query|key)` discards only the
attention patterns.

Prints the report and writes <work-dir>/sst_pretrained_vs_random.json. Steps 1
and 2 are skipped when their outputs exist in --work-dir. With the defaults it
takes about 7 minutes on two shared CPU cores (4.5 of them pre-training).
Results: docs/finetuning.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from typing import Any, Dict, List, Tuple

from bench.common import SHARED_DATA, text_inputs
from electra_tf2.utils.atomic_io import write_json_atomic, write_text_atomic
from bench.studies.pretraining.finetune import random_init_hparams
from bench.studies.pretraining.runs import run

COMMAND = "pretrained-vs-random"
MODEL_NAME = "electra_small"


def state_spread(model_dir: str, dev_tsv: str, vocab_file: str, n: int = 64):
  """How much the pre-trained discriminator's states vary, on n SST-2 dev sentences.

  `cls_std_across_sentences`: std over sentences of the [CLS] state (mean over
  dimensions), the state the classification head reads; `token_std_within_sentence`:
  std over the tokens of a sentence. ELECTRA never replaces [CLS], so early in
  pre-training its target is constant and its state can collapse.
  """
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from electra_tf2.models import model_directory  # pylint: disable=g-import-not-at-top
  from electra_tf2.text.tokenizer import FullTokenizer  # pylint: disable=g-import-not-at-top
  with open(dev_tsv, encoding="utf-8") as f:
    sentences = [line.split("\t")[0] for line in f.readlines()[1:n + 1]]
  input_ids, mask = text_inputs(FullTokenizer(vocab_file), sentences, 64)
  encoder = model_directory.restore_pretrainer(model_dir).discriminator
  states = encoder(tf.constant(input_ids), tf.constant(mask), tf.zeros_like(mask)).numpy()
  within = [states[i, :mask[i].sum()].std(0).mean() for i in range(len(sentences))]
  return {"cls_std_across_sentences": float(states[:, 0].std(0).mean()),
          "token_std_within_sentence": float(np.mean(within))}


def reinitialised_copy(model_dir: str, out_dir: str, pattern: str, seed: int) -> list:
  """Writes model_dir's model to out_dir with the matching discriminator variables reset.

  Variables of the discriminator whose official name matches `pattern` take
  the values of a freshly built model (seed `seed`); all others keep their
  pre-trained values. Returns the reset names.
  """
  import shutil  # pylint: disable=g-import-not-at-top
  import keras  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from electra_tf2.models import model_directory
  from electra_tf2.networks import variable_names  # pylint: disable=g-import-not-at-top
  from electra_tf2.models.pretrainer import ElectraPretrainer  # pylint: disable=g-import-not-at-top
  trained = model_directory.restore_pretrainer(model_dir)
  keras.utils.set_random_seed(seed)
  fresh = ElectraPretrainer.from_pretraining_config(model_directory.load_pretraining_config(model_dir))
  source = variable_names.encoder_variable_map(trained.discriminator, "electra")
  target = variable_names.encoder_variable_map(fresh.discriminator, "electra")
  reset = sorted(name for name in target if re.search(pattern, name))
  if not reset:
    raise SystemExit(f"--reinit {pattern!r} matches no discriminator variable; names look "
                     f"like {sorted(target)[0]!r}")
  for name, variable in target.items():
    if name not in reset:
      variable.assign(source[name])
  os.makedirs(out_dir, exist_ok=True)
  shutil.copy(os.path.join(model_dir, "pretrain_config.json"), out_dir)
  tf.train.CheckpointManager(tf.train.Checkpoint(model=fresh), out_dir, 1).save(0)
  return reset


def json_object(text: str) -> dict:
  """argparse type: a JSON object."""
  try:
    value = json.loads(text)
  except ValueError as e:
    raise argparse.ArgumentTypeError(f"{e}; give a JSON object such as '{{}}'") from None
  if not isinstance(value, dict):
    raise argparse.ArgumentTypeError(f"{text!r} is not a JSON object; give one such as '{{}}'")
  return value


def regex(text: str) -> str:
  """argparse type: a valid regular expression."""
  try:
    re.compile(text)
  except re.error as e:
    raise argparse.ArgumentTypeError(f"{text!r} is not a regular expression: {e}") from None
  return text


def parse_args(argv: List[str]) -> argparse.Namespace:
  parser = argparse.ArgumentParser(prog=f"python -m bench.studies.pretraining_study {COMMAND}",
                                   description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--work-dir", default="/tmp/electra_sst_bench")
  parser.add_argument("--shared-data", default=SHARED_DATA)
  parser.add_argument("--vocab", choices=("bert", "corpus"), default="corpus",
                      help="bert: the BERT uncased vocab of <shared-data>/vocab; corpus: a "
                           "WordPiece vocab learned from the pre-training corpus "
                           "(data_prep/build_vocab.py), so that every embedding row is trained")
  parser.add_argument("--vocab-size", type=int, default=8192,
                      help="Size of the corpus-learned vocab.")
  parser.add_argument("--pretrain-steps", type=int, default=1500)
  parser.add_argument("--pretrain-batch-size", type=int, default=32)
  parser.add_argument("--pretrain-max-seq-length", type=int, default=64)
  parser.add_argument("--pretrain-learning-rate", type=float, default=5e-4)
  parser.add_argument("--pretrain-hparams", type=json_object, default={},
                      help='More pre-training hparams as JSON, e.g. \'{"electra_objective": '
                           'false}\' for BERT-style MLM pre-training.')
  parser.add_argument("--train-examples", type=int, default=6000)
  parser.add_argument("--epochs", type=float, default=2.0)
  parser.add_argument("--max-seq-length", type=int, default=64)
  parser.add_argument("--learning-rate", type=float, default=3e-4,
                      help="Fine-tuning learning rate (official default 1e-4; paper Small 3e-4).")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--trials", type=int, default=1,
                      help="Fine-tuning trials per model (seeds seed, seed+1, ...).")
  parser.add_argument("--finetune-hparams", type=json_object, default={},
                      help="More fine-tuning hparams as JSON for both models, e.g. "
                           "'{\"layerwise_lr_decay\": 0}'.")
  parser.add_argument("--reinit", type=regex, default=None, metavar="REGEX",
                      help="Ablation: reset the pre-trained discriminator variables whose "
                           "official name matches REGEX to their initial values.")
  args = parser.parse_args(argv)
  args.work_dir, args.shared_data = os.path.abspath(args.work_dir), os.path.abspath(
      args.shared_data)
  return args


def build_data(args, timings: Dict[str, float]) -> Tuple[str, int]:
  """Step 1: the vocab and the pre-training TFRecords; returns the vocab and its size."""
  work, shared, python = args.work_dir, args.shared_data, sys.executable
  os.makedirs(work, exist_ok=True)
  vocab = os.path.join(work, "vocab.txt")
  corpus = os.path.join(shared, "corpus")
  dirs = [corpus] + [os.path.join(corpus, d) for d in sorted(os.listdir(corpus))
                     if os.path.isdir(os.path.join(corpus, d))]
  if not os.path.exists(vocab):
    if args.vocab == "bert":
      os.symlink(os.path.join(shared, "vocab", "vocab.txt"), vocab)
    else:
      run([python, "data_prep/build_vocab.py", "--vocab-size", str(args.vocab_size),
           "--output", vocab] + [flag for d in dirs for flag in ("--corpus-dir", d)],
          cpu_only=True)
  with open(vocab, encoding="utf-8") as f:
    vocab_size = sum(1 for _ in f)
  records = os.path.join(work, "pretrain_tfrecords")
  start = time.time()
  if not os.path.isdir(records):
    run([python, "data_prep/build_pretraining_dataset.py", "--vocab-file", vocab,
         "--output-dir", records, "--max-seq-length", str(args.pretrain_max_seq_length),
         "--num-shards", "1000", "--seed", str(args.seed), "--no-progress"]
        + [flag for d in dirs for flag in ("--corpus-dir", d)], cpu_only=True)
  timings["build_tfrecords_s"] = time.time() - start
  return vocab, vocab_size


def pretrain(args, vocab_size: int, timings: Dict[str, float]) -> str:
  """Step 2: the debug model for --pretrain-steps; returns its model directory."""
  start = time.time()
  model_dir = os.path.join(args.work_dir, "models", MODEL_NAME)
  if not os.path.isdir(model_dir):
    run([sys.executable, "run_pretraining.py", "--data-dir", args.work_dir, "--model-name",
         MODEL_NAME, "--hparams", json.dumps({
             "debug": True, "num_train_steps": args.pretrain_steps,
             "train_batch_size": args.pretrain_batch_size,
             "max_seq_length": args.pretrain_max_seq_length,
             "learning_rate": args.pretrain_learning_rate,
             "num_warmup_steps": args.pretrain_steps // 10, "iterations_per_loop": 100,
             "save_checkpoints_steps": 10 ** 6, "vocab_size": vocab_size, "seed": args.seed,
             **args.pretrain_hparams})], cpu_only=True)
  timings["pretrain_s"] = time.time() - start
  return model_dir


def sst_data(args) -> str:
  """SST-2 in the official layout: a training subset, the whole dev set; returns dev.tsv."""
  sst = os.path.join(args.work_dir, "finetuning_data", "sst")
  os.makedirs(sst, exist_ok=True)
  with open(os.path.join(args.shared_data, "glue", "SST-2", "train.tsv"), encoding="utf-8") as f:
    lines = f.readlines()[:args.train_examples + 1]
  write_text_atomic(os.path.join(sst, "train.tsv"), "".join(lines))
  dev = os.path.join(sst, "dev.tsv")
  if not os.path.exists(dev):
    os.symlink(os.path.join(args.shared_data, "glue", "SST-2", "dev.tsv"), dev)
  return dev


def finetune(args, label: str, init: Dict[str, Any], timings: Dict[str, float]
             ) -> Dict[str, Any]:
  """Step 3: --trials fine-tunings on SST-2 from `init`; their dev accuracies and median."""
  work = args.work_dir
  hparams = {"num_train_epochs": args.epochs, "max_seq_length": args.max_seq_length,
             "learning_rate": args.learning_rate, "num_trials": args.trials,
             "seed": args.seed, "iterations_per_loop": 50,
             **args.finetune_hparams,
             "results_txt": os.path.join(work, "results", f"sst_{label}.txt"),
             "results_json": os.path.join(work, "results", f"sst_{label}.json"),
             "model_dir": os.path.join(work, "finetuning_models", f"sst_{label}"), **init}
  start = time.time()
  run([sys.executable, "run_finetuning.py", "--data-dir", work, "--model-name", MODEL_NAME,
       "--task", "sst", "--hparams", json.dumps(hparams)], cpu_only=True)
  timings[f"finetune_{label}_s"] = time.time() - start
  with open(hparams["results_json"], encoding="utf-8") as f:
    trials = [t["results"]["sst"]["accuracy"] for t in json.load(f)["trials"]]
  return {"median": statistics.median(trials), "trials": trials}


def main(argv: List[str]) -> int:
  from electra_tf2.models import model_directory
  args = parse_args(argv)
  timings: Dict[str, float] = {}
  vocab, vocab_size = build_data(args, timings)
  model_dir = pretrain(args, vocab_size, timings)
  dev = sst_data(args)
  # random initialisation with the pre-trained model's shape (debug encoder, E = 128)
  random_init = random_init_hparams(model_directory.load_pretraining_config(model_dir))
  pretrained_init, reset = {}, []
  if args.reinit:
    reinit_dir = model_dir + "_reinit"
    reset = reinitialised_copy(model_dir, reinit_dir, args.reinit, args.seed)
    print(f"reset {len(reset)} pre-trained variables matching {args.reinit!r}", flush=True)
    pretrained_init = {"init_checkpoint": reinit_dir}
  accuracy = {label: finetune(args, label, init, timings)
              for label, init in (("pretrained", pretrained_init), ("random_init", random_init))}
  report = {"sst_dev_accuracy": accuracy,
            "pretrained_state_spread": state_spread(model_dir, dev, vocab),
            "vocab": args.vocab, "vocab_size": vocab_size,
            "pretrain_steps": args.pretrain_steps,
            "pretrain_batch_size": args.pretrain_batch_size,
            "pretrain_max_seq_length": args.pretrain_max_seq_length,
            "pretrain_learning_rate": args.pretrain_learning_rate,
            "pretrain_hparams": args.pretrain_hparams,
            "reinit": args.reinit, "reinit_variables": len(reset),
            "finetune_hparams": args.finetune_hparams,
            "train_examples": args.train_examples, "epochs": args.epochs,
            "max_seq_length": args.max_seq_length, "learning_rate": args.learning_rate,
            "seed": args.seed, "timings": timings}
  write_json_atomic(os.path.join(args.work_dir, "sst_pretrained_vs_random.json"), report,
                    sort_keys=False)
  print(json.dumps(report, indent=2))
  return 0
