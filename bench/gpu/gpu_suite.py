"""The GPU measurements as one resumable list of items (scripts/gpu_run.sh runs it).

    python -m bench.gpu.gpu_suite --out DIR [--backend tensorflow|jax] [--dry] [--minutes 9]
        [--resume FILE] [SELECTION ...]
    python -m bench.gpu.gpu_suite prepare [--dry] [--work-dir .gpu/study]
    python -m bench.gpu.gpu_suite report --out DIR RESULTS.jsonl ...

Each item runs one bench script in a subprocess (a GPU's memory and XLA's caches
start clean, and a failure costs one item) and appends one JSON line to
DIR/results.jsonl as soon as it ends, so a call cut short keeps what it
measured. SELECTION names items by key prefix (`pretrain`, `pretrain:base128`,
`numerics`; default: every item); items already ok in DIR/results.jsonl or in
--resume FILE are skipped, and an item that would start with too little of
--minutes left is recorded as skipped. DIR also gets run.log (every
subprocess's output) and results.md (bench/gpu/gpu_report.py) after every item.

`prepare` runs here, on the CPU, before the device call: the paper-small study's
data (BERT vocab, length-128 TFRecords of the shared corpus and the tasks'
training text) into --work-dir, which travels with the call (`carry`).

`--dry` runs every item on the CPU with tiny sizes and a data set of its own,
to test the whole run before GPU time is spent on it.

`--backend jax` runs the items of the JAX trainer instead, for a machine
with JAX and PyTorch but no TensorFlow: env, the pre-training step's throughput
(bench/gpu/jax_pretrain_step.py) beside transformers' RTD step (bench/gpu/hf_rtd_step.py)
per model, length and precision, the bf16 against float32 numerics, the
paper-small projection and electra_base at length 512; and, with `.gpu/language` made
by `bench/studies/language_gpu.py carry`, the language study's pre-training (`language`). Its
items import no TensorFlow (ELECTRA_BLOCK_TENSORFLOW=1 makes sure); only `language`
needs data made before the call.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, Iterator, List, Optional

from bench import common
from bench.gpu import gpu_report
from bench.studies import language_gpu

# Dense bfloat16 tensor-core peaks (TFLOP/s, vendor datasheets) by nvidia-smi name.
DENSE_BF16_PEAKS = {"H100 80GB HBM3": 989.4, "H100 SXM": 989.4, "H200": 989.4,
                    "H100 PCIe": 756.0, "H100 NVL": 835.0, "A100": 312.0}
# (name, our precision, XLA, Model Garden's setting: None = not run, else its XLA flag)
PRECISIONS = [("bf16_xla", "mixed_bfloat16", True, True),
              ("f32", "float32", False, False),
              ("bf16", "mixed_bfloat16", False, None)]


@dataclasses.dataclass
class Sizes:
  """What each item measures: the GPU run's sizes, or the dry run's."""
  pretrain: List[tuple]  # (key, model name, hparams, length, largest batch tried)
  steps: int
  rounds: int
  peak_size: int
  profile: tuple  # (model name, hparams, batch, length)
  numerics: Dict[str, Any]  # model, hparams, steps, log_every
  study_flags: List[str]
  finetune: Dict[str, Any]  # model_size, hparams, seq_len, batch_size
  inference_flags: List[str]


GPU = Sizes(
    pretrain=[("base128", "electra_base", {}, 128, 256),
              ("small128", "electra_small", {}, 128, 256),
              ("base512", "electra_base", {}, 512, 128)],
    steps=20, rounds=3, peak_size=8192,
    profile=("electra_base", {}, 256, 128),
    numerics={"model": "electra_small", "hparams": {}, "steps": 300, "log_every": 10},
    study_flags=[],
    finetune={"model_size": "base", "hparams": {}, "seq_len": 384, "batch_size": 32},
    inference_flags=["--models", "electra_small,electra_base", "--batch-size", 32])
DRY_MODEL = {"debug": True}
DRY = Sizes(
    pretrain=[("base128", "electra_base", DRY_MODEL, 32, 8),
              ("small128", "electra_small", DRY_MODEL, 32, 8),
              ("base512", "electra_base", DRY_MODEL, 64, 4)],
    steps=2, rounds=1, peak_size=256,
    profile=("electra_base", DRY_MODEL, 4, 32),
    numerics={"model": "electra_small",
              "hparams": {**DRY_MODEL, "train_batch_size": 4, "max_seq_length": 32},
              "steps": 4, "log_every": 2},
    study_flags=["--max-seq-length", "32", "--budget", "2e10", "--pretrain-hparams",
                 json.dumps({**DRY_MODEL, "train_batch_size": 4, "iterations_per_loop": 2})],
    finetune={"model_size": "small", "hparams": DRY_MODEL, "seq_len": 128, "batch_size": 2},
    inference_flags=["--models", "electra_small", "--batch-size", 4, "--rounds", 1,
                     "--latency-texts", 4, "--throughput-texts", 8])


@dataclasses.dataclass
class JaxSizes:
  """What the JAX backend's items measure: the GPU run's sizes, or the dry run's."""
  throughput: List[tuple]  # (key, model name, hparams, length, largest batch tried)
  precisions: List[tuple]  # (name, --mixed-precision)
  steps: int
  rounds: int
  numerics: Dict[str, Any]  # model, hparams, seq_len, batch, steps, log_every
  projection: Dict[str, Any]  # model, hparams, seq_len, batch
  profiles: List[tuple]  # bf16 steps traced (key, model, hparams, length, batch)
  levers: tuple  # (model, hparams, length, batch): the bf16 step with each of LEVERS
  late: List[tuple]  # throughput rows run last, if time remains (key, model, hparams, ...)
  embgrad: List[tuple]  # the word-embedding gradient alone (key, batch, length, width)
  attention: List[tuple]  # the attention block alone (key, batch, length, heads, head size)
  language: Dict[str, Any]  # the language study's pre-training (bench/studies/language_gpu.py)
  feed: Dict[str, Any]  # the trainer's feed against its step (bench/training/jax_feed.py)
  # the trainer itself against its step and reader (bench/training/reader_trainer.py):
  # (key, hparams, length, batch, steps, log every)
  trainer: List[tuple] = dataclasses.field(default_factory=list)
  base_levers: tuple = ()  # (model, hparams, length, batch): the step with BASE_LEVERS


