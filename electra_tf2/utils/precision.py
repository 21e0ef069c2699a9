"""Reduced-precision copies of models for prediction: bfloat16 weights and matmuls.

`with_dtype(layer, "bfloat16")` rebuilds a layer or model from its config under the
Keras dtype policy "bfloat16" and copies its weights, rounded to bfloat16. The copy
computes every matmul in bfloat16 (oneDNN uses the CPU's bf16 dot-product units:
AVX512_BF16, AMX); LayerNorm and the attention softmax still run in float32 and the
heads return float32 logits. Its outputs differ from float32 by the rounding of
weights and activations to 8 significant bits: docs/benchmarks.md measures the
speed and the effect on a fine-tuned model's accuracy.
"""

from __future__ import annotations

from typing import Callable, Optional

from keras import ops

from electra_tf2.utils.errors import ElectraError

DTYPES = ("float32", "bfloat16")


class PrecisionError(ElectraError, ValueError):
  """A dtype that prediction does not offer."""


def check_dtype(dtype: Optional[str], what: str = "dtype") -> str:
  """`dtype` (None: float32) if it is one of DTYPES, else a one-line PrecisionError."""
  dtype = dtype or "float32"
  if dtype not in DTYPES:
    raise PrecisionError(f"{what} {dtype!r} is not offered: use one of {', '.join(DTYPES)}")
  return dtype


def with_dtype(layer, dtype: Optional[str], build: Optional[Callable] = None):
  """`layer` itself when it already computes in `dtype`, else a copy under that dtype
  policy with its weights (cast). `build(copy)` builds the copy (default `copy.build()`)."""
  dtype = check_dtype(dtype)
  if layer.dtype_policy.name == dtype:
    return layer
  config = layer.get_config()
  config["dtype"] = dtype
  copy = type(layer).from_config(config)
  if build is not None:
    build(copy)
  elif not copy.built:
    copy.build()
  copy_weights(layer, copy)
  return copy


def copy_weights(source, target) -> None:
  """Assigns `source`'s weights, cast, to `target`'s (the same layer in another dtype)."""
  if [v.shape for v in target.weights] != [v.shape for v in source.weights]:
    raise PrecisionError(f"{source.name}: its {target.dtype_policy.name} copy has other "
                         "weights")
  for to, value in zip(target.weights, source.weights):
    to.assign(ops.cast(value.value, to.dtype))
