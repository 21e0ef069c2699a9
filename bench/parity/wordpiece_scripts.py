"""Our WordPiece tokenizer against Hugging Face's BertTokenizer and BertTokenizerFast on real
non-English text that installed pip packages ship (docs/languages.md#wordpiece-on-every-script).

The text: every string literal with a non-ASCII letter in
- rich/__main__.py (the Chinese, Japanese and Korean sample sentences),
- pygments/lexers/testing.py (Gherkin's keywords in 70 languages: Korean, Arabic, Russian,
  German, Chinese, ...),
- sklearn/feature_extraction/tests/test_text.py (accented and Cyrillic sentences),
split into lines and words-separated pieces (`|` of the keyword lists). The vocabulary is
learned from that text by `electra build-vocab` (each setting its own), so that the
comparison is not all [UNK]. For each tokenizer setting the script prints, per script, the
texts whose ids agree, and the first disagreement.

  python -m bench.parity.wordpiece_scripts [--output docs/wordpiece_scripts.json]
"""

from __future__ import annotations

import ast
import collections
import importlib.util
import os
import tempfile
from bench.common import script_parser

SOURCES = ("rich/__main__.py", "pygments/lexers/testing.py",
           "sklearn/feature_extraction/tests/test_text.py")
SETTINGS = {"uncased (official default)": (True, None), "uncased, accents kept": (True, False),
            "cased": (False, None)}


def site_packages() -> str:
  return os.path.dirname(os.path.dirname(importlib.util.find_spec("rich").origin))


def shipped_texts():
  """[(source, text)] of the string literals with a non-ASCII letter, split on newlines and |."""
  root = site_packages()
  texts = []
  for relative in SOURCES:
    path = os.path.join(root, relative)
    if not os.path.exists(path):
      continue
    with open(path, encoding="utf-8") as f:
      tree = ast.parse(f.read())
    for node in ast.walk(tree):
      if isinstance(node, ast.Constant) and isinstance(node.value, str):
        for line in node.value.replace("|", "\n").splitlines():
          line = line.strip(" ^()$:*\\'\"")
          if any(c.isalpha() and ord(c) > 127 for c in line):
            texts.append((relative, line))
  return list(dict.fromkeys(texts))


def main() -> None:
  parser = script_parser(__doc__, whole=False)
  parser.add_argument("--output", default=None, help="JSON of the figures")
  args = parser.parse_args()
  import transformers  # pylint: disable=g-import-not-at-top
  from electra_tf2.data_prep import build_vocab, vocab_report  # pylint: disable=g-import-not-at-top
  from electra_tf2.text.tokenizer import FullTokenizer  # pylint: disable=g-import-not-at-top
  texts = shipped_texts()
  results = {"texts": len(texts), "sources": sorted({s for s, _ in texts}), "settings": {}}
  with tempfile.TemporaryDirectory() as tmp:
    corpus = os.path.join(tmp, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
      f.write("\n".join(t for _, t in texts) + "\n")
    for name, (lower, strip) in SETTINGS.items():
      vocab = os.path.join(tmp, f"vocab-{lower}-{strip}.txt")
      build_vocab.learn_vocab_from_files([corpus], 3000, vocab, lower, strip, log=None)
      ours = FullTokenizer(vocab, do_lower_case=lower, strip_accents=strip)
      hf_options = {"do_lower_case": lower, "strip_accents": strip,
                    "tokenize_chinese_chars": True}
      slow = transformers.BertTokenizer(vocab, **hf_options)
      fast = transformers.BertTokenizerFast(vocab, **hf_options)
      ids = ours.encode_batch([t for _, t in texts])
      per_script = collections.defaultdict(lambda: {"texts": 0, "slow": 0, "fast": 0})
      first = {}
      for (_, text), mine in zip(texts, ids):
        script = vocab_report.script_of(text)
        entry = per_script[script]
        entry["texts"] += 1
        for label, hf in (("slow", slow), ("fast", fast)):
          theirs = hf(text, add_special_tokens=False)["input_ids"]
          if theirs == mine:
            entry[label] += 1
          else:
            first.setdefault(f"{script} {label}", {"text": text, "ours": ours.tokenize(text),
                                                   "hf": hf.convert_ids_to_tokens(theirs)})
      results["settings"][name] = {"per_script": dict(per_script), "first_difference": first}
      print(f"{name}:")
      for script, entry in sorted(per_script.items(), key=lambda kv: -kv[1]["texts"]):
        print(f"  {script:<10} {entry['texts']:>4} texts: BertTokenizer agrees on "
              f"{entry['slow']}, BertTokenizerFast on {entry['fast']}")
      for key, diff in first.items():
        print(f"  first difference ({key}): {diff['text']!r}: ours {diff['ours']}, "
              f"HF {diff['hf']}")
  if args.output:
    from electra_tf2.utils.atomic_io import write_json_atomic  # pylint: disable=g-import-not-at-top
    write_json_atomic(args.output, results)


if __name__ == "__main__":
  main()