JAX_GPU = JaxSizes(
    throughput=[("base128", "electra_base", {}, 128, 512),
                ("small128", "electra_small", {}, 128, 1024)],
    precisions=[("bf16", "mixed_bfloat16"), ("f32", "float32")],
    steps=20, rounds=3,
    numerics={"model": "electra_small", "hparams": {}, "seq_len": 128, "batch": 128,
              "steps": 300, "log_every": 10},
    projection={"model": "electra_small", "hparams": {}, "seq_len": 128, "batch": 128},
    profiles=[("small1024", "electra_small", {}, 128, 1024),
              ("small128", "electra_small", {}, 128, 128),
              ("base512", "electra_base", {}, 128, 512)],
    levers=("electra_small", {}, 128, 1024),
    late=[("base512", "electra_base", {}, 512, 128)],
    embgrad=[("small1024", 1024, 128, 128), ("base512", 512, 128, 768)],
    attention=[("base512", 512, 128, 12, 64), ("small1024", 1024, 128, 4, 64)],
    language={"steps": 10000, "flags": [], "min_seconds": 150, "later": 250},
    feed={"hparams": {"vocab_size": 8000}, "seq_len": 64, "batch": 128, "seconds": 10,
          "trainer_steps": 2000},
    trainer=[("small128", {}, 128, 128, 1500, 250),
             ("small64", {"vocab_size": 8000}, 64, 128, 2000, 250)],
    base_levers=("electra_base", {}, 128, 512))
DRY_JAX_MODEL = {"debug": True, "vocab_size": 1100}
JAX_DRY = JaxSizes(
    throughput=[("base128", "electra_base", DRY_JAX_MODEL, 32, 4),
                ("small128", "electra_small", DRY_JAX_MODEL, 32, 4)],
    precisions=[("bf16", "mixed_bfloat16"), ("f32", "float32")],
    steps=2, rounds=1,
    numerics={"model": "electra_small", "hparams": DRY_JAX_MODEL, "seq_len": 32, "batch": 4,
              "steps": 6, "log_every": 3},
    projection={"model": "electra_small", "hparams": DRY_JAX_MODEL, "seq_len": 32,
                "batch": 4},
    profiles=[("small4", "electra_small", DRY_JAX_MODEL, 32, 4)],
    levers=("electra_small", DRY_JAX_MODEL, 32, 4),
    late=[("base512", "electra_base", DRY_JAX_MODEL, 64, 2)],
    embgrad=[("small4", 4, 32, 16)],
    attention=[("small4", 4, 32, 2, 8)],
    language={"steps": 4, "flags": ["--dry"], "min_seconds": 30, "later": 60},
    feed={"hparams": {"debug": True, "vocab_size": 8000}, "seq_len": 64, "batch": 4,
          "seconds": 1, "trainer_steps": 4},
    trainer=[("small128", DRY_JAX_MODEL, 32, 4, 4, 2)],
    base_levers=("electra_base", DRY_JAX_MODEL, 32, 4))


