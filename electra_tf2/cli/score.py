r"""`electra score`: replaced-token scores of texts in files, re-ranking, and a terminal view.

  electra score file   --model-dir DIR --input FILE --output FILE.jsonl
  electra score rerank --model-dir DIR --input GROUPS.jsonl --output FILE.jsonl
  electra score show   --model-dir DIR "The chef drank the meal."

DIR is a pre-trained model directory (ours or a converted official checkpoint) or
a discriminator SavedModel (`score` is another name of `file`). Definitions:
docs/scoring.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from electra_tf2.utils import predictions
from electra_tf2.utils.errors import command
from electra_tf2.scoring.graph import SENTENCE_SCORES, ScoringError
from electra_tf2.scoring.terminal import render
from electra_tf2.scoring.scorer import DEFAULT_RANK_SCORE, TextScorer, rank_order

def _lines(path: str) -> Iterator[Tuple[int, str, int]]:
  """`(line number, text, bytes read)` of a UTF-8 text file; invalid UTF-8 is an error."""
  return predictions.text_lines(path, "--input", ScoringError)


def _check_input(path: str) -> None:
  """Refuses, in one line, an input that is not UTF-8 or has no text, before any model
  loads."""
  if not any([line.strip() for _, line, _ in _lines(path)]):
    raise ScoringError(f"--input {path} is empty: give one text (or JSON object) per line")


def _json_object(path: str, number: int, text: str) -> Dict[str, Any]:
  try:
    value = json.loads(text)
  except json.JSONDecodeError as e:
    raise ScoringError(f"{path}:{number}: not valid JSON ({e.msg} at column {e.colno}): "
                       "give one JSON object per line") from None
  if not isinstance(value, dict):
    raise ScoringError(f"{path}:{number}: a JSON {type(value).__name__}, not an object: give "
                       "one JSON object per line")
  return value


def _texts(path: str, jsonl: bool) -> Iterator[Tuple[int, Dict[str, Any], int]]:
  """`(line number, {"text": ...[, "id": ...]}, bytes read)` per input line."""
  for number, line, size in _lines(path):
    if not jsonl or not line.strip():
      yield number, {"text": line if not jsonl else ""}, size
      continue
    value = _json_object(path, number, line)
    if not isinstance(value.get("text"), str):
      raise ScoringError(f'{path}:{number}: the object needs a "text" string (and may have an '
                         '"id"): {"id": 1, "text": "a sentence"}')
    record = {"text": value["text"]}
    if "id" in value:
      record["id"] = value["id"]
    yield number, record, size


def _groups(path: str) -> Iterator[Tuple[int, Dict[str, Any], int]]:
  """`(line number, {"id", "candidates"}, bytes read)` per JSONL line (blank lines skipped)."""
  example = 'give {"id": "utt1", "candidates": ["first sentence", "second sentence"]}'
  for number, line, size in _lines(path):
    if not line.strip():
      yield number, None, size
      continue
    value = _json_object(path, number, line)
    candidates = value.get("candidates")
    if not isinstance(candidates, list) or not candidates or \
        not all(isinstance(c, str) for c in candidates):
      raise ScoringError(f'{path}:{number}: "candidates" must be a non-empty list of strings: '
                         f"{example}")
    for index, candidate in enumerate(candidates):
      if not candidate.strip():
        raise ScoringError(f"{path}:{number}: candidate {index} is empty: remove it, or give "
                           "every candidate some text")
    yield number, {"id": value.get("id", number), "candidates": candidates}, size


class _Output:
  """The output file, written whole (atomic) or stdout for "-"."""

  def __init__(self, path: str):
    self.path = path

  def __enter__(self):
    if self.path == "-":
      return sys.stdout
    from electra_tf2.utils.atomic_io import atomic_path
    self._atomic = atomic_path(self.path)
    self._file = open(self._atomic.__enter__(), "w", encoding="utf-8", newline="\n")
    return self._file

  def __exit__(self, *exc):
    if self.path == "-":
      return False
    self._file.close()
    return self._atomic.__exit__(*exc)


def _progress(path: str, quiet: bool, label: str):
  """A progress bar over the input's bytes on a terminal (gone when done); none in pipes."""
  from tqdm import tqdm
  return tqdm(total=os.path.getsize(path), unit="B", unit_scale=True, desc=label,
              file=sys.stderr, disable=quiet or not sys.stderr.isatty(), mininterval=0.5,
              leave=False)


def _notes(path: str, scorer: TextScorer, empty: List[int], windowed: List[int]) -> List[str]:
  def which(lines):
    if len(lines) == 1:
      return f"line {lines[0]} has"
    return f"{len(lines)} lines (first: line {lines[0]}) have"
  notes = []
  if empty:
    notes.append(f"warning: {path}: {which(empty)} nothing to score (empty): written with "
                 "null scores")
  if windowed:
    notes.append(f"note: {path}: {which(windowed)} more than {scorer.max_seq_length - 2} "
                 f"WordPieces: scored whole in overlapping windows of {scorer.max_seq_length} "
                 f"(stride {scorer.window_stride}; see \"windows\" in the records)")
  return notes


def _batched(items: Iterator, size: int) -> Iterator[List]:
  batch = []
  for item in items:
    batch.append(item)
    if len(batch) >= size:
      yield batch
      batch = []
  if batch:
    yield batch


