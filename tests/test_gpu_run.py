"""The GPU run (scripts/gpu_run.sh, bench/gpu_suite.py): its parts on hand-made inputs, and
a dry run of a few items end to end on the CPU (the whole dry run takes minutes on 2 cores:
`bash scripts/gpu_run.sh --dry` runs it by hand)."""

import json
import os
import subprocess
import sys

import pytest
import tensorflow as tf

import gpu_report
import gpu_suite
import pretraining_study
from pretrain_throughput import is_out_of_memory, largest_batch

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
                         str(tmp_path / "study"), "env", "pretrain:small128/bf16",
                         "inference"], cwd=REPO, env=env, capture_output=True, text=True,
                        timeout=600)
  assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
  results = gpu_report.load_results([str(out / "results.jsonl")])
  assert results["env"]["status"] == "ok"
  row = results["pretrain/small128/bf16"]["data"][0]
  assert (row["model"], row["precision"], row["batch"], row["anchor_seq_per_s"]) == (
      "electra_small", "mixed_bfloat16", 8, None)
  assert row["ours_seq_per_s"] > 0
  if not os.path.exists(os.path.join(REPO, "bench", "inference_throughput.py")):
    assert results["inference/savedmodel"]["status"] == "skipped"
  report = (out / "results.md").read_text()
  assert "| electra_small {\"debug\": true} | 32 | mixed_bfloat16 | no | 8 |" in report
  assert set(os.listdir(out)) <= {"results.jsonl", "results.md", "run.log", "numerics.png"}
