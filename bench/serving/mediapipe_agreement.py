"""MediaPipe Tasks' TextClassifier on our `--target mediapipe` files against our own model:
SST-2 dev, and probe texts where MediaPipe's tokenizer may differ from ours.

A TextClassifier (hidden 64, 2 layers, the BERT vocabulary of ../shared, max_seq_length
128) is fitted briefly on SST-2 training sentences (so that its labels are decisive),
then exported with export_litert(target="mediapipe") in float32 and dynamic-int8. For
each text, three sides:

- keras: the model's `serve` (what its SavedModel returns; the official tokenizer);
- ours: the .tflite run by the interpreter on our token ids ([CLS] WordPieces [SEP]);
- mediapipe: mediapipe's TextClassifier on the raw text (its own tokenizer, from the
  file's metadata).

Prints, per file, the largest |mediapipe - keras| and |mediapipe - ours| score
difference, the texts beyond 1e-4 and the label agreement; then each probe text with
whether MediaPipe's scores are ours (same tokens) or not.

Needs the mediapipe extra beside the project's environment:

  python -m bench.serving.mediapipe_agreement [--train 4000] [--epochs 2] [--seed 0]
"""

from __future__ import annotations

import csv
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402

from bench.common import SHARED_DATA, log, script_parser  # noqa: E402

MAX_SEQ_LENGTH = 128
# Texts where MediaPipe's BERT preprocessing (ASCII lower-casing, a regex split, no accent
# stripping, no control-character removal) may differ from the official BasicTokenizer.
PROBES = {
    "ascii": "the film is a charming and often affecting journey .",
    "upper case ASCII": "The Film Is A CHARMING Journey .",
    "accents, lower case": "a café with a naïve rosé",
    "accents, upper case": "CAFÉ À PARIS",
    "non-ASCII upper case": "ÆSOP ΑΘΗΝΑ",
    "CJK": "这部电影很好看",
    "CJK and Latin": "the film 电影 is good",
    "Japanese kana": "この映画はいい",
    "control characters": "the film\x00 is\x07 good",
    "tab and newline": "the film\tis\ngood",
    "unicode punctuation": "\u201cgood\u201d \u2014 film\u2026",
    "zero-width space": "good\u200bfilm",
    "emoji": "good film \U0001F600",
}


def read_sst2(split: str, limit: int = 0):
  with open(os.path.join(SHARED_DATA, "glue", "SST-2", f"{split}.tsv"), encoding="utf-8") as f:
    rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
  rows = rows[:limit] if limit else rows
  return [r["sentence"] for r in rows], np.array([int(r["label"]) for r in rows])