def score_file(scorer: TextScorer, input_path: str, output_path: str, jsonl: bool,
               quiet: bool = False) -> Tuple[int, List[str]]:
  """Writes one JSONL record per input line; returns (lines, notes for stderr)."""
  empty, windowed, count = [], [], 0
  with _Output(output_path) as out, _progress(input_path, quiet, "score") as bar:
    for batch in _batched(_texts(input_path, jsonl), 8 * scorer.batch_size):
      results = scorer.score([record["text"] for _, record, _ in batch])
      for (number, record, size), result in zip(batch, results):
        row = {"line": number, **record, **result.to_record()}
        if not result.tokens:
          empty.append(number)
          row["error"] = "nothing to score (empty line)"
        if result.num_windows > 1:
          windowed.append(number)
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
        bar.update(size)
        count += 1
  return count, _notes(input_path, scorer, empty, windowed)


def rerank_file(scorer: TextScorer, input_path: str, output_path: str, by: str,
                quiet: bool = False) -> Tuple[int, List[str]]:
  """Writes each group with its candidates ranked (lowest `by` first); returns (groups, notes)."""
  if by not in SENTENCE_SCORES:
    raise ScoringError(f"unknown --by {by!r}: use one of {', '.join(SENTENCE_SCORES)}")
  windowed, count = [], 0
  with _Output(output_path) as out, _progress(input_path, quiet, "rerank") as bar:
    for batch in _batched(_groups(input_path), scorer.batch_size):
      groups = [(n, g, s) for n, g, s in batch if g is not None]
      results = iter(scorer.score([c for _, g, _ in groups for c in g["candidates"]]))
      for number, group, size in groups:
        scored = [next(results) for _ in group["candidates"]]
        if any(s.num_windows > 1 for s in scored):
          windowed.append(number)
        ranked = []
        for rank, i in enumerate(rank_order([s.scores[by] for s in scored]), 1):
          record = scored[i].to_record()
          ranked.append({"rank": rank, "index": i, "text": record["text"],
                         "scores": record["scores"], "num_tokens": record["num_tokens"],
                         "windows": record["windows"]})
        out.write(json.dumps({"id": group["id"], "by": by, "candidates": ranked},
                             ensure_ascii=False) + "\n")
        count += 1
      bar.update(sum(size for _, _, size in batch))
  return count, _notes(input_path, scorer, [], windowed)


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  commands = parser.add_subparsers(dest="command", required=True)

  def common(sub):
    sub.add_argument("--model-dir", required=True,
                     help="pre-trained model directory, converted official checkpoint, "
                          "Hugging Face discriminator directory, or discriminator SavedModel")
    sub.add_argument("--checkpoint", default=None, help="a ckpt-N prefix (default the latest)")
    sub.add_argument("--batch-size", type=int, default=64, help="texts per discriminator call")
    sub.add_argument("--max-seq-length", type=int, default=None,
                     help="window length in WordPieces (default the model's max_seq_length)")
    sub.add_argument("--window-stride", type=int, default=None,
                     help="tokens between windows of long texts (default half a window)")

  score = commands.add_parser("file", aliases=["score"],
                              help="per-token, per-word and sentence scores as JSONL")
  common(score)
  score.add_argument("--input", required=True, help="text (one sentence a line) or JSONL "
                     '({"text": ..., "id": ...} a line)')
  score.add_argument("--output", required=True, help="JSONL file to write ('-': stdout)")
  score.add_argument("--format", choices=("auto", "text", "jsonl"), default="auto",
                     help="auto: JSONL for a .jsonl/.json input, else text")
  score.add_argument("--quiet", action="store_true", help="no progress bar")
  rerank = commands.add_parser("rerank", help="rank the candidates of each JSONL group")
  common(rerank)
  rerank.add_argument("--input", required=True,
                      help='JSONL, a group a line: {"id": ..., "candidates": [sentence, ...]}')
  rerank.add_argument("--output", required=True, help="JSONL file to write ('-': stdout)")
  rerank.add_argument("--by", choices=SENTENCE_SCORES, default=DEFAULT_RANK_SCORE,
                      help="the sentence score to rank by, lowest first (default %(default)s)")
  rerank.add_argument("--quiet", action="store_true", help="no progress bar")
  show = commands.add_parser("show", help="print sentences with their suspicious words marked")
  common(show)
  show.add_argument("text", nargs="*", help="sentences (default: one a line from stdin)")
  show.add_argument("--threshold", type=float, default=0.5,
                    help="mark words whose replaced probability is at least this")
  show.add_argument("--color", choices=("auto", "always", "never"), default="auto")
  return parser


@command
def main(argv: Optional[Sequence[str]] = None) -> int:
  args = _parser().parse_args(argv)
  if args.command != "show" and not os.path.isfile(args.input):
    raise ScoringError(f"--input {args.input} is not a file")
  if args.command != "show":
    _check_input(args.input)
  scorer = TextScorer.load(args.model_dir, args.checkpoint, args.batch_size,
                           args.max_seq_length, args.window_stride)
  if args.command == "show":
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    texts = args.text or [line.rstrip("\n") for line in sys.stdin]
    width = max(20, os.get_terminal_size().columns - 1) if sys.stdout.isatty() else 100
    for result in scorer.score([t for t in texts if t.strip()]):
      print(render(result, args.threshold, width, color) + "\n")
    return 0
  if args.command in ("file", "score"):
    jsonl = args.format == "jsonl" or (args.format == "auto" and
                                       args.input.endswith((".jsonl", ".json")))
    count, notes = score_file(scorer, args.input, args.output, jsonl, args.quiet)
    what = "lines"
  else:
    count, notes = rerank_file(scorer, args.input, args.output, args.by, args.quiet)
    what = "groups"
  for note in notes:
    print(note, file=sys.stderr)
  if args.output != "-":
    print(f"wrote {count} {what} to {args.output}", file=sys.stderr)
  return 0
