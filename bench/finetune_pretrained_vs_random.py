"""Does pre-training help? SST-2 dev accuracy of a debug-size ELECTRA, pre-trained vs random.

  python bench/finetune_pretrained_vs_random.py [--work-dir /tmp/electra_sst_bench] \\
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

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from electra_tf2.atomic_io import write_json_atomic, write_text_atomic  # noqa: E402
from electra_tf2.config import PretrainingConfig  # noqa: E402


def run(command, env=None):
  print("+ " + " ".join(command), flush=True)
  subprocess.run(command, check=True, cwd=REPO, env=env)


def state_spread(model_dir: str, dev_tsv: str, vocab_file: str, n: int = 64):
  """How much the pre-trained discriminator's states vary, on n SST-2 dev sentences.

  `cls_std_across_sentences`: std over sentences of the [CLS] state (mean over
  dimensions), the state the classification head reads; `token_std_within_sentence`:
  std over the tokens of a sentence. ELECTRA never replaces [CLS], so early in
  pre-training its target is constant and its state can collapse.
  """
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from electra_tf2 import model_directory  # pylint: disable=g-import-not-at-top
  from electra_tf2.tokenization import FullTokenizer  # pylint: disable=g-import-not-at-top
  with open(dev_tsv, encoding="utf-8") as f:
    sentences = [line.split("\t")[0] for line in f.readlines()[1:n + 1]]
  tokenizer = FullTokenizer(vocab_file)
  cls, sep = tokenizer.vocab["[CLS]"], tokenizer.vocab["[SEP]"]
  ids = [[cls] + tokenizer.encode(s)[:62] + [sep] for s in sentences]
  width = max(map(len, ids))
  input_ids = np.array([i + [0] * (width - len(i)) for i in ids], np.int32)
  mask = (input_ids > 0).astype(np.int32)
  encoder = model_directory.restore_pretrainer(model_dir).discriminator
  states = encoder(tf.constant(input_ids), tf.constant(mask), tf.zeros_like(mask)).numpy()
  within = [states[i, :mask[i].sum()].std(0).mean() for i in range(len(ids))]
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
  from electra_tf2 import model_directory, variable_names  # pylint: disable=g-import-not-at-top
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


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--work-dir", default="/tmp/electra_sst_bench")
  parser.add_argument("--shared-data", default=os.path.join(os.path.dirname(REPO), "shared",
                                                            "data"))
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
  args = parser.parse_args()

  work, shared = os.path.abspath(args.work_dir), os.path.abspath(args.shared_data)
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
  python = sys.executable
  timings = {}

  # 1. pre-training data and vocab
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
           "--output", vocab] + [flag for d in dirs for flag in ("--corpus-dir", d)], env)
  with open(vocab, encoding="utf-8") as f:
    vocab_size = sum(1 for _ in f)
  records = os.path.join(work, "pretrain_tfrecords")
  start = time.time()
  if not os.path.isdir(records):
    run([python, "data_prep/build_pretraining_dataset.py", "--vocab-file", vocab,
         "--output-dir", records, "--max-seq-length", str(args.pretrain_max_seq_length),
         "--num-shards", "1000", "--seed", str(args.seed), "--no-progress"]
        + [flag for d in dirs for flag in ("--corpus-dir", d)], env)
  timings["build_tfrecords_s"] = time.time() - start

  # 2. pre-training
  model_name = "electra_small"
  start = time.time()
  if not os.path.isdir(os.path.join(work, "models", model_name)):
    run([python, "run_pretraining.py", "--data-dir", work, "--model-name", model_name,
         "--hparams", json.dumps({"debug": True, "num_train_steps": args.pretrain_steps,
                                  "train_batch_size": args.pretrain_batch_size,
                                  "max_seq_length": args.pretrain_max_seq_length,
                                  "learning_rate": args.pretrain_learning_rate,
                                  "num_warmup_steps": args.pretrain_steps // 10,
                                  "iterations_per_loop": 100, "save_checkpoints_steps": 10 ** 6,
                                  "vocab_size": vocab_size, "seed": args.seed,
                                  **args.pretrain_hparams})], env)
  timings["pretrain_s"] = time.time() - start

  # 3. SST-2 in the official layout: a training subset, the whole dev set
  sst = os.path.join(work, "finetuning_data", "sst")
  os.makedirs(sst, exist_ok=True)
  with open(os.path.join(shared, "glue", "SST-2", "train.tsv"), encoding="utf-8") as f:
    lines = f.readlines()[:args.train_examples + 1]
  write_text_atomic(os.path.join(sst, "train.tsv"), "".join(lines))
  dev = os.path.join(sst, "dev.tsv")
  if not os.path.exists(dev):
    os.symlink(os.path.join(shared, "glue", "SST-2", "dev.tsv"), dev)

  # random initialisation with the pre-trained model's shape (debug encoder, E = 128)
  with open(os.path.join(work, "models", model_name, "pretrain_config.json"),
            encoding="utf-8") as f:
    pretraining = PretrainingConfig.from_dict(json.load(f))
  shape = {k: v for k, v in pretraining.bert_config.to_dict().items() if k != "vocab_size"}
  random_init = {"init_checkpoint": None, "model_size": pretraining.model_size,
                 "embedding_size": pretraining.embedding_size, "vocab_size": vocab_size,
                 "model_hparam_overrides": shape}

  pretrained_init, reset = {}, []
  if args.reinit:
    reinit_dir = os.path.join(work, "models", model_name + "_reinit")
    reset = reinitialised_copy(os.path.join(work, "models", model_name), reinit_dir,
                               args.reinit, args.seed)
    print(f"reset {len(reset)} pre-trained variables matching {args.reinit!r}", flush=True)
    pretrained_init = {"init_checkpoint": reinit_dir}

  accuracy = {}
  for label, extra in (("pretrained", pretrained_init), ("random_init", random_init)):
    hparams = {"num_train_epochs": args.epochs, "max_seq_length": args.max_seq_length,
               "learning_rate": args.learning_rate, "num_trials": args.trials,
               "seed": args.seed, "iterations_per_loop": 50,
               **args.finetune_hparams,
               "results_txt": os.path.join(work, "results", f"sst_{label}.txt"),
               "results_json": os.path.join(work, "results", f"sst_{label}.json"),
               "model_dir": os.path.join(work, "finetuning_models", f"sst_{label}"), **extra}
    start = time.time()
    run([python, "run_finetuning.py", "--data-dir", work, "--model-name", model_name,
         "--task", "sst", "--hparams", json.dumps(hparams)], env)
    timings[f"finetune_{label}_s"] = time.time() - start
    with open(hparams["results_json"], encoding="utf-8") as f:
      trials = [t["results"]["sst"]["accuracy"] for t in json.load(f)["trials"]]
    accuracy[label] = {"median": statistics.median(trials), "trials": trials}

  spread = state_spread(os.path.join(work, "models", model_name), dev, vocab)
  report = {"sst_dev_accuracy": accuracy, "pretrained_state_spread": spread,
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
  write_json_atomic(os.path.join(work, "sst_pretrained_vs_random.json"), report,
                    sort_keys=False)
  print(json.dumps(report, indent=2))
  return 0


if __name__ == "__main__":
  sys.exit(main())