# What the JAX step's bf16 throughput is re-measured with, one at a time, against the
# same step without it in the same call: (name, environment, hparams).
LEVERS = (  # (name, environment, hparams, flags of bench/gpu/jax_pretrain_step.py)
    ("baseline", {}, {}, ()),
    ("no_triton_gemm", {"XLA_FLAGS": "--xla_gpu_enable_triton_gemm=false"}, {}, ()),
    ("no_dropout", {}, {"model_hparam_overrides": {"hidden_dropout_prob": 0.0,
                                                   "attention_probs_dropout_prob": 0.0}}, ()),
    ("philox_dropout", {}, {}, ("--dropout-bits", "philox")),
)
NO_COMMAND_BUFFER = {"XLA_FLAGS": "--xla_gpu_enable_command_buffer="}
# Issue 59 items 2-4 on electra_base (the step against transformers'): cuDNN's fused
# attention with its dropout (command buffers off: inside one that kernel stopped XLA, and
# on), the vocabulary padded to 64, the baseline with command buffers off, and XLA's flags
# one at a time.
BASE_LEVERS = (
    ("base_baseline", {}, {}, ()),
    ("base_cudnn_attention", NO_COMMAND_BUFFER, {}, ("--attention-kernel", "cudnn")),
    ("base_cudnn_command_buffer", {}, {}, ("--attention-kernel", "cudnn")),
    ("base_vocab_pad_64", {}, {"vocab_pad_multiple": 64}, ()),
    ("base_no_command_buffer", NO_COMMAND_BUFFER, {}, ()),
    ("base_cudnn_layer_norm", {"XLA_FLAGS": "--xla_gpu_enable_cudnn_layer_norm=true"}, {}, ()),
    ("base_cublaslt", {"XLA_FLAGS": "--xla_gpu_enable_cublaslt=true"}, {}, ()),
    ("base_cudnn_gemm_fusion", {"XLA_FLAGS": "--xla_gpu_cudnn_gemm_fusion_level=2"}, {}, ()),
)


@dataclasses.dataclass
class Item:
  """One measurement: a bench script, run with `json_flag FILE` (read back as its result)
  or, with json_flag None, whatever `reader` returns after it."""
  key: str
  command: List[str]
  json_flag: Optional[str] = "--json"
  reader: Optional[Callable[[], List[Dict[str, Any]]]] = None
  keep_output: bool = False  # the record keeps the end of the output (tables it prints)
  min_seconds: float = 60.0  # not started with less time left
  time_flag: Optional[str] = None  # gets the minutes left, less `reserve` seconds
  reserve: float = 0.0
  ok_codes: tuple = (0,)
  needs: Optional[str] = None  # a file the item reads, made before the call
  needs_hint: str = "run `bash scripts/gpu_run.sh prepare` before the call and carry .gpu"
  needs_module: Optional[str] = None  # a module it imports that may not be installed
  env: Dict[str, str] = dataclasses.field(default_factory=dict)  # set for this item only


python = common.bench_command  # an item's command; run_item runs it in common.REPO


def pretrain_items(sizes: Sizes, peak: Optional[float]) -> Iterator[Item]:
  for key, model, hparams, length, top in sizes.pretrain:
    for name, precision, xla, anchor_xla in PRECISIONS:
      flags = ["--model-name", model, "--hparams", json.dumps(hparams), "--seq-len", length,
               "--max-batch", top, "--steps", sizes.steps, "--rounds", sizes.rounds,
               "--mixed-precision", precision, "--peak-size", sizes.peak_size]
      flags += ["--jit-compile"] if xla else []
      flags += ["--skip-model-garden"] if anchor_xla is None else (
          ["--anchor-jit-compile"] if anchor_xla else [])
      flags += ["--peak-tflops", peak] if peak else []
      yield Item(f"pretrain/{key}/{name}", python("bench.training.pretrain_throughput", *flags))


