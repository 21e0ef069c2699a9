"""The LiteRT tokenizer against the official tokenizer, on every text file of ../shared.

Texts: every line of every text file under ../shared/data (for SQuAD's JSON files:
every title, context, question and answer), and every paragraph of the embedded
default corpus (electra_tf2/data_prep/default_corpus.py). For each text, the WordPiece
ids of

- litert: electra_tf2/text/litert_tokenizer.py, as a `.tflite` run by the LiteRT
  interpreter after `prepare_texts` (what `LiteRTModel` does);
- litert graph alone: the same `.tflite` fed the texts' UTF-8 bytes, no Python step
  (what an app calling the interpreter itself gets);
- stock normalizer: tensorflow-text's own FastBertNormalizer (NFKC case folding,
  controls to spaces) before the same FastWordpieceTokenizer, the tokenizer one gets
  from tensorflow-text's TFLite guide;

are compared with the official Python tokenizer (tf-models-official's BERT
`FullTokenizer` with ELECTRA's `_is_control`, every category C*, and words of over 200
characters -> [UNK], as model/tokenization.py) and with our
in-graph tokenizer (electra_tf2/text/tokenizer.py, the SavedModel's). Prints the share
of texts with identical ids per file and overall, and the differing examples by rule;
writes docs/litert_tokenizer_parity.json.

  python -m bench.parity.litert_tokenizer_parity [--cased] [--vocab-file V] [--output F]
"""

from __future__ import annotations

import collections
import difflib
import glob
import json
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402

from bench.common import REPO, SHARED_DATA, log, script_parser  # noqa: E402

SHARED = os.environ.get("ELECTRA_SHARED_DATA", SHARED_DATA)
BATCH = 2048


def squad_texts(path):
  with open(path, encoding="utf-8") as f:
    data = json.load(f)
  for article in data["data"]:
    yield article["title"]
    for paragraph in article["paragraphs"]:
      yield paragraph["context"]
      for qa in paragraph["qas"]:
        yield qa["question"]
        for answer in qa.get("answers", []) + qa.get("plausible_answers", []):
          yield answer["text"]


def text_sets():
  """{name: texts}: each file of ../shared/data, then the embedded corpus."""
  sets = {}
  for path in sorted(glob.glob(os.path.join(SHARED, "**", "*"), recursive=True)):
    if not os.path.isfile(path):
      continue
    name = os.path.relpath(path, SHARED)
    if path.endswith(".json"):
      sets[name] = list(squad_texts(path))
    else:
      with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
        sets[name] = [line.rstrip("\r\n") for line in f.read().split("\n")]
  from electra_tf2.data_prep.default_corpus import default_corpus_documents
  sets["embedded default corpus"] = [p for _, paragraphs in default_corpus_documents()
                                     for p in paragraphs]
  return sets


def electra_is_control(char):
  """ELECTRA's `_is_control` (model/tokenization.py:335-344): every category C* but tab,
  newline and carriage return. BERT's (and tf-models-official's) checks Cc and Cf only."""
  import unicodedata
  if char in ("\t", "\n", "\r"):
    return False
  return unicodedata.category(char).startswith("C")


def official_tokenizer(vocab_file, lower):
  """tf-models-official's BERT FullTokenizer with ELECTRA's two changes: `_is_control`
  and 200 characters per word."""
  from official.nlp.tools import tokenization
  tokenization._is_control = electra_is_control  # pylint: disable=protected-access
  tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=lower)
  tokenizer.wordpiece_tokenizer.max_input_chars_per_word = 200  # ELECTRA's
  return lambda text: tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text))


def litert_tokenizer(vocab, lower, work_dir):
  """(ids of prepared texts, ids of raw UTF-8 texts): the tokenizer as a .tflite."""
  from electra_tf2.litert.convert import write_tflite
  from electra_tf2.litert.model import make_interpreter
  from electra_tf2.text.litert_tokenizer import LiteRTFeaturizer, prepare_texts
  featurizer = LiteRTFeaturizer(vocab, lower)
  path = os.path.join(work_dir, "tokenizer.tflite")
  write_tflite(path, lambda text: dict(zip(("ids", "splits"), featurizer.token_ids(text))),
               ["text"], [], {"do_lower_case": lower})
  log(f"tokenizer .tflite: {os.path.getsize(path) / 1e6:.2f} MB")
  runner = make_interpreter(model_path=path).get_signature_runner("serving_default")

  def run(data):
    out = []
    for start in range(0, len(data), BATCH):
      result = runner(text=np.array(data[start:start + BATCH], dtype=object))
      ids, splits = result["ids"], result["splits"]
      out += [ids[splits[i]:splits[i + 1]].tolist() for i in range(len(splits) - 1)]
    return out
  from electra_tf2.text.tokenizer import to_utf8
  return (lambda texts: run(prepare_texts(texts, lower)),
          lambda texts: run([to_utf8(t) for t in texts]))


def stock_tokenizer(vocab, lower):
  import tensorflow as tf
  import tensorflow_text as tft
  normalizer = tft.FastBertNormalizer(lower_case_nfd_strip_accents=lower)
  wordpiece = tft.FastWordpieceTokenizer(vocab, max_bytes_per_word=200, no_pretokenization=False,
                                         token_out_type=tf.int32)
  from electra_tf2.text.tokenizer import to_utf8

  def run(texts):
    out = []
    for start in range(0, len(texts), BATCH):
      batch = tf.constant([to_utf8(t) for t in texts[start:start + BATCH]])
      out += wordpiece.tokenize(normalizer.normalize(batch)).to_list()
    return out
  return run


