"""`electra pretrain --backend jax` (issue #40): trains where TensorFlow cannot be imported,
resumes after SIGTERM and kill -9 bit for bit, and every TensorFlow tool reads what it
wrote (two devices against one: tests/test_xla_default_level.py).

The JAX runs are subprocesses with `tensorflow` blocked (tests/block_tensorflow.py); they
share a JAX compilation cache, so only the first compiles the step.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from electra_tf2.checkpoints import portable
from tests.conftest import REPO_ROOT, at_xla_default_level
from tests.test_pretraining import env, tiny_data

HPARAMS = {"debug": True, "vocab_size": 512, "max_seq_length": 32, "train_batch_size": 8,
           "num_warmup_steps": 2, "learning_rate": 2e-3, "num_train_steps": 12,
           "iterations_per_loop": 2, "save_checkpoints_steps": 4,
           "gradient_accumulation_steps": 2, "model_hparam_overrides": {"num_hidden_layers": 1}}


def jax_env(cache: str, devices: int = 1, xla_default: bool = False) -> dict:
  values = dict(env(), KERAS_BACKEND="jax", ELECTRA_BLOCK_TENSORFLOW="1",
                JAX_COMPILATION_CACHE_DIR=cache, JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
                JAX_PLATFORMS="cpu")
  values = at_xla_default_level(values) if xla_default else values
  if devices > 1:
    values["XLA_FLAGS"] = (f"{values.get('XLA_FLAGS', '')} "
                           f"--xla_force_host_platform_device_count={devices}").strip()
  return values


def command(data: str, model_dir: str, **hparams) -> list:
  """`electra pretrain --backend jax`, in a Python whose `tensorflow` import fails (HPARAMS,
  `hparams` over them)."""
  script = ("import runpy, sys; sys.path.insert(0, 'tests'); import block_tensorflow; "
            "sys.argv = ['electra'] + sys.argv[1:]; "
            "runpy.run_module('electra_tf2', run_name='__main__')")
  return [sys.executable, "-c", script, "pretrain", "--backend", "jax", "--data-dir", data,
          "--model-name", "electra_small", "--log-every", "1",
          "--hparams", json.dumps(dict(HPARAMS, model_dir=model_dir, **hparams))]


def train(data: str, model_dir: str, cache: str, devices: int = 1, xla_default: bool = False,
          **hparams) -> str:
  result = subprocess.run(command(data, model_dir, **hparams),
                          env=jax_env(cache, devices, xla_default), cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=900)
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
  return result.stdout


def metrics(model_dir: str) -> list:
  with open(os.path.join(model_dir, "train_metrics.jsonl"), encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def accents_kept_data(root) -> str:
  """tiny_data's directory under `root`, described as TFRecords built keeping accents
  (`electra build-data --no-strip-accents`), which the run's tokenizer description must
  follow rather than do_lower_case's default rule."""
  from electra_tf2.text import description  # pylint: disable=g-import-not-at-top
  data = tiny_data(root)
  kept = description.describe_vocab(os.path.join(data, "vocab.txt"), strip_accents=False)
  description.write_description(os.path.join(data, "pretrain_tfrecords"), kept)
  return data


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
  """An uninterrupted 12-step JAX run: (data dir, model dir, stdout, compilation cache)."""
  root = tmp_path_factory.mktemp("jax")
  data = accents_kept_data(root)
  cache = str(root / "jax_cache")
  model_dir = str(root / "whole")
  return data, model_dir, train(data, model_dir, cache), cache


@pytest.mark.slow
def test_trains_without_tensorflow_and_reports(reference):
  _, model_dir, stdout, _ = reference
  steps = [line for line in stdout.splitlines() if line.startswith("step ")]
  assert len(steps) == 12 and steps[-1].startswith("step 12/12 (100.0%)")
  assert "seq/s" in steps[-1] and "ETA" in steps[-1]
  assert "compiling included" in steps[0] and "compiling" not in " ".join(steps[1:])
  assert [portable.step_of(p) for p in portable.all_checkpoints(model_dir)] == [4, 8, 12]
  rows = metrics(model_dir)
  assert [r["step"] for r in rows] == list(range(1, 13))
  assert rows[-1]["total_loss"] < rows[0]["total_loss"]  # it learns (24 word types)
  assert 0.0 <= rows[-1]["train_metrics/disc_auc"] <= 1.0
  summary = json.load(open(os.path.join(model_dir, "pretrain_summary.json")))
  assert summary["backend"] == "jax" and summary["step"] == 12


