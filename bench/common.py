"""What the bench scripts share: the repository's place, logging, model inputs, figures."""

from __future__ import annotations

import json
import os
import time
from typing import Any, Callable, Mapping, Optional, Sequence, Tuple

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The project's shared data beside the checkout (../shared/data), the scripts' default.
SHARED_DATA = os.path.join(os.path.dirname(REPO), "shared", "data")


def log(message: str, tag: str = "") -> None:
  """Prints one line at once, after `[tag HH:MM:SS] ` when a tag is given."""
  prefix = f"[{tag} {time.strftime('%H:%M:%S')}] " if tag else ""
  print(prefix + message, flush=True)


def append_json(path: Optional[str], record: Mapping[str, Any]) -> None:
  """Appends `record` as one JSON line to `path` (nothing when path is None): a file of
  results that a run killed midway keeps whole up to its last line."""
  if path:
    with open(path, "a", encoding="utf-8") as f:
      f.write(json.dumps(record) + "\n")


def add_step_flags(parser, steps: int, rounds: Optional[int] = 3) -> None:
  """The flags the training-step benches share: hparams over the preset's, precision, XLA,
  steps (per round, with `rounds` rounds unless None) and a JSON output file."""
  parser.add_argument("--hparams", default="{}",
                      help="JSON object of hparams over the preset's, e.g. '{\"debug\": true}' "
                           "for the 3-layer debug encoder")
  parser.add_argument("--mixed-precision", default="float32")
  parser.add_argument("--jit-compile", action="store_true")
  parser.add_argument("--steps", type=int, default=steps)
  if rounds is not None:
    parser.add_argument("--rounds", type=int, default=rounds)
  parser.add_argument("--json", default=None, help="append the result as JSON here")


def block_tensorflow_if_asked() -> None:
  """With ELECTRA_BLOCK_TENSORFLOW=1, makes `import tensorflow` fail from here on
  (tests/block_tensorflow.py): a script run so proves it needs no TensorFlow, as on the GPU
  machine. Scripts call it first thing in `__main__`."""
  if os.environ.get("ELECTRA_BLOCK_TENSORFLOW") == "1":
    import importlib.util  # pylint: disable=g-import-not-at-top
    path = os.path.join(REPO, "tests", "block_tensorflow.py")
    spec = importlib.util.spec_from_file_location("block_tensorflow", path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))  # blocks on import


def fake_pretraining_batch(batch: int, seq_len: int, vocab_size: int, seed: int = 0,
                           zipf: Optional[float] = None) -> dict:
  """int32 `input_ids`, `input_mask`, `segment_ids` `[batch, seq_len]` of two segments,
  `[CLS] a [SEP] b [SEP]`, with no padding. Tokens are uniform over [1000, vocab_size), or
  with `zipf` drawn from a Zipf law of that exponent over them (text-like: a generator can
  learn its unigram distribution, so losses fall as on text)."""
  rng = np.random.default_rng(seed)
  if zipf is None:
    ids = rng.integers(1000, vocab_size, (batch, seq_len))
  else:
    ids = 1000 + (rng.zipf(zipf, (batch, seq_len)) - 1) % (vocab_size - 1000)
  ids = ids.astype(np.int32)
  ids[:, 0], ids[:, seq_len // 2], ids[:, -1] = 101, 102, 102
  segments = (np.arange(seq_len)[None] > seq_len // 2).astype(np.int32).repeat(batch, 0)
  return {"input_ids": ids, "input_mask": np.ones((batch, seq_len), np.int32),
          "segment_ids": segments}


OUT_OF_MEMORY_WORDS = ("RESOURCE_EXHAUSTED", "Out of memory", "out of memory", "OOM")


def best_seconds(compiled: Callable, args: Sequence[Any], rounds: int, calls: int = 10) -> float:
  """The best of `rounds` mean times of `calls` calls of a compiled JAX function, each round
  waited for on the device (jax.block_until_ready)."""
  import jax  # pylint: disable=g-import-not-at-top
  best = float("inf")
  for _ in range(rounds):
    start = time.perf_counter()
    for _ in range(calls):
      out = compiled(*args)
    jax.block_until_ready(out)
    best = min(best, (time.perf_counter() - start) / calls)
  return best


def is_out_of_memory_message(error: BaseException) -> bool:
  """Whether an error's text says an allocation failed (TensorFlow, XLA, JAX, PyTorch)."""
  return any(words in str(error) for words in OUT_OF_MEMORY_WORDS)


def largest_batch(make_step: Callable[[int], Any], top: int, warm_up: Callable[[Any], Any],
                  out_of_memory: Callable[[BaseException], bool] = is_out_of_memory_message,
                  name: str = "", errors: Tuple[type, ...] = (Exception,)) -> Tuple[int, Any]:
  """The first of top, top/2, top/4, ... whose step builds and passes `warm_up(step)`, with
  that step; re-raises any error of `errors` that is not `out_of_memory`, and at batch 1."""
  import gc  # pylint: disable=g-import-not-at-top
  batch = top
  while True:
    try:
      step = make_step(batch)
      warm_up(step)
      return batch, step
    except errors as e:  # pylint: disable=broad-except
      if not out_of_memory(e) or batch == 1:
        raise
      log(f"{name} batch {batch}: out of memory, trying {batch // 2}")
    step = None
    gc.collect()
    batch //= 2


def pad_rows(rows: Sequence[Sequence[int]]) -> Tuple[np.ndarray, np.ndarray]:
  """int32 ids and input mask `[len(rows), longest]` of id rows, padded with 0."""
  length = max(len(r) for r in rows)
  ids = np.zeros((len(rows), length), np.int32)
  for i, row in enumerate(rows):
    ids[i, :len(row)] = row
  return ids, (np.arange(length)[None] < np.array([len(r) for r in rows])[:, None]
               ).astype(np.int32)


def text_inputs(tokenizer, texts: Sequence[str], max_seq_length: int
                ) -> Tuple[np.ndarray, np.ndarray]:
  """`[CLS] text [SEP]` ids and mask `[len(texts), longest]`, each text cut to
  max_seq_length - 2 WordPieces of `tokenizer` (an `electra_tf2` FullTokenizer)."""
  special = tokenizer.special_ids
  return pad_rows([[special.cls] + ids[:max_seq_length - 2] + [special.sep]
                   for ids in tokenizer.encode_batch(texts)])


def pyplot():
  """matplotlib.pyplot on the file-only Agg backend."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  return plt


def save_figure(figure, path: str, dpi: int) -> None:
  """Writes `figure` as a PNG at `path` (a temporary name, then renamed) and closes it."""
  from electra_tf2.utils.atomic_io import atomic_path
  with atomic_path(path) as tmp:
    figure.savefig(tmp, dpi=dpi, format="png")
  pyplot().close(figure)
