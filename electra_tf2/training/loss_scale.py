"""Loss scaling (mixed_float16) of the TensorFlow trainers; their loop is loop.py's."""

from __future__ import annotations

from typing import Any

import keras


def with_loss_scaling(optimizer: keras.optimizers.Optimizer, mixed_precision: str
                      ) -> keras.optimizers.Optimizer:
  """`optimizer`, wrapped in a LossScaleOptimizer for mixed_float16."""
  if mixed_precision == "mixed_float16":
    return keras.optimizers.LossScaleOptimizer(optimizer)
  return optimizer


def scaled_loss(optimizer: keras.optimizers.Optimizer, loss: Any) -> Any:
  """The loss to differentiate: scaled when the optimizer scales losses."""
  if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
    return optimizer.scale_loss(loss)
  return loss