@pytest.mark.slow
def test_tensorboard_reads_the_events(reference):
  """TensorFlow's own reader is the oracle of the event files written without it."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  _, model_dir, _, _ = reference
  directory = os.path.join(model_dir, "train")
  (events,) = [os.path.join(directory, n) for n in os.listdir(directory)]
  scalars = {}
  for event in tf.compat.v1.train.summary_iterator(events):
    for value in event.summary.value:
      scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
  assert [step for step, _ in scalars["total_loss"]] == list(range(1, 13))
  loss_12 = metrics(model_dir)[-1]["total_loss"]
  assert scalars["total_loss"][-1][1] == pytest.approx(loss_12, rel=1e-6)
  assert "train_metrics/masked_lm_accuracy" in scalars and "learning_rate" in scalars


def assert_same_checkpoint(a: str, b: str) -> None:
  arrays_a, state_a = portable.load(portable.latest(a))
  arrays_b, state_b = portable.load(portable.latest(b))
  assert arrays_a.keys() == arrays_b.keys() and len(arrays_a) > 100
  different = [k for k in arrays_a if not np.array_equal(arrays_a[k], arrays_b[k])]
  assert not different, different[:5]
  assert state_a["keras_state"] == state_b["keras_state"]
  assert state_a["reader"] == state_b["reader"]


@pytest.mark.slow
def test_sigterm_then_kill_9_then_resume_is_bit_identical(reference, tmp_path):
  data, whole, _, cache = reference
  parts = str(tmp_path / "parts")
  # SIGTERM once training is under way: the run saves and exits 0.
  process = subprocess.Popen(command(data, parts), env=jax_env(cache), cwd=REPO_ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
  for line in process.stdout:
    if line.startswith("step 3/"):
      break
  process.send_signal(signal.SIGTERM)
  rest = process.stdout.read()
  assert process.wait(timeout=300) == 0 and "saving a checkpoint and stopping" in rest
  stopped = json.load(open(os.path.join(parts, "pretrain_summary.json")))
  assert stopped["stopped_early"] and 3 <= stopped["saved_step"] < 12
  # kill -9 once the resumed run is training; the run lock of the dead run is taken over.
  process = subprocess.Popen(command(data, parts), env=jax_env(cache), cwd=REPO_ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
  for line in process.stdout:
    if line.startswith("step "):
      break
  time.sleep(0.5)
  process.send_signal(signal.SIGKILL)
  process.wait(timeout=60)
  final = train(data, parts, cache)
  assert "resumed from" in final
  assert_same_checkpoint(whole, parts)


@pytest.mark.slow
def test_every_tensorflow_tool_reads_the_jax_model_directory(reference, tmp_path):
  """Weights restored on TensorFlow equal the portable checkpoint's; conversion, export and
  continued pre-training on TensorFlow start from them."""
  from electra_tf2.models import model_directory
  from electra_tf2.networks import variable_names
  from electra_tf2.conversion import convert, hf_export
  from electra_tf2.config.pretraining import resolve_pretraining_config
  from electra_tf2.training import tf_pretraining as pretraining
  data, whole, _, _ = reference
  arrays, _ = portable.load(portable.latest(whole))
  model = model_directory.restore_pretrainer(whole)
  for name, variable in variable_names.pretrainer_variable_map(model).items():
    np.testing.assert_array_equal(variable.numpy(), arrays[name])
  prefix = convert.export_official_checkpoint(whole, str(tmp_path / "official"))
  assert prefix.endswith("model.ckpt-12")
  hf_export.main(["--model-dir", whole, "--output-dir", str(tmp_path / "hf")])
  assert os.path.exists(tmp_path / "hf" / "model.safetensors")
  # Continued pre-training on TensorFlow from step 12 (the directory copied, without the
  # tokenizer description, which the TensorFlow trainer writes afresh).
  import shutil  # pylint: disable=g-import-not-at-top
  continued = str(tmp_path / "continued")
  shutil.copytree(whole, continued)
  os.remove(os.path.join(continued, "tokenizer_description.json"))
  config = resolve_pretraining_config("electra_small", data, dict(
      HPARAMS, model_dir=continued, num_train_steps=14, save_checkpoints_steps=2))
  result = pretraining.run_pretraining(config)
  assert result["step"] == 14 and np.isfinite(result["final_losses"]["total_loss"])
  # The JAX run described its tokenizer as the TensorFlow trainer does: lower case, the
  # accents kept as the TFRecords were built, 512 words, the vocabulary beside it.
  names = [os.path.join(d, "tokenizer_description.json") for d in (whole, continued)]
  jax_side, tf_side = (json.load(open(name, encoding="utf-8")) for name in names)
  assert jax_side == tf_side
  assert {k: jax_side[k] for k in ("kind", "vocab_file", "vocab_size", "do_lower_case",
                                   "strip_accents")} == {
      "kind": "wordpiece", "vocab_file": "vocab.txt", "vocab_size": 512, "do_lower_case": True,
      "strip_accents": False}
  # Its config is saved as the TensorFlow trainer saves one (directories.write_config): the
  # vocabulary copied in, so that the directory can move to another machine (a GPU run's,
  # fetched back).
  saved = json.load(open(os.path.join(whole, "pretrain_config.json"), encoding="utf-8"))
  assert saved["vocab_file"] == "vocab.txt" and os.path.isfile(os.path.join(whole, "vocab.txt"))


QUEUED = """
import json, sys
sys.path.insert(0, "tests")
import block_tensorflow
import jax
from electra_tf2.config.pretraining import resolve_pretraining_config
from electra_tf2.data_io.pretraining import PretrainingDataReader
from electra_tf2.training.jax_pretraining import JaxPretrainingRun
from electra_tf2.training.options import RunOptions
config = resolve_pretraining_config("electra_small", sys.argv[1], json.loads(sys.argv[2]))
run = JaxPretrainingRun(config, RunOptions(backend="jax"))
reader = PretrainingDataReader(config.pretrain_tfrecords, config.max_seq_length,
                               config.train_batch_size, seed=0)
