"""Where a `jax.profiler` trace's device time goes: its kernels summed by name and by kind.

    python -m bench.profiles.trace_summary TRACE_DIR_OR_perfetto_trace.json.gz [--top 25]
        [--hlo step_hlo.txt.gz]

`jax.profiler.trace(dir, create_perfetto_trace=True)` writes
`dir/plugins/profile/<run>/perfetto_trace.json.gz`: Chrome trace events, one process per
device (`/device:GPU:0`, ...) whose complete events ("ph": "X") are the kernels, with
their duration in microseconds. This sums them per kernel name and per kind (matmul,
scatter, random bits, reduction, copy or transpose, other fusions), largest first. A trace
with no device process (a CPU run) is summed over the host's XLA events instead, Python
frames (named "$file:line ...") left out, and says so (`"source": "host"`).
bench/gpu/jax_pretrain_step.py `--profile N` writes one for N compiled steps.

On the CPU, XLA traces each HLO instruction it runs (a "thunk") when the profiler's host
tracer level is 3 (`HOST_TRACER_LEVEL`). `summarize_host_ops` sums those events by their
self time (a `call` or `while` less the instructions it ran), summed over the threads that
ran them, and reads each instruction's opcode, fused computation and `op_name` from the
compiled step's HLO text: its category (dot, elementwise, reduce, gather or scatter, copy
or transpose, random bits) and its phase of the pre-training step (`phase_of`).
"""

from __future__ import annotations

import glob
import gzip
import json
import math
import os
import re
from typing import Any, Dict, Iterable, List, Tuple
from bench.common import script_parser

# (kind, substrings of a lower-cased kernel name), first match wins. XLA's GPU kernels are
# named after their fusion ("loop_multiply_fusion_3", "input_reduce_fusion_1"); cuBLAS and
# CUTLASS matmuls after their library ("nvjet_...", "sm90_xmma_gemm_...", "cutlass_...").
KINDS: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("matmul", ("gemm", "nvjet", "xmma", "cutlass", "cublas", "dot", "matmul")),
    ("scatter", ("scatter",)),
    ("random bits", ("threefry", "philox", "rng")),
    ("reduction", ("reduce", "softmax")),
    ("copy or transpose", ("copy", "transpose", "memset", "memcpy", "concatenate")),
)


def trace_file(path: str) -> str:
  """`path` itself, or the newest perfetto_trace.json.gz under the directory `path`."""
  if os.path.isfile(path):
    return path
  found = sorted(glob.glob(os.path.join(path, "**", "perfetto_trace.json.gz"), recursive=True),
                 key=os.path.getmtime)
  if not found:
    raise SystemExit(f"error: {path}: no perfetto_trace.json.gz under it (profile with "
                     "jax.profiler.trace(dir, create_perfetto_trace=True))")
  return found[-1]


def load_events(path: str) -> List[Dict[str, Any]]:
  with gzip.open(trace_file(path), "rt", encoding="utf-8") as f:
    data = json.load(f)
  return data["traceEvents"] if isinstance(data, dict) else data


def kind_of(name: str) -> str:
  lowered = name.lower()
  for kind, keys in KINDS:
    if any(key in lowered for key in keys):
      return kind
  return "other fusion"


def _device_pids(events: Iterable[Dict[str, Any]]) -> set:
  return {e["pid"] for e in events
          if e.get("ph") == "M" and e.get("name") == "process_name"
          and str(e.get("args", {}).get("name", "")).startswith("/device:")}


def summarize(events: List[Dict[str, Any]], top: int = 25) -> Dict[str, Any]:
  """The complete events of the device processes (else the host's XLA events) summed:
  `seconds` in all, `kernels` (the `top` names: seconds, share, count) and `kinds`."""
  pids = _device_pids(events)
  source = "device" if pids else "host"
  chosen = [e for e in events if e.get("ph") == "X" and "dur" in e
            and (e["pid"] in pids if pids else not str(e.get("name", "")).startswith("$"))]
  by_name: Dict[str, List[float]] = {}
  for e in chosen:
    entry = by_name.setdefault(e["name"], [0.0, 0])
    entry[0] += float(e["dur"]) * 1e-6
    entry[1] += 1
  total = sum(seconds for seconds, _ in by_name.values())
  kinds: Dict[str, float] = {}
  for name, (seconds, _) in by_name.items():
    kinds[kind_of(name)] = kinds.get(kind_of(name), 0.0) + seconds
  ranked = sorted(by_name.items(), key=lambda item: -item[1][0])[:top]
  share = (lambda s: s / total) if total else (lambda s: 0.0)
  return {"source": source, "seconds": total,
          "kernels": [{"name": n, "kind": kind_of(n), "seconds": s, "share": share(s),
                       "count": c} for n, (s, c) in ranked],
          "kinds": {k: {"seconds": s, "share": share(s)}
                    for k, s in sorted(kinds.items(), key=lambda item: -item[1])}}


