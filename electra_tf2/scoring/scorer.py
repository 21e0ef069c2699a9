"""Replaced-token scores of raw texts, as Python objects: `TextScorer`.

    scorer = TextScorer.load("DATA/models/electra_small")   # or a SavedModel directory
    result = scorer.score(["The chef drank the meal."])[0]
    print(result.words[2].text, result.words[2].probability)

Each `SentenceScore` holds its WordPieces with their replaced probabilities and
log-odds, its words (spans in the original text) and the sentence scores of
`graph.SENTENCE_SCORES`; definitions and the windows of long texts: docs/scoring.md.
With a SentencePiece model a word is a piece led by U+2581 and the pieces after it,
its span the pieces' character offsets (`SentencePieceTokenizer.char_spans`).
"""

from __future__ import annotations

import dataclasses
import math
import os
import unicodedata
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf

from electra_tf2.utils import batching
from electra_tf2.models import model_directory
from electra_tf2.text import vocab as vocab_lib
from electra_tf2.checkpoints import describe as describe_lib
from electra_tf2.scoring import graph
from electra_tf2.scoring.graph import SENTENCE_SCORES, ScoringError
from electra_tf2.text.py_tokenizer import resolve_strip_accents
from electra_tf2.text.sentencepiece import SentencePieceTokenizer

DEFAULT_RANK_SCORE = "mean_log_odds"


def _is_punctuation(char: str) -> bool:
  """BERT's _is_punctuation: ASCII non-alphanumerics and Unicode category P."""
  code = ord(char)
  if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
    return True
  return unicodedata.category(char).startswith("P")


def _normalized_chars(text: str, do_lower_case: bool, strip_accents: Optional[bool] = None
                      ) -> Tuple[str, List[int]]:
  """BERT's normalisation character by character, and the source index of each output char
  (strip_accents: None is the official rule, stripped when lowercasing)."""
  strip = resolve_strip_accents(do_lower_case, strip_accents)
  out, owner = [], []
  for index, char in enumerate(text):
    category = unicodedata.category(char)
    if (category == "Cc" and char not in "\t\n\r") or category == "Cf" or char == "\ufffd":
      continue
    if do_lower_case:
      char = char.lower()
    if strip:
      char = "".join(c for c in unicodedata.normalize("NFD", char)
                     if unicodedata.category(c) != "Mn")
    out.append(char)
    owner.extend([index] * len(char))
  return "".join(out), owner


def word_spans(text: str, words: Sequence[Optional[str]], do_lower_case: bool,
               strip_accents: Optional[bool] = None) -> List[Optional[Tuple[int, int]]]:
  """Character spans `(start, end)` of the tokenizer's words in the original `text`.

  `words` are the normalised words in order (their WordPieces joined), None for a
  word that became [UNK]. A word that cannot be found (a character whose Unicode
  properties differ between Python and TensorFlow) leaves it and the rest None.
  """
  normal, owner = _normalized_chars(text, do_lower_case, strip_accents)
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


