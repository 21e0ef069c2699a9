"""`Discriminator`: raw texts -> the probability that each token was replaced.

The pre-trained ELECTRA discriminator (`discriminator_predictions`,
run_pretraining.py:183-218) on tokenised text (models/text_model.py):

  model = Discriminator.from_pretrained("electra-small-discriminator")
  out = model.predict(["the chef ate the meal"])
  out["replaced_probability"]  # [1, tokens], [CLS] and [SEP] included
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

import keras
from keras import ops

from electra_tf2.layers import DiscriminatorHead
from electra_tf2.models import sources
from electra_tf2.models.text_model import TextModel, VariableMap


@keras.saving.register_keras_serializable(package="electra_tf2")
class Discriminator(TextModel):
  """Texts `[batch]` -> `logits` and `replaced_probability` `[batch, tokens]` (float32),
  with the `input_ids` and `input_mask` `[batch, tokens]` they were computed on.

  Load one with `Discriminator.from_pretrained(path)`; a random one:

  >>> from electra_tf2 import BertConfig, Discriminator
  >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "fine", "film", "."]
  >>> bert = BertConfig(len(vocab), hidden_size=16, num_hidden_layers=1,
  ...                   num_attention_heads=2, intermediate_size=32)
  >>> out = Discriminator(bert, None, vocab).predict(["a fine film ."], verbose=0)
  >>> out["input_ids"].tolist(), out["replaced_probability"].shape
  ([[2, 5, 6, 7, 8, 3]], (1, 6))
  """

  def __init__(self, bert_config, embedding_size, vocab, do_lower_case: bool = True,
               max_seq_length: int = 128, **kwargs):
    kwargs.setdefault("name", "discriminator")
    super().__init__(bert_config, embedding_size, vocab, do_lower_case, max_seq_length,
                     **kwargs)
    self.head = DiscriminatorHead(self.bert_config.hidden_size,
                                  self.bert_config.initializer_range,
                                  self.bert_config.hidden_act, name="discriminator_predictions",
                                  dtype=self.dtype_policy)
    self.build()

  def call_features(self, features, training: bool = False) -> Dict[str, Any]:
    """`call` on TextInputs' features."""
    logits = self.head(self.encode(features, training))
    return {"logits": logits, "replaced_probability": ops.sigmoid(logits),
            "input_ids": features["input_ids"], "input_mask": features["input_mask"]}

  def serve_features(self, features) -> Dict[str, Any]:
    return self.call_features(features)

  def head_variable_map(self) -> VariableMap:
    return {f"discriminator_predictions/{layer.name}/{kind}": getattr(layer, kind)
            for layer in (self.head.dense, self.head.dense_1) for kind in ("kernel", "bias")}

  def source_head(self, source: sources.Source) -> Tuple[VariableMap, Dict[str, str]]:
    """The discriminator head is required: strict loading fails without it."""
    del source
    return self.head_variable_map(), {}
