"""The GPU run (scripts/gpu_run.sh, bench/gpu/gpu_suite.py): its parts on hand-made inputs, and
a dry run of two items end to end on the CPU (the whole dry run, the inference bench
included, takes many minutes on 2 cores: `bash scripts/gpu_run.sh --dry` runs it by hand)."""

import argparse
import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from bench.gpu import gpu_report
from bench.gpu import gpu_suite
from bench.studies import language_gpu
from bench.studies import pretraining_study
from bench.training.pretrain_throughput import is_out_of_memory, largest_batch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_largest_batch_halves_until_the_step_fits():
  tried = []

  def make_step(batch):
    tried.append(batch)

    def step():
      if batch > 3:
        raise tf.errors.ResourceExhaustedError(None, None, f"OOM when allocating {batch}")
      return tf.constant(float(batch))
    return step
  batch, step = largest_batch(make_step, 16)
  assert (batch, tried, float(step())) == (2, [16, 8, 4, 2], 2.0)


def test_largest_batch_reraises_other_errors():
  def make_step(batch):
    def step():
      raise tf.errors.InvalidArgumentError(None, None, "shapes do not match")
    return step
  with pytest.raises(tf.errors.InvalidArgumentError):
    largest_batch(make_step, 16)


def test_out_of_memory_includes_xla_allocation_failures():
  assert is_out_of_memory(tf.errors.InternalError(
      None, None, "Out of memory while trying to allocate 1.5GiB"))
  assert not is_out_of_memory(tf.errors.InternalError(None, None, "cuBLAS call failed"))


def test_later_ok_result_wins_and_a_later_failure_does_not(tmp_path):
  first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
  first.write_text(json.dumps({"key": "x", "status": "ok", "data": [1]}) + "\n"
                   + json.dumps({"key": "y", "status": "timeout"}) + "\n")
  second.write_text(json.dumps({"key": "x", "status": "failed"}) + "\n"
                    + json.dumps({"key": "y", "status": "ok", "data": [2]}) + "\n")
  results = gpu_report.load_results([str(first), str(second)])
  assert {k: r["status"] for k, r in results.items()} == {"x": "ok", "y": "ok"}
  assert results["x"]["data"] == [1] and results["y"]["data"] == [2]


def test_curve_gap_is_the_mean_absolute_difference_over_common_steps():
  a = {"history": [{"step": 10, "total_loss": 5.0}, {"step": 20, "total_loss": 4.0},
                   {"step": 30, "total_loss": 3.0}]}
  b = {"history": [{"step": 10, "total_loss": 5.5}, {"step": 20, "total_loss": 3.0}]}
  assert gpu_report.curve_gap(a, b) == pytest.approx((0.5 + 1.0) / 2)


def test_selection_by_key_prefix_and_unknown_names():
  items = gpu_suite.items(gpu_suite.GPU, "/data", 989.4, dry=False)
  chosen = gpu_suite.selected(items, ["pretrain:base128", "profile"])
  assert [i.key for i in chosen] == ["pretrain/base128/bf16_xla", "pretrain/base128/f32",
                                     "pretrain/base128/bf16", "profile/base128/bf16_xla"]
  with pytest.raises(SystemExit, match="no item is named pretrain/base1024"):
    gpu_suite.selected(items, ["pretrain:base1024"])


def test_model_garden_runs_beside_f32_and_bf16_xla_only():
  flags = {i.key: i.command for i in gpu_suite.pretrain_items(gpu_suite.GPU, 989.4)}
  assert "--anchor-jit-compile" in flags["pretrain/base128/bf16_xla"]
  assert "--skip-model-garden" not in flags["pretrain/base128/f32"]
  assert "--anchor-jit-compile" not in flags["pretrain/base128/f32"]
  assert "--skip-model-garden" in flags["pretrain/base128/bf16"]
  assert flags["pretrain/base512/f32"][flags["pretrain/base512/f32"].index("--max-batch") + 1] \
      == "128"


def test_datasheet_peak_by_gpu_name():
  assert gpu_suite.dense_bf16_peak("NVIDIA H100 80GB HBM3") == 989.4
  assert gpu_suite.dense_bf16_peak("NVIDIA H100 PCIe") == 756.0
  assert gpu_suite.dense_bf16_peak(None) is None


def test_study_pretrain_stage_needs_no_shared_data(tmp_path):
  args = pretraining_study.parse_args(["--shared-data", str(tmp_path), "--stages", "pretrain"])
  assert args.stages == ["pretrain"]


