"""Pre-training TFRecords with Apache Beam: the single-machine builder's examples, on any runner.

  electra build-data --runner DirectRunner --corpus-glob 'corpus/**' --vocab-file vocab.txt \\
      --output-dir OUT [--num-shards 1000] [--seed 1] [--runner DirectRunner] \\
      [Beam pipeline options: --direct_running_mode multi_processing --direct_num_workers 2,
       --project P --region R --temp_location gs://... (DataflowRunner), ...]

The pipeline: the inputs -> Reshuffle (spread over the workers) -> each input's
examples, read, tokenized, packed and serialized by the code of
build_pretraining_dataset.py (data_prep/input_examples.py) -> Beam's TFRecord
sink, --num-shards shards. The packing draws per document (data_prep/packing.py),
so for the same inputs, vocab, settings and --seed the shards hold the same
multiset of examples as the single-machine builder's, byte for byte; only which
shard holds which example differs.

Inputs and output go through Beam's file systems: local paths, and gs:// with
the beam-gcp extra. The shards are written under OUT/.beam-tmp-<run>/
and renamed into OUT once the job has succeeded; pretrain_data.info.json comes
last. A failed job removes its temporary folder and leaves OUT as it was.

Counters (Beam metrics, namespace electra_tf2.data_prep; in the runner's UI):
files_read, documents, lines, tokens, unk_tokens, examples, "skipped: <why>"...
Each input also reports its counts and skipped files on a side output, from
which the summary printed at the end is made, on every runner; the counters
are printed beside it where the runner reports them (the DirectRunner does).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import random
import re
import sys
import tempfile
import threading
import time
import traceback
import uuid
from typing import Callable, Dict, List, Optional, Sequence, Tuple

# The folder holding the electra_tf2 package in use (installed or a clone).
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _import_beam():
  """apache_beam, without its start-up notes about Google Cloud extras that are not installed."""
  root = logging.getLogger()
  level = root.level
  root.setLevel(logging.ERROR)
  try:
    import apache_beam  # pylint: disable=g-import-not-at-top
  finally:
    root.setLevel(level)
  return apache_beam


beam = _import_beam()

# pylint: disable=g-import-not-at-top,wrong-import-position
from apache_beam.io.filesystem import BeamIOError, CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.runner import PipelineState

from electra_tf2.data_prep.build_pretraining_dataset import (add_blanks_flags, add_example_flags,
                                                 add_vocab_and_output_flags)
from electra_tf2.data_prep.builder import (BuildConfig, build_info, check_config, file_sha256,
                                   inputs_fingerprint, install_shards, prepare_output_dir,
                                   require_examples)
from electra_tf2.data_prep.common import (INFO_FILE, SHARD_PREFIX, DataPrepError, is_builder_output,
                              quiet_tensorflow_logs, run_script)
from electra_tf2.data_prep.input_examples import InputExamples
from electra_tf2.data_prep.jobs import configure_tf_threads, make_tokenizer, shard_names
from electra_tf2.data_prep.packing import input_names
from electra_tf2.data_prep.summary import Stats, Summary
from electra_tf2.utils import run_lock
from electra_tf2.utils.atomic_io import is_remote, write_text_atomic
from electra_tf2.text.vocab import load_vocab, special_token_ids, VocabError
# pylint: enable=g-import-not-at-top,wrong-import-position

COUNTER_NAMESPACE = "electra_tf2.data_prep"
_REPORT = "report"
_TEMP_PREFIX = ".beam-tmp-"


# ---------------------------------------------------------------------------
# Beam's file systems
# ---------------------------------------------------------------------------

def _open_raw(path: str):
  """An input opened for binary reading, undecompressed (the reader detects compression)."""
  return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def _check_file_system(flag: str, path: str) -> None:
  try:
    FileSystems.get_filesystem(path)
  except ValueError:
    scheme = path.split("://", 1)[0]
    raise DataPrepError(f"{flag} {path}: Beam has no file system for {scheme}:// here "
                        "(for gs:// run bash scripts/setup.sh beam-gcp)") from None


def _local_vocab(path: str, directory: str) -> str:
  """The vocab file `path` itself if local, else a copy of it in `directory`."""
  if not is_remote(path):
    return path
  local = os.path.join(directory, os.path.basename(path) or "copy")
  try:
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as src, \
        open(local, "wb") as dst:
      dst.write(src.read())
  except (BeamIOError, OSError) as e:
    raise VocabError(f"vocab file {path} cannot be read: {e}") from None
  return local


class _BeamFiles:
  """pretraining.install_shards' file operations on Beam's file systems."""

  @staticmethod
  def replace(src: str, dst: str) -> None:
    FileSystems.rename([src], [dst])

  @staticmethod
  def names(directory: str) -> List[str]:
    found = FileSystems.match([FileSystems.join(directory, "*")])[0].metadata_list
    return [os.path.basename(m.path) for m in found]

  @staticmethod
  def remove(path: str) -> None:
    try:
      FileSystems.delete([path])
    except BeamIOError:
      pass  # not there


def _remove_tree(directory: str) -> None:
  """Deletes a folder (local) or every object under the prefix (object stores)."""
  try:  # a trailing / names every object under a prefix; a local folder goes whole
    FileSystems.delete([directory.rstrip("/") + "/" if is_remote(directory) else directory])
  except BeamIOError:
    pass


def match_inputs(patterns: Sequence[Tuple[str, str]]) -> Tuple[List[str], List[str]]:
  """The files matching (flag, pattern) pairs, sorted, and notes on patterns matching nothing.

  Beam's patterns: `*` stays within a folder, `**` crosses folders. Files the
  builders write (shards, temporary names, the info file) are left out.
  """
  for flag, pattern in patterns:
    _check_file_system(flag, pattern)
  try:
    results = FileSystems.match([pattern for _, pattern in patterns])
  except BeamIOError as e:
    raise DataPrepError(f"{', '.join(f'{flag} {pattern}' for flag, pattern in patterns)}: "
                        f"cannot be listed ({e})") from None
  files, notes = set(), []
  for (flag, pattern), result in zip(patterns, results):
    found = [m.path for m in result.metadata_list
             if not is_builder_output(m.path) and f"/{_TEMP_PREFIX}" not in m.path]
    if not found:
      notes.append(f"{flag} {pattern!r} matched no files")
    files.update(found)
  return sorted(files), notes


# ---------------------------------------------------------------------------
# The pipeline
# ---------------------------------------------------------------------------

def _warn(message: str) -> None:
  sys.stderr.write(f"warning: {message}\n")


class _InputExamplesFn(beam.DoFn):
  """(input path, input name) -> the input's serialized examples; its Stats (JSON) as `report`.

  The report's job_seconds holds the input's processing time on its worker.
  """

  def __init__(self, settings: Dict):
    super().__init__()
    self._settings = settings

  def setup(self):
    quiet_tensorflow_logs()
    configure_tf_threads()
    s = self._settings
    self._vocab_dir = tempfile.mkdtemp(prefix="electra-vocab-")
    vocab = _local_vocab(s["vocab_file"], self._vocab_dir)
    self._inputs = InputExamples(make_tokenizer(dict(s, vocab_file=vocab)), s["max_seq_length"],
                                 s["seed"], random.Random(s["seed"]), progress=lambda _: None,
                                 warn=_warn, open_raw=_open_raw)

  def teardown(self):
    _remove_tree(self._vocab_dir)

  def process(self, unit):
    start = time.perf_counter()
    path, name = unit
    s = self._settings
    inputs = self._inputs
    inputs.stats = Stats()  # this input's counts
    if s["mode"] == "archives":
      with tempfile.TemporaryDirectory(prefix="electra-archive-") as spool:
        yield from inputs.archive(path, name, spool)
    else:
      yield from inputs.text_file(path, name, s["blanks_separate_docs"])
    stats = inputs.stats
    stats.job_seconds.append(time.perf_counter() - start)
    for counter, value in stats.counts().items():
      Metrics.counter(COUNTER_NAMESPACE, counter).inc(value)
    for reason, paths in stats.skipped.items():
      Metrics.counter(COUNTER_NAMESPACE, f"skipped: {reason}").inc(len(paths))
    yield beam.pvalue.TaggedOutput(_REPORT, json.dumps(dataclasses.asdict(stats)))


def _direct_runner(options: PipelineOptions):
  """The DirectRunner's batch engine (Beam's FnApiRunner) where the options name the
  DirectRunner, else None (the options' runner).

  Beam 2.77's DirectRunner first downloads the Prism runner's binary from GitHub at run time
  and runs the job there, and only offline falls back to the FnApiRunner (leaving empty
  temporary directories behind). We go to the FnApiRunner straight away, as the fallback
  does: no download, the same engine online and offline, and --direct_running_mode and
  --direct_num_workers apply. `--runner PrismRunner` still chooses Prism.
  """
  name = options.view_as(StandardOptions).runner or "DirectRunner"
  if name.rsplit(".", 1)[-1] not in ("DirectRunner", "SwitchingDirectRunner"):
    return None
  from apache_beam.portability.api import beam_provision_api_pb2
  from apache_beam.runners.portability import portable_runner
  from apache_beam.runners.portability.fn_api_runner import fn_runner
  encoded = portable_runner.JobServiceHandle.encode_pipeline_options(options.get_all_options())
  return fn_runner.FnApiRunner(provision_info=fn_runner.ExtendedProvisionInfo(
      beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded)))


def _pipeline(options: PipelineOptions, units: List[Tuple[str, str]], settings: Dict,
              shard_prefix: str, num_shards: int, report_path: str) -> "beam.Pipeline":
  p = beam.Pipeline(runner=_direct_runner(options), options=options)
  outputs = (p
             | "Inputs" >> beam.Create(units)
             | "Spread" >> beam.Reshuffle()
             | "Examples" >> beam.ParDo(_InputExamplesFn(settings)).with_outputs(
                 _REPORT, main="records"))
  _ = outputs.records | "Write" >> beam.io.WriteToTFRecord(
      shard_prefix, num_shards=num_shards, shard_name_template="-S-of-N")
  _ = outputs[_REPORT] | "Report" >> beam.io.WriteToText(report_path, shard_name_template="")
  return p


def pipeline_options(args: Sequence[str]) -> PipelineOptions:
  """Beam's options from the command line's other flags (runner default: DirectRunner).

  Raises DataPrepError for a flag that is neither ours nor a Beam pipeline option.
  """
  args = list(args)
  if not any(a.startswith("--default_sdk_harness_log_level") for a in args):
    args.append("--default_sdk_harness_log_level=ERROR")  # workers: no start-up chatter
  options = PipelineOptions(args)
  known = options.get_all_options()
  unknown = sorted(set(options.get_all_options(retain_unknown_options=True)) - set(known))
  if unknown:
    raise DataPrepError("unknown option(s) " + ", ".join(f"--{u}" for u in unknown)
                        + ": neither this script's (see --help) nor a Beam pipeline option")
  return options


def _root_cause(error: BaseException) -> str:
  """The first `SomeError: message` in a failed job's error (the workers' traceback text)."""
  text = str(error)
  cause = re.search(r"^(\w+(?:Error|Exception|Interrupt|Exit)): (.+)$", text, re.M)
  if cause:
    return f"{cause.group(1)}: {cause.group(2)}"
  first = text.strip().splitlines()[0] if text.strip() else ""
  first = re.sub(r" \[while running .*$", "", first)
  return f"{type(error).__name__}: {first}"


def _counters(result) -> Optional[Dict[str, int]]:
  """The job's counters by name, or None where the runner does not report them."""
  try:
    found = result.metrics().query(MetricsFilter().with_namespace(COUNTER_NAMESPACE))["counters"]
  except Exception:  # pylint: disable=broad-except
    return None
  out: Dict[str, int] = {}
  for c in found:
    value = c.committed if c.committed is not None else c.attempted
    out[c.key.metric.name] = out.get(c.key.metric.name, 0) + (value or 0)
  return out


