"""Jobs: the official per-process work, run here or in spawned worker processes.

Job j of N (the official `write_examples(job_id)`, build_pretraining_dataset.py:160-194)
takes inputs i % N == j, shuffles them with random.Random(seed + j), and writes
their examples round-robin to the shards i % N == j, under hidden temporary
names (the build renames them once every job has finished). The examples
themselves are drawn per document (`data_prep/packing.py`): N and the shuffle
only decide which shard holds which example. Jobs run one after the other in
this process, or spread over `workers` spawned processes (worker w: jobs w,
w + workers, ...); the output does not depend on which.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import os
import queue as queue_lib
import random
import shutil
import sys
import tempfile
import time
import traceback
from typing import Any, Callable, Dict, Iterator, List, Sequence, Tuple

from electra_tf2.data_prep.common import SHARD_PREFIX, DataPrepError, Progress
from electra_tf2.data_prep.input_examples import InputExamples
from electra_tf2.data_prep.summary import Stats
from electra_tf2.utils.atomic_io import temp_name_for
from electra_tf2.text.vocab import VocabError

# A job's spec: vocab_file, do_lower_case, strip_accents, max_seq_length,
# blanks_separate_docs, output_dir, num_shards, num_jobs, seed, run_id, mode
# ("text" or "archives"), job_id, inputs (every input's (path, size)) and
# input_names ({path: name in the document keys}).
JobSpec = Dict[str, Any]


def shard_names(output_dir: str, num_shards: int) -> List[str]:
  return [os.path.join(output_dir, f"{SHARD_PREFIX}-{i}-of-{num_shards}")
          for i in range(num_shards)]


def _raise_open_file_limit(needed: int) -> None:
  try:
    import resource  # pylint: disable=g-import-not-at-top
  except ImportError:  # Windows
    return
  soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
  want = needed + 256
  if soft != resource.RLIM_INFINITY and soft < want:
    new = want if hard == resource.RLIM_INFINITY else min(hard, want)
    try:
      resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
    except (ValueError, OSError):
      pass


class _ShardWriters:
  """The shards job j owns (i % num_jobs == j), written round-robin under temp names."""

  def __init__(self, output_dir: str, num_shards: int, job_id: int, num_jobs: int, run_id: str):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    names = shard_names(output_dir, num_shards)
    self.finals = [names[i] for i in range(num_shards) if i % num_jobs == job_id]
    self.temps = [temp_name_for(f, run_id) for f in self.finals]
    _raise_open_file_limit(len(self.temps))
    self._writers = []
    try:
      for t in self.temps:
        self._writers.append(tf.io.TFRecordWriter(t))
    except Exception as e:  # pylint: disable=broad-except
      self.close()
      raise DataPrepError(f"--output-dir {output_dir}: cannot create shard files "
                          f"({str(e).splitlines()[0]})") from None
    self.n_written = 0
    self.output_dir = output_dir

  def write(self, record: bytes) -> None:
    index = self.n_written % len(self._writers)
    with self._reporting(index):
      self._writers[index].write(record)
    self.n_written += 1

  def close(self) -> None:
    writers, self._writers = self._writers, []
    for index, w in enumerate(writers):
      with self._reporting(index):
        w.close()

  @contextlib.contextmanager
  def _reporting(self, index: int):
    """A failed write (no space left, permission lost) as one DataPrepError; the caller
    removes the temporary shards."""
    try:
      yield
    except Exception as e:  # pylint: disable=broad-except  (tf.errors.OpError, OSError)
      detail = (getattr(e, "message", None) or str(e) or type(e).__name__).splitlines()[0]
      raise DataPrepError(f"--output-dir {self.output_dir}: writing {self.temps[index]} failed "
                          f"({detail}); nothing in {self.output_dir} was changed") from None


def make_tokenizer(spec: JobSpec):
  from electra_tf2.text.kinds import load_tokenizer  # pylint: disable=g-import-not-at-top
  return load_tokenizer(spec["vocab_file"], do_lower_case=spec["do_lower_case"],
                        strip_accents=spec["strip_accents"])


class _Job:
  """One job: its inputs in its shuffled order, their examples into its shards."""

  def __init__(self, spec: JobSpec, report: Callable[..., None], tokenizer=None):
    self._start = time.perf_counter()
    self.spec = spec
    self.report = report
    self.tokenizer = tokenizer or make_tokenizer(spec)
    self.rng = random.Random(spec["seed"] + spec["job_id"])
    self.inputs = InputExamples(self.tokenizer, spec["max_seq_length"], spec["seed"], self.rng,
                                self._progress, lambda message: report("warn", message))
    self.writers = _ShardWriters(spec["output_dir"], spec["num_shards"], spec["job_id"],
                                 spec["num_jobs"], spec["run_id"])
    self._bytes_done = 0
    self._last_report = 0.0

  def _progress(self, current_bytes: int = 0, force: bool = False) -> None:
    now = time.time()
    if force or now - self._last_report > 0.5:
      self._last_report = now
      stats = self.inputs.stats
      self.report("progress", self._bytes_done + current_bytes, stats.examples, stats.tokens)

  def _archive_examples(self, path: str, name: str) -> Iterator[bytes]:
    spool = tempfile.mkdtemp(prefix=f".tmp-archive-job{self.spec['job_id']}-",
                             dir=self.spec["output_dir"])
    try:
      yield from self.inputs.archive(path, name, spool)
    finally:
      shutil.rmtree(spool, ignore_errors=True)

  def run(self, units: List[Tuple[str, int]]) -> Stats:
    """The official per-job driver: shuffle the job's units, then write them in order."""
    units = list(units)
    self.rng.shuffle(units)
    write = self.writers.write
    try:
      for path, size in units:
        name = self.spec["input_names"][path]
        if self.spec["mode"] == "archives":
          records = self._archive_examples(path, name)
        else:
          records = self.inputs.text_file(path, name, self.spec["blanks_separate_docs"])
        try:
          for record in records:
            write(record)
        finally:
          records.close()
        self._bytes_done += size
        self._progress(force=False)
    finally:
      self.writers.close()
    self._progress(force=True)
    stats = self.inputs.stats
    stats.job_seconds.append(time.perf_counter() - self._start)
    return stats


