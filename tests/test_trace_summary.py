"""bench/trace_summary.py: a jax.profiler Perfetto trace summed per kernel and per kind."""

import gzip
import json

import trace_summary


def _trace(tmp_path, events):
  run = tmp_path / "plugins" / "profile" / "2026_11_26"
  run.mkdir(parents=True)
  with gzip.open(run / "perfetto_trace.json.gz", "wt", encoding="utf-8") as f:
    json.dump({"traceEvents": events}, f)
  return str(tmp_path)


def _process(pid, name):
  return {"ph": "M", "pid": pid, "name": "process_name", "args": {"name": name}}


def test_device_kernels_summed_by_name_and_kind(tmp_path):
  events = [_process(1, "/host:CPU"), _process(7, "/device:GPU:0"),
            {"ph": "X", "pid": 1, "name": "PjitFunction(step)", "dur": 9000.0},
            {"ph": "X", "pid": 7, "name": "nvjet_hsh_128x256_2cta", "dur": 600.0},
            {"ph": "X", "pid": 7, "name": "nvjet_hsh_128x256_2cta", "dur": 400.0},
            {"ph": "X", "pid": 7, "name": "input_scatter_fusion_2", "dur": 2500.0},
            {"ph": "X", "pid": 7, "name": "loop_add_fusion", "dur": 500.0},
            {"ph": "i", "pid": 7, "name": "marker"}]
  summary = trace_summary.summarize(trace_summary.load_events(_trace(tmp_path, events)))
  # Hand-computed: 1.0 ms of matmul, 2.5 ms of scatter, 0.5 ms else; the host is left out.
  assert summary["source"] == "device"
  assert abs(summary["seconds"] - 4.0e-3) < 1e-12
  assert [(k["name"], k["count"]) for k in summary["kernels"]] == [
      ("input_scatter_fusion_2", 1), ("nvjet_hsh_128x256_2cta", 2), ("loop_add_fusion", 1)]
  assert list(summary["kinds"]) == ["scatter", "matmul", "other fusion"]
  assert abs(summary["kinds"]["scatter"]["share"] - 0.625) < 1e-12
  assert abs(summary["kinds"]["matmul"]["seconds"] - 1.0e-3) < 1e-12


def test_host_trace_without_device_leaves_python_frames_out(tmp_path):
  events = [_process(1, "/host:CPU"),
            {"ph": "X", "pid": 1, "name": "$profiler.py:241 trace", "dur": 5e6},
            {"ph": "X", "pid": 1, "name": "ThunkExecutor::Execute", "dur": 300.0}]
  summary = trace_summary.summarize(trace_summary.load_events(_trace(tmp_path, events)))
  assert summary["source"] == "host"
  assert [k["name"] for k in summary["kernels"]] == ["ThunkExecutor::Execute"]


def test_kinds_of_xla_and_library_kernel_names():
  assert trace_summary.kind_of("sm90_xmma_gemm_bf16bf16_bf16f32") == "matmul"
  assert trace_summary.kind_of("wrapped_transpose") == "copy or transpose"
  assert trace_summary.kind_of("input_reduce_fusion_12") == "reduction"
  assert trace_summary.kind_of("loop_threefry2x32_fusion") == "random bits"
  assert trace_summary.kind_of("loop_multiply_fusion_3") == "other fusion"