def counter_line(counters: Dict[str, int]) -> str:
  """One summary line of the job's counters."""
  skipped = sum(v for k, v in counters.items() if k.startswith("skipped: "))
  unk = 100.0 * counters.get("unk_tokens", 0) / max(1, counters.get("tokens", 0))
  return (f"  counters  documents {counters.get('documents', 0):,}, lines "
          f"{counters.get('lines', 0):,}, tokens {counters.get('tokens', 0):,} ([UNK] {unk:.3f}%), "
          f"examples {counters.get('examples', 0):,}, files read {counters.get('files_read', 0):,}, "
          f"skipped {skipped:,} (Beam metrics, namespace {COUNTER_NAMESPACE})")


def _read_report(path: str) -> Stats:
  stats = Stats()
  with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
    for line in f.read().decode("utf-8").splitlines():
      stats.merge(Stats(**json.loads(line)))
  return stats


def _prepare_output(output_dir: str) -> List[str]:
  """Creates the output folder; removes what killed earlier jobs left; notes."""
  _check_file_system("--output-dir", output_dir)
  if not is_remote(output_dir):
    prepare_output_dir(output_dir)
  elif not FileSystems.exists(output_dir):
    FileSystems.mkdirs(output_dir)
  left = FileSystems.match([FileSystems.join(output_dir, _TEMP_PREFIX + "*/**")])[0].metadata_list
  stale = sorted({m.path[:m.path.index("/", m.path.index(_TEMP_PREFIX))] for m in left})
  for directory in stale:
    _remove_tree(directory)
  if stale:
    return [f"removed {len(stale)} temporary folder(s) left by an interrupted earlier job"]
  return []


