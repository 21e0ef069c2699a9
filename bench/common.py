"""What the bench scripts share: the repository's place, logging, model inputs, figures."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Callable, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The project's shared data beside the checkout (../shared/data), the scripts' default.
SHARED_DATA = os.path.join(os.path.dirname(REPO), "shared", "data")


def log(message: str, tag: str = "") -> None:
  """Prints one line at once, after `[tag HH:MM:SS] ` when a tag is given."""
  prefix = f"[{tag} {time.strftime('%H:%M:%S')}] " if tag else ""
  print(prefix + message, flush=True)


def bench_command(module: str, *flags: Any) -> List[str]:
  """The command line that runs bench module `module` (`bench.group.name`) with `flags`, in
  this Python; run it with cwd=REPO, where `bench` is importable."""
  return [sys.executable, "-m", module] + [str(f) for f in flags]


def append_json(path: Optional[str], record: Mapping[str, Any]) -> None:
  """Appends `record` as one JSON line to `path` (nothing when path is None): a file of
  results that a run killed midway keeps whole up to its last line."""
  if path:
    with open(path, "a", encoding="utf-8") as f:
      f.write(json.dumps(record) + "\n")


def script_parser(doc: str, whole: bool = True) -> argparse.ArgumentParser:
  """A script's argument parser, described by its docstring as written (by its first
  paragraph alone when not `whole`) and named `python -m bench.group.name` when run so."""
  spec = getattr(sys.modules["__main__"], "__spec__", None)
  prog = f"python -m {spec.name}" if spec and spec.name.startswith("bench.") else None
  if whole:
    return argparse.ArgumentParser(prog=prog, description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  return argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0])


def add_output_flags(parser: argparse.ArgumentParser, rounds: Optional[int]) -> None:
  """--rounds (the best of them counts; none when `rounds` is None) and --json (a file the
  results are appended to, a JSON line each)."""
  if rounds is not None:
    parser.add_argument("--rounds", type=int, default=rounds)
  parser.add_argument("--json", default=None, help="append the results here, a JSON line each")


def add_step_flags(parser: argparse.ArgumentParser, steps: int,
                   rounds: Optional[int] = 3) -> None:
  """The flags the training-step benches share: hparams over the preset's, precision, XLA,
  steps (per round, with `rounds` rounds unless None) and a JSON output file."""
  parser.add_argument("--hparams", default="{}",
                      help="JSON object of hparams over the preset's, e.g. '{\"debug\": true}' "
                           "for the 3-layer debug encoder")
  parser.add_argument("--mixed-precision", default="float32")
  parser.add_argument("--jit-compile", action="store_true")
  parser.add_argument("--steps", type=int, default=steps)
  add_output_flags(parser, rounds)


def kernel_bench_main(doc: str, argv: Optional[List[str]], batch: int,
                      add_flags: Callable[[argparse.ArgumentParser], None],
                      measure: Callable[[argparse.Namespace, Optional[str]], Any]) -> int:
  """The main of a bench that times one kernel on `[--batch, --seq-len]` inputs: its own
  flags (`add_flags`), --rounds (5) and --json, then `measure(args, args.json)`."""
  parser = script_parser(doc, whole=False)
  parser.add_argument("--batch", type=int, default=batch)
  parser.add_argument("--seq-len", type=int, default=128)
  add_flags(parser)
  add_output_flags(parser, rounds=5)
  args = parser.parse_args(argv)
  measure(args, args.json)
  return 0


def add_batch_flags(parser: argparse.ArgumentParser) -> None:
  """The pre-training step benches' model, batch sizes and length, a datasheet peak for MFU,
  then add_step_flags."""
  parser.add_argument("--model-name", default="electra_small")
  parser.add_argument("--batch-sizes", default="8,32")
  parser.add_argument("--max-batch", type=int, default=None,
                      help="instead of --batch-sizes: the largest of N, N/2, ... that fits")
  parser.add_argument("--seq-len", type=int, default=128)
  parser.add_argument("--peak-tflops", type=float, default=None,
                      help="a datasheet peak in TFLOP/s: MFU against it")
  add_step_flags(parser, steps=10)


def add_text_timing_flags(parser: argparse.ArgumentParser, rounds: int, latency_texts: int,
                          throughput_texts: int,
                          work_dir: str = "/tmp/electra_inference_bench") -> None:
  """The flags of the benches that time models on raw texts: rounds, the texts timed one
  at a time (batch-1 latency) and in batches (throughput), then add_data_flags."""
  parser.add_argument("--rounds", type=int, default=rounds)
  parser.add_argument("--latency-texts", type=int, default=latency_texts)
  parser.add_argument("--throughput-texts", type=int, default=throughput_texts)
  add_data_flags(parser, work_dir)


def add_data_flags(parser: argparse.ArgumentParser,
                   work_dir: str = "/tmp/electra_inference_bench") -> None:
  """--work-dir (the models a bench builds, kept for the next run) and --data-dir (the
  shared data)."""
  parser.add_argument("--work-dir", default=work_dir)
  parser.add_argument("--data-dir", default=SHARED_DATA)


def add_stages_flag(parser: argparse.ArgumentParser, stages: Sequence[str],
                    default: Optional[Sequence[str]] = None) -> None:
  """--stages: comma-separated names of `stages`, read as a list (default: `default`, else
  all of them); an unknown name is refused in one line that lists the known ones."""
  def read(text: str) -> List[str]:
    chosen = [s for s in text.split(",") if s]
    unknown = [s for s in chosen if s not in stages]
    if unknown:
      raise argparse.ArgumentTypeError(
          f"unknown stage(s) {', '.join(unknown)}: choose from {','.join(stages)}")
    return chosen
  parser.add_argument("--stages", type=read, default=list(default or stages),
                      help=f"comma-separated, of {','.join(stages)}")


def sequences_per_second(batches: Iterator[Mapping[str, Any]], n: int, batch_size: int,
                         warm_up: int = 5) -> float:
  """Sequences/s over `n` batches of an iterator (each batch's `input_ids` read to the
  end), after `warm_up` batches that fill its buffers."""
  for _ in range(warm_up):
    next(batches)
  start = time.perf_counter()
  for _ in range(n):
    np.asarray(next(batches)["input_ids"]).sum()
  return n * batch_size / (time.perf_counter() - start)


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


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
  """A markdown table: the header line, its rule, then a line per row of cells."""
  lines = ["| " + " | ".join(headers) + " |", "|---" * len(headers) + "|"]
  return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


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
