"""The pure-Python tokenizer against the TensorFlow one on every text of ../shared.

    python -m bench.parity.py_tokenizer_parity [--cased] [--vocab-file V]

Texts: those of bench/parity/litert_tokenizer_parity.py (every line of every text file under
../shared/data, every SQuAD title, context, question and answer, the embedded default
corpus). Prints, per file and in all, the texts whose ids from
electra_tf2/text/py_tokenizer.py `PyFullTokenizer` equal those of text/tokenizer.py
`FullTokenizer` (tensorflow-text, checked against the official tokenizer by
tests/test_tokenization.py), and the texts/s of each.
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

from bench.parity.litert_tokenizer_parity import SHARED, text_sets  # noqa: E402
from electra_tf2.text.py_tokenizer import PyFullTokenizer  # noqa: E402
from electra_tf2.text.tokenizer import FullTokenizer  # noqa: E402
from bench.common import script_parser


def main() -> None:
  parser = script_parser(__doc__, whole=False)
  parser.add_argument("--cased", action="store_true")
  parser.add_argument("--vocab-file", default=os.path.join(SHARED, "vocab", "vocab.txt"))
  args = parser.parse_args()
  ours = PyFullTokenizer(args.vocab_file, do_lower_case=not args.cased)
  theirs = FullTokenizer(args.vocab_file, do_lower_case=not args.cased)
  total = same = n_ids = 0
  seconds = {"py_tokenizer": 0.0, "tensorflow-text": 0.0}
  for name, texts in text_sets().items():
    start = time.perf_counter()
    got = ours.encode_batch(texts)
    seconds["py_tokenizer"] += time.perf_counter() - start
    start = time.perf_counter()
    want = theirs.encode_batch(texts)
    seconds["tensorflow-text"] += time.perf_counter() - start
    equal = sum(a == b for a, b in zip(got, want))
    print(f"{name}: {equal}/{len(texts)} identical")
    total, same, n_ids = total + len(texts), same + equal, n_ids + sum(map(len, got))
  print(f"all ({'cased' if args.cased else 'uncased'}): {same}/{total} texts identical, "
        f"{n_ids:,} ids; " + ", ".join(f"{k} {total / v:,.0f} texts/s ({n_ids / v:,.0f} ids/s)"
                                      for k, v in seconds.items()))


if __name__ == "__main__":
  main()