def build_with_beam(cfg: BuildConfig, pipeline_args: Sequence[str] = (),
                    log: Optional[Callable[[str], None]] = None) -> Summary:
  """Builds the TFRecords with a Beam pipeline; returns the summary.

  cfg.inputs are paths Beam's file systems can read; cfg.num_processes and
  cfg.max_workers play no part (the runner spreads the work). Raises
  DataPrepError or VocabError with a one-line message; then the output
  directory is as it was. Holds the output directory's run lock (a lease
  for a remote one, see electra_tf2/utils/run_lock.py).
  """
  with run_lock.hold(cfg.output_dir):
    return _build_with_beam(cfg, pipeline_args, log)


def _build_with_beam(cfg: BuildConfig, pipeline_args: Sequence[str],
                     log: Optional[Callable[[str], None]]) -> Summary:
  log = log or (lambda s: print(s, flush=True))
  start = time.time()
  check_config(cfg)
  options = pipeline_options(pipeline_args)
  runner = options.view_as(StandardOptions).runner or "DirectRunner"
  for path in [cfg.vocab_file, *cfg.inputs]:
    _check_file_system("--vocab-file" if path == cfg.vocab_file else "input", path)
  vocab_size, vocab_sha256 = _checked_vocab(cfg)
  paths = sorted(set(cfg.inputs))
  if not paths:
    raise DataPrepError("no input files: check --corpus-glob / --corpus-dir / --archives-glob")
  found = {m.path: m for result in FileSystems.match(paths) for m in result.metadata_list}
  notes = _prepare_output(cfg.output_dir)
  seed = cfg.seed if cfg.seed is not None else random.SystemRandom().randrange(1 << 31)
  tmp_dir = FileSystems.join(cfg.output_dir, f"{_TEMP_PREFIX}{int(start)}-{uuid.uuid4().hex[:8]}")
  shard_prefix = FileSystems.join(tmp_dir, SHARD_PREFIX)
  settings = {"vocab_file": cfg.vocab_file, "do_lower_case": cfg.do_lower_case,
              "strip_accents": cfg.strip_accents, "max_seq_length": cfg.max_seq_length,
              "seed": seed, "mode": cfg.mode, "blanks_separate_docs": cfg.blanks_separate_docs}
  names = input_names(paths)
  _let_workers_import_the_package()
  try:
    pipeline = _pipeline(options, [(p, names[p]) for p in paths], settings, shard_prefix,
                         cfg.num_shards, FileSystems.join(tmp_dir, "report.jsonl"))
    result = _run_to_the_end(pipeline, runner, cfg.output_dir)
    stats = _read_report(FileSystems.join(tmp_dir, "report.jsonl"))
    require_examples(cfg, stats, len(paths))
    finals = shard_names(cfg.output_dir, cfg.num_shards)
    temps = [f"{shard_prefix}-{i}-of-{cfg.num_shards}" for i in range(cfg.num_shards)]
    notes += install_shards(cfg.output_dir, temps, finals, files=_BeamFiles)
  finally:
    _remove_tree(tmp_dir)
  if stats.examples < cfg.num_shards:
    notes.append(f"only {stats.examples} examples for {cfg.num_shards} shards: many shards are "
                 "empty; a smaller --num-shards suits a small corpus")
  sizes = [(p, found[p].size_in_bytes if p in found else 0) for p in paths]
  summary = Summary(config=cfg, stats=stats, seed=seed, seconds=time.time() - start,
                    shards=finals, input_files=len(paths),
                    input_bytes=sum(size for _, size in sizes), notes=notes,
                    where=f"Beam, {runner} (work: the inputs' time summed over the workers)")
  mtimes = {p: found[p].last_updated_in_seconds if p in found else -1 for p in paths}
  info = build_info(summary, vocab_size, vocab_sha256, inputs_fingerprint(sizes, mtimes.get),
                    runner=runner)
  write_text_atomic(os.path.join(cfg.output_dir, INFO_FILE),
                    json.dumps(info, indent=1, sort_keys=True) + "\n")
  _log_summary(summary, result, log)
  return summary


