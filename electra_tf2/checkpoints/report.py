"""How the tensors of a checkpoint and the variables of a model matched, name by name.

The one report type of every reader (official TF1 checkpoints, Hugging Face
directories, our model directories): `match_shapes` compares `{official name:
variable}` with `{name: shape}`; `ConversionReport` says what was loaded,
missing, misshapen, ignored and left unused; `notice` is its one-line summary.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from electra_tf2.utils.atomic_io import write_json_atomic

# Checkpoint variables that are never model weights: the step, Adam's slots, and the
# scalar `generator_predictions/temperature` of the released checkpoints (which the
# published code no longer creates; Hugging Face's and gluon-nlp's converters skip it too).
DEFAULT_IGNORE = (r"^global_step$", r"/adam_[mv]$", r"^generator_predictions/temperature$")

REPORT_FILE = "conversion_report.json"

Shape = Tuple[int, ...]


@dataclasses.dataclass
class ConversionReport:
  """How the variables of one checkpoint and one model matched, name by name.

  loaded: model variables found with the same shape (official names).
  missing: model variables absent from the checkpoint.
  shape_mismatches: `(name, checkpoint shape, model shape)`.
  ignored: checkpoint variables matching the ignore list.
  unused: other checkpoint variables the model has no place for.
  """
  checkpoint: str
  loaded: List[str]
  missing: List[str]
  shape_mismatches: List[Tuple[str, Shape, Shape]]
  ignored: List[str]
  unused: List[str]

  @property
  def complete(self) -> bool:
    """Every model variable was found with its shape."""
    return not self.missing and not self.shape_mismatches

  @property
  def ok(self) -> bool:
    """Strict success: complete, and nothing in the checkpoint was left over."""
    return self.complete and not self.unused

  def to_dict(self) -> Dict[str, Any]:
    return dataclasses.asdict(self)

  def one_line(self, max_names: int = 3) -> str:
    """The problems in one line: missing, misshapen and unused names (a few of each)."""
    parts = []
    if self.missing:
      parts.append(f"{len(self.missing)} missing ({', '.join(self.missing[:max_names])})")
    if self.shape_mismatches:
      parts.append(f"{len(self.shape_mismatches)} of the wrong shape (" + ", ".join(
          f"{name}: {list(ckpt)} instead of {list(model)}"
          for name, ckpt, model in self.shape_mismatches[:max_names]) + ")")
    if self.unused:
      parts.append(f"{len(self.unused)} unused ({', '.join(self.unused[:max_names])})")
    return f"{self.checkpoint}: " + "; ".join(parts or ["every tensor used"])

  def summary(self, max_names: int = 20) -> str:
    """A few lines for a person; names are listed for every problem."""
    def names(items: Sequence[str]) -> str:
      shown = ", ".join(items[:max_names])
      return shown + (f", ... ({len(items) - max_names} more)" if len(items) > max_names else "")

    lines = [f"checkpoint {self.checkpoint}",
             f"  model variables loaded: {len(self.loaded)} of "
             f"{len(self.loaded) + len(self.missing) + len(self.shape_mismatches)}",
             f"  checkpoint variables ignored (step, optimizer slots, ...): {len(self.ignored)}"]
    if self.missing:
      lines.append(f"  MISSING from the checkpoint ({len(self.missing)}): {names(self.missing)}")
    for name, ckpt_shape, model_shape in self.shape_mismatches[:max_names]:
      lines.append(f"  SHAPE MISMATCH {name}: checkpoint {list(ckpt_shape)}, "
                   f"model {list(model_shape)}")
    if len(self.shape_mismatches) > max_names:
      lines.append(f"  ... {len(self.shape_mismatches) - max_names} more shape mismatches")
    if self.unused:
      lines.append(f"  UNUSED checkpoint variables ({len(self.unused)}): {names(self.unused)}")
    return "\n".join(lines)


def is_ignored(name: str, ignore: Sequence[str] = DEFAULT_IGNORE) -> bool:
  return any(re.search(pattern, name) for pattern in ignore)


def match_shapes(variable_map: Mapping[str, Any], shapes: Mapping[str, Shape], source: str,
                 ignore: Sequence[str] = DEFAULT_IGNORE) -> ConversionReport:
  """Compares a `{official name: variable}` map with `{name: shape}` of a source's tensors."""
  loaded, missing, mismatches = [], [], []
  for name in sorted(variable_map):
    model_shape = tuple(variable_map[name].shape)
    if name not in shapes:
      missing.append(name)
    elif shapes[name] != model_shape:
      mismatches.append((name, shapes[name], model_shape))
    else:
      loaded.append(name)
  rest = sorted(set(shapes) - set(variable_map))
  ignored = [name for name in rest if is_ignored(name, ignore)]
  unused = [name for name in rest if not is_ignored(name, ignore)]
  return ConversionReport(source, loaded, missing, mismatches, ignored, unused)


def notice(report: ConversionReport) -> Optional[str]:
  """A line naming what was not loaded (random) and what was left unused, or None."""
  parts = []
  if report.missing or report.shape_mismatches:
    names = report.missing + [name for name, _, _ in report.shape_mismatches]
    parts.append(f"not loaded (initialised at random): {', '.join(names[:6])}"
                 + (f" and {len(names) - 6} more" if len(names) > 6 else ""))
  if report.unused:
    parts.append(f"unused: {', '.join(report.unused[:6])}"
                 + (f" and {len(report.unused) - 6} more" if len(report.unused) > 6 else ""))
  return f"notice: {report.checkpoint}: " + "; ".join(parts) if parts else None


def write_report(report: ConversionReport, output_dir: str) -> None:
  """`output_dir/conversion_report.json`, written atomically."""
  write_json_atomic(os.path.join(output_dir, REPORT_FILE), report.to_dict(), sort_keys=False)
