"""Raw text -> BERT inputs inside the graph (tensorflow-text), as a Keras layer.

`TextInputs` holds the WordPiece vocabulary in its config (so `.keras` files
and SavedModels carry it) and runs electra_tf2/text: the official tokenizer,
`[CLS] a [SEP]` for single texts, `[CLS] a [SEP] b [SEP]` for pairs truncated
as BERT's `_truncate_seq_pair` (text/packing.py), and for words (`call_words`)
the tagging features (text/tagging.py).
"""

from __future__ import annotations

import base64
from typing import Any, Dict, Optional, Sequence

import keras
import tensorflow as tf

from electra_tf2.text import tagging
from electra_tf2.text.packing import TextFeaturizer

Features = Dict[str, tf.Tensor]


@keras.saving.register_keras_serializable(package="electra_tf2")
class TextInputs(keras.layers.Layer):
  """tf.string `[batch]` (or a pair of them) -> int32 `input_ids`, `input_mask`,
  `segment_ids` `[batch, longest row]` of at most `max_seq_length` WordPieces."""

  def __init__(self, vocab: Sequence[str], do_lower_case: bool = True,
               max_seq_length: int = 128, sentencepiece_model: Optional[str] = None, **kwargs):
    super().__init__(trainable=False, **kwargs)
    self.vocab = list(vocab)
    self.do_lower_case = bool(do_lower_case)
    self.max_seq_length = max_seq_length
    # A SentencePiece model (base64, so that the config stays JSON): its pieces are `vocab`.
    self.sentencepiece_model = sentencepiece_model
    self.featurizer = TextFeaturizer(
        self.vocab, self.do_lower_case, max_seq_length,
        sentencepiece_model=sentencepiece_model and base64.b64decode(sentencepiece_model))
    self.supports_jit = False  # string ops: Keras' jit_compile="auto" (XLA on GPUs) stays off
    self.built = True

  def call(self, text, text_b=None) -> Features:
    if text_b is not None:
      text_b = tf.reshape(text_b, [-1])
    return self.featurizer.features(tf.reshape(text, [-1]), text_b)

  def call_words(self, text) -> Features:
    """Tagging features (text/tagging.py `word_features`): also `labeled_positions` and
    `words_mask` `[batch, max_seq_length]`."""
    return tagging.word_features(self.featurizer, text)

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.pop("trainable", None)
    config.update(vocab=self.vocab, do_lower_case=self.do_lower_case,
                  max_seq_length=self.max_seq_length,
                  sentencepiece_model=self.sentencepiece_model)
    return config
