r"""Replaced-token scores of an ELECTRA discriminator: per WordPiece, per word, per sentence.

  python -m electra_tf2.scoring score  --model-dir DIR --input FILE --output FILE.jsonl
  python -m electra_tf2.scoring rerank --model-dir DIR --input GROUPS.jsonl --output FILE.jsonl
  python -m electra_tf2.scoring show   --model-dir DIR "The chef drank the meal."

  scorer = Scorer.load("DATA/models/electra_small")      # or a SavedModel directory
  result = scorer.score(["The chef drank the meal."])[0]

DIR is a pre-trained model directory (ours or a converted official checkpoint) or
a discriminator SavedModel. Definitions (token, word, sentence scores) and the
windows of long texts: docs/scoring.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import unicodedata
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

if __name__ == "__main__":  # the command's quiet default; importing sets nothing
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from electra_tf2.errors import ElectraError, run_command  # noqa: E402

SENTENCE_SCORES = ("mean_probability", "max_probability", "sum_log_odds", "mean_log_odds")
DEFAULT_RANK_SCORE = "mean_log_odds"
# Tokens per discriminator pass when a batch's windows are many (bounded memory).
TOKENS_PER_PASS = 8192
# The score signature's outputs that are per text ([batch]); the others are [batch, tokens].
PER_TEXT_OUTPUTS = SENTENCE_SCORES + ("num_tokens", "num_windows")


class ScoringError(ElectraError, ValueError):
  """A model or input that cannot be scored; the message names the file and the fix."""


# ---------------------------------------------------------------------------
# The graph: windows, token logits, sentence scores
# ---------------------------------------------------------------------------


def default_stride(max_seq_length: int) -> int:
  """Half a window of max_seq_length - 2 tokens (at least 1)."""
  return max(1, (max_seq_length - 2) // 2)


def window_layout(lengths: tf.Tensor, width: int, stride: int) -> Dict[str, tf.Tensor]:
  """Where the windows of each text lie and which tokens each one scores.

  Args:
    lengths: int64 `[batch]`, tokens per text.
    width: tokens per window (max_seq_length - 2).
    stride: tokens between window starts, 1 <= stride <= width.

  Returns int64 tensors: `num_windows` `[batch]` (1 for a text that fits, also an
  empty one) and, per window `[num_windows_total]` in text order, `row`, `start`,
  `length` (its tokens are `start .. start + length` of the text) and `own_start`,
  `own_end` (the text positions it scores: those nearer its centre than any other's).
  """
  extra = tf.maximum(lengths - width, 0)
  num_windows = 1 + (extra + stride - 1) // stride
  row = tf.repeat(tf.range(tf.size(lengths, out_type=tf.int64)), num_windows)
  index = tf.ragged.range(num_windows).flat_values
  start = tf.minimum(index * stride, tf.gather(extra, row))
  length = tf.minimum(tf.gather(lengths, row) - start, width)
  twice_centre = 2 * start + length - 1
  is_first = tf.equal(index, 0)
  is_last = tf.equal(index, tf.gather(num_windows, row) - 1)
  # Position p leaves window j-1 for window j once 4p > 2c(j-1) + 2c(j).
  previous = tf.concat([[0], twice_centre[:-1]], 0)
  own_start = tf.where(is_first, tf.zeros_like(start), (previous + twice_centre) // 4 + 1)
  following = tf.concat([own_start[1:], [0]], 0)
  own_end = tf.where(is_last, tf.gather(lengths, row), following)
  return {"num_windows": num_windows, "row": row, "start": start, "length": length,
          "own_start": own_start, "own_end": own_end}


def _logits_in_passes(logits_fn: Callable, input_ids: tf.Tensor, input_mask: tf.Tensor,
                      rows_per_pass: int) -> tf.Tensor:
  """`logits_fn` over `[rows, seq_len]` inputs, at most about `rows_per_pass` rows at a time."""
  rows = tf.shape(input_ids)[0]
  passes = tf.maximum(1, (rows + rows_per_pass - 1) // rows_per_pass)
  per_pass = tf.maximum(1, (rows + passes - 1) // passes)
  pad = passes * per_pass - rows
  shape = [passes, per_pass, tf.shape(input_ids)[1]]
  ids = tf.reshape(tf.pad(input_ids, [[0, pad], [0, 0]]), shape)
  mask = tf.reshape(tf.pad(input_mask, [[0, pad], [0, 0]]), shape)
  logits = tf.map_fn(lambda x: logits_fn(x[0], x[1], tf.zeros_like(x[0])), (ids, mask),
                     fn_output_signature=tf.float32, parallel_iterations=1)
  return tf.reshape(logits, [-1, shape[2]])[:rows]


def windowed_token_logits(ids: tf.RaggedTensor, logits_fn: Callable, max_seq_length: int,
                          stride: int, cls_id: int, sep_id: int
                          ) -> Tuple[tf.RaggedTensor, tf.Tensor]:
  """The discriminator logit of every WordPiece, however long the text.

  Args:
    ids: int64 RaggedTensor `[batch, (tokens)]`, WordPiece ids without [CLS]/[SEP].
    logits_fn: `(input_ids, input_mask, segment_ids)` int32 `[rows, seq_len]` ->
      float32 logits `[rows, seq_len]`.
    max_seq_length: the model's input length ([CLS] and [SEP] included).
    stride, cls_id, sep_id: see `window_layout` and the vocabulary.

  Returns:
    float32 RaggedTensor `[batch, (tokens)]` shaped as `ids`, and int64 `num_windows` `[batch]`.
  """
  width = max_seq_length - 2
  layout = window_layout(ids.row_lengths(), width, stride)
  offsets = tf.gather(ids.row_splits, layout["row"])
  positions = tf.ragged.range(offsets + layout["start"],
                              offsets + layout["start"] + layout["length"])
  window_ids = tf.gather(ids.flat_values, positions)
  windows = tf.size(layout["row"])
  full = tf.concat([tf.fill([windows, 1], tf.constant(cls_id, tf.int64)), window_ids,
                    tf.fill([windows, 1], tf.constant(sep_id, tf.int64))], axis=1)
  input_ids = tf.cast(full.to_tensor(), tf.int32)
  input_mask = tf.cast(tf.ones_like(full).to_tensor(), tf.int32)
  logits = _logits_in_passes(logits_fn, input_ids, input_mask,
                             max(1, TOKENS_PER_PASS // max_seq_length))
  # Window w scores text positions own_start..own_end, at 1 + position - start in its row.
  local = tf.ragged.range(layout["own_start"] - layout["start"] + 1,
                          layout["own_end"] - layout["start"] + 1)
  window_of = tf.cast(local.value_rowids(), tf.int32)
  token_logits = tf.gather_nd(logits, tf.stack([window_of, tf.cast(local.flat_values,
                                                                    tf.int32)], 1))
  return tf.RaggedTensor.from_row_splits(token_logits, ids.row_splits), layout["num_windows"]


def sentence_scores(token_logits: tf.RaggedTensor) -> Dict[str, tf.Tensor]:
  """`[batch, (tokens)]` logits -> float32 `[batch]` scores (NaN for a text without tokens)."""
  count = tf.cast(token_logits.row_lengths(), tf.float32)
  probabilities = tf.sigmoid(token_logits)
  nan = tf.fill(tf.shape(count), float("nan"))
  some = count > 0
  total = tf.reduce_sum(token_logits, axis=1)
  return {
      "mean_probability": tf.where(some, tf.reduce_sum(probabilities, axis=1) / count, nan),
      "max_probability": tf.where(some, tf.reduce_max(probabilities, axis=1), nan),
      "sum_log_odds": total,
      "mean_log_odds": tf.where(some, total / tf.maximum(count, 1.0), nan),
  }


def score_text_graph(tokenizer, logits_fn: Callable, text: tf.Tensor, max_seq_length: int,
                     stride: int, cls_id: int, sep_id: int) -> Dict[str, tf.Tensor]:
  """Strings `[batch]` -> the `score` signature's outputs (dense; see docs/scoring.md).

  `[batch, tokens]` (the text's WordPieces, no [CLS]/[SEP], padded with 0):
  `token_ids` (int32), `token_mask` (int32), `is_word_start` (int32),
  `logits`, `replaced_probability`; `[batch]`: the four sentence scores,
  `num_tokens` and `num_windows` (int32).
  """
  ids = tokenizer.tokenize_to_ids(text)
  logits, num_windows = windowed_token_logits(ids, logits_fn, max_seq_length, stride,
                                              cls_id, sep_id)
  outputs = {name: value for name, value in sentence_scores(logits).items()}
  outputs.update(
      token_ids=tf.cast(ids.to_tensor(), tf.int32),
      token_mask=tf.cast(tf.ones_like(ids).to_tensor(), tf.int32),
      is_word_start=tf.cast(tokenizer.is_word_start(ids).to_tensor(), tf.int32),
      logits=logits.to_tensor(), replaced_probability=tf.sigmoid(logits).to_tensor(),
      num_tokens=tf.cast(ids.row_lengths(), tf.int32),
      num_windows=tf.cast(num_windows, tf.int32))
  return outputs


# ---------------------------------------------------------------------------
# Words in the original text
# ---------------------------------------------------------------------------


def _is_punctuation(char: str) -> bool:
  """BERT's _is_punctuation: ASCII non-alphanumerics and Unicode category P."""
  code = ord(char)
  if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
    return True
  return unicodedata.category(char).startswith("P")


def _normalized_chars(text: str, do_lower_case: bool) -> Tuple[str, List[int]]:
  """BERT's normalisation character by character, and the source index of each output char."""
  out, owner = [], []
  for index, char in enumerate(text):
    category = unicodedata.category(char)
    if (category == "Cc" and char not in "\t\n\r") or category == "Cf" or char == "\ufffd":
      continue
    if do_lower_case:
      char = "".join(c for c in unicodedata.normalize("NFD", char.lower())
                     if unicodedata.category(c) != "Mn")
    out.append(char)
    owner.extend([index] * len(char))
  return "".join(out), owner


def word_spans(text: str, words: Sequence[Optional[str]], do_lower_case: bool
               ) -> List[Optional[Tuple[int, int]]]:
  """Character spans `(start, end)` of the tokenizer's words in the original `text`.

  `words` are the normalised words in order (their WordPieces joined), None for a
  word that became [UNK]. A word that cannot be found (a character whose Unicode
  properties differ between Python and TensorFlow) leaves it and the rest None.
  """
  normal, owner = _normalized_chars(text, do_lower_case)
  normal = normal.replace("\u03c2", "\u03c3")  # final sigma: str.lower of a lone char
  spans: List[Optional[Tuple[int, int]]] = []
  cursor = 0
  for word in words:
    while cursor < len(normal) and normal[cursor].isspace():
      cursor += 1
    if word is None:  # [UNK]: the run of characters up to a space or punctuation
      end = cursor
      while end < len(normal) and not normal[end].isspace() and not _is_punctuation(normal[end]):
        end += 1
      end = max(end, min(cursor + 1, len(normal)))
    else:
      word = word.replace("\u03c2", "\u03c3")
      end = cursor + len(word) if normal.startswith(word, cursor) else cursor
    if end == cursor:
      return spans + [None] * (len(words) - len(spans))
    spans.append((owner[cursor], owner[end - 1] + 1))
    cursor = end
  return spans


# ---------------------------------------------------------------------------
# Python API
# ---------------------------------------------------------------------------


@dataclasses.dataclass
class WordScore:
  """One word: its text in the input (or, without a span, as the tokenizer saw it)."""
  text: str
  probability: float  # max over its WordPieces
  log_odds: float     # max over its WordPieces
  first_token: int    # index of its first WordPiece in `SentenceScore.tokens`
  num_tokens: int
  start: Optional[int] = None  # character span in the input text
  end: Optional[int] = None


@dataclasses.dataclass
class SentenceScore:
  """The discriminator's view of one text."""
  text: str
  tokens: List[str]
  token_probabilities: List[float]
  token_log_odds: List[float]
  words: List[WordScore]
  scores: Dict[str, float]
  num_windows: int

  def to_record(self, digits: int = 5) -> Dict[str, Any]:
    """A JSON-ready dict (NaN scores become null)."""
    def r(x):
      return None if math.isnan(x) else round(float(x), digits)
    return {
        "text": self.text,
        "scores": {k: r(v) for k, v in self.scores.items()},
        "num_tokens": len(self.tokens),
        "windows": self.num_windows,
        "tokens": self.tokens,
        "token_probabilities": [r(p) for p in self.token_probabilities],
        "words": [{"word": w.text, "probability": r(w.probability), "start": w.start,
                   "end": w.end} for w in self.words],
    }


class Scorer:
  """Scores raw texts with a discriminator, in batches, through a `score` graph function.

  Build it with `Scorer.load(path)`. `score_fn` maps a string tensor `[batch]` to
  the outputs of `score_text_graph`.
  """

  def __init__(self, score_fn: Callable[[tf.Tensor], Dict[str, tf.Tensor]],
               vocab_tokens: Sequence[str], do_lower_case: bool, max_seq_length: int,
               window_stride: int, batch_size: int = 64):
    if batch_size < 1:
      raise ScoringError(f"batch_size must be >= 1, got {batch_size}")
    self._score_fn = score_fn
    self.vocab_tokens = list(vocab_tokens)
    self.unk_id = self.vocab_tokens.index("[UNK]")
    self.do_lower_case = bool(do_lower_case)
    self.max_seq_length = int(max_seq_length)
    self.window_stride = int(window_stride)
    self.batch_size = int(batch_size)

  @classmethod
  def load(cls, path: str, checkpoint: Optional[str] = None, batch_size: int = 64,
           max_seq_length: Optional[int] = None, window_stride: Optional[int] = None
           ) -> "Scorer":
    """A model directory (latest or `checkpoint`), or a SavedModel with a `score` signature.

    `max_seq_length` (default the config's) and `window_stride` (default half a
    window) apply to model directories; a SavedModel keeps those it was exported with.
    """
    if tf.io.gfile.exists(os.path.join(path, "saved_model.pb")):
      if checkpoint or max_seq_length or window_stride:
        raise ScoringError(f"{path} is a SavedModel: its checkpoint, max_seq_length and "
                           "window stride were fixed at export (score a model directory to "
                           "choose them)")
      return cls._from_saved_model(path, batch_size)
    return cls._from_model_dir(path, checkpoint, batch_size, max_seq_length, window_stride)

  @classmethod
  def _from_model_dir(cls, model_dir, checkpoint, batch_size, max_seq_length, window_stride):
    from electra_tf2 import export, model_directory  # export imports this module
    if not tf.io.gfile.isdir(model_dir):
      raise ScoringError(f"--model-dir {model_dir} does not exist: give a pre-trained model "
                         "directory, a converted official checkpoint or a SavedModel")
    config = model_directory.load_pretraining_config(model_dir)
    model = model_directory.restore_pretrainer(model_dir, checkpoint, config)
    vocab_file = export.find_vocab(model_dir, config)
    if vocab_file is None:
      raise ScoringError(f"{model_dir} has no vocab.txt and its config's vocab_file "
                         f"{config.vocab_file} is missing: copy the vocabulary to "
                         f"{os.path.join(model_dir, 'vocab.txt')}")
    return cls.from_pretrainer(model, vocab_file, config.do_lower_case,
                               max_seq_length or config.max_seq_length, batch_size,
                               window_stride, model_dir)

  @classmethod
  def from_pretrainer(cls, model, vocab_file: str, do_lower_case: bool, max_seq_length: int,
                      batch_size: int = 64, window_stride: Optional[int] = None,
                      name: str = "the model") -> "Scorer":
    """A Scorer on an `ElectraPretrainer` already in memory."""
    from electra_tf2 import export, vocab as vocab_lib
    electric = model.objective.electric_objective
    if model.discriminator_head is None or electric:
      raise ScoringError(f"{name} has no ELECTRA discriminator (it was pre-trained as "
                         f"{'ELECTRIC' if electric else 'MLM only'}): "
                         "scoring needs an ELECTRA model")
    module = export.serving_module(model, "discriminator", vocab_file, do_lower_case,
                                   max_seq_length, window_stride)
    vocab = vocab_lib.load_vocab(vocab_file)
    return cls(module.score, sorted(vocab, key=vocab.get), do_lower_case,
               max_seq_length, module.window_stride, batch_size)

  @classmethod
  def _from_saved_model(cls, path, batch_size):
    import tensorflow_text  # noqa: F401  registers the tokenizer ops
    loaded = tf.saved_model.load(path)
    if "score" not in loaded.signatures:
      raise ScoringError(f"{path} has no score signature: export the discriminator again with "
                         "python -m electra_tf2.export --kind discriminator")
    settings = {k: v.numpy() for k, v in loaded.score_settings().items()}
    with tf.io.gfile.GFile(loaded.vocab_file.asset_path.numpy().decode(), "r") as f:
      tokens = f.read().split("\n")
    score = loaded.signatures["score"]
    return cls(lambda text: score(text=text), tokens[:-1] if tokens[-1] == "" else tokens,
               bool(settings["do_lower_case"]), int(settings["max_seq_length"]),
               int(settings["window_stride"]), batch_size)

  # -- scoring ---------------------------------------------------------------

  def raw_scores(self, texts: Sequence[str]) -> Dict[str, np.ndarray]:
    """The graph's outputs for one batch of texts, as numpy arrays."""
    outputs = self._score_fn(tf.constant([t.encode("utf-8", "replace") for t in texts],
                                         tf.string))
    return {name: value.numpy() for name, value in outputs.items()}

  def score(self, texts: Sequence[str]) -> List[SentenceScore]:
    """Every text's tokens, words and sentence scores, `batch_size` texts per call."""
    results: List[SentenceScore] = []
    for begin in range(0, len(texts), self.batch_size):
      batch = texts[begin:begin + self.batch_size]
      results.extend(self._sentences(batch, self.raw_scores(batch)))
    return results

  def _sentences(self, texts, raw) -> Iterator[SentenceScore]:
    for i, text in enumerate(texts):
      n = int(raw["num_tokens"][i])
      ids = raw["token_ids"][i, :n]
      probabilities = raw["replaced_probability"][i, :n].astype(float)
      log_odds = raw["logits"][i, :n].astype(float)
      starts = list(np.flatnonzero(raw["is_word_start"][i, :n])) + [n]
      tokens = [self.vocab_tokens[t] for t in ids]
      words = []
      for a, b in zip(starts[:-1], starts[1:]):
        joined = "".join(t[2:] if k > a else t for k, t in enumerate(tokens[a:b], a))
        words.append(WordScore(None if ids[a] == self.unk_id else joined,
                               float(probabilities[a:b].max()), float(log_odds[a:b].max()),
                               int(a), int(b - a)))
      for word, span in zip(words, word_spans(text, [w.text for w in words],
                                              self.do_lower_case)):
        if span is not None:
          word.start, word.end = span
          word.text = text[span[0]:span[1]]
        elif word.text is None:
          word.text = self.vocab_tokens[self.unk_id]
      yield SentenceScore(text, tokens, probabilities.tolist(), log_odds.tolist(), words,
                          {name: float(raw[name][i]) for name in SENTENCE_SCORES},
                          int(raw["num_windows"][i]))

  def rank(self, candidates: Sequence[str], by: str = DEFAULT_RANK_SCORE
           ) -> List[Tuple[int, SentenceScore]]:
    """`(index, score)` of the candidates, best (lowest `by`) first; ties keep input order."""
    if by not in SENTENCE_SCORES:
      raise ScoringError(f"unknown sentence score {by!r}: use one of {', '.join(SENTENCE_SCORES)}")
    scored = self.score(candidates)
    order = rank_order([s.scores[by] for s in scored])
    return [(i, scored[i]) for i in order]


def rank_order(values: Sequence[float]) -> List[int]:
  """Indices by ascending value, ties in input order, NaN last."""
  return sorted(range(len(values)),
                key=lambda i: (math.isnan(values[i]), 0.0 if math.isnan(values[i]) else values[i]))


# ---------------------------------------------------------------------------
# Showing a sentence in the terminal
# ---------------------------------------------------------------------------

_RED, _RESET = "\x1b[1;31m", "\x1b[0m"


def _char_width(char: str) -> int:
  if unicodedata.combining(char):
    return 0
  return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def render(result: SentenceScore, threshold: float = 0.5, width: int = 100,
           color: bool = False) -> str:
  """The text with its words of probability >= threshold underlined by `^` (and red)."""
  words = result.words
  if all(w.start is not None for w in words):
    display = "".join(" " if c.isspace() else c for c in result.text)
    spans = [(w.start, w.end) for w in words]
  else:  # words the tokenizer saw, when they cannot all be found in the input
    display, spans = "", []
    for w in words:
      display += " " if display else ""
      spans.append((len(display), len(display) + len(w.text)))
      display += w.text
  marked = np.zeros(len(display) + 1, bool)
  flagged = [w for w in words if w.probability >= threshold]
  for w, (a, b) in zip(words, spans):
    if w.probability >= threshold:
      marked[a:b] = True
  lines = []
  begin = 0
  while begin < len(display) or not lines:
    end, used = begin, 0
    while end < len(display) and used + _char_width(display[end]) <= max(width, 1):
      used += _char_width(display[end])
      end += 1
    if end < len(display) and " " in display[begin + 1:end]:
      end = display.rindex(" ", begin + 1, end) + 1
    end = max(end, begin + 1) if display else end
    text, carets = "", ""
    for i in range(begin, min(end, len(display))):
      char = display[i]
      on = marked[i] and not char.isspace()
      text += (_RED + char + _RESET) if on and color else char
      carets += ("^" if on else " ") * _char_width(char)
    lines.append(text.rstrip())
    if carets.strip():
      lines.append(carets.rstrip())
    begin = end
    if not display:
      break
  scores = result.scores
  if flagged:
    lines.append(f"  p >= {threshold:g}: " + ", ".join(f"{w.text} {w.probability:.2f}"
                                                       for w in flagged))
  else:
    lines.append(f"  no word has p >= {threshold:g}")
  windows = f", {result.num_windows} windows" if result.num_windows > 1 else ""
  lines.append(f"  sentence: mean p {scores['mean_probability']:.3f}, max p "
               f"{scores['max_probability']:.3f}, mean log-odds {scores['mean_log_odds']:.2f}, "
               f"sum log-odds {scores['sum_log_odds']:.2f} ({len(result.tokens)} WordPieces"
               f"{windows})")
  return "\n".join(lines)


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def _lines(path: str) -> Iterator[Tuple[int, str, int]]:
  """`(line number, text, bytes read)` of a UTF-8 text file; invalid UTF-8 is an error."""
  try:
    handle = open(path, "rb")
  except OSError as e:
    raise ScoringError(f"--input {path}: {e.strerror}") from None
  with handle:
    for number, raw in enumerate(handle, 1):
      line = raw.rstrip(b"\n").rstrip(b"\r")
      try:
        text = line.decode("utf-8")
      except UnicodeDecodeError as e:
        raise ScoringError(f"{path}:{number}: not valid UTF-8 (byte 0x{line[e.start]:02x} at "
                           f"byte {e.start + 1} of the line): convert the file to UTF-8, e.g. "
                           "iconv -f latin1 -t utf-8") from None
      yield number, text, len(raw)


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
    from electra_tf2.atomic_io import atomic_path
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


def _notes(path: str, scorer: Scorer, empty: List[int], windowed: List[int]) -> List[str]:
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


def score_file(scorer: Scorer, input_path: str, output_path: str, jsonl: bool,
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


def rerank_file(scorer: Scorer, input_path: str, output_path: str, by: str,
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
  parser = argparse.ArgumentParser(prog="python -m electra_tf2.scoring", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  commands = parser.add_subparsers(dest="command", required=True)

  def common(sub):
    sub.add_argument("--model-dir", required=True,
                     help="pre-trained model directory, converted official checkpoint, or "
                          "discriminator SavedModel")
    sub.add_argument("--checkpoint", default=None, help="a ckpt-N prefix (default the latest)")
    sub.add_argument("--batch-size", type=int, default=64, help="texts per discriminator call")
    sub.add_argument("--max-seq-length", type=int, default=None,
                     help="window length in WordPieces (default the model's max_seq_length)")
    sub.add_argument("--window-stride", type=int, default=None,
                     help="tokens between windows of long texts (default half a window)")

  score = commands.add_parser("score", help="per-token, per-word and sentence scores as JSONL")
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


def _main(argv: Optional[Sequence[str]] = None) -> int:
  args = _parser().parse_args(argv)
  if args.command != "show" and not os.path.isfile(args.input):
    raise ScoringError(f"--input {args.input} is not a file")
  scorer = Scorer.load(args.model_dir, args.checkpoint, args.batch_size, args.max_seq_length,
                       args.window_stride)
  if args.command == "show":
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    texts = args.text or [line.rstrip("\n") for line in sys.stdin]
    width = max(20, os.get_terminal_size().columns - 1) if sys.stdout.isatty() else 100
    for result in scorer.score([t for t in texts if t.strip()]):
      print(render(result, args.threshold, width, color) + "\n")
    return 0
  if args.command == "score":
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


def main(argv: Optional[Sequence[str]] = None) -> int:
  """The command; errors as one line (electra_tf2/errors.py)."""
  return run_command(_main, argv)


if __name__ == "__main__":
  sys.exit(main())