def print_summary(summary: Dict[str, Any], steps: int = 1) -> None:
  per = f" ({summary['seconds'] / steps * 1e3:.2f} ms per step)" if steps > 1 else ""
  print(f"{summary['source']} time in the trace: {summary['seconds'] * 1e3:.2f} ms{per}")
  for title in ("phases", "kinds"):
    if title == "phases" and "phases" not in summary:
      continue
    print(f" by {'phase' if title == 'phases' else 'kind'}:")
    for name, value in summary[title].items():
      print(f"  {name:<22} {value['seconds'] * 1e3:>10.2f} ms {value['share']:>6.1%}")
  print(" top instructions:" if "phases" in summary else " top kernels:")
  for k in summary["kernels"]:
    where = f" {k['phase']:<22}" if "phase" in k else ""
    print(f"  {k['share']:>6.1%} {k['seconds'] * 1e3:>9.2f} ms x{k['count']:<5} "
          f"{k['kind']:<18}{where} {k['name'][:60 if where else 90]}")


# ---------------------------------------------------------------------------
# CPU traces: XLA's thunks, attributed through the compiled HLO
# ---------------------------------------------------------------------------

HOST_TRACER_LEVEL = 3  # jax.profiler.ProfileOptions().host_tracer_level: XLA:CPU's thunks
_COMPUTATION = re.compile(r"^(?:ENTRY )?%?([\w.\-]+) .*\{$")
_INSTRUCTION = re.compile(r"^\s+(?:ROOT )?%?([\w.\-]+) = .*?\s([a-z][a-z0-9\-]*)\(")
_CALLS = re.compile(r"(?:calls|to_apply|body|condition)=%?([\w.\-]+)")
_SHAPE = re.compile(r" = \(?[a-z]+[0-9]*\[([0-9,]*)\]")  # the (first) output's dimensions
_OP_NAME = re.compile(r'op_name="([^"]*)"')
_SOURCE = re.compile(r'source_file="([^"]*)"')
_MOVES = {"copy", "transpose", "bitcast", "broadcast", "reshape", "parameter", "constant",
          "concatenate", "slice", "pad", "tuple", "get-tuple-element", "copy-start",
          "copy-done"}
_GATHER = {"gather", "scatter", "dynamic-slice", "dynamic-update-slice"}
_REDUCE = {"reduce", "reduce-window", "select-and-scatter"}
_CONTROL = {"call", "while", "conditional", "tuple", "get-tuple-element", "parameter",
            "constant", "bitcast", "after-all"}


_RANDOM = re.compile(r"threefry|random_bits|jit\(_(uniform|bernoulli|gumbel)\)")


def _random(op_name: str, source: str) -> bool:
  return source.endswith("random.py") or bool(_RANDOM.search(op_name))


def hlo_category(opcode: str, called: set, op_name: str = "", source: str = "") -> str:
  """The kind of one compiled HLO instruction: `dot` (dot or convolution, alone or fused),
  `gather or scatter`, `random bits` (the threefry arithmetic of a random draw), `reduce`,
  `copy or transpose` (data movement only), `elementwise` (other fusions and single
  arithmetic ops) or `control` (call, while: their own time, not their body's)."""
  ops = called if opcode == "fusion" else {opcode}
  if ops & {"dot", "convolution"}:
    return "dot"
  if ops & _GATHER:
    return "gather or scatter"
  if _random(op_name, source) or opcode in ("rng", "rng-bit-generator"):
    return "random bits"
  if ops & _REDUCE:
    return "reduce"
  if ops <= _MOVES:
    return "copy or transpose"
  if opcode in _CONTROL:
    return "control"
  return "elementwise"


_TF_REDUCE = {"Sum", "Mean", "Max", "Min", "Prod", "ArgMax", "ArgMin", "L2Loss", "BiasAddGrad",
              "Softmax", "LogSoftmax", "SparseSoftmaxCrossEntropyWithLogits", "Cumsum", "All",
              "Any", "EuclideanNorm"}
