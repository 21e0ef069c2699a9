"""Replaced-token scores in the graph: windows over long texts, token logits, sentence scores.

`score_text_graph` is what the discriminator SavedModel's `score` signature and
`TextScorer` both run: strings `[batch]` -> dense per-token and per-text outputs
(definitions in docs/scoring.md).
"""

from __future__ import annotations

from typing import Callable, Dict, Optional, Sequence, Tuple, Union

import tensorflow as tf

from electra_tf2.text import vocab as vocab_lib
from electra_tf2.utils.errors import ElectraError
from electra_tf2.text import windows
from electra_tf2.text.packing import TextFeaturizer

SENTENCE_SCORES = ("mean_probability", "max_probability", "sum_log_odds", "mean_log_odds")
# Tokens per discriminator pass when a batch's windows are many (bounded memory).
TOKENS_PER_PASS = 8192


class ScoringError(ElectraError, ValueError):
  """A model or input that cannot be scored; the message names the file and the fix."""


def default_stride(max_seq_length: int) -> int:
  """Half a window of max_seq_length - 2 tokens (at least 1)."""
  return max(1, (max_seq_length - 2) // 2)


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
    stride, cls_id, sep_id: see `text.windows.windowed_inputs` and the vocabulary.

  Returns:
    float32 RaggedTensor `[batch, (tokens)]` shaped as `ids`, and int64 `num_windows` `[batch]`.
  """
  features, owner, num_windows = windows.windowed_inputs(ids, max_seq_length, stride, cls_id,
                                                        sep_id)
  logits = _logits_in_passes(logits_fn, features["input_ids"], features["input_mask"],
                             max(1, TOKENS_PER_PASS // max_seq_length))
  token_logits = tf.gather_nd(logits, owner)
  return tf.RaggedTensor.from_row_splits(token_logits, ids.row_splits), num_windows


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


def score_text_graph(featurizer: TextFeaturizer, logits_fn: Callable, text: tf.Tensor,
                     stride: int) -> Dict[str, tf.Tensor]:
  """Strings `[batch]` -> the `score` signature's outputs (dense; see docs/scoring.md).

  `[batch, tokens]` (the text's WordPieces, no [CLS]/[SEP], padded with 0):
  `token_ids` (int32), `token_mask` (int32), `is_word_start` (int32),
  `logits`, `replaced_probability`; `[batch]`: the four sentence scores,
  `num_tokens` and `num_windows` (int32).
  """
  tokenizer = featurizer.tokenizer
  ids = tokenizer.tokenize_to_ids(text)
  logits, num_windows = windowed_token_logits(ids, logits_fn, featurizer.max_seq_length,
                                              stride, featurizer.cls_id, featurizer.sep_id)
  outputs = {name: value for name, value in sentence_scores(logits).items()}
  outputs.update(
      token_ids=tf.cast(ids.to_tensor(), tf.int32),
      token_mask=tf.cast(tf.ones_like(ids).to_tensor(), tf.int32),
      is_word_start=tf.cast(tokenizer.is_word_start(ids).to_tensor(), tf.int32),
      logits=logits.to_tensor(), replaced_probability=tf.sigmoid(logits).to_tensor(),
      num_tokens=tf.cast(ids.row_lengths(), tf.int32),
      num_windows=tf.cast(num_windows, tf.int32))
  return outputs


def discriminator_logits(model) -> Callable[..., tf.Tensor]:
  """`(input_ids, input_mask, segment_ids) -> [batch, seq_len]` discriminator logits of an
  `ElectraPretrainer` (dropout off)."""
  def logits(input_ids, input_mask, segment_ids):
    states = model.discriminator(input_ids, input_mask, segment_ids, training=False)
    return model.discriminator_head(states)
  return logits


def check_stride(max_seq_length: int, window_stride: Optional[int]) -> int:
  """The window stride (default half a window), checked against the window length."""
  stride = window_stride or default_stride(max_seq_length)
  if not 1 <= stride <= max_seq_length - 2:
    raise ScoringError(f"window stride must be between 1 and max_seq_length - 2 = "
                       f"{max_seq_length - 2}, got {stride}")
  return stride


def score_function(model, vocab_file: Union[str, Sequence[str]], do_lower_case: bool,
                   max_seq_length: int, window_stride: Optional[int] = None,
                   strip_accents: Optional[bool] = None):
  """`(tf.function text [batch] -> outputs, vocab tokens by id, stride)` of an
  `ElectraPretrainer`; `vocab_file` a WordPiece vocab.txt, a SentencePiece .model, or the
  WordPiece tokens in id order (a Hugging Face tokenizer.json's)."""
  stride = check_stride(max_seq_length, window_stride)
  sentencepiece = None  # a SentencePiece vocabulary's .model bytes
  if not isinstance(vocab_file, str):
    tokens = list(vocab_file)
  else:
    vocab = vocab_lib.load_vocab(vocab_file)
    tokens = sorted(vocab, key=vocab.get)
    if vocab_lib.vocab_kind(vocab_file) == "sentencepiece":
      with tf.io.gfile.GFile(vocab_file, "rb") as f:
        sentencepiece = f.read()
  featurizer = TextFeaturizer(tokens, do_lower_case, max_seq_length,
                              sentencepiece_model=sentencepiece, strip_accents=strip_accents)
  logits_fn = discriminator_logits(model)
  function = tf.function(lambda text: score_text_graph(featurizer, logits_fn, text, stride),
                         input_signature=[tf.TensorSpec([None], tf.string, name="text")])
  return function, tokens, stride