def main() -> None:
  parser = script_parser(__doc__)
  parser.add_argument("--train", type=int, default=4000, help="SST-2 training sentences")
  parser.add_argument("--epochs", type=int, default=2)
  parser.add_argument("--seed", type=int, default=0, help="the initialisation and shuffling")
  args = parser.parse_args()
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from mediapipe.tasks import python as mp_python
  from mediapipe.tasks.python import text as mp_text
  import electra_tf2
  from electra_tf2.text import vocab as vocab_lib

  vocab = vocab_lib.load_vocab(os.path.join(SHARED_DATA, "vocab", "vocab.txt"))
  tokens = sorted(vocab, key=vocab.get)
  tf.keras.utils.set_random_seed(args.seed)
  bert = electra_tf2.BertConfig(len(tokens), hidden_size=64, num_hidden_layers=2,
                                num_attention_heads=2, intermediate_size=256)
  model = electra_tf2.TextClassifier(bert, None, tokens, max_seq_length=MAX_SEQ_LENGTH,
                                     label_list=["negative", "positive"])
  texts, labels = read_sst2("train", args.train)
  model.compile(optimizer=tf.keras.optimizers.Adam(1e-3),
                loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  model.fit(texts, labels, batch_size=32, epochs=args.epochs, verbose=0)
  dev, dev_labels = read_sst2("dev")
  probes = list(PROBES.values())
  keras = model.predict(dev + probes, verbose=0)
  keras = tf.nn.softmax(keras).numpy()
  log(f"keras dev accuracy {np.mean(keras[:len(dev)].argmax(-1) == dev_labels):.4f} "
      f"({args.train} training sentences, {args.epochs} epochs)")
  for part, moved in quantization_parts(model, dev, keras[:len(dev)].argmax(-1)).items():
    log(f"{part}: {moved} of {len(dev)} labels move")
  work = tempfile.mkdtemp()
  for quantize in ("none", "dynamic-int8"):
    path = model.export_litert(os.path.join(work, f"{quantize}.tflite"), quantize,
                               target="mediapipe")
    runner = tf.lite.Interpreter(model_path=path).get_signature_runner("serving_default")
    ours = []
    for text in dev + probes:
      features = model.text_inputs(tf.constant([text]))
      pad = [[0, 0], [0, MAX_SEQ_LENGTH - features["input_ids"].shape[1]]]
      f = {k: tf.pad(v, pad).numpy() for k, v in features.items()}
      ours.append(runner(input_word_ids=f["input_ids"], input_mask=f["input_mask"],
                         input_type_ids=f["segment_ids"])["probabilities"][0])
    ours = np.array(ours)
    options = mp_text.TextClassifierOptions(
        base_options=mp_python.BaseOptions(model_asset_path=path))
    classifier = mp_text.TextClassifier.create_from_options(options)
    try:
      got = []
      for text in dev + probes:
        categories = classifier.classify(text).classifications[0].categories
        got.append([c.score for c in sorted(categories, key=lambda c: c.index)])
    finally:
      classifier.close()
    got = np.array(got)
    n = len(dev)
    for name, other in (("keras", keras), ("ours", ours)):
      diff = np.abs(got[:n] - other[:n]).max(-1)
      agree = np.mean(got[:n].argmax(-1) == other[:n].argmax(-1))
      log(f"{quantize}: SST-2 dev ({n}): max |mediapipe - {name}| {diff.max():.2e}, "
          f"{int((diff > 1e-4).sum())} texts beyond 1e-4, labels agree {agree:.4%}")
      for i in np.flatnonzero(diff > 1e-4)[:5]:
        log(f"  {diff[i]:.2e} {dev[i]!r}")
    if quantize == "none":
      for (name, text), mine, theirs in zip(PROBES.items(), ours[n:], got[n:]):
        diff = np.abs(mine - theirs).max()
        log(f"probe {name:22s} {'same' if diff <= 1e-4 else 'DIFFERS'} ({diff:.1e}) {text!r}")


def int8_rounded(weights: np.ndarray, axis) -> np.ndarray:
  """`weights` rounded to symmetric int8 with one scale per slice along `axis` (None: one
  scale for all), as float: what a dequantized int8 weight holds."""
  scale = np.abs(weights).max(axis=axis, keepdims=axis is not None) / 127
  scale = np.where(scale == 0, 1, scale)
  return np.round(weights / scale) * scale


def quantization_parts(model, texts, labels) -> dict:
  """How many of the float model's `labels` on `texts` move when only one part of the
  dynamic-int8 file's quantization is applied to the Keras model: the word-embedding
  table rounded to int8 with one scale (as the converter stores it) or one scale per row
  (as electra_tf2/litert/embedding_rows.py rewrites it), or every dense kernel
  rounded per output channel (its weights; the file also quantizes each dense input per
  call, which this leaves float). The weights are restored after each."""
  table = next(v for v in model.weights if "word_embeddings" in v.path)
  dense = [v for v in model.weights  # the kernels the converter quantizes (>= 1024 values)
           if v.path.endswith("kernel") and len(v.shape) == 2 and np.prod(v.shape) >= 1024]
  parts = {"word embeddings, int8 with one scale": [(table, None)],
           "word embeddings, int8 per row": [(table, 1)],
           "dense kernels, int8 per output channel": [(v, 0) for v in dense]}
  moved = {}
  for part, variables in parts.items():
    saved = [v.numpy() for v, _ in variables]
    for (variable, axis), value in zip(variables, saved):
      variable.assign(int8_rounded(value, axis))
    moved[part] = int((model.predict(texts, verbose=0).argmax(-1) != labels).sum())
    for (variable, _), value in zip(variables, saved):
      variable.assign(value)
  return moved


if __name__ == "__main__":
  main()