class TextScorer:
  """Scores raw texts with a discriminator, in batches, through a `score` graph function.

  Build it with `TextScorer.load(path)` (a model directory or a SavedModel) or
  `TextScorer.from_pretrainer`. `score_fn` maps a string tensor `[batch]` to the
  outputs of `graph.score_text_graph`.

  >>> import os, tempfile
  >>> from electra_tf2 import ElectraPretrainer, PretrainingConfig
  >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "chef", "ate", "meal", "."]
  >>> vocab_file = os.path.join(tempfile.mkdtemp(), "vocab.txt")
  >>> _ = open(vocab_file, "w").write("\\n".join(vocab))
  >>> model = ElectraPretrainer.from_pretraining_config(PretrainingConfig.from_preset(
  ...     "electra_small", debug=True, vocab_size=len(vocab), max_seq_length=16))
  >>> scorer = TextScorer.from_pretrainer(model, vocab_file, do_lower_case=True,
  ...                                     max_seq_length=16)
  >>> result = scorer.score(["The chef ate the meal."])[0]
  >>> [word.text for word in result.words], sorted(result.scores)
  (['The', 'chef', 'ate', 'the', 'meal', '.'], ['max_probability', 'mean_log_odds', 'mean_probability', 'sum_log_odds'])
  """

  def __init__(self, score_fn: Callable[[tf.Tensor], Dict[str, tf.Tensor]],
               vocab_tokens: Sequence[str], do_lower_case: bool, max_seq_length: int,
               window_stride: int, batch_size: int = 64,
               sentencepiece_file: Optional[str] = None, strip_accents: Optional[bool] = None):
    if batch_size < 1:
      raise ScoringError(f"batch_size must be >= 1, got {batch_size}")
    self._score_fn = score_fn
    self.vocab_tokens = list(vocab_tokens)
    self.unk_id = vocab_lib.special_token_ids(
        {t: i for i, t in enumerate(self.vocab_tokens)}).unk
    # The SentencePiece model the ids come from (its pieces' offsets give the words).
    self._sentencepiece = (None if sentencepiece_file is None
                           else SentencePieceTokenizer(sentencepiece_file))
    self.do_lower_case = bool(do_lower_case)
    self.strip_accents = resolve_strip_accents(do_lower_case, strip_accents)
    self.max_seq_length = int(max_seq_length)
    self.window_stride = int(window_stride)
    self.batch_size = int(batch_size)

  @classmethod
  def load(cls, path: str, checkpoint: Optional[str] = None, batch_size: int = 64,
           max_seq_length: Optional[int] = None, window_stride: Optional[int] = None
           ) -> "TextScorer":
    """A model directory (latest or `checkpoint`), a Hugging Face ELECTRA discriminator
    directory (`ElectraForPreTraining`), or a SavedModel with a `score` signature.

    `max_seq_length` (default the config's) and `window_stride` (default half a
    window) apply to model and Hugging Face directories; a SavedModel keeps those it was
    exported with.
    """
    kind = describe_lib.kind_of(path)
    if kind == "savedmodel":
      if checkpoint or max_seq_length or window_stride:
        raise ScoringError(f"{path} is a SavedModel: its checkpoint, max_seq_length and "
                           "window stride were fixed at export (score a model directory to "
                           "choose them)")
      return cls._from_saved_model(path, batch_size)
    if kind == "huggingface":
      if checkpoint:
        raise ScoringError(f"{path} is a Hugging Face directory: it holds one set of "
                           "weights, drop --checkpoint")
      return cls._from_huggingface(path, batch_size, max_seq_length, window_stride)
    return cls._from_model_dir(path, checkpoint, batch_size, max_seq_length, window_stride)

  @classmethod
  def _from_huggingface(cls, path, batch_size, max_seq_length, window_stride):
    """The discriminator of a Hugging Face directory, read as `electra convert from-hf`
    reads it (nothing written): its vocab.txt or tokenizer.json, its tokenizer_config.json's
    casing and accents."""
    from electra_tf2.conversion import hf_import  # pylint: disable=g-import-not-at-top
    directory = hf_import.read_directory(path)
    if directory.architecture != "ElectraForPreTraining":
      raise ScoringError(f"{path} holds {directory.architecture}, not an ELECTRA "
                         "discriminator (ElectraForPreTraining): score a discriminator "
                         "checkpoint")
    tokens = hf_import.wordpiece_vocab(path, directory.bert_config.vocab_size,
                                       "scoring reads checkpoints tokenized with BERT's "
                                       "WordPiece only")
    vocab = directory.vocab_file or tokens
    if vocab is None:
      raise ScoringError(f"{path} has neither vocab.txt nor tokenizer.json: copy the "
                         f"model's vocab.txt to {os.path.join(path, 'vocab.txt')}")
    model, config, _ = hf_import.pretrainer_from_directory(directory)
    return cls.from_pretrainer(model, vocab, directory.do_lower_case,
                               max_seq_length or config.max_seq_length, batch_size,
                               window_stride, path,
                               strip_accents=hf_import.read_strip_accents(path))

  @classmethod
  def _from_model_dir(cls, model_dir, checkpoint, batch_size, max_seq_length, window_stride):
    found = describe_lib.describe(model_dir)
    if found.kind != "pretrained":
      raise ScoringError(f"--model-dir {model_dir} is {describe_lib.KIND_NAMES[found.kind]}: "
                         "give a pre-trained model directory (electra convert to-tf2 writes "
                         "one), a Hugging Face discriminator directory or a SavedModel of the "
                         "discriminator")
    config = found.pretraining_config
    model = model_directory.restore_pretrainer(found.model_dir, checkpoint or found.checkpoint,
                                               config)
    if found.vocab_file is None:
      raise ScoringError(f"{model_dir} has no vocab.txt and its config's vocab_file "
                         f"{config.vocab_file} is missing: copy the vocabulary to "
                         f"{os.path.join(model_dir, 'vocab.txt')}")
    tokenizer = found.tokenizer  # the casing the model was pre-trained with
    return cls.from_pretrainer(model, found.vocab_file,
                               tokenizer.do_lower_case if tokenizer else config.do_lower_case,
                               max_seq_length or config.max_seq_length, batch_size,
                               window_stride, model_dir,
                               strip_accents=tokenizer.strip_accents if tokenizer else None)

  @classmethod
  def from_pretrainer(cls, model, vocab_file: Union[str, Sequence[str]], do_lower_case: bool,
                      max_seq_length: int, batch_size: int = 64,
                      window_stride: Optional[int] = None,
                      name: str = "the model", *, strip_accents: Optional[bool] = None
                      ) -> "TextScorer":
    """A TextScorer on an `ElectraPretrainer` already in memory; `vocab_file` a vocab.txt,
    a SentencePiece .model or WordPiece tokens in id order (strip_accents: None is the
    official rule, stripped when lowercasing)."""
    model.check_electra_discriminator(f"scoring {name}", "scoring needs an ELECTRA model")
    limit = model.discriminator.bert_config.max_position_embeddings
    if max_seq_length > limit:
      raise ScoringError(f"max_seq_length {max_seq_length} exceeds max_position_embeddings "
                         f"{limit} of {name}: pass --max-seq-length {limit} or less")
    function, tokens, stride = graph.score_function(model, vocab_file, do_lower_case,
                                                    max_seq_length, window_stride, strip_accents)
    sentencepiece = (isinstance(vocab_file, str)
                     and vocab_lib.vocab_kind(vocab_file) == "sentencepiece")
    return cls(function, tokens, do_lower_case, max_seq_length, stride, batch_size,
               vocab_file if sentencepiece else None, strip_accents)

  @classmethod
  def _from_saved_model(cls, path, batch_size):
    import tensorflow_text  # noqa: F401  registers the tokenizer ops
    loaded = tf.saved_model.load(path)
    if "score" not in loaded.signatures:
      raise ScoringError(f"{path} has no score signature: export the discriminator again with "
                         "electra export --kind discriminator")
    settings = {k: v.numpy() for k, v in loaded.score_settings().items()}
    vocab_file = loaded.vocab_file.asset_path.numpy().decode()
    vocab = vocab_lib.load_vocab(vocab_file)
    score = loaded.signatures["score"]
    sentencepiece = vocab_lib.vocab_kind(vocab_file) == "sentencepiece"
    return cls(lambda text: score(text=text), sorted(vocab, key=vocab.get),
               bool(settings["do_lower_case"]), int(settings["max_seq_length"]),
               int(settings["window_stride"]), batch_size,
               vocab_file if sentencepiece else None,
               bool(settings["strip_accents"]) if "strip_accents" in settings else None)

  # -- scoring ---------------------------------------------------------------

  def raw_scores(self, texts: Sequence[str]) -> Dict[str, np.ndarray]:
    """The graph's outputs for one batch of texts, as numpy arrays."""
    outputs = self._score_fn(tf.constant([t.encode("utf-8", "replace") for t in texts],
                                         tf.string))
    return {name: value.numpy() for name, value in outputs.items()}

  def score(self, texts: Sequence[str]) -> List[SentenceScore]:
    """Every text's tokens, words and sentence scores, in input order; `batch_size`
    texts of similar length per call (electra_tf2/utils/batching.py)."""
    results: List[Optional[SentenceScore]] = [None] * len(texts)
    _, batches = batching.length_batches(batching.text_lengths([texts]), self.batch_size)
    for batch in batches:
      chunk = [texts[i] for i in batch]
      for i, result in zip(batch, self._sentences(chunk, self.raw_scores(chunk))):
        results[i] = result
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
      if self._sentencepiece is not None:
        spans = self._sentencepiece_spans(text, ids, starts)
      else:
        spans = word_spans(text, [w.text for w in words], self.do_lower_case,
                           self.strip_accents)
      for word, span in zip(words, spans):
        if span is not None:
          word.start, word.end = span
          word.text = text[span[0]:span[1]]
        elif word.text is None:
          word.text = self.vocab_tokens[self.unk_id]
      yield SentenceScore(text, tokens, probabilities.tolist(), log_odds.tolist(), words,
                          {name: float(raw[name][i]) for name in SENTENCE_SCORES},
                          int(raw["num_windows"][i]))

  def _sentencepiece_spans(self, text: str, ids: np.ndarray, starts: Sequence[int]
                           ) -> List[Optional[Tuple[int, int]]]:
    """The character span of each word (its pieces `ids[starts[k]:starts[k + 1]]`) from
    the pieces' offsets; None for a word of no characters (or every word, should the
    library's pieces differ from the graph's)."""
    pieces = self._sentencepiece.char_spans(text)
    if len(pieces) != len(ids):
      return [None] * (len(starts) - 1)
    spans: List[Optional[Tuple[int, int]]] = []
    for a, b in zip(starts[:-1], starts[1:]):
      inside = [span for span in pieces[a:b] if span[0] < span[1]]
      spans.append((inside[0][0], inside[-1][1]) if inside else None)
    return spans

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