def rules(text):
  """The official rules a text exercises that a tokenizer may break (bench rows)."""
  import unicodedata
  found = set()
  for char in set(text):
    category = unicodedata.category(char)
    if char in "\0\ufffd" or (category in ("Cc", "Cf") and char not in "\t\n\r"):
      found.add("controls removed (stock: made spaces)")
    elif category in ("Cn", "Co", "Cs"):
      found.add("unassigned / private use / surrogate (removed; the .tflite alone: [UNK])")
    elif unicodedata.normalize("NFKC", char) != char:
      found.add("no NFKC (stock: compatibility forms folded)")
    elif char.casefold() != char.lower():
      found.add("str.lower, not case folding (stock: folded)")
    if char == "\u03a3":
      found.add("capital sigma (final-sigma rule; graph alone: always σ)")
  return found


def first_difference(vocab, a, b):
  """The first differing stretch of two id lists, as tokens: 'official -> ours'."""
  for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
    if tag != "equal":
      return f"{' '.join(vocab[i] for i in a[i1:i2])!r} -> {' '.join(vocab[j] for j in b[j1:j2])!r}"
  return ""


def main():
  parser = script_parser(__doc__)
  parser.add_argument("--vocab-file", default=os.path.join(SHARED, "vocab", "vocab.txt"))
  parser.add_argument("--cased", action="store_true", help="do_lower_case=False")
  parser.add_argument("--output", default=None,
                      help="JSON results (default docs/litert_tokenizer_parity[_cased].json)")
  args = parser.parse_args()
  lower = not args.cased
  output = args.output or os.path.join(
      REPO, "docs", f"litert_tokenizer_parity{'' if lower else '_cased'}.json")
  from electra_tf2.text.tokenizer import FullTokenizer
  with open(args.vocab_file, encoding="utf-8") as f:
    vocab = [line.rstrip("\n") for line in f]
  work_dir = tempfile.mkdtemp(prefix="litert_tokenizer_")
  ours = FullTokenizer(args.vocab_file, do_lower_case=lower)
  official = official_tokenizer(args.vocab_file, lower)
  litert, litert_raw = litert_tokenizer(vocab, lower, work_dir)
  stock = stock_tokenizer(vocab, lower)
  sides = {"litert": litert, "litert graph alone": litert_raw, "stock normalizer": stock}
  rows, examples = [], collections.defaultdict(list)
  totals = collections.Counter()
  by_rule = collections.defaultdict(collections.Counter)  # rule -> {"texts": n, side: differ}
  for name, texts in text_sets().items():
    start = time.time()
    reference = [official(t) for t in texts]
    ids = {"ours (SavedModel)": ours.encode_batch(texts)}
    ids.update({side: run(texts) for side, run in sides.items()})
    row = {"file": name, "texts": len(texts)}
    text_rules = [rules(t) for t in texts]
    for found in text_rules:
      for rule in found:
        by_rule[rule]["texts"] += 1
    for side, got in ids.items():
      same = sum(r == g for r, g in zip(reference, got))
      row[side] = same
      totals[side] += same
      for found, r, g in zip(text_rules, reference, got):
        for rule in (found or {"none of these"}) if r != g else ():
          by_rule[rule][side] += 1
      for text, r, g in zip(texts, reference, got):
        if r != g and len(examples[side]) < 20:
          examples[side].append({"file": name, "text": text[:120],
                                 "difference": first_difference(vocab, r, g)})
    row["litert = ours"] = sum(a == b for a, b in zip(ids["litert"], ids["ours (SavedModel)"]))
    totals["litert = ours"] += row["litert = ours"]
    totals["texts"] += len(texts)
    rows.append(row)
    log(f"{name}: {len(texts)} texts, " + ", ".join(
        f"{side} {100 * row[side] / max(1, len(texts)):.3f}%" for side in ids)
        + f" ({time.time() - start:.0f}s)")
  sides_all = ["ours (SavedModel)", *sides, "litert = ours"]
  print("\n| file | texts | " + " | ".join(sides_all) + " |")
  print("|---|---:|" + "---:|" * len(sides_all))
  for row in rows + [dict(totals, file="**all**")]:
    print(f"| {row['file']} | {row['texts']} | " + " | ".join(
        f"{100 * row[s] / max(1, row['texts']):.3f}%" for s in sides_all) + " |")
  print("\n| rule | texts exercising it | " + " | ".join(
      f"differ: {s}" for s in sides_all[:-1]) + " |")
  print("|---|---:|" + "---:|" * (len(sides_all) - 1))
  for rule, counts in sorted(by_rule.items()):
    print(f"| {rule} | {counts['texts']} | " + " | ".join(
        str(counts[s]) for s in sides_all[:-1]) + " |")
  for side, found in examples.items():
    print(f"\n{side}: first differences (official -> {side})")
    for example in found[:10]:
      print(f"  {example['file']}: {example['difference']}  in {example['text']!r}")
  from electra_tf2.utils.atomic_io import write_json_atomic
  write_json_atomic(output, {"do_lower_case": lower, "vocab": args.vocab_file,
                             "oracle": "tf-models-official BERT FullTokenizer, 200 chars",
                             "files": rows, "totals": dict(totals),
                             "rules": {k: dict(v) for k, v in by_rule.items()},
                             "examples": dict(examples), "load": os.getloadavg()[0]})
  log(f"wrote {output}")


if __name__ == "__main__":
  main()