def _checked_vocab(cfg: BuildConfig) -> Tuple[int, str]:
  """The vocab (read through a local copy) validated: its size and its file's sha256."""
  with tempfile.TemporaryDirectory(prefix="electra-vocab-") as vocab_dir:
    local_vocab = _local_vocab(cfg.vocab_file, vocab_dir)
    vocab = load_vocab(local_vocab, cfg.expected_vocab_size)
    special_token_ids(vocab)
    return len(vocab), file_sha256(local_vocab)


def _let_workers_import_the_package() -> None:
  """The DirectRunner's multi_processing workers import this module and electra_tf2."""
  os.environ["PYTHONPATH"] = os.pathsep.join(
      [PACKAGE_PARENT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])


def _run_to_the_end(pipeline, runner: str, output_dir: str):
  """Runs the pipeline and waits for it; its result. A failed run raises DataPrepError."""
  try:
    result = pipeline.run()
    state = result.wait_until_finish()
  except Exception as e:  # pylint: disable=broad-except
    if os.environ.get("ELECTRA_DEBUG"):
      traceback.print_exc()
    raise DataPrepError(f"the Beam job on the {runner} failed ({_root_cause(e)}); nothing in "
                        f"{output_dir} was changed") from None
  if state != PipelineState.DONE:
    raise DataPrepError(f"the Beam job on the {runner} ended {state}; nothing in "
                        f"{output_dir} was changed")
  return result


