"""Text -> pre-training TFRecords with the official builder's examples, faster: the build.

`build_pretraining_data(BuildConfig(...))` checks the settings and the vocab,
runs the jobs (`data_prep/jobs.py`: each packs its inputs' lines with the
official rules, `data_prep/packing.py`, and writes them as tf.train.Example
bytes, `data_prep/example_encoding.py`), then puts the new shards in place and
records the settings and counts in `pretrain_data.info.json`, written last.
The packing's random draws come from one generator per document, seeded by
`--seed` and the document's input and position (`data_prep/packing.py`), so
the examples do not depend on --num-processes, the workers or --num-shards;
the Beam pipeline (`data_prep/beam_pretraining.py`) writes the same ones.

What is safer than the official script:
- the output directory is not wiped: only `pretrain_data.tfrecord-*-of-*`
  shards are replaced, and only once every job has finished; until then new
  shards live under hidden temporary names (`.pretrain_data.tfrecord-...tmp-*`),
  so an interrupted run leaves the previous shards untouched;
- unreadable, binary and UTF-16 files are skipped, lines that are not UTF-8
  are skipped, very long lines are streamed; each is reported and counted;
- a summary (`pretrain_data.info.json`) records the settings and counts.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from electra_tf2.data_prep.build_config import BuildConfig, check_config
from electra_tf2.data_prep.common import INFO_FILE, SHARD_PREFIX, DataPrepError, Progress
from electra_tf2.data_prep.jobs import run_jobs, shard_names
from electra_tf2.data_prep.packing import input_names
from electra_tf2.data_prep.summary import Stats, Summary
from electra_tf2.utils import run_lock
from electra_tf2.utils.atomic_io import temp_name_for, write_text_atomic
from electra_tf2.text.description import describe_vocab, write_description

SHARD_RE = re.compile(r"^pretrain_data\.tfrecord-(\d+)-of-(\d+)$")
# How the packing draws its random choices (recorded in the info file: data
# written by the official one-generator-per-process rule has no such entry).
RANDOM_DRAWS = "per-document"


# Below this much input, starting TensorFlow in worker processes (several seconds
# each) costs more than running the jobs one after the other here.
IN_PROCESS_BYTES = 20 << 20


def _resolve_workers(cfg: BuildConfig, total_bytes: int) -> int:
  """How many processes run the cfg.num_processes jobs (the output does not depend on it)."""
  if cfg.max_workers is not None:
    return max(1, min(cfg.max_workers, cfg.num_processes))
  if cfg.num_processes == 1 or total_bytes < IN_PROCESS_BYTES:
    return 1
  return max(1, min(cfg.num_processes, os.cpu_count() or 1))


def prepare_output_dir(output_dir: str) -> None:
  """Creates a local output directory; DataPrepError if it cannot be written."""
  if os.path.exists(output_dir) and not os.path.isdir(output_dir):
    raise DataPrepError(f"--output-dir {output_dir}: exists and is not a directory")
  try:
    os.makedirs(output_dir, exist_ok=True)
    probe = tempfile.NamedTemporaryFile(dir=output_dir, prefix=".tmp-probe-", delete=True)
    probe.close()
  except OSError as e:
    raise DataPrepError(f"--output-dir {output_dir}: cannot write there ({e.strerror or e})") from None


def _remove_quietly(path: str) -> None:
  try:
    os.remove(path)
  except OSError:
    pass


def _stale_temp_files(output_dir: str) -> List[str]:
  out = []
  for name in os.listdir(output_dir):
    if name.startswith("." + SHARD_PREFIX) and ".tmp-" in name:
      out.append(os.path.join(output_dir, name))
    elif name.startswith(".tmp-archive-job"):
      out.append(os.path.join(output_dir, name))
  return out


def file_sha256(path: str) -> str:
  h = hashlib.sha256()
  with open(path, "rb") as f:
    for block in iter(lambda: f.read(1 << 20), b""):
      h.update(block)
  return h.hexdigest()


def _local_mtime(path: str) -> int:
  try:
    return os.stat(path).st_mtime_ns
  except OSError:
    return -1


def inputs_fingerprint(inputs: Sequence[Tuple[str, int]],
                       mtime: Callable[[str], Any] = _local_mtime) -> str:
  """sha256 over (absolute path, size, mtime(path)) of the inputs: changes when they do."""
  h = hashlib.sha256()
  for path, size in inputs:
    where = path if "://" in path else os.path.abspath(path)
    h.update(f"{where}\0{size}\0{mtime(path)}\n".encode("utf-8", "surrogatepass"))
  return h.hexdigest()


def _sized_inputs(paths: Sequence[str]) -> List[Tuple[str, int]]:
  """(path, size) of each input, sorted by path as the official builder sorts them."""
  inputs: List[Tuple[str, int]] = []
  for path in sorted(paths):
    try:
      inputs.append((path, os.path.getsize(path)))
    except OSError:
      inputs.append((path, 0))
  if not inputs:
    raise DataPrepError("no input files: check --corpus-dir / --corpus-glob / --file-list")
  return inputs


def _remove_stale_temp_files(output_dir: str) -> List[str]:
  """Removes what an interrupted earlier run left; a note if there was any."""
  stale = _stale_temp_files(output_dir)
  for path in stale:
    if os.path.isdir(path):
      shutil.rmtree(path, ignore_errors=True)
    else:
      _remove_quietly(path)
  if stale:
    return [f"removed {len(stale)} temporary file(s) left by an interrupted earlier run"]
  return []


def _job_specs(cfg: BuildConfig, inputs: List[Tuple[str, int]], seed: int,
               run_id: str) -> List[Dict[str, Any]]:
  base = {
      "vocab_file": cfg.vocab_file, "do_lower_case": cfg.do_lower_case,
      "strip_accents": cfg.strip_accents, "max_seq_length": cfg.max_seq_length,
      "blanks_separate_docs": cfg.blanks_separate_docs, "output_dir": cfg.output_dir,
      "num_shards": cfg.num_shards, "num_jobs": cfg.num_processes, "seed": seed,
      "run_id": run_id, "mode": cfg.mode, "inputs": inputs,
      "input_names": input_names([path for path, _ in inputs]),
  }
  return [dict(base, job_id=j) for j in range(cfg.num_processes)]


def require_examples(cfg: BuildConfig, stats: Stats, num_inputs: int) -> None:
  """DataPrepError, saying why, when the inputs gave no example."""
  if stats.examples:
    return
  what = []
  if stats.files_skipped:
    what.append(f"{stats.files_skipped} of {num_inputs} inputs were skipped "
                f"({', '.join(sorted(stats.skipped))})")
  if stats.files_read and not stats.tokens:
    named = ", ".join(cfg.inputs[:3]) + (", ..." if len(cfg.inputs) > 3 else "")
    what.append(f"the {stats.files_read} file(s) read ({named}) hold no token once normalised "
                f"by {cfg.vocab_file} (only blank lines, whitespace or characters it removes): "
                "give UTF-8 text, one sentence per line")
  elif stats.files_read:
    what.append(f"{stats.files_read} read with {stats.tokens:,} tokens in all")
  raise DataPrepError("no examples were produced: " + ("; ".join(what) or "the corpus is empty")
                      + f". Nothing in {cfg.output_dir} was changed")


class LocalFiles:
  """The file operations that put shards in place, on local paths.

  (data_prep/beam_pretraining.py has the same on Beam's file systems.)
  """

  @staticmethod
  def replace(src: str, dst: str) -> None:
    os.replace(src, dst)

  @staticmethod
  def names(directory: str) -> List[str]:
    return os.listdir(directory)

  @staticmethod
  def remove(path: str) -> None:
    _remove_quietly(path)


def install_shards(output_dir: str, temps: List[str], finals: List[str],
                   files=LocalFiles) -> List[str]:
  """Renames the finished shards into place, removes those of another --num-shards; notes.

  The info file goes first, so a build cut short here is not taken for complete.
  """
  files.remove(os.path.join(output_dir, INFO_FILE))
  for tmp, final in zip(temps, finals):
    files.replace(tmp, final)
  new_names = {os.path.basename(f) for f in finals}
  removed_old = 0
  others = []
  for name in sorted(files.names(output_dir)):
    if name in new_names or name == INFO_FILE:
      continue
    if SHARD_RE.match(name):
      files.remove(os.path.join(output_dir, name))
      removed_old += 1
    elif name.startswith(SHARD_PREFIX):
      others.append(name)
  notes = []
  if removed_old:
    notes.append(f"removed {removed_old} shard(s) of an earlier run with another --num-shards")
  if others:
    notes.append(f"{output_dir} also holds {', '.join(others[:3])}"
                 f"{' ...' if len(others) > 3 else ''}, which the pre-training reader's default "
                 f"glob {SHARD_PREFIX}* would read too; move it away")
  return notes


def _size_notes(cfg: BuildConfig, stats: Stats, num_inputs: int) -> List[str]:
  notes = []
  if cfg.num_processes > num_inputs:
    notes.append(f"only {num_inputs} input(s) for {cfg.num_processes} processes: "
                 f"{cfg.num_processes - num_inputs} process(es) had nothing to read and their "
                 "shards are empty (the official assignment: input i goes to process i % N)")
  if stats.examples < cfg.num_shards:
    notes.append(f"only {stats.examples} examples for {cfg.num_shards} shards: many shards are "
                 "empty; a smaller --num-shards suits a small corpus")
  return notes


def build_info(summary: Summary, vocab_size: int, vocab_sha256: str, inputs_fingerprint_: str,
               **settings: Any) -> Dict[str, Any]:
  """The contents of pretrain_data.info.json; `settings`: the builder's own ones."""
  cfg = summary.config
  return {
      "format": "electra_tf2 pre-training TFRecords",
      "complete": True,
      "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
      "settings": {
          "mode": cfg.mode, "max_seq_length": cfg.max_seq_length,
          "do_lower_case": cfg.do_lower_case,
          "strip_accents": cfg.do_lower_case and cfg.strip_accents is not False,
          "blanks_separate_docs": cfg.blanks_separate_docs if cfg.mode == "text" else False,
          "num_shards": cfg.num_shards, "seed": summary.seed, "random_draws": RANDOM_DRAWS,
          "vocab_file": cfg.vocab_file if "://" in cfg.vocab_file else os.path.abspath(cfg.vocab_file),
          "vocab_sha256": vocab_sha256, "vocab_size": vocab_size, **settings,
      },
      "inputs": {"count": summary.input_files, "bytes": summary.input_bytes,
                 "fingerprint": inputs_fingerprint_},
      "shards": [os.path.basename(f) for f in summary.shards],
      "stats": summary.as_dict(),
  }


def build_pretraining_data(cfg: BuildConfig, log: Optional[Callable[[str], None]] = None,
                           warn: Optional[Callable[[str], None]] = None) -> Summary:
  """Builds the TFRecords; returns the summary. Raises DataPrepError or VocabError, or
  RunLockError while another build writes the output directory.

  On any failure (or Ctrl-C) the new shards are deleted and the output directory
  is left as it was.
  """
  with run_lock.hold(cfg.output_dir):
    return _build(cfg, log, warn)


def _build(cfg: BuildConfig, log: Optional[Callable[[str], None]],
           warn: Optional[Callable[[str], None]]) -> Summary:
  log = log or (lambda s: print(s, flush=True))
  start = time.time()
  check_config(cfg)
  description = describe_vocab(cfg.vocab_file, cfg.do_lower_case, cfg.strip_accents,
                               expected_size=cfg.expected_vocab_size)
  inputs = _sized_inputs(cfg.inputs)
  prepare_output_dir(cfg.output_dir)
  seed = cfg.seed if cfg.seed is not None else random.SystemRandom().randrange(1 << 31)
  run_id = f"{os.getpid()}-{int(time.time() * 1000) % 10**9}"
  notes = _remove_stale_temp_files(cfg.output_dir)
  total_bytes = sum(size for _, size in inputs)
  progress = Progress(total_bytes, enabled=cfg.progress, stream=sys.stderr,
                      label="examples" if cfg.mode == "text" else "archives")
  finals = shard_names(cfg.output_dir, cfg.num_shards)
  temps = [temp_name_for(f, run_id) for f in finals]
  workers = _resolve_workers(cfg, total_bytes)
  try:
    job_stats = run_jobs(_job_specs(cfg, inputs, seed, run_id), workers, progress,
                         warn or progress.warn)
    progress.update(progress.total, progress.examples, progress.tokens, force=True)
    stats = Stats()
    for s in job_stats:
      stats.merge(s)
    require_examples(cfg, stats, len(inputs))
  except BaseException:
    for t in temps:
      _remove_quietly(t)
    raise
  finally:
    progress.close()
  # All jobs finished: put the new shards in place of the old ones.
  notes += install_shards(cfg.output_dir, temps, finals)
  notes += _size_notes(cfg, stats, len(inputs))
  summary = Summary(config=cfg, stats=stats, seed=seed, seconds=time.time() - start,
                    shards=finals, input_files=len(inputs), input_bytes=total_bytes,
                    notes=notes, workers=workers)
  info = build_info(summary, description.vocab_size, file_sha256(cfg.vocab_file), inputs_fingerprint(inputs),
                    num_processes=cfg.num_processes, worker_processes=workers)
  write_description(cfg.output_dir, description)
  write_text_atomic(os.path.join(cfg.output_dir, INFO_FILE),
                    json.dumps(info, indent=1, sort_keys=True) + "\n")
  for line in summary.lines():
    log(line)
  return summary


def read_info(output_dir: str) -> Optional[Dict[str, Any]]:
  """The info file of a completed build in output_dir, or None."""
  try:
    with open(os.path.join(output_dir, INFO_FILE), "r", encoding="utf-8") as f:
      info = json.load(f)
  except (OSError, ValueError):
    return None
  if not info.get("complete"):
    return None
  if not all(os.path.isfile(os.path.join(output_dir, n)) for n in info.get("shards", [])):
    return None
  return info