_TF_MOVES = {"Transpose", "ConcatV2", "Pack", "Unpack", "Identity", "Reshape", "Slice",
             "StridedSlice", "StridedSliceGrad", "Tile", "Split", "SplitV", "Pad", "PadV2",
             "ExpandDims", "Squeeze", "Fill", "BroadcastTo", "OneHot", "Snapshot",
             "ZerosLike", "OnesLike"}


def tf_op_category(op_type: str) -> str:
  """`hlo_category`'s kinds for a TensorFlow op type (bench/profiles/profile_pretrain_step.py), oneDNN's
  `_Mkl` and fused variants with their base op: `_MklFusedMatMul` is a dot."""
  base = re.sub(r"^_(Mkl|Fused)*", "", op_type)
  if "MatMul" in base or "Conv" in base or base == "Einsum":
    return "dot"
  if re.search(r"Gather|Scatter|SegmentSum|SegmentMax", base):
    return "gather or scatter"
  if "Random" in base or "Philox" in base:
    return "random bits"
  if base in _TF_REDUCE:
    return "reduce"
  if base in _TF_MOVES:
    return "copy or transpose"
  return "elementwise"


def hlo_instructions(hlo_text: str) -> Dict[str, Dict[str, str]]:
  """{instruction name: {"opcode", "category", "phase", "op_name"}} of every instruction of a
  compiled module's HLO text (`jax.stages.Compiled.as_text()`).

  An instruction without an `op_name` (one XLA made, as the pieces of a parallel loop) takes
  that of the instruction that calls its computation. A fusion's `phase` (`phase_of`) is
  the one whose instructions in it compute the most elements: its own `op_name` is its
  root's, and a jitted function (`jnp.argmax`) called twice with the same shapes keeps the
  first call's `op_name` in both places.
  """
  computations: Dict[str, set] = {}
  lines: List[Tuple[str, str, str, str]] = []  # (name, opcode, computation, line)
  computation = ""
  for line in hlo_text.splitlines():
    header = _COMPUTATION.match(line)
    if header:
      computation = header.group(1)
      computations.setdefault(computation, set())
      continue
    match = _INSTRUCTION.match(line)
    if match:
      computations[computation].add(match.group(2))
      lines.append((match.group(1), match.group(2), computation, line))
  own: Dict[str, Tuple[str, str]] = {}  # name: (its op_name, its computation)
  callers: Dict[str, str] = {}  # computation: an instruction calling it
  for name, _, computation, line in lines:
    op_name = _OP_NAME.search(line)
    own[name] = (op_name.group(1) if op_name else "", computation)
    for called in _CALLS.findall(line):
      callers.setdefault(called, name)

  def resolved(name: str) -> str:
    seen = set()
    while name in own and not own[name][0] and name not in seen:
      seen.add(name)
      name = callers.get(own[name][1], "")
    return own[name][0] if name in own else ""
  phases: Dict[str, Dict[str, int]] = {}  # computation: {phase: elements computed}
  for name, _, computation, line in lines:
    if own[name][0]:
      count = phases.setdefault(computation, {})
      dims = _SHAPE.search(line)
      elements = math.prod(int(d) for d in dims.group(1).split(",") if d) if dims else 1
      count[phase_of(own[name][0])] = count.get(phase_of(own[name][0]), 0) + elements
  found = {}
  for name, opcode, computation, line in lines:
    op_name = resolved(name)
    calls = _CALLS.findall(line)
    called = set().union(*(computations.get(c, set()) for c in calls))
    source = _SOURCE.search(line)
    fused: Dict[str, int] = {}
    for c in calls if opcode == "fusion" else ():
      for phase, count in phases.get(c, {}).items():
        fused[phase] = fused.get(phase, 0) + count
    found[name] = {"opcode": opcode, "op_name": op_name,
                   "phase": max(fused, key=fused.get) if fused else phase_of(op_name),
                   "category": hlo_category(opcode, called, op_name,
                                            source.group(1) if source else "")}
  return found


# Scope names of the pre-training step's parts in an instruction's `op_name`: the
# pretrainer's layers (the generator encoder `generator` and its head
# `generator_predictions`, the discriminator encoder `electra` and its head
# `discriminator_predictions`), the optimizer (`adam_weight_decay`) and the scopes that
# bench/gpu/jax_pretrain_step.py puts around masking, sampling, the two losses and the
# train-time metric statistics. The first
# that matches wins; `transpose(` marks the backward pass.
PHASES: Tuple[Tuple[str, str], ...] = (
    ("masking", r"[(/]masking[)/]"),
    ("sampling", r"[(/]sampling[)/]"),
    ("generator", r"[(/](generator|generator_predictions|generator_loss|cloze\w*)[)/]"),
    ("discriminator", r"[(/](electra|discriminator_predictions|discriminator_loss)[)/]"),
    ("metrics", r"[(/]metrics[)/]"),
    ("optimizer update", r"[(/]adam_weight_decay(_\d+)?[)/]"),  # _1: a second in a process
)