def _log_summary(summary: Summary, result, log: Callable[[str], None]) -> None:
  """The summary's lines, then the job's counters where the runner reports them."""
  for line in summary.lines():
    log(line)
  counters = _counters(result)
  if counters is not None:
    log(counter_line(counters))


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
      description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
      epilog="Every other flag is passed to Beam as a pipeline option.")
  parser.add_argument("--corpus-glob", action="append", default=[],
                      help="Text files, a Beam pattern: * within a folder, ** across folders, "
                           "e.g. 'gs://bucket/corpus/**' (repeatable).")
  parser.add_argument("--corpus-dir", action="append", default=[],
                      help="The text files directly in this folder (repeatable).")
  parser.add_argument("--archives-glob", action="append", default=[],
                      help="Tar archives of documents, as the OpenWebText builder reads them: "
                           "each member is one document (repeatable).")
  add_vocab_and_output_flags(parser)
  add_blanks_flags(parser)
  add_example_flags(parser)
  parser.add_argument("--runner", default="DirectRunner",
                      help="DirectRunner (default), DataflowRunner, FlinkRunner, SparkRunner, or "
                           "any other Beam runner.")
  return parser


def main(argv=None) -> int:
  parser = build_parser()
  args, pipeline_args = parser.parse_known_args(argv)
  text = [("--corpus-glob", g) for g in args.corpus_glob] + [
      ("--corpus-dir", FileSystems.join(d, "*")) for d in args.corpus_dir]
  archives = [("--archives-glob", g) for g in args.archives_glob]
  if not (text or archives):
    parser.error("give the inputs with --corpus-glob, --corpus-dir or --archives-glob")
  if text and archives:
    parser.error("--archives-glob reads archives of documents: do not mix it with --corpus-*")
  quiet_tensorflow_logs()
  if not os.environ.get("ELECTRA_DEBUG"):
    # A failed worker makes Beam's threads print tracebacks; the error line below says it all.
    threading.excepthook = lambda args: None

  def work():
    inputs, notes = match_inputs(text or archives)
    for note in notes:
      print(f"note: {note}", file=sys.stderr)
    if not inputs:
      raise DataPrepError("no input files found: "
                          + ", ".join(f"{flag} {pattern!r}" for flag, pattern in text or archives)
                          + " matched nothing")
    cfg = BuildConfig(
        inputs=inputs, vocab_file=args.vocab_file, output_dir=args.output_dir,
        max_seq_length=args.max_seq_length, num_shards=args.num_shards, seed=args.seed,
        blanks_separate_docs=args.blanks_separate_docs,
        do_lower_case=args.do_lower_case, strip_accents=args.strip_accents,
        expected_vocab_size=args.expected_vocab_size, mode="archives" if archives else "text",
        progress=False, label="beam_pretraining")
    build_with_beam(cfg, ["--runner", args.runner, *pipeline_args])
  return run_script(work, f"{args.output_dir} was left as it was")