def numerics_items(sizes: Sizes, data_dir: str) -> Iterator[Item]:
  n = sizes.numerics
  runs = [("f32_seed0", "float32", False, 0), ("bf16_xla_seed0", "mixed_bfloat16", True, 0),
          ("f32_seed1", "float32", False, 1), ("bf16_xla_seed1", "mixed_bfloat16", True, 1)]
  for name, precision, xla, seed in runs:
    yield Item(f"numerics/{name}", python(
        "bench.training.pretrain_numerics", "--data-dir", data_dir, "--model-name", n["model"],
        "--hparams", json.dumps(n["hparams"]), "--steps", n["steps"], "--seed", seed,
        "--log-every", n["log_every"], "--mixed-precision", precision,
        *(["--jit-compile"] if xla else [])), needs=os.path.join(data_dir, "vocab.txt"))


def study_item(sizes: Sizes, work_dir: str, dry: bool) -> Item:
  """A chunk of the paper-small pre-training as long as the time left allows (the study
  exits 3 at its --time-limit, after finishing its compiled loop of 500 steps and saving);
  its pretrain_summary.json is the result."""
  return Item("study/paper-small", python(
      "bench.studies.pretraining_study", "--preset", "paper-small", "--work-dir", work_dir,
      "--stages", "pretrain", "--objectives", "electra_0.25", *sizes.study_flags),
      json_flag=None, reader=lambda: study_summaries(work_dir),
      min_seconds=60 if dry else 180, time_flag="--time-limit", reserve=20 if dry else 120,
      ok_codes=(0, 3), needs=os.path.join(work_dir, "vocab.txt"))


def study_summaries(work_dir: str) -> List[Dict[str, Any]]:
  """The pretrain_summary.json of each study model, with its batch size."""
  import glob
  records = []
  for path in sorted(glob.glob(os.path.join(work_dir, "models", "*", "pretrain_summary.json"))):
    # model_directory.PRETRAIN_CONFIG_FILE (not imported: this process stays without TF)
    config_path = os.path.join(os.path.dirname(path), "pretrain_config.json")
    batch = gpu_report.read_records(config_path)[0]["train_batch_size"]
    records.append({**gpu_report.read_records(path)[0], "train_batch_size": batch})
  return records


def finetune_items(sizes: Sizes) -> Iterator[Item]:
  f = sizes.finetune
  for name, precision, xla in (("bf16_xla", "mixed_bfloat16", True), ("f32", "float32", False)):
    yield Item(f"finetune/squad{f['seq_len']}/{name}", python(
        "bench.training.finetune_throughput", "--model-size", f["model_size"], "--hparams",
        json.dumps(f["hparams"]), "--seq-len", f["seq_len"], "--batch-size", f["batch_size"],
        "--steps", sizes.steps, "--rounds", sizes.rounds, "--mixed-precision", precision,
        *(["--jit-compile"] if xla else [])))


def items(sizes: Sizes, data_dir: str, peak: Optional[float], dry: bool) -> List[Item]:
  """Every item, most wanted first within each stage; the study last (it takes the time
  that is left)."""
  model, hparams, batch, length = sizes.profile
  profile = Item("profile/base128/bf16_xla", python(
      "bench.profiles.profile_pretrain_step", "--model-name", model, "--hparams", json.dumps(hparams),
      "--batch-size", batch, "--seq-len", length, "--steps", 3, "--top", 15,
      "--mixed-precision", "mixed_bfloat16", "--jit-compile"))
  inference = Item("inference/savedmodel", python("bench.serving.inference_throughput",
                                                  *sizes.inference_flags),
                   json_flag="--output", keep_output=True, needs_module="tensorflow_text")
  return ([Item("env", python("bench.gpu.gpu_env"), min_seconds=10)]
          + list(pretrain_items(sizes, peak)) + [profile]
          + list(finetune_items(sizes)) + list(numerics_items(sizes, data_dir))
          + [inference, study_item(sizes, data_dir, dry)])