def phase_of(op_name: str) -> str:
  """`masking`, `sampling`, `generator forward`, `discriminator backward`, `optimizer
  update`, ... or `other`: the part of the step an instruction's `op_name` belongs to."""
  for phase, pattern in PHASES:
    if re.search(pattern, op_name):
      if phase in ("generator", "discriminator"):
        return f"{phase} {'backward' if 'transpose(' in op_name else 'forward'}"
      return phase
  return "other backward" if "transpose(" in op_name else "other"


def host_op_seconds(events: Iterable[Dict[str, Any]], names: Iterable[str]
                    ) -> Dict[str, List[float]]:
  """{instruction: [self seconds, count]} over the complete events named after an
  instruction of `names`: each event's duration less that of the events nested in it on
  its thread (a `call` or `while` less its body), summed over threads."""
  names = set(names)
  by_thread: Dict[Tuple[Any, Any], List[Dict[str, Any]]] = {}
  for e in events:
    if e.get("ph") == "X" and "dur" in e and e.get("name") in names:
      by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
  found: Dict[str, List[float]] = {}
  for thread_events in by_thread.values():
    thread_events.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
    stack: List[Tuple[float, str]] = []  # (end, name) of the enclosing events
    for e in thread_events:
      start, duration = float(e["ts"]), float(e["dur"])
      while stack and stack[-1][0] <= start:
        stack.pop()
      if stack:
        found[stack[-1][1]][0] -= duration * 1e-6
      entry = found.setdefault(e["name"], [0.0, 0])
      entry[0] += duration * 1e-6
      entry[1] += 1
      stack.append((start + duration, e["name"]))
  return found


def summarize_host_ops(events: List[Dict[str, Any]], hlo_text: str, top: int = 25
                       ) -> Dict[str, Any]:
  """A CPU trace (host tracer level 3) of a compiled step: `seconds` of instruction self
  time in all (summed over threads), `phases`, `kinds` (categories), `phase_kinds`
  ({phase: {category: seconds}}) and the `top` instructions (`kernels`, with their phase
  and `op_name`)."""
  instructions = hlo_instructions(hlo_text)
  seconds = host_op_seconds(events, instructions)
  total = sum(s for s, _ in seconds.values())
  share = (lambda s: s / total) if total else (lambda s: 0.0)
  phases: Dict[str, float] = {}
  kinds: Dict[str, float] = {}
  phase_kinds: Dict[str, Dict[str, float]] = {}
  for name, (s, _) in seconds.items():
    phase, kind = instructions[name]["phase"], instructions[name]["category"]
    phases[phase] = phases.get(phase, 0.0) + s
    kinds[kind] = kinds.get(kind, 0.0) + s
    cell = phase_kinds.setdefault(phase, {})
    cell[kind] = cell.get(kind, 0.0) + s
  ranked = sorted(seconds.items(), key=lambda item: -item[1][0])[:top]

  def ordered(values: Dict[str, float]) -> Dict[str, Dict[str, float]]:
    return {k: {"seconds": s, "share": share(s)}
            for k, s in sorted(values.items(), key=lambda item: -item[1])}
  return {"source": "host ops", "seconds": total, "phases": ordered(phases),
          "kinds": ordered(kinds), "phase_kinds": phase_kinds,
          "kernels": [{"name": n, "kind": instructions[n]["category"], "seconds": s,
                       "share": share(s), "count": c,
                       "phase": instructions[n]["phase"],
                       "op_name": instructions[n]["op_name"]} for n, (s, c) in ranked]}


def main() -> None:
  parser = script_parser(__doc__, whole=False)
  parser.add_argument("trace")
  parser.add_argument("--top", type=int, default=25)
  parser.add_argument("--hlo", default=None,
                      help="a CPU trace's compiled HLO text (step_hlo.txt.gz of "
                           "jax_pretrain_step.py --profile-dir): by phase and instruction")
  args = parser.parse_args()
  if args.hlo:
    with gzip.open(args.hlo, "rt") if args.hlo.endswith(".gz") else open(args.hlo) as f:
      print_summary(summarize_host_ops(load_events(args.trace), f.read(), args.top))
  else:
    print_summary(summarize(load_events(args.trace), args.top))


if __name__ == "__main__":
  main()