@pytest.mark.slow
def test_dry_run_writes_results_and_tables(tmp_path):
  out = tmp_path / "out"
  env = dict(os.environ, OUT=str(out), PYTHON=sys.executable, CUDA_VISIBLE_DEVICES="")
  done = subprocess.run(["bash", "scripts/gpu_run.sh", "--dry", "--work-dir",
                         str(tmp_path / "study"), "env", "pretrain:small128/bf16"],
                        cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
  assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
  results = gpu_report.load_results([str(out / "results.jsonl")])
  assert results["env"]["status"] == "ok"
  row = results["pretrain/small128/bf16"]["data"][0]
  assert (row["model"], row["precision"], row["batch"], row["anchor_seq_per_s"]) == (
      "electra_small", "mixed_bfloat16", 8, None)
  assert row["ours_seq_per_s"] > 0
  report = (out / "results.md").read_text()
  assert "| electra_small {\"debug\": true} | 32 | mixed_bfloat16 | no | 8 |" in report
  assert set(os.listdir(out)) <= {"results.jsonl", "results.md", "run.log", "numerics.png"}


# ---------------------------------------------------------------------------
# The JAX backend's run: scripts/gpu_run.sh --backend jax
# ---------------------------------------------------------------------------


def test_common_largest_batch_halves_on_any_out_of_memory_text():
  """JAX and PyTorch raise their own error types; the message decides."""
  from bench import common
  tried = []

  def make(batch):
    tried.append(batch)
    if batch > 5:
      raise RuntimeError(f"RESOURCE_EXHAUSTED: Out of memory allocating {batch} bytes")
    return batch
  assert common.largest_batch(make, 32, warm_up=lambda step: None) == (4, 4)
  assert tried == [32, 16, 8, 4]

  def broken(batch):
    raise ValueError("Incompatible shapes")
  with pytest.raises(ValueError, match="Incompatible"):
    common.largest_batch(broken, 32, warm_up=lambda step: None)


def test_fake_pretraining_batch_has_two_segments_and_zipf_tokens():
  from bench import common
  batch = common.fake_pretraining_batch(3, 8, 2000, seed=1)
  assert batch["input_ids"][:, [0, 4, 7]].tolist() == [[101, 102, 102]] * 3
  assert batch["segment_ids"][0].tolist() == [0, 0, 0, 0, 0, 1, 1, 1]
  assert batch["input_mask"].sum() == 24
  zipf = common.fake_pretraining_batch(64, 128, 30522, seed=1, zipf=1.3)["input_ids"]
  inner = zipf[:, 1:63]
  assert inner.min() >= 1000 and inner.max() < 30522
  # A Zipf law of exponent 1.3 puts 1 / zeta(1.3) = 0.254 of the draws on its first value.
  assert np.mean(inner == 1000) == pytest.approx(0.254, abs=0.02)


def test_jax_items_pair_each_of_our_rows_with_the_transformers_step():
  items = gpu_suite.jax_items(gpu_suite.JAX_GPU, 989.4)
  keys = [i.key for i in items]
  assert keys[:5] == ["env", "throughput/base128/bf16/jax", "throughput/base128/bf16/hf",
                      "throughput/base128/f32/jax", "throughput/base128/f32/hf"]
  assert keys[-8:] == ["throughput/base512/bf16/jax", "throughput/base512/bf16/hf",
                      "language/wordpiece", "language/sentencepiece", "feed/language64",
                      "trainer/small128", "trainer/small64", "cudnn/dropout_masks"]
  trainer = {i.key: i for i in items}["trainer/small64"]
  assert trainer.command[2] == "bench.training.reader_trainer" and trainer.command[-2:] == [
      "--mixed-precision", "mixed_bfloat16"]
  assert json.loads(trainer.command[trainer.command.index("--hparams") + 1]) == {
      "vocab_size": 8000}
  by_key = {i.key: i.command for i in items}
  hf = by_key["throughput/small128/f32/hf"]
  assert hf[1:3] == ["-m", "bench.gpu.hf_rtd_step"] and "--jit-compile" in hf
  assert hf[hf.index("--max-batch") + 1] == "1024" and "--peak-tflops" in hf
  assert by_key["numerics/bf16_xla_seed0"][
      by_key["numerics/bf16_xla_seed0"].index("--train-steps") + 1] == "300"
  assert [i.key for i in gpu_suite.selected(items, ["numerics"])] == [
      "numerics/f32_seed0", "numerics/bf16_xla_seed0", "numerics/f32_seed1",
      "numerics/bf16_cudnn_seed0"]
  assert by_key["numerics/bf16_cudnn_seed0"][-2:] == ["--attention-kernel", "cudnn"]
  assert by_key["numerics/bf16_xla_seed0"][-2:] == ["--attention-kernel", "official"]
  # The selection's order is the run order: the profile first when it is named first.
  assert [i.key for i in gpu_suite.selected(items, ["profile", "env", "profile:base512"])] == [
      "profile/small1024/bf16", "profile/small128/bf16", "profile/base512/bf16", "env"]
  profile = by_key["profile/small1024/bf16"]
  assert profile[profile.index("--batch-sizes") + 1] == "1024" and "--profile" in profile


def test_levers_change_one_thing_each_against_a_baseline_of_the_same_call(tmp_path):
  items = {i.key: i for i in gpu_suite.jax_items(gpu_suite.JAX_GPU, 989.4)
           if i.key.startswith("lever/")}
  assert list(items) == ["lever/baseline", "lever/no_triton_gemm", "lever/no_dropout",
                         "lever/philox_dropout", "lever/base_baseline",
                         "lever/base_cudnn_attention", "lever/base_cudnn_command_buffer",
                         "lever/base_vocab_pad_64", "lever/base_no_command_buffer",
                         "lever/base_cudnn_layer_norm", "lever/base_cublaslt",
                         "lever/base_cudnn_gemm_fusion"]
  cudnn = items["lever/base_cudnn_attention"]
  assert cudnn.command[-2:] == ["--attention-kernel", "cudnn"]
  assert items["lever/base_cudnn_command_buffer"].env == {}
  assert cudnn.env == items["lever/base_no_command_buffer"].env == {
      "XLA_FLAGS": "--xla_gpu_enable_command_buffer="}
  assert cudnn.command[cudnn.command.index("--model-name") + 1] == "electra_base"
  pad = items["lever/base_vocab_pad_64"].command
  assert json.loads(pad[pad.index("--hparams") + 1]) == {"vocab_pad_multiple": 64}
  assert items["lever/philox_dropout"].command[-2:] == ["--dropout-bits", "philox"]
  assert "--dropout-bits" not in items["lever/baseline"].command
  hparams = {k: json.loads(i.command[i.command.index("--hparams") + 1]) for k, i in items.items()}
  assert hparams["lever/baseline"] == {} and items["lever/baseline"].env == {}
  assert hparams["lever/no_dropout"]["model_hparam_overrides"] == {
      "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
  flags = gpu_suite.item_env({"XLA_FLAGS": "--a=1", "PATH": "/bin"},
                             items["lever/no_triton_gemm"])
  assert flags == {"XLA_FLAGS": "--a=1 --xla_gpu_enable_triton_gemm=false", "PATH": "/bin"}
  # The report: each lever's throughput over the baseline's (hand-computed 1.25).
  row = {"model": "electra_small", "hparams": {}, "seq_len": 128, "batch": 1024}
  records = [{"key": f"lever/{name}", "status": "ok",
              "data": [{**row, "seq_per_s": sps, "step_seconds": 1024 / sps}]}
             for name, sps in (("baseline", 2000.0), ("no_dropout", 2500.0))]
  path = tmp_path / "results.jsonl"
  path.write_text("".join(json.dumps(r) + "\n" for r in records))
  base = {**row, "model": "electra_base", "batch": 512}
  records += [{"key": f"lever/{name}", "status": "ok",
               "data": [{**base, "seq_per_s": sps, "step_seconds": 512 / sps}]}
              for name, sps in (("base_baseline", 3000.0), ("base_cudnn_attention", 3300.0))]
  path = tmp_path / "results.jsonl"
  path.write_text("".join(json.dumps(r) + "\n" for r in records))
  text = gpu_report.write(str(tmp_path), [str(path)])
  assert "| no_dropout | 1024 | 2500.0 | 409.60 | 1.25 |" in text
  # The base levers against their own baseline (hand-computed 3300 / 3000 = 1.10).
  assert "| base_cudnn_attention | 512 | 3300.0 | 155.15 | 1.10 |" in text
  env = gpu_suite.child_env(dry=True, backend="jax")
  assert (env["KERAS_BACKEND"], env["ELECTRA_BLOCK_TENSORFLOW"], env["JAX_PLATFORMS"]) == (
      "jax", "1", "cpu")


def test_philox_dropout_lever_keeps_the_rate_and_scaling_of_dropout():
  """bench/gpu/jax_pretrain_step.py's philox_dropout: kept values are scaled by 1/keep, the
  keep rate is 0.9 within 5 binomial standard deviations, one seed gives one mask and
  another seed another, a noise shape broadcasts, and Keras's dropout is back after. The
  mask is XLA's generator's (`lax.rng_bit_generator` keyed by the seed's two words and
  their golden-ratio mix, a draw below 0.9 * 2**32 kept), not Keras's threefry mask."""
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  from keras.src.backend.jax import random as jax_random  # pylint: disable=g-import-not-at-top

  from bench.gpu import jax_pretrain_step  # pylint: disable=g-import-not-at-top
  original = jax_random.dropout
  ones = jnp.ones((256, 1024), jnp.float32)
  seed = jnp.array([1, 2], jnp.uint32)
  with jax_pretrain_step.philox_dropout():
    first, again, other = (np.asarray(jax_random.dropout(ones, 0.1, seed=jnp.array(s, jnp.uint32)))
                           for s in ([1, 2], [1, 2], [3, 4]))
    rows = np.asarray(jax_random.dropout(ones, 0.1, noise_shape=(256, 1),
                                         seed=jnp.array([5, 6], jnp.uint32)))
  assert jax_random.dropout is original
  assert set(np.unique(first)) <= {0.0, np.float32(1 / 0.9)}
  kept = (first > 0).mean()
  assert abs(kept - 0.9) < 5 * np.sqrt(0.9 * 0.1 / first.size), kept
  assert (first == again).all() and (first != other).any()
  assert (rows == rows[:, :1]).all() and 0.8 < (rows[:, 0] > 0).mean() < 0.98
  words = np.asarray(jax_random.jax_draw_seed(seed), np.uint32)
  _, bits = jax.lax.rng_bit_generator(np.concatenate([words, words ^ np.uint32(0x9E3779B9)]),
                                      ones.shape, jnp.uint32)
  np.testing.assert_array_equal(first > 0, np.asarray(bits) < np.uint32(round(0.9 * 2**32)))
  unchanged = np.asarray(original(ones, 0.1, seed=seed))
  assert ((unchanged > 0) != (first > 0)).mean() > 0.1  # other bits: about 18% differ


def test_embedding_gradient_items_read_scatter_types_and_report(tmp_path):
  """bench/gpu/embedding_grad.py's pieces: the items' sizes, the element types read off HLO
  text (two hand-written scatters and a gather), the [MASK] share of its ids, the table."""
  from bench.gpu import embedding_grad  # pylint: disable=g-import-not-at-top
  items = {i.key: i.command for i in gpu_suite.jax_items(gpu_suite.JAX_GPU, 989.4)
           if i.key.startswith("embgrad/")}
  assert list(items) == ["embgrad/small1024", "embgrad/base512"]
  assert items["embgrad/base512"][-6:] == ["--batch", "512", "--seq-len", "128", "--width",
                                           "768"]
  hlo = ("  %s.1 = bf16[30522,128]{1,0} scatter(%a, %b, %c), update_window_dims={1}\n"
         "  ROOT %s.2 = f32[8,4]{1,0} scatter(%d, %e, %f), to_apply=%add\n"
         "  %g = s32[4]{0} gather(%h, %i)\n")
  assert embedding_grad.scatter_types(hlo) == ["bf16", "f32"]
  ids = embedding_grad.masked_ids(64, 128, 30522)
  assert (ids[:, 0] == 101).all() and (ids[:, 64] == 102).all() and (ids[:, -1] == 102).all()
  assert 0.13 < (ids == 103).mean() < 0.17
  records = [{"key": "embgrad/small1024", "status": "ok", "data": [
      {"way": way, "ms": ms, "max_abs_error": 1e-4, "scatter_types": types, "batch": 1024,
       "seq_len": 128, "width": 128} for way, ms, types in (
           ("autodiff_f32_gather", 0.145, ["f32"]), ("one_hot", 15.98, []))]}]
  path = tmp_path / "results.jsonl"
  path.write_text("".join(json.dumps(r) + "\n" for r in records))
  text = gpu_report.write(str(tmp_path), [str(path)])
  assert "| 1024x128, E 128 | autodiff_f32_gather | 0.145 | 0.0001 | f32 |" in text
  assert "| 1024x128, E 128 | one_hot | 15.980 | 0.0001 | none |" in text


def test_attention_ways_compute_the_official_attention_and_report(tmp_path):
  """bench/gpu/attention_ways.py: its items' sizes; on the CPU, the ways without dropout give
  numpy's float64 attention and the same gradient on the real positions, the official
  way's dropout changes the output, the GPU-only ways skip with a reason; the table."""
  import jax  # pylint: disable=g-import-not-at-top
  from bench.gpu import attention_ways  # pylint: disable=g-import-not-at-top
  items = {i.key: i.command for i in gpu_suite.jax_items(gpu_suite.JAX_GPU, 989.4)
           if i.key.startswith("attention/")}
  assert list(items) == ["attention/base512", "attention/small1024"]
  assert items["attention/base512"][-8:] == ["--batch", "512", "--seq-len", "128", "--heads",
                                             "12", "--head-size", "64"]
  qkv, lengths, upstream = attention_ways.inputs(3, 16, 2, 8)
  upstream[np.arange(16)[None, :] >= lengths[:, None]] = 0.0  # the padded queries unread
  want = attention_ways.reference(qkv, lengths)
  ways = attention_ways.ways(dropout=0.5)
  outputs = {name: [np.asarray(x) for x in attention_ways.forward_backward(ways[name])(
      qkv, lengths, jax.random.key(1), upstream)]
      for name in ("official", "official_no_dropout", "dpa_xla")}
  for name in ("official_no_dropout", "dpa_xla"):
    assert attention_ways.valid_error(outputs[name][0], want, lengths) < 1e-5, name
  np.testing.assert_allclose(outputs["dpa_xla"][1], outputs["official_no_dropout"][1],
                             atol=1e-5)
  assert attention_ways.valid_error(outputs["official"][0], want, lengths) > 1e-2
  rows = attention_ways.measure(argparse.Namespace(
      batch=2, seq_len=8, heads=2, head_size=4, dropout=0.1, dtype="float32", rounds=1))
  by_way = {row["way"]: row for row in rows}
  assert list(by_way) == list(attention_ways.WAYS)
  assert by_way["dpa_cudnn"]["status"] == "skipped" and "GPU" in by_way["dpa_cudnn"]["reason"]
  assert by_way["dpa_xla"]["max_abs_error"] < 1e-5 and "max_abs_error" not in by_way["official"]
  path = tmp_path / "results.jsonl"
  path.write_text(json.dumps({"key": "attention/small4", "status": "ok", "data": rows}) + "\n")
  text = gpu_report.write(str(tmp_path), [str(path)])
  assert "| 2x8, 2x4 | official | 0.1 |" in text and "| 1.00 | - |" in text
  assert "| 2x8, 2x4 | dpa_cudnn | 0 | skipped | - | - |" in text
  # An item that crashed after some ways (cuDNN's fused dropout on an H100, 2026-11-27):
  # the rows it wrote are in the table and its first fatal line says why.
  crash = ["official  2.312 ms", "F1127 01:25:15.536278 3924 cuda_dnn.cc:6951] Check failed: "
           "local_device_ordinal.has_value() ", "*** Check failure stack trace: ***",
           "    @     0x657a05  _start"]
  assert gpu_suite.first_error(crash).startswith("F1127") and "Check failed" in crash[1]
  assert gpu_suite.first_error(["Traceback (most recent call last):", '  File "x.py"',
                                "jaxlib.XlaRuntimeError: RESOURCE_EXHAUSTED"]) == (
                                    "jaxlib.XlaRuntimeError: RESOURCE_EXHAUSTED")
  assert gpu_suite.first_error(["all fine"]) is None
  path.write_text(json.dumps({"key": "attention/small4", "status": "failed", "data": rows[:2],
                              "output_tail": crash[-1:], "error": crash[1].strip()}) + "\n")
  text = gpu_report.write(str(tmp_path), [str(path)])
  assert "| 2x8, 2x4 | official_no_dropout | 0 |" in text and "dpa_cudnn" not in text
  assert "- attention/small4: failed F1127 01:25:15.536278 3924 cuda_dnn.cc:6951] Check" in text


def test_a_failed_item_records_the_line_that_says_why(tmp_path):
  script = tmp_path / "fails.py"
  script.write_text("print('ok so far')\nraise SystemExit('error: the reason')\n")
  item = gpu_suite.Item("x", [sys.executable, str(script)], json_flag=None, reader=list,
                        min_seconds=0)
  record = gpu_suite.run_item(item, 60, str(tmp_path / "run.log"), dict(os.environ))
  assert (record["status"], record["error"]) == ("failed", "error: the reason")
  assert "ok so far" in (tmp_path / "run.log").read_text()


def _row(side, seq_per_s, **extra):
  return {"model": "electra_base", "hparams": {}, "seq_len": 128,
          "precision": "mixed_bfloat16", "batch": 256, "seq_per_s": seq_per_s,
          "compile_seconds": 30.0, "tflops": 100.0, "mfu": 0.1, "device": "gpu: H100",
          **extra}


def test_jax_report_ratio_target_and_projection(tmp_path):
  results = tmp_path / "results.jsonl"
  records = [
      {"key": "throughput/base128/bf16/jax", "status": "ok", "data": [_row("jax", 3000.0)]},
      {"key": "throughput/base128/bf16/hf", "status": "ok", "data": [_row("hf", 2000.0)]},
      {"key": "projection/paper-small", "status": "ok", "data": [{
          "model": "electra_small", "hparams": {}, "seq_len": 128, "batch": 128,
          "precision": "mixed_bfloat16", "device": "gpu: H100", "steps_per_s": 50.0,
          "seq_per_s": 6400.0, "hours_per_million_steps": 1e6 / 50 / 3600,
          "forward_seconds": 0.005, "forward_backward_seconds": 0.015,
          "step_seconds": 0.02}]}]
  results.write_text("".join(json.dumps(r) + "\n" for r in records))
  text = gpu_report.write(str(tmp_path), [str(results)])
  assert "| electra_base | 128 | mixed_bfloat16 | 256 | 3000.0 | 30 | 100 | 10.0% | 256 " \
         "| 2000.0 | 10.0% | 1.50 |" in text
  assert "3,000 seq/s, 1.50x: **met**" in text
  # 1e6 steps at 50 steps/s = 20,000 s = 5.56 h.
  assert "1M steps in 5.56 h (target under 10 h: **met**" in text
  assert "forward 5.00 ms, backward 10.00 ms, optimizer and the rest 5.00 ms" in text


# The JAX dry run's items in CI: the environment and one compiled step's numerics (about 25
# s on 2 cores); ELECTRA_GPU_DRY_RUN=1 adds the throughput pair (ours and transformers') and
# the projection (about 6 minutes on 2 loaded cores, over CI's budget).
DRY_ITEMS = {"env": "ok", "numerics/bf16_xla_seed0": "ok"}
DRY_ITEMS_MORE = {"throughput/small128/bf16/jax": "ok", "throughput/small128/bf16/hf": "ok",
                  "projection/paper-small": "ok"}


@pytest.mark.slow
def test_jax_dry_run_without_tensorflow(tmp_path):
  """The JAX run's script on the CPU with tiny sizes and tensorflow blocked in every item."""
  more = bool(os.environ.get("ELECTRA_GPU_DRY_RUN"))
  out = tmp_path / "out"
  env = dict(os.environ, OUT=str(out), PYTHON=sys.executable, CUDA_VISIBLE_DEVICES="")
  selection = ["env", "numerics:bf16_xla_seed0"] + (
      ["throughput:small128/bf16", "projection"] if more else [])
  done = subprocess.run(["bash", "scripts/gpu_run.sh", "--dry", "--backend", "jax", *selection],
                        cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
  assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
  results = gpu_report.load_results([str(out / "results.jsonl")])
  assert {k: r["status"] for k, r in results.items()} == {
      **DRY_ITEMS, **(DRY_ITEMS_MORE if more else {})}
  assert results["env"]["data"][0]["jax"]["keras_backend"] == "jax"
  history = results["numerics/bf16_xla_seed0"]["data"][0]["history"]
  assert [h["step"] for h in history] == [3, 6]
  assert all(np.isfinite(h["total_loss"]) for h in history)
  report = (out / "results.md").read_text()
  assert "| bf16_xla_seed0 | mixed_bfloat16 + XLA | 0 |" in report
  if more:
    ours = results["throughput/small128/bf16/jax"]["data"][0]
    anchor = results["throughput/small128/bf16/hf"]["data"][0]
    assert (ours["batch"], anchor["batch"], ours["precision"]) == (4, 4, "mixed_bfloat16")
    assert ours["seq_per_s"] > 0 and anchor["seq_per_s"] > 0
    assert "JAX backend against transformers" in report and "Paper-small projection" in report


# ---------------------------------------------------------------------------
# The language study's pre-training on a GPU: bench/studies/language_gpu.py
# ---------------------------------------------------------------------------


def test_language_weights_come_back_as_float16_in_pooled_files(tmp_path, monkeypatch):
  """Adam's slots stay behind, floats are rounded to float16 (one out of its range stays
  float32), and both kinds share files of at most CHUNK_BYTES, the last one filled first."""
  rng = np.random.default_rng(0)
  arrays = {"w": rng.normal(size=(3, 4)).astype(np.float32), "w/adam_m": np.ones(3, np.float32),
            "w/adam_v": np.ones(3, np.float32), "big": np.array([7e4], np.float32),
            "global_step": np.array(12, np.int64)}
  back = language_gpu.returned_weights(arrays)
  assert sorted(back) == ["big", "global_step", "w"]
  np.testing.assert_array_equal(back["w"], arrays["w"].astype(np.float16))
  assert back["big"].dtype == np.float32 and back["global_step"].dtype == np.int64
  monkeypatch.setattr(language_gpu, "CHUNK_BYTES", 1000)
  half = lambda n: np.arange(n, dtype=np.float16)  # noqa: E731  (2 bytes an element)
  first = {"a": half(200), "b": half(200), "c": half(150)}  # 400, 400, 300 bytes
  second = {"d": half(300), "e": half(50)}  # 600, 100 bytes
  language_gpu.pack(first, "wordpiece", str(tmp_path))
  language_gpu.pack(second, "sentencepiece", str(tmp_path))
  files = language_gpu.chunk_files(str(tmp_path))
  contents = []
  for path in files:
    with np.load(path) as data:
      contents.append({k: data[k] for k in data.files})
  # a + b = 800 (c would make 1100); c, then the second kind fills that file to 1000.
  assert [sorted(c) for c in contents] == [
      ["wordpiece/a", "wordpiece/b"],
      ["sentencepiece/d", "sentencepiece/e", "wordpiece/c"]]
  np.testing.assert_array_equal(contents[1]["sentencepiece/d"], second["d"])


def test_feed_rows_count_steps_over_the_time_and_average_the_split(monkeypatch):
  from bench.training import jax_feed
  clock = [0.0]
  monkeypatch.setattr(jax_feed.time, "perf_counter", lambda: clock[0])

  def one():
    clock[0] += 0.25
    return {"read": 0.1, "dispatch": 0.15}
  finished = []
  row = jax_feed.timed("trainer loop", 1.0, 8, one, lambda: finished.append(clock[0]))
  # Three warm-up calls (0.75 s), then calls until a second has passed: four of 0.25 s.
  assert finished == [0.75, 1.75]
  assert (row["steps"], row["seq_per_s"], row["ms_per_step"]) == (4, 32.0, 250.0)
  assert row["read_ms"] == pytest.approx(100.0) and row["dispatch_ms"] == pytest.approx(150.0)


def test_prefetcher_hands_over_batches_in_order_and_stops():
  from bench.training import jax_feed
  prefetcher = jax_feed.Prefetcher(iter(range(1000)), lambda batch: batch * 10, depth=2)
  assert [prefetcher.next() for _ in range(5)] == [0, 10, 20, 30, 40]
  prefetcher.close()
  assert not prefetcher._thread.is_alive()  # pylint: disable=protected-access


FEED_ROWS = ["reader", "reader+put", "step (batch on device)",
             "step (batch on device), step number on device", "trainer loop",
             "trainer loop, step number on device", "trainer loop, prefetch thread",
             "... switch interval 0.2 ms", "... switch interval 0.2 ms, step number on device"]


@pytest.mark.slow
def test_feed_item_reads_the_carried_tfrecords_and_reports_each_feed(tmp_path):
  """The GPU run's feed item reads the carried WordPiece TFRecords; the dry run's item, on
  TFRecords written here in their place (length 64, 8000 words) with TensorFlow blocked,
  reads them, times every feed (the trainer's own row aside: its compile doubles the time)
  and reports each as a row of the table."""
  from tests.fixtures import write_pretraining_data  # pylint: disable=g-import-not-at-top
  item = {i.key: i for i in gpu_suite.jax_items(gpu_suite.JAX_GPU, None)}["feed/language64"]
  assert item.needs.endswith(os.path.join(".gpu", "language", "wordpiece", "pretrain_tfrecords",
                                          "tokenizer_description.json"))
  data = item.command[item.command.index("--data") + 1]
  assert data == os.path.join(os.path.dirname(item.needs), "pretrain_data.tfrecord-*")
  assert item.command[item.command.index("--trainer-steps") + 1] == "2000"
  dry = {i.key: i for i in gpu_suite.jax_items(gpu_suite.JAX_DRY, None)}["feed/language64"]
  records = write_pretraining_data(str(tmp_path / "carried"), num_examples=24, seq_len=64,
                                   vocab_size=8000, bert_ids=False)
  command = list(dry.command)
  command[command.index("--data") + 1] = os.path.join(records, "pretrain_tfrecords",
                                                      "pretrain_data.tfrecord-*")
  command[command.index("--seconds") + 1] = "0.05"
  command[command.index("--trainer-steps") + 1] = "0"  # its own compile: the dry run's
  done = subprocess.run(command + ["--json", str(tmp_path / "feed.jsonl")], cwd=REPO,
                        env=gpu_suite.child_env(dry=True, backend="jax"), capture_output=True,
                        text=True, timeout=600)
  assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
  (record,) = [json.loads(line) for line in open(tmp_path / "feed.jsonl", encoding="utf-8")]
  assert (record["seq_len"], record["batch"], record["vocab_size"]) == (64, 4, 8000)
  assert [row["row"] for row in record["rows"]] == FEED_ROWS
  assert all(row["seq_per_s"] > 0 for row in record["rows"])
  assert record["rows"][0]["read_ms"] > 0 and record["rows"][1]["put_ms"] > 0
  assert record["rows"][2]["of_step"] == 1.0
  lines = gpu_report.feed({"feed/language64": {"status": "ok", "data": [record]}})
  assert len(lines) == 2 + 2 + 2 + len(FEED_ROWS) + 1  # title, model line, table head, rows
  assert all(f"| {row} | " in "\n".join(lines) for row in FEED_ROWS)
  assert "\n".join(lines[4:-1]) in done.stdout  # the table printed at the end of the run


def test_language_items_share_the_call_and_say_how_to_carry(tmp_path):
  items = {i.key: i for i in gpu_suite.jax_items(gpu_suite.JAX_GPU, 989.4, out=str(tmp_path))}
  word, piece = items["language/wordpiece"], items["language/sentencepiece"]
  later = gpu_suite.JAX_GPU.language["later"]
  assert (word.reserve, piece.reserve) == (later + 10, 10)  # the first leaves the second its time
  assert (word.min_seconds, piece.min_seconds) == (150 + later + 10, 150 + 10)
  assert word.time_flag == "--time-limit"
  assert word.command[1:4] == ["-m", "bench.studies.language_gpu", "pretrain"]
  assert word.command[word.command.index("--out") + 1] == str(tmp_path)
  assert word.needs.endswith(os.path.join(".gpu", "language", "wordpiece", "pretrain_tfrecords",
                                          "tokenizer_description.json"))
  missing = dataclasses.replace(word, needs=str(tmp_path / "missing"))
  assert "python -m bench.studies.language_gpu carry" in gpu_suite.skip_reason(missing, 600)


@pytest.mark.slow
def test_language_study_round_trip_through_a_jax_run(tmp_path):
  """`pretrain --dry` on JAX (the GPU item's path, on the CPU), then `unpack` here: the model
  directory it writes restores on TensorFlow to the trained weights rounded to float16, its
  vocabulary inside; a work dir with another vocabulary is refused in one line, one without
  gets the carried one."""
  from electra_tf2.models import model_directory
  from electra_tf2.networks import variable_names
  from electra_tf2.checkpoints import portable
  from electra_tf2.text import description
  from tests.fixtures import write_pretraining_data
  carried = tmp_path / "carry" / "wordpiece"
  write_pretraining_data(str(carried), num_examples=32, seq_len=64, vocab_size=512,
                         bert_ids=False, num_word_types=24)
  description.write_description(str(carried / "pretrain_tfrecords"),
                                description.describe_vocab(str(carried / "vocab.txt")))
  out, models = tmp_path / "out", tmp_path / "models"
  out.mkdir()
  env = dict(os.environ, KERAS_BACKEND="jax", JAX_PLATFORMS="cpu", CUDA_VISIBLE_DEVICES="",
             ELECTRA_BLOCK_TENSORFLOW="1", PYTHONPATH=REPO)
  done = subprocess.run([sys.executable, "-m", "bench.studies.language_gpu", "pretrain", "--dry",
                         "--kind", "wordpiece", "--steps", "2", "--carry-dir", str(tmp_path / "carry"),
                         "--out", str(out), "--model-root", str(models), "--json",
                         str(tmp_path / "record.json")], cwd=REPO, env=env,
                        capture_output=True, text=True, timeout=600)
  assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
  record = json.loads((tmp_path / "record.json").read_text())
  assert record["step"] == 2 and record["files"] == ["language-0.npz"]
  (out / "results.jsonl").write_text(json.dumps(
      {"key": "language/wordpiece", "status": "ok", "data": [record]}) + "\n")
  work = tmp_path / "work"
  (work / "wordpiece").mkdir(parents=True)
  (work / "wordpiece" / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nx\n")
  with pytest.raises(SystemExit, match="is not the vocabulary the GPU run trained with"):
    language_gpu.unpack([str(out)], str(work))
  (work / "wordpiece" / "vocab.txt").unlink()  # a work dir rebuilt with --stages data only
  (unpacked,) = language_gpu.unpack([str(out)], str(work), carry_dir=str(tmp_path / "carry"))
  assert (work / "wordpiece" / "vocab.txt").read_bytes() == (carried / "vocab.txt").read_bytes()
  assert os.path.isfile(os.path.join(unpacked, "vocab.txt"))
  trained, _ = portable.load(portable.latest(str(models / "wordpiece" / "gpu_small")))
  model = model_directory.restore_pretrainer(unpacked)
  weights = variable_names.pretrainer_variable_map(model)
  assert len(weights) > 50
  for name, variable in weights.items():
    np.testing.assert_array_equal(variable.numpy(),
                                  trained[name].astype(np.float16).astype(np.float32))


def test_a_failed_trainer_returns_nothing_even_over_an_earlier_checkpoint(tmp_path, monkeypatch,
                                                                          capsys):
  """On a warm machine the model root holds the last call's run: a trainer that then fails
  (or is stopped before its loop) must not have that run packed as this one."""
  from electra_tf2.checkpoints import portable
  model_dir = tmp_path / "models" / "wordpiece" / "gpu_small"
  portable.save(str(model_dir), 4, {"w": np.ones(2, np.float32)}, {})
  (model_dir / "pretrain_summary.json").write_text(json.dumps({"saved_step": 4}))
  monkeypatch.setattr(language_gpu, "vocab_size", lambda data_dir: 8)
  args = language_gpu.parse_args(["pretrain", "--kind", "wordpiece", "--out",
                                  str(tmp_path / "out"), "--model-root", str(tmp_path / "models"),
                                  "--carry-dir", str(tmp_path)])
  for code, exit_code in ((-15, 1), (3, 3)):
    monkeypatch.setattr(language_gpu, "run_until", lambda *a, c=code, **k: c)
    assert language_gpu.pretrain(args) == exit_code
    assert f"error: the trainer ended with exit code {code}" in capsys.readouterr().out
  assert not (tmp_path / "out").exists()


def test_cudnn_dropout_check_tells_fresh_masks_from_repeated_ones():
  """bench/gpu/cudnn_dropout.py's summary on kernels simulated in numpy: one that drops
  with a fresh coin per call (keep 0.9, kept scaled by 1/0.9) and one that repeats its
  mask. The keep rate, the scale and the differing shares are the simulated ones
  (hand-computed: independent masks differ at 2 * 0.1 * 0.9 = 18% of positions)."""
  from bench.gpu import cudnn_dropout  # pylint: disable=g-import-not-at-top
  q, k, _, upstream = cudnn_dropout.inputs(8, 4)
  want = cudnn_dropout.probabilities(q, k)
  rng = np.random.default_rng(1)

  def draw():
    return np.where(rng.random(want.shape) < 0.9, want / 0.9, 0.0)
  first, second, site_b = draw(), draw(), draw()
  grad_v = np.einsum("bqhk,bqhd->bkhd", first, upstream)
  fresh = cudnn_dropout.summary(0.1, want, first, second, first, site_b, first, grad_v,
                                upstream, want)
  assert abs(fresh["keep_rate"] - 0.9) < 0.01 and abs(fresh["scale"] - 1 / 0.9) < 1e-9
  assert abs(fresh["calls_differ"] - 0.18) < 0.01 and fresh["backward_error"] < 1e-12
  assert cudnn_dropout.verdict(fresh)[-1] == "verdict: the masks change from step to step"
  same = cudnn_dropout.summary(0.1, want, first, first, first, first, first, grad_v * 1.5,
                               upstream, want)
  assert same["calls_differ"] == 0.0 and same["sites_differ"] == 0.0
  assert abs(same["backward_error"] - 0.5) < 1e-9  # (1.5 e - e) / e
  assert cudnn_dropout.verdict(same)[-1] == "verdict: the masks do NOT change from step to step"


def test_report_splits_the_trainer_from_its_feed(tmp_path):
  """gpu_report's trainer table: feed / step and trainer / step (hand-computed 0.900 and
  0.750) and each progress line's rate."""
  record = {"key": "trainer/small128", "status": "ok", "data": [{
      "hparams": {}, "seq_len": 128, "batch": 128, "reader_cpu": 100000.0,
      "reader_process": 60000.0, "step": 8000.0, "feed": 7200.0, "trainer": 6000.0,
      "trainer_lines": [5000.0, 7000.0],
      "host_ms": {"feed": {"read_ms": 2.5, "call_ms": 14.0, "call_cpu_ms": 1.25}}}]}
  path = tmp_path / "results.jsonl"
  path.write_text(json.dumps(record) + "\n")
  text = gpu_report.write(str(tmp_path), [str(path)])
  assert ("| electra_small | 128 | 128 | 100000 | 60000 | 8000 | 7200 | - | 6000 | 0.900 | "
          "0.750 | 5000, 7000 |") in text
  assert "| electra_small | 128 | feed | 2.500 | 14.000 | 1.250 |" in text