def jax_items(sizes: JaxSizes, peak: Optional[float], out: str = "gpu_out") -> List[Item]:
  """The JAX backend's items, most wanted first: env, throughput at length 128 (ours, then
  transformers' step under torch.compile at the same model, length and precision, each at
  the largest batch that fits), numerics, the projection, the traced steps (where the
  device time goes), then length 512."""
  peak_flags = ["--peak-tflops", peak] if peak else []

  def throughput(key, model, hparams, length, top, precisions):
    for name, precision in precisions:
      flags = ["--model-name", model, "--hparams", json.dumps(hparams), "--seq-len", length,
               "--max-batch", top, "--steps", sizes.steps, "--rounds", sizes.rounds,
               "--mixed-precision", precision, *peak_flags]
      yield Item(f"throughput/{key}/{name}/jax", python("bench.gpu.jax_pretrain_step", *flags))
      yield Item(f"throughput/{key}/{name}/hf", python("bench.gpu.hf_rtd_step", *flags,
                                                       "--jit-compile"),
                 needs_module="transformers")
  n, p = sizes.numerics, sizes.projection
  numerics = [Item(f"numerics/{name}", python(
      "bench.gpu.jax_pretrain_step", "--model-name", n["model"], "--hparams", json.dumps(n["hparams"]),
      "--seq-len", n["seq_len"], "--batch-sizes", n["batch"], "--train-steps", n["steps"],
      "--log-every", n["log_every"], "--seed", seed, "--mixed-precision", precision,
      "--attention-kernel", kernel), env=NO_COMMAND_BUFFER if kernel == "cudnn" else {})
      for name, precision, seed, kernel in (("f32_seed0", "float32", 0, "official"),
                                            ("bf16_xla_seed0", "mixed_bfloat16", 0, "official"),
                                            ("f32_seed1", "float32", 1, "official"),
                                            ("bf16_cudnn_seed0", "mixed_bfloat16", 0, "cudnn"))]
  projection = Item("projection/paper-small", python(
      "bench.gpu.jax_pretrain_step", "--model-name", p["model"], "--hparams", json.dumps(p["hparams"]),
      "--seq-len", p["seq_len"], "--batch-sizes", p["batch"], "--steps", sizes.steps,
      "--rounds", sizes.rounds, "--mixed-precision", "mixed_bfloat16", "--split",
      *peak_flags))
  profiles = [Item(f"profile/{key}/bf16", python(
      "bench.gpu.jax_pretrain_step", "--model-name", model, "--hparams", json.dumps(hparams),
      "--seq-len", length, "--batch-sizes", batch, "--steps", sizes.steps, "--rounds", 1,
      "--mixed-precision", "mixed_bfloat16", "--profile", 3, "--profile-dir",
      os.path.join(out, "traces", key), *peak_flags), keep_output=True)
      for key, model, hparams, length, batch in sizes.profiles]
  levers = lever_items(sizes, sizes.levers, LEVERS, peak_flags)
  levers += lever_items(sizes, sizes.base_levers, BASE_LEVERS, peak_flags)
  embgrad = [Item(f"embgrad/{key}", python(
      "bench.gpu.embedding_grad", "--batch", batch, "--seq-len", length, "--width", width),
      keep_output=True, min_seconds=30) for key, batch, length, width in sizes.embgrad]
  attention = [Item(f"attention/{key}", python(
      "bench.gpu.attention_ways", "--batch", batch, "--seq-len", length, "--heads", heads,
      "--head-size", size), keep_output=True, min_seconds=30)
      for key, batch, length, heads, size in sizes.attention]
  cudnn_dropout = Item("cudnn/dropout_masks", python("bench.gpu.cudnn_dropout"),
                       keep_output=True, min_seconds=30, env=NO_COMMAND_BUFFER)
  early = [i for t in sizes.throughput for i in throughput(*t, sizes.precisions)]
  late = [i for t in sizes.late for i in throughput(*t, sizes.precisions[:1])]
  return ([Item("env", python("bench.gpu.gpu_env", "--backend", "jax"), min_seconds=10)]
          + early + numerics + [projection] + profiles + levers + embgrad + attention + late
          + list(language_items(sizes.language, out)) + [feed_item(sizes.feed)]
          + list(trainer_items(sizes.trainer)) + [cudnn_dropout])


def lever_items(sizes: JaxSizes, shape: tuple, levers: tuple, peak_flags: List
                ) -> List[Item]:
  """The bf16 step at `shape` (model, hparams, length, batch) with each of `levers`."""
  if not shape:
    return []
  model, base_hparams, length, batch = shape
  return [Item(f"lever/{name}", python(
      "bench.gpu.jax_pretrain_step", "--model-name", model,
      "--hparams", json.dumps({**base_hparams, **hparams}), "--seq-len", length,
      "--batch-sizes", batch, "--steps", sizes.steps, "--rounds", sizes.rounds,
      "--mixed-precision", "mixed_bfloat16", *peak_flags, *flags), env=env)
      for name, env, hparams, flags in levers]


def trainer_items(trainers: List[tuple]) -> Iterator[Item]:
  """`electra pretrain --backend jax` itself against its step and its reader, bf16, on
  synthetic TFRecords it writes (no data carried)."""
  for key, hparams, length, batch, steps, every in trainers:
    yield Item(f"trainer/{key}", python(
        "bench.training.reader_trainer", "--hparams", json.dumps(hparams), "--seq-len", length,
        "--batch", batch, "--steps", steps, "--log-every", every, "--no-tf-data",
        "--mixed-precision", "mixed_bfloat16"), keep_output=True, min_seconds=90)


