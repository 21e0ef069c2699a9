"""Parameter counts of the pre-training models, by official scope.

    electra params [electra_small electra_base ...]

Prints, per model, the discriminator (`electra/*` + `discriminator_predictions/*`),
the generator's own parameters (`generator*/*` + `generator_predictions/*` or
`cloze_predictions/*`; the shared `electra/embeddings` are counted once, with
the discriminator) and the total.
"""

from __future__ import annotations

import argparse
from typing import Dict, Optional, Sequence

import numpy as np

from electra_tf2.networks import variable_names
from electra_tf2.config.pretraining import resolve_pretraining_config
from electra_tf2.utils.errors import command

DISCRIMINATOR_SCOPES = ("electra", "discriminator_predictions")


def count_by_part(shapes: Dict[str, Sequence[int]]) -> Dict[str, int]:
  """{official name: shape} -> parameter counts of discriminator, generator, total."""
  disc = sum(int(np.prod(s)) for n, s in shapes.items()
             if n.split("/")[0] in DISCRIMINATOR_SCOPES)
  total = sum(int(np.prod(s)) for s in shapes.values())
  return {"discriminator": disc, "generator": total - disc, "total": total}


def model_param_counts(model_name: str) -> Dict[str, int]:
  """Builds the model (no forward pass) and counts its variables."""
  from electra_tf2.models.pretrainer import ElectraPretrainer  # heavy import kept local
  model = ElectraPretrainer.from_pretraining_config(resolve_pretraining_config(model_name))
  shapes = {n: tuple(v.shape) for n, v in variable_names.pretrainer_variable_map(model).items()}
  return count_by_part(shapes)


@command
def main(argv: Optional[Sequence[str]] = None) -> int:
  """Prints the table for the model names in argv (default: small, base, large)."""
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("models", nargs="*", default=["electra_small", "electra_base",
                                                    "electra_large"],
                      help="presets or preset .json paths")
  names = parser.parse_args(argv).models
  print(f"{'model':<24}{'discriminator':>16}{'generator':>14}{'total':>14}")
  for name in names:
    counts = model_param_counts(name)
    print(f"{name:<24}{counts['discriminator']:>16,}{counts['generator']:>14,}"
          f"{counts['total']:>14,}")
  return 0
