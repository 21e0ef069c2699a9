"""Where a `jax.profiler` trace's device time goes: its kernels summed by name and by kind.

    python bench/trace_summary.py TRACE_DIR_OR_perfetto_trace.json.gz [--top 25]

`jax.profiler.trace(dir, create_perfetto_trace=True)` writes
`dir/plugins/profile/<run>/perfetto_trace.json.gz`: Chrome trace events, one process per
device (`/device:GPU:0`, ...) whose complete events ("ph": "X") are the kernels, with
their duration in microseconds. This sums them per kernel name and per kind (matmul,
scatter, random bits, reduction, copy or transpose, other fusions), largest first. A trace
with no device process (a CPU run) is summed over the host's XLA events instead, Python
frames (named "$file:line ...") left out, and says so (`"source": "host"`).
bench/jax_pretrain_step.py `--profile N` writes one for N compiled steps.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
from typing import Any, Dict, Iterable, List, Tuple

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
  for kind, value in summary["kinds"].items():
    print(f"  {kind:<18} {value['seconds'] * 1e3:>10.2f} ms {value['share']:>6.1%}")
  for k in summary["kernels"]:
    print(f"  {k['share']:>6.1%} {k['seconds'] * 1e3:>9.2f} ms x{k['count']:<5} "
          f"{k['kind']:<18} {k['name'][:90]}")


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("trace")
  parser.add_argument("--top", type=int, default=25)
  args = parser.parse_args()
  print_summary(summarize(load_events(args.trace), args.top))


if __name__ == "__main__":
  main()