LANGUAGE_HINT = ("run `python -m bench.studies.language_gpu carry` before the call and carry "
                 ".gpu")


def language_records(kind: str) -> str:
  """The carried TFRecords of one vocabulary kind (bench/studies/language_gpu.py carry)."""
  return os.path.join(common.REPO, language_gpu.CARRY_DIR, kind, "pretrain_tfrecords")


def feed_item(feed: Dict[str, Any]) -> Item:
  """The trainer's feed (the pure-Python reader, the loop) against its step alone, on the
  language study's carried WordPiece TFRecords (length 64, an 8000-word vocabulary)."""
  records = language_records("wordpiece")
  return Item("feed/language64", python(
      "bench.training.jax_feed", "--data", os.path.join(records, "pretrain_data.tfrecord-*"),
      "--hparams", json.dumps(feed["hparams"]), "--seq-len", feed["seq_len"],
      "--batch", feed["batch"], "--seconds", feed["seconds"],
      "--trainer-steps", feed["trainer_steps"]), keep_output=True, min_seconds=150,
      needs=os.path.join(records, "tokenizer_description.json"),
      needs_hint=LANGUAGE_HINT)


def language_items(language: Dict[str, Any], out: str) -> Iterator[Item]:
  """The language study's pre-training on each vocabulary kind: its
  weights come back as language-<n>.npz in `out`. Each kind but the last leaves
  language["later"] seconds of its time to the next."""
  kinds = language_gpu.KINDS
  for i, kind in enumerate(kinds):
    reserve = language["later"] * (len(kinds) - 1 - i) + 10
    yield Item(f"language/{kind}", python(
        "bench.studies.language_gpu", "pretrain", "--kind", kind, "--out", out, "--steps",
        language["steps"], *language["flags"]), time_flag="--time-limit", reserve=reserve,
        min_seconds=language["min_seconds"] + reserve,
        needs=os.path.join(language_records(kind), "tokenizer_description.json"),
        needs_hint=LANGUAGE_HINT)


def selected(all_items: List[Item], selection: List[str]) -> List[Item]:
  """The items named by `selection` (key prefixes), run in the selection's order."""
  if not selection:
    return all_items
  prefixes = [s.replace(":", "/") for s in selection]
  chosen: List[Item] = []
  for p in prefixes:
    chosen += [i for i in all_items if (i.key == p or i.key.startswith(p + "/"))
               and i not in chosen]
  unknown = [p for p in prefixes if not any(i.key == p or i.key.startswith(p + "/")
                                            for i in all_items)]
  if unknown:
    raise SystemExit(f"error: no item is named {', '.join(unknown)}; items: "
                     f"{', '.join(sorted({i.key.split('/')[0] for i in all_items}))} "
                     "(or a longer key, e.g. pretrain:base128)")
  return chosen


# ---------------------------------------------------------------------------
# Running items
# ---------------------------------------------------------------------------


def script_of(command: List[str]) -> str:
  """The file a command runs: the module file of `python -m bench.group.name`, else
  `python FILE`'s FILE."""
  if command[1] == "-m":
    return os.path.join(common.REPO, *command[2].split(".")) + ".py"
  return command[1]


def skip_reason(item: Item, remaining: float) -> Optional[str]:
  script = script_of(item.command)
  if not os.path.exists(script):
    return f"{os.path.relpath(script, common.REPO)} is not in this tree"
  if item.needs_module and importlib.util.find_spec(item.needs_module) is None:
    return f"{item.needs_module} is not installed"
  if item.needs and not os.path.exists(item.needs):
    return f"no {item.needs}: {item.needs_hint}"
  if remaining < item.min_seconds:
    return f"{remaining:.0f} s left of --minutes, under the item's {item.min_seconds:.0f} s"
  return None