def _run_job(spec: JobSpec, report: Callable[..., None], tokenizer) -> Tuple[Stats, Any]:
  """Runs one job; report(kind, job_id, ...). Returns its stats and its tokenizer (for reuse)."""
  job_id = spec["job_id"]
  job = _Job(spec, lambda kind, *args: report(kind, job_id, *args), tokenizer)
  units = [u for i, u in enumerate(spec["inputs"]) if i % spec["num_jobs"] == job_id]
  return job.run(units), job.tokenizer


def configure_tf_threads() -> None:
  """One TensorFlow thread: each worker process tokenizes on one core."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  try:
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
  except RuntimeError:  # already initialised (in-process use): keep the settings
    pass


def _run_worker(specs: List[JobSpec], q) -> None:
  """Entry point of a worker process (spawned: TensorFlow starts fresh in it)."""
  # This process only runs string ops: no GPU context, no C++ start-up chatter.
  os.environ["CUDA_VISIBLE_DEVICES"] = ""
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  job_id = specs[0]["job_id"]
  try:
    configure_tf_threads()
    tokenizer = None
    for spec in specs:
      job_id = spec["job_id"]
      stats, tokenizer = _run_job(spec, lambda *msg: q.put(msg), tokenizer)
      q.put(("done", job_id, dataclasses.asdict(stats)))
  except KeyboardInterrupt:
    q.put(("error", job_id, "interrupted", ""))
    sys.exit(130)
  except (DataPrepError, VocabError) as e:
    q.put(("error", job_id, str(e), ""))
    sys.exit(1)
  except BaseException as e:  # pylint: disable=broad-except
    q.put(("error", job_id, f"unexpected {type(e).__name__} in job {job_id}: {e}",
           traceback.format_exc()))
    sys.exit(1)


class _JobProgress:
  """Adds up the jobs' progress reports into one progress line; passes warnings on."""

  def __init__(self, num_jobs: int, progress: Progress, warn: Callable[[str], None]):
    self._done = [(0, 0, 0)] * num_jobs  # bytes, examples, tokens
    self._progress = progress
    self._warn = warn

  def __call__(self, kind: str, job_id: int, *args) -> None:
    if kind == "progress":
      self._done[job_id] = args
      self._progress.update(*(sum(column) for column in zip(*self._done)))
    elif kind == "warn":
      self._warn(args[0])


def _terminate(procs) -> None:
  for p in procs:
    if p.is_alive():
      p.terminate()
  for p in procs:
    p.join(timeout=30)


def _run_in_workers(specs: Sequence[JobSpec], workers: int, report: _JobProgress) -> List[Stats]:
  """Runs the jobs in `workers` spawned processes (worker w: jobs w, w + workers, ...)."""
  ctx = multiprocessing.get_context("spawn")
  q = ctx.Queue()
  procs = [ctx.Process(target=_run_worker, args=(list(specs[w::workers]), q), daemon=True)
           for w in range(workers)]
  jobs_of = [[spec["job_id"] for spec in specs[w::workers]] for w in range(workers)]
  results: Dict[int, Stats] = {}
  errors: List[Tuple[int, str, str]] = []
  try:
    for p in procs:
      p.start()
    while len(results) < len(specs) and not errors:
      try:
        msg = q.get(timeout=0.2)
      except queue_lib.Empty:
        dead = [w for w, p in enumerate(procs)
                if not p.is_alive() and any(j not in results for j in jobs_of[w])]
        if not dead:
          continue
        # Give a dying worker's last message a moment to arrive.
        try:
          msg = q.get(timeout=1.0)
        except queue_lib.Empty:
          for w in dead:
            errors.append((jobs_of[w][0], f"a worker process died with exit code "
                                          f"{procs[w].exitcode} (out of memory?)", ""))
          continue
      kind, job_id = msg[0], msg[1]
      if kind == "done":
        results[job_id] = Stats(**msg[2])
      elif kind == "error":
        errors.append((job_id, msg[2], msg[3]))
      else:
        report(*msg)
  finally:
    if errors or len(results) < len(specs):
      _terminate(procs)
    else:
      for p in procs:
        p.join(timeout=30)
  if errors:
    errors.sort(key=lambda e: (e[1] == "interrupted", e[0]))
    job_id, message, tb = errors[0]
    if tb and os.environ.get("ELECTRA_DEBUG"):
      sys.stderr.write(tb)
    if message == "interrupted":
      raise KeyboardInterrupt
    raise DataPrepError(message)
  return [results[i] for i in range(len(specs))]


def run_jobs(specs: Sequence[JobSpec], workers: int, progress: Progress,
             warn: Callable[[str], None]) -> List[Stats]:
  """Runs every job, in this process (workers == 1) or in spawned ones; their stats in order."""
  report = _JobProgress(len(specs), progress, warn)
  if workers > 1:
    return _run_in_workers(specs, workers, report)
  out = []
  tokenizer = None
  for spec in specs:
    stats, tokenizer = _run_job(spec, report, tokenizer)
    out.append(stats)
  return out
