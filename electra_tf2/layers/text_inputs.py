"""Raw text -> BERT inputs, as a Keras layer: in the graph on TensorFlow, on the host elsewhere.

`TextInputs` holds the WordPiece vocabulary in its config (so `.keras` files
and SavedModels carry it). On the TensorFlow backend it runs electra_tf2/text in
the graph (tensorflow-text): the official tokenizer, `[CLS] a [SEP]` for single
texts, `[CLS] a [SEP] b [SEP]` for pairs truncated as BERT's `_truncate_seq_pair`
(text/packing.py), and for words (`call_words`) the tagging features
(text/tagging.py). On every backend, `featurize` and `featurize_words` give the
same features as numpy arrays from Python strings (text/py_tokenizer.py, no
TensorFlow; a SentencePiece model runs in the `sentencepiece` library there): what the
models take on JAX and PyTorch, which have no string tensors.
"""

from __future__ import annotations

import base64
from typing import Any, Dict, Optional, Sequence

import keras
import numpy as np

from electra_tf2.text.py_tokenizer import PyTextFeaturizer, resolve_strip_accents

Features = Dict[str, Any]


@keras.saving.register_keras_serializable(package="electra_tf2")
class TextInputs(keras.layers.Layer):
  """tf.string `[batch]` (or a pair of them) -> int32 `input_ids`, `input_mask`,
  `segment_ids` `[batch, longest row]` of at most `max_seq_length` WordPieces
  (TensorFlow backend); `featurize` does the same on the host on every backend."""

  def __init__(self, vocab: Sequence[str], do_lower_case: bool = True,
               max_seq_length: int = 128, sentencepiece_model: Optional[str] = None,
               strip_accents: Optional[bool] = None, **kwargs):
    super().__init__(trainable=False, **kwargs)
    self.vocab = list(vocab)
    self.do_lower_case = bool(do_lower_case)
    # WordPiece's accent stripping (the official rule: when lowercasing); None in configs
    # written before it was one (text/py_tokenizer.py resolve_strip_accents).
    self.strip_accents = resolve_strip_accents(self.do_lower_case, strip_accents)
    self.max_seq_length = max_seq_length
    # A SentencePiece model (base64, so that the config stays JSON): its pieces are `vocab`.
    self.sentencepiece_model = sentencepiece_model
    self.featurizer = None  # the in-graph TextFeaturizer (tf.Module), TensorFlow only
    if keras.backend.backend() == "tensorflow":
      from electra_tf2.text.packing import TextFeaturizer  # pylint: disable=g-import-not-at-top
      self.featurizer = TextFeaturizer(
          self.vocab, self.do_lower_case, max_seq_length,
          sentencepiece_model=sentencepiece_model and base64.b64decode(sentencepiece_model),
          strip_accents=self.strip_accents)
      self.supports_jit = False  # string ops: Keras' jit_compile="auto" (XLA on GPUs) stays off
    elif max_seq_length < 3:
      raise ValueError(f"max_seq_length must be >= 3, got {max_seq_length}")
    self.built = True

  def call(self, text, text_b=None) -> Features:
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    if text_b is not None:
      text_b = tf.reshape(text_b, [-1])
    return self.featurizer.features(tf.reshape(text, [-1]), text_b)

  def call_words(self, text) -> Features:
    """Tagging features (text/tagging.py `word_features`): also `labeled_positions` and
    `words_mask` `[batch, max_seq_length]`."""
    from electra_tf2.text import tagging  # pylint: disable=g-import-not-at-top
    return tagging.word_features(self.featurizer, text)

  @property
  def py_featurizer(self) -> PyTextFeaturizer:
    """The pure-Python featurizer of this vocabulary (made on first use)."""
    cache = self.__dict__.setdefault("_py_featurizer", [])  # not tracked by Keras
    if not cache:
      model = self.sentencepiece_model and base64.b64decode(self.sentencepiece_model)
      cache.append(PyTextFeaturizer(self.vocab, self.do_lower_case, self.max_seq_length,
                                    sentencepiece_model=model or None,
                                    strip_accents=self.strip_accents))
    return cache[0]

  def featurize(self, texts: Sequence, texts_b: Optional[Sequence] = None,
                pad_to_max_length: bool = False) -> Dict[str, np.ndarray]:
    """`call`'s features of Python strings as int32 numpy arrays, on the host."""
    return self.py_featurizer.features(texts, texts_b, pad_to_max_length)

  def featurize_words(self, texts: Sequence, pad_to_max_length: bool = False
                      ) -> Dict[str, np.ndarray]:
    """`call_words`' features of Python strings as int32 numpy arrays, on the host."""
    return self.py_featurizer.word_features(texts, pad_to_max_length)

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.pop("trainable", None)
    config.update(vocab=self.vocab, do_lower_case=self.do_lower_case,
                  max_seq_length=self.max_seq_length,
                  sentencepiece_model=self.sentencepiece_model, strip_accents=self.strip_accents)
    return config
