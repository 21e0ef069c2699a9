"""The settings of one pre-training data build (the CLI flags of `electra build-data`)."""

from __future__ import annotations

import dataclasses
from typing import List, Optional

from electra_tf2.data_prep.common import DataPrepError


@dataclasses.dataclass
class BuildConfig:
  """Everything one build needs (the CLI flags).

  inputs: corpus files (mode "text") or archives of documents (mode "archives").
  """
  inputs: List[str]
  vocab_file: str
  output_dir: str
  max_seq_length: int = 128
  num_processes: int = 1
  blanks_separate_docs: bool = True
  do_lower_case: bool = True
  strip_accents: Optional[bool] = None
  num_shards: int = 1000
  seed: Optional[int] = None
  expected_vocab_size: Optional[int] = None
  mode: str = "text"
  progress: bool = True
  label: str = "build_pretraining_dataset"
  max_workers: Optional[int] = None  # processes running the jobs; None: automatic


def check_config(cfg: BuildConfig) -> None:
  """Raises DataPrepError, naming the flag, for settings no build can use."""
  if cfg.max_seq_length < 5:
    raise DataPrepError(f"--max-seq-length {cfg.max_seq_length}: must be at least 5 "
                        "(the official builder draws random lengths from [5, max])")
  if cfg.num_processes < 1:
    raise DataPrepError(f"--num-processes {cfg.num_processes}: must be at least 1")
  if cfg.num_shards < 1:
    raise DataPrepError(f"--num-shards {cfg.num_shards}: must be at least 1")
  if cfg.num_shards < cfg.num_processes:
    raise DataPrepError(f"--num-shards {cfg.num_shards} is smaller than --num-processes "
                        f"{cfg.num_processes}: every process writes its own shards; "
                        "use at least as many shards as processes")
  if cfg.max_workers is not None and cfg.max_workers < 1:
    raise DataPrepError(f"--max-workers {cfg.max_workers}: must be at least 1")
  if cfg.mode not in ("text", "archives"):
    raise DataPrepError(f"unknown mode {cfg.mode!r}")