def run_item(item: Item, remaining: float, log_path: str, env: Dict[str, str]
             ) -> Dict[str, Any]:
  """Runs `item` for at most `remaining` seconds; its result record."""
  reason = skip_reason(item, remaining)
  if reason:
    return {"key": item.key, "status": "skipped", "reason": reason}
  with tempfile.TemporaryDirectory() as tmp:
    command = list(item.command)
    result_file = os.path.join(tmp, "result.json")
    command += [item.json_flag, result_file] if item.json_flag else []
    if item.time_flag:
      command += [item.time_flag, f"{max(0.5, (remaining - item.reserve) / 60):.2f}"]
    output = os.path.join(tmp, "output.txt")
    start = time.time()
    with open(output, "w", encoding="utf-8") as out:
      process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                 cwd=common.REPO, env=item_env(env, item))
      try:
        code = process.wait(timeout=remaining)
      except subprocess.TimeoutExpired:
        process.kill()
        code = process.wait()
        code = "timeout"
    with open(output, encoding="utf-8", errors="replace") as f:
      lines = f.read().splitlines()
    with open(log_path, "a", encoding="utf-8") as log:
      log.write(f"===== {item.key}: {' '.join(command)}\n" + "\n".join(lines) + "\n")
    status = "ok" if code in item.ok_codes else ("timeout" if code == "timeout" else "failed")
    record = {"key": item.key, "status": status, "returncode": code,
              "seconds": round(time.time() - start, 1), "data": item_data(item, result_file)}
    if status != "ok" or not record["data"] or item.keep_output:
      record["output_tail"] = lines[-40:]
    if status != "ok":
      record["error"] = first_error(lines)
    return record


def first_error(lines: List[str]) -> Optional[str]:
  """The line that says why an item failed: the first fatal check, Python error or error
  message in its output (a crash's last 40 lines can be stack addresses alone)."""
  return next((line.strip() for line in lines
               if re.match(r"F\d{4} .*Check failed|[\w.]*(Error|Exception)\b|error:",
                           line.strip())), None)


def item_env(env: Dict[str, str], item: Item) -> Dict[str, str]:
  """`env` with the item's variables; XLA_FLAGS are appended to, not replaced."""
  merged = {**env, **item.env}
  if item.env.get("XLA_FLAGS") and env.get("XLA_FLAGS"):
    merged["XLA_FLAGS"] = f"{env['XLA_FLAGS']} {item.env['XLA_FLAGS']}"
  return merged


def item_data(item: Item, result_file: str) -> List[Dict[str, Any]]:
  if item.reader:
    return item.reader()
  return gpu_report.read_records(result_file) if os.path.exists(result_file) else []


def gpu_name() -> Optional[str]:
  """The first GPU's name from nvidia-smi, or None."""
  try:
    out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
  except (OSError, subprocess.SubprocessError):
    return None
  return out.splitlines()[0].strip() if out.strip() else None


def dense_bf16_peak(name: Optional[str]) -> Optional[float]:
  """The datasheet dense bf16 TFLOP/s of a GPU named `name`, if known."""
  for part, peak in DENSE_BF16_PEAKS.items():
    if name and part in name:
      return peak
  return None


def child_env(dry: bool, backend: str = "tensorflow") -> Dict[str, str]:
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")
  env["PYTHONPATH"] = os.pathsep.join(p for p in (common.REPO, os.environ.get("PYTHONPATH"))
                                      if p)
  if dry:
    env["CUDA_VISIBLE_DEVICES"] = ""
  if backend == "jax":
    env.update(KERAS_BACKEND="jax", ELECTRA_BLOCK_TENSORFLOW="1", USE_TF="0")
    if not dry:  # one compilation cache for the call: the trainer items compile twice
      env.update(JAX_COMPILATION_CACHE_DIR=os.path.join(tempfile.gettempdir(), "jax_cache"),
                 JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="1")
    if dry:
      env["JAX_PLATFORMS"] = "cpu"
  return env


def run(args) -> int:
  """Runs the selected items that are not done yet; 0 when every one ended ok."""
  os.makedirs(args.out, exist_ok=True)
  deadline = time.time() + 60 * args.minutes
  results_path = os.path.join(args.out, "results.jsonl")
  done = gpu_report.load_results([p for p in (args.resume, results_path) if p])
  peak = None if args.dry else dense_bf16_peak(gpu_name())
  if args.backend == "jax":
    todo = selected(jax_items(JAX_DRY if args.dry else JAX_GPU, peak, args.out),
                    args.selection)
  else:
    data_dir = args.data_dir or args.work_dir or tempfile.mkdtemp(prefix="gpu_dry_")
    todo = selected(items(DRY if args.dry else GPU, data_dir, peak, args.dry), args.selection)
    if args.dry and any(i.needs and not os.path.exists(i.needs) for i in todo):
      prepare(args, data_dir)
  failures = 0
  for item in todo:
    if done.get(item.key, {}).get("status") == "ok":
      log(f"{item.key}: done earlier")
      continue
    record = run_item(item, deadline - time.time(), os.path.join(args.out, "run.log"),
                      child_env(args.dry, args.backend))
    failures += record["status"] in ("failed", "timeout")
    common.append_json(results_path, record)
    log(f"{item.key}: {record['status']} {record.get('seconds', '')} "
        f"{record.get('reason', '')}".rstrip())
    gpu_report.write(args.out, [p for p in (args.resume, results_path) if p])
  print(open(os.path.join(args.out, "results.md"), encoding="utf-8").read(), flush=True)
  return 1 if failures else 0