batch = run.put(next(reader))
state, losses, _ = run.step(run.state(), batch, 0)
jax.block_until_ready(state)  # compiled
queued = []
for step in range(1, 4):
  state, losses, _ = run.step(state, batch, step)  # the loop's own reference goes
  queued.append(not losses["total_loss"].is_ready())
  jax.block_until_ready(losses)
print(json.dumps(queued))
"""


@pytest.mark.slow
def test_the_host_goes_on_while_the_step_runs(reference, tmp_path):
  """`JaxPretrainingRun.step` returns with its step still running, though the caller drops
  the state the step took (donated): dropping it at once would wait for the step to end
  (the host then idle at every step's end, the devices while it takes the next batch)."""
  data, _, _, cache = reference  # the reference run's program: compiled in its cache
  hparams = dict(HPARAMS, model_dir=str(tmp_path / "m"))
  result = subprocess.run([sys.executable, "-c", QUEUED, data, json.dumps(hparams)],
                          env=jax_env(cache), cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  assert json.loads(result.stdout.strip().splitlines()[-1]) == [True] * 3


@pytest.mark.slow
def test_the_discriminator_of_a_jax_run_loads_on_jax_as_on_tensorflow(reference):
  """`Discriminator.from_pretrained` of the JAX run's directory (its portable checkpoint),
  on JAX without TensorFlow, predicts what the same call predicts on TensorFlow."""
  import electra_tf2  # pylint: disable=g-import-not-at-top
  _, whole, _, cache = reference
  texts = ["w1 w2 w3 w4", "w5 w6"]
  script = ("import json, sys; sys.path.insert(0, 'tests'); import block_tensorflow; "
            "import numpy as np, electra_tf2; "
            f"out = electra_tf2.Discriminator.from_pretrained({whole!r}).predict({texts!r}); "
            "print(json.dumps({k: np.asarray(v).tolist() for k, v in out.items()}))")
  result = subprocess.run([sys.executable, "-c", script], env=jax_env(cache), cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  on_jax = json.loads(result.stdout.strip().splitlines()[-1])
  on_tf = electra_tf2.Discriminator.from_pretrained(whole).predict(texts)
  assert on_jax.keys() == on_tf.keys()
  for key, value in on_tf.items():
    np.testing.assert_allclose(np.asarray(on_jax[key]), np.asarray(value), rtol=1e-5,
                               atol=1e-5, err_msg=key)
