"""Activations by name (model/modeling.py:264-348): the official GELU, relu, tanh, linear,
and `gelu_tanh`, GELU's tanh approximation.

Backend-neutral (`keras.ops`). The official `gelu` is the exact erf form,
0.5 x (1 + erf(x / sqrt(2))). Ours computes the same values, but with a
hand-written gradient: automatic differentiation of the formula runs about ten
elementwise passes over the `[tokens, intermediate]` tensor in the backward
pass, the closed form below needs five (about 1% of an electra_small step on
two CPU cores; see docs/benchmarks.md).

`gelu_tanh`, 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), is not the official
code's: it is the activation of keras-hub's `ElectraBackbone` (its presets) and of
transformers' `gelu_new` / `gelu_pytorch_tanh`. It is the backend's own kernel
(`keras.ops.gelu(x, approximate=True)`), the one keras-hub runs, so a model converted from
keras-hub computes its numbers.
"""

from __future__ import annotations

import math
from typing import Callable, Optional

from keras import ops

from electra_tf2.config.encoder import check_activation

_SQRT_HALF = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@ops.custom_gradient
def gelu(x):
  """x Phi(x), elementwise; d/dx = Phi(x) + x phi(x) (Phi, phi: the normal cdf and pdf).

  Written 0.5 x (1 + erf(x / sqrt 2)), the form the TFLite converter fuses into
  its GELU kernel (it has none for erf); the same bits as x (0.5 (1 + erf)).
  """
  erf = ops.erf(x * _SQRT_HALF)

  def grad(*args, upstream=None):
    dy = args[0] if upstream is None else upstream
    return dy * (0.5 * (1.0 + erf) + x * (ops.exp(-0.5 * ops.square(x)) * _INV_SQRT_2PI))

  return 0.5 * x * (1.0 + erf), grad


def gelu_tanh(x):
  """GELU's tanh approximation, elementwise (keras-hub's ELECTRA, transformers' gelu_new)."""
  return ops.gelu(x, approximate=True)


def get_activation(name: Optional[str]) -> Optional[Callable]:
  """The official `get_activation`: a case-insensitive name -> function, None for linear."""
  check_activation(name)
  if not name or name.lower() == "linear":
    return None
  return {"gelu": gelu, "relu": ops.relu, "tanh": ops.tanh,
          "gelu_tanh": gelu_tanh}[name.lower()]
