"""The `Inputs` tuple of one pre-training batch, on every Keras backend.

The TFRecords hold only `input_ids`, `input_mask` and `segment_ids` (`[batch,
seq_len]` int32 once parsed); masking fills the other fields in the model.
"""

from __future__ import annotations

import collections
from typing import Dict

Inputs = collections.namedtuple(
    "Inputs", ["input_ids", "input_mask", "segment_ids", "masked_lm_positions",
               "masked_lm_ids", "masked_lm_weights"])
Inputs.__doc__ = """One batch of (possibly masked) pre-training inputs.

input_ids, input_mask, segment_ids: [batch, seq_len] int32.
masked_lm_positions, masked_lm_ids: [batch, max_predictions] int32, or None.
masked_lm_weights: [batch, max_predictions] float32, or None.
"""


def features_to_inputs(features: Dict) -> Inputs:
  """Parsed TFRecord features -> Inputs (mask fields None unless present)."""
  return Inputs(
      input_ids=features["input_ids"],
      input_mask=features["input_mask"],
      segment_ids=features["segment_ids"],
      masked_lm_positions=features.get("masked_lm_positions"),
      masked_lm_ids=features.get("masked_lm_ids"),
      masked_lm_weights=features.get("masked_lm_weights"),
  )


def get_updated_inputs(inputs: Inputs, **kwargs) -> Inputs:
  """A copy of `inputs` with the named fields replaced."""
  return inputs._replace(**kwargs)
