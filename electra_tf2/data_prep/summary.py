"""The counters of a build (`Stats`) and the summary printed at the end (`Summary`)."""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, List, Optional

from electra_tf2.data_prep.build_config import BuildConfig
from electra_tf2.data_prep.common import SHARD_PREFIX, human_bytes, human_count, human_seconds

# The summary warns above this share of [UNK] tokens (BERT's vocab on English
# prose gives well under 0.1%).
UNK_WARNING_PERCENT = 5.0


@dataclasses.dataclass
class Stats:
  """Counters of one job or input (merged over them for the summary)."""
  files_read: int = 0  # reading
  bytes_read: int = 0
  documents: int = 0
  lines: int = 0  # lines: all, blank (document ends), not UTF-8, over the long-line limit
  blank_lines: int = 0
  invalid_lines: int = 0
  long_lines: int = 0
  sentences: int = 0  # tokenizing and packing
  tokens: int = 0
  unk_tokens: int = 0
  examples: int = 0
  example_tokens: int = 0
  skipped: Dict[str, List[str]] = dataclasses.field(default_factory=dict)
  read_errors: List[str] = dataclasses.field(default_factory=list)
  job_seconds: List[float] = dataclasses.field(default_factory=list)

  def skip(self, path: str, reason: str) -> None:
    self.skipped.setdefault(reason, []).append(path)

  def merge(self, other: "Stats") -> None:
    for f in dataclasses.fields(self):
      if f.name == "skipped":
        for reason, paths in other.skipped.items():
          self.skipped.setdefault(reason, []).extend(paths)
      elif f.name in ("read_errors", "job_seconds"):
        getattr(self, f.name).extend(getattr(other, f.name))
      else:
        setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

  def counts(self) -> Dict[str, int]:
    """The integer counters by name (files_read, documents, tokens, examples...)."""
    return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
            if isinstance(getattr(self, f.name), int)}

  @property
  def files_skipped(self) -> int:
    return sum(len(v) for v in self.skipped.values())


@dataclasses.dataclass
class Summary:
  """What a build did; `lines()` is the text printed at the end."""
  config: BuildConfig
  stats: Stats
  seed: int
  seconds: float
  shards: List[str]
  input_files: int
  input_bytes: int
  notes: List[str]
  workers: int = 1
  where: Optional[str] = None  # how the work ran; default: the jobs and worker processes

  def work_seconds(self) -> float:
    """Wall time of the jobs themselves: without imports and worker start-up."""
    seconds = self.stats.job_seconds
    if not seconds:
      return max(self.seconds, 1e-9)
    w = max(1, self.workers)
    return max(1e-9, max(sum(seconds[j::w]) for j in range(min(w, len(seconds)))))

  def as_dict(self) -> Dict[str, Any]:
    s = self.stats
    return {
        "input_files": self.input_files, "input_bytes": self.input_bytes,
        "files_read": s.files_read, "files_skipped": {k: sorted(v) for k, v in s.skipped.items()},
        "read_errors": s.read_errors, "documents": s.documents, "lines": s.lines,
        "blank_lines": s.blank_lines, "invalid_utf8_lines": s.invalid_lines,
        "long_lines": s.long_lines, "sentences": s.sentences, "tokens": s.tokens,
        "unk_tokens": s.unk_tokens, "examples": s.examples, "example_tokens": s.example_tokens,
        "seconds": round(self.seconds, 3), "work_seconds": round(self.work_seconds(), 3),
    }

  def lines(self) -> List[str]:
    s = self.stats
    c = self.config
    unk_share = 100.0 * s.unk_tokens / max(1, s.tokens)
    dropped = 100.0 * (1 - s.example_tokens / max(1, s.tokens))
    out = [f"{c.label}: done in {human_seconds(self.seconds)} ({self.seconds:.1f} s)"]
    skipped = ""
    if s.files_skipped:
      parts = [f"{reason}: {len(paths)}" for reason, paths in sorted(s.skipped.items())]
      skipped = f"; skipped {s.files_skipped} ({'; '.join(parts)})"
    unit = "archives" if c.mode == "archives" else "files"
    out.append(f"  input     {s.files_read} of {self.input_files} {unit} read "
               f"({human_bytes(s.bytes_read)} of text){skipped}")
    line_notes = []
    if s.invalid_lines:
      line_notes.append(f"{s.invalid_lines} not UTF-8, skipped")
    if s.long_lines:
      line_notes.append(f"{s.long_lines} longer than 8 MB, streamed")
    out.append(f"  text      {s.documents:,} documents, {s.lines:,} lines "
               f"({s.sentences:,} with text, {s.blank_lines:,} blank"
               + (", " + ", ".join(line_notes) if line_notes else "") + ")")
    out.append(f"  tokens    {s.tokens:,} tokenized, [UNK] {unk_share:.3f}%; "
               f"{s.example_tokens:,} in examples ({dropped:.1f}% dropped by the official truncation)")
    if unk_share > UNK_WARNING_PERCENT:
      out.append(f"  warning   {unk_share:.1f}% of the tokens are [UNK]: the vocab "
                 f"{c.vocab_file} does not fit this text (wrong vocab, truncated file, or "
                 "do_lower_case set wrongly?)")
    out.append(f"  examples  {s.examples:,} of {c.max_seq_length} tokens in {len(self.shards)} "
               f"shards: {os.path.join(c.output_dir, SHARD_PREFIX)}-*-of-{c.num_shards}")
    where = self.where or (
        f"{c.num_processes} job{'s' if c.num_processes > 1 else ''} "
        + ("in this process" if self.workers == 1 else f"in {self.workers} worker processes"))
    work = self.work_seconds()
    out.append(f"  speed     {s.examples / work:,.0f} examples/s, {human_count(s.tokens / work)} "
               f"tokens/s over {work:.1f} s of work ({self.seconds:.1f} s with start-up); "
               f"{where}")
    out.append(f"  seed      {self.seed} (pass --seed {self.seed} to reproduce)")
    for reason, paths in sorted(s.skipped.items()):
      shown = ", ".join(paths[:5]) + (f", ... ({len(paths) - 5} more)" if len(paths) > 5 else "")
      out.append(f"  skipped ({reason}): {shown}")
    for note in self.notes:
      out.append(f"  note: {note}")
    return out