def log(message: str) -> None:
  common.log(message, tag="gpu")


# ---------------------------------------------------------------------------
# Data for the numerics and the study
# ---------------------------------------------------------------------------


def fake_shared(path: str) -> str:
  """A stand-in for ../shared/data for dry runs: a corpus of random sentences over 300
  words, that vocab, and a 20-row SST-2."""
  import numpy as np
  rng = np.random.default_rng(0)
  words = [f"w{i}" for i in range(300)]

  def sentence() -> str:
    return " ".join(rng.choice(words, rng.integers(5, 15))) + " ."
  documents = ["\n".join(sentence() for _ in range(8)) for _ in range(40)]
  files = {"corpus/random.txt": "\n\n".join(documents) + "\n",
           "vocab/vocab.txt": "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "."]
                                        + words) + "\n"}
  for split in ("train", "dev"):
    rows = [f"{sentence()}\t{i % 2}" for i in range(20)]
    files[f"glue/SST-2/{split}.tsv"] = "sentence\tlabel\n" + "\n".join(rows) + "\n"
  for name, text in files.items():
    os.makedirs(os.path.dirname(os.path.join(path, name)), exist_ok=True)
    with open(os.path.join(path, name), "w", encoding="utf-8") as f:
      f.write(text)
  return path


def prepare(args, work_dir: str) -> None:
  """Builds the study's paper-small data in `work_dir` (for a dry run: tiny, from a
  generated stand-in of the shared data)."""
  if os.path.exists(os.path.join(work_dir, "vocab.txt")):
    return
  flags = ["--work-dir", work_dir, "--preset", "paper-small", "--stages", "data"]
  if args.dry:
    flags += ["--shared-data", fake_shared(work_dir + "_shared"), "--tasks", "sst",
              "--max-seq-length", "32", "--num-shards", "4"]
  else:
    flags += ["--shared-data", args.shared_data]
  subprocess.run(python("bench.studies.pretraining_study", *flags), check=True, cwd=common.REPO,
                 env=child_env(True))
  size = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(work_dir)
             for f in files if not os.path.islink(os.path.join(d, f)))
  log(f"prepared {work_dir}: {size / 2**20:.1f} MiB")


def parse_args(argv: List[str]) -> argparse.Namespace:
  parser = common.script_parser(__doc__)
  parser.add_argument("--out", default=os.environ.get("OUT", "gpu_out"))
  parser.add_argument("--backend", choices=("tensorflow", "jax"), default="tensorflow",
                      help="jax: the JAX trainer's items, for a machine without TensorFlow")
  parser.add_argument("--dry", action="store_true", help="tiny sizes on the CPU")
  parser.add_argument("--minutes", type=float, default=9.0,
                      help="the time this call may take; items that would not fit are skipped")
  parser.add_argument("--resume", default=None,
                      help="an earlier call's results.jsonl: its ok items are not run again")
  parser.add_argument("--data-dir", default=None,
                      help="the prepared study data (default .gpu/study; dry: its own)")
  parser.add_argument("--work-dir", default=None,
                      help="where `prepare` (or a dry run) builds the data")
  parser.add_argument("--shared-data", default=common.SHARED_DATA)
  parser.add_argument("selection", nargs="*", help="item key prefixes (default: all)")
  args = parser.parse_args(argv)
  if not args.dry and args.data_dir is None and args.backend == "tensorflow":
    args.data_dir = os.path.join(common.REPO, ".gpu", "study")
  return args


def main(argv: Optional[List[str]] = None) -> int:
  argv = sys.argv[1:] if argv is None else argv
  if argv[:1] == ["report"]:
    return gpu_report.main(argv[1:])
  if argv[:1] == ["prepare"]:
    args = parse_args(argv[1:])
    prepare(args, args.work_dir or os.path.join(common.REPO, ".gpu", "study"))
    return 0
  return run(parse_args(argv))


if __name__ == "__main__":
  sys.exit(main())
