"""bench/profiles/trace_summary.py: a jax.profiler Perfetto trace summed per kernel and per kind."""

import gzip
import json

from bench.profiles import trace_summary


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


# A compiled module's HLO text as `Compiled.as_text()` writes it (shortened): a dot of the
# discriminator's forward pass, a fusion whose root is a generator-loss reduce but whose
# other instructions draw the sampling noise, a `call` of an XLA-made computation (no
# metadata) whose body is a transpose, and the optimizer's elementwise update.
HLO = """HloModule jit__train_step

%fused_computation.1 (p.0: f32[8,16]) -> (f32[8], s32[8]) {
  %p.0 = f32[8,16]{1,0} parameter(0)
  %log.1 = f32[8,16]{1,0} log(%p.0), metadata={op_name="jvp(sampling)/jit(_gumbel)/log"}
  %log.2 = f32[8,16]{1,0} log(%log.1), metadata={op_name="jvp(sampling)/log"}
  %iota.1 = s32[8,16]{1,0} iota(), iota_dimension=1
  ROOT %reduce.1 = (f32[8]{0}, s32[8]{0}) reduce(%log.2, %iota.1), dimensions={1}, \
metadata={op_name="jvp(generator_loss)/reduce"}
}

%call_body.2 (p.1: f32[16,8]) -> f32[8,16] {
  %p.1 = f32[16,8]{1,0} parameter(0)
  ROOT %transpose.3.clone = f32[8,16]{1,0} transpose(%p.1), dimensions={1,0}
}

ENTRY %main.9 (Arg_0.1: f32[8,16], Arg_1.2: f32[16,16]) -> f32[8,16] {
  %Arg_0.1 = f32[8,16]{1,0} parameter(0)
  %dot.4 = f32[8,16]{1,0} dot(%Arg_0.1, %Arg_1.2), lhs_contracting_dims={1}, \
rhs_contracting_dims={0}, metadata={op_name="transpose(jvp(electra))/layer_0/dot_general" \
source_file="numpy.py" source_line=1}
  %iota_reduce_fusion = (f32[8]{0}, s32[8]{0}) fusion(%dot.4), kind=kLoop, \
calls=%fused_computation.1, metadata={op_name="jvp(generator_loss)/reduce"}
  %call.5 = f32[8,16]{1,0} call(%dot.4), to_apply=%call_body.2, \
metadata={op_name="jit(main)/jvp(generator)/layer_0/attention/transpose"}
  ROOT %multiply.6 = f32[8,16]{1,0} multiply(%call.5, %Arg_0.1), \
metadata={op_name="jit(main)/adam_weight_decay_1/mul"}
}
"""


def test_cpu_trace_by_instruction_self_time_phase_and_category(tmp_path):
  def op(name, ts, dur, tid=1):
    return {"ph": "X", "pid": 1, "tid": tid, "name": name, "ts": ts, "dur": dur}
  events = [_process(1, "/host:CPU"),
            op("ThunkExecutor::Execute", 0.0, 10000.0),  # not an instruction: left out
            op("dot.4", 0.0, 3000.0),
            op("iota_reduce_fusion", 3000.0, 2000.0),
            op("call.5", 5000.0, 1500.0), op("transpose.3.clone", 5100.0, 1200.0),
            op("multiply.6", 6500.0, 400.0), op("multiply.6", 0.0, 600.0, tid=2)]
  summary = trace_summary.summarize_host_ops(
      trace_summary.load_events(_trace(tmp_path, events)), HLO)
  # Hand-computed self times (ms): dot 3.0, fusion 2.0, call 1.5 - 1.2 = 0.3 (its body's
  # transpose 1.2 apart), transpose 1.2, multiply 0.4 + 0.6 over two threads: 7.5 in all.
  seconds = {k["name"]: k["seconds"] for k in summary["kernels"]}
  assert abs(seconds["call.5"] - 0.3e-3) < 1e-12
  assert abs(seconds["multiply.6"] - 1.0e-3) < 1e-12
  assert abs(summary["seconds"] - 7.5e-3) < 1e-12
  phases = {k: round(v["seconds"] * 1e3, 6) for k, v in summary["phases"].items()}
  # The fusion counts as sampling (two of its three named instructions), the XLA-made
  # transpose as the generator's forward pass (its caller's op_name).
  assert phases == {"discriminator backward": 3.0, "sampling": 2.0, "generator forward": 1.5,
                    "optimizer update": 1.0}
  kinds = {k: round(v["seconds"] * 1e3, 6) for k, v in summary["kinds"].items()}
  assert kinds == {"dot": 3.0, "reduce": 2.0, "copy or transpose": 1.2, "elementwise": 1.0,
                   "control": 0.3}


def test_tensorflow_op_types_in_the_same_categories():
  expected = {"_MklFusedMatMul": "dot", "_MklBatchMatMulV2": "dot", "MatMul": "dot",
              "UnsortedSegmentSum": "gather or scatter", "ResourceGather": "gather or scatter",
              "StatelessRandomUniformV2": "random bits", "Sum": "reduce", "Max": "reduce",
              "Maximum": "elementwise", "BiasAddGrad": "reduce", "Transpose": "copy or transpose",
              "StridedSliceGrad": "copy or transpose", "Mul": "elementwise",
              "ResourceApplyAdam": "elementwise"}
  assert {op: trace_summary.tf_op_category(op) for op in expected} == expected
