"""The GPU run's results as markdown tables and a plot of the numerics curves.

    python -m bench.gpu.gpu_suite report --out DIR RESULTS.jsonl [RESULTS.jsonl ...]

Reads the results files of one or more calls (bench/gpu/gpu_suite.py writes them;
for an item measured more than once, the last ok record counts) and writes
DIR/results.md and, when the numerics ran, DIR/numerics.png.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional

from electra_tf2.utils.atomic_io import write_text_atomic
from bench.common import script_parser

Results = Dict[str, Dict[str, Any]]
# The TensorFlow trainer's target for electra_base, length 128, bf16 + XLA on one H100.
TARGET_SEQ_PER_S, TARGET_RATIO = 2000.0, 1.5
# The JAX trainer's targets on one H100: electra_base, length 128, bf16 against
# transformers' step in PyTorch; the paper's 1M electra_small steps (batch 128) in hours.
JAX_TARGET_SEQ_PER_S, JAX_TARGET_RATIO, JAX_TARGET_HOURS = 2400.0, 1.3, 10.0
LOSSES = ("total_loss", "mlm_loss", "disc_loss")


def read_records(path: str) -> List[Dict[str, Any]]:
  """The JSON object(s) of a file: one document, or one per line."""
  with open(path, encoding="utf-8") as f:
    text = f.read()
  try:
    return [json.loads(text)]
  except json.JSONDecodeError:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def load_results(paths: List[str]) -> Results:
  """{key: record} over results files, a later ok record winning over anything earlier."""
  results: Results = {}
  for path in paths:
    if os.path.exists(path):
      for record in read_records(path):
        if record["status"] == "ok" or results.get(record["key"], {}).get("status") != "ok":
          results[record["key"]] = record
  return results


def rows(results: Results, stage: str, failed_too: bool = False) -> List[Dict[str, Any]]:
  """The data rows of the ok items of `stage` (`failed_too`: also the rows an item that
  failed wrote before it stopped), each with its item key."""
  return [{**row, "key": key} for key, record in results.items()
          if key.split("/")[0] == stage and (record["status"] == "ok" or failed_too)
          for row in record.get("data", [])]


def fmt(value: Optional[float], spec: str = ".1f") -> str:
  return "-" if value is None else format(value, spec)


def table(header: List[str], lines: List[List[str]]) -> List[str]:
  return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
          + ["| " + " | ".join(line) + " |" for line in lines])


# ---------------------------------------------------------------------------
# Sections
# ---------------------------------------------------------------------------


def machine(results: Results) -> List[str]:
  env = rows(results, "env")
  if not env:
    return []
  e = env[0]
  smi = e["nvidia_smi"].get("gpus")
  gpu = ", ".join(f"{k} {v}" for k, v in smi[0].items()) if smi else (
      f"none ({e['nvidia_smi'].get('error')})")
  if "jax" in e:
    j = e["jax"]
    framework = (f"- JAX {j['version']} (jaxlib {j['jaxlib']}), Keras {j['keras']} on "
                 f"{j['keras_backend']}; devices: {', '.join(j['devices'])}")
  else:
    tf = e["tensorflow"]
    framework = (f"- TensorFlow {tf['version']} (CUDA {tf['cuda_build']}, cuDNN "
                 f"{tf['cudnn_build']}), TF32 {'on' if tf['tf32'] else 'off'}; GPUs seen: "
                 f"{len(tf['gpus'])}")
  return ["## Machine", "", f"- GPU: {gpu}", framework,
          f"- PyTorch: {e['torch']}", f"- Python {e['python']}, {e['cpus']} CPUs, "
          f"{e['platform']}", ""]


def model_label(r: Dict[str, Any]) -> str:
  """The model's name, with the hparams over its preset (a dry run's debug size)."""
  return r["model"] + (f" {json.dumps(r['hparams'])}" if r.get("hparams") else "")


def best_anchors(pretrain: List[Dict[str, Any]]) -> Dict[tuple, Dict[str, Any]]:
  """Model Garden's fastest row per (model, length, model hparams)."""
  best: Dict[tuple, Dict[str, Any]] = {}
  for r in pretrain:
    group = (r["model"], r["seq_len"])
    if r["anchor_seq_per_s"] and r["anchor_seq_per_s"] > best.get(group, {}).get(
        "anchor_seq_per_s", 0):
      best[group] = r
  return best


def pretraining(results: Results) -> List[str]:
  pretrain = rows(results, "pretrain")
  if not pretrain:
    return []
  anchors = best_anchors(pretrain)
  lines = []
  for r in pretrain:
    a = anchors.get((r["model"], r["seq_len"]))
    ratio = r["ours_seq_per_s"] / a["anchor_seq_per_s"] if a else None
    setting = (f"{a['anchor_seq_per_s']:.1f} (f32{' + XLA' if a['anchor_jit_compile'] else ''}"
               f", batch {a['anchor_batch']})") if a else "-"
    lines.append([model_label(r), str(r["seq_len"]), r["precision"],
                  "yes" if r["jit_compile"] else "no", str(r["batch"]),
                  f"{r['ours_seq_per_s']:.1f}", setting, fmt(ratio, ".2f"),
                  f"{r['ours_tflops']:.3g}", fmt(r["mfu_vs_peak"], ".1%"),
                  f"{r['mfu_vs_matmul']:.1%} of {r['matmul_peak_tflops']:.3g}"])
  header = ["model", "length", "precision", "XLA", "batch", "ours seq/s",
            "Model Garden best seq/s", "ratio", "ours TFLOP/s", "MFU (datasheet bf16)",
            "MFU (measured matmul TFLOP/s)"]
  return (["## Pre-training throughput", ""] + table(header, lines)
          + [""] + target(pretrain, anchors) + [""])


def target(pretrain: List[Dict[str, Any]], anchors) -> List[str]:
  hits = [r for r in pretrain if r["model"] == "electra_base" and r["seq_len"] == 128
          and r["precision"] == "mixed_bfloat16" and r["jit_compile"]]
  if not hits:
    return ["Target (electra_base, 128, bf16 + XLA): not measured."]
  r, a = hits[0], anchors.get(("electra_base", 128))
  ratio = r["ours_seq_per_s"] / a["anchor_seq_per_s"] if a else None
  met = r["ours_seq_per_s"] >= TARGET_SEQ_PER_S and ratio is not None and ratio >= TARGET_RATIO
  return [f"Target (electra_base, 128, bf16 + XLA, {r['device']}): at least "
          f"{TARGET_SEQ_PER_S:,.0f} seq/s and {TARGET_RATIO}x Model Garden: "
          f"{r['ours_seq_per_s']:,.0f} seq/s, {fmt(ratio, '.2f')}x: "
          f"**{'met' if met else 'not met'}**. NVIDIA's TF2 ELECTRA-base is published at "
          "955 seq/s on one A100 and 444 on one V100."]


def jax_throughput(results: Results) -> List[str]:
  """The JAX step against transformers' step per model, length and precision."""
  groups: Dict[tuple, Dict[str, Dict[str, Any]]] = {}
  for r in rows(results, "throughput"):
    side = r["key"].rsplit("/", 1)[1]
    groups.setdefault((model_label(r), r["seq_len"], r["precision"]), {})[side] = r
  if not groups:
    return []
  lines = []
  for (label, length, precision), sides in groups.items():
    j, h = sides.get("jax"), sides.get("hf")
    ratio = j["seq_per_s"] / h["seq_per_s"] if j and h else None
    lines.append([label, str(length), precision,
                  *((str(j["batch"]), f"{j['seq_per_s']:.1f}", f"{j['compile_seconds']:.0f}",
                     f"{j['tflops']:.3g}", fmt(j["mfu"], ".1%")) if j else ("-",) * 5),
                  *((str(h["batch"]), f"{h['seq_per_s']:.1f}", fmt(h["mfu"], ".1%"))
                    if h else ("-",) * 3), fmt(ratio, ".2f")])
  header = ["model", "length", "precision", "JAX batch", "JAX seq/s", "JAX compile s",
            "JAX TFLOP/s", "JAX MFU (datasheet bf16)", "transformers batch",
            "transformers seq/s (torch.compile)", "transformers MFU", "ratio"]
  out = ["## Pre-training throughput: JAX backend against transformers (PyTorch)", ""]
  out += table(header, lines) + [""]
  base = groups.get(("electra_base", 128, "mixed_bfloat16"), {})
  if "jax" in base:
    j, h = base["jax"], base.get("hf")
    ratio = j["seq_per_s"] / h["seq_per_s"] if h else None
    met = (j["seq_per_s"] >= JAX_TARGET_SEQ_PER_S and ratio is not None
           and ratio >= JAX_TARGET_RATIO)
    out += [f"Target (electra_base, 128, bf16, {j['device']}): at least "
            f"{JAX_TARGET_SEQ_PER_S:,.0f} seq/s and {JAX_TARGET_RATIO}x transformers: "
            f"{j['seq_per_s']:,.0f} seq/s, {fmt(ratio, '.2f')}x: "
            f"**{'met' if met else 'not met'}**. NVIDIA's TF2 ELECTRA-base is published at "
            "955 seq/s on one A100.", ""]
  return out


def projection(results: Results) -> List[str]:
  """Steps/s of the paper-small setting and the hours of the paper's 1M steps."""
  out = []
  for r in rows(results, "projection"):
    hours = r["hours_per_million_steps"]
    out.append(f"- {model_label(r)}, batch {r['batch']}, length {r['seq_len']}, "
               f"{r['precision']} ({r['device']}): {r['steps_per_s']:.2f} steps/s "
               f"({r['seq_per_s']:.0f} seq/s); 1M steps in {hours:.3g} h (target under "
               f"{JAX_TARGET_HOURS:.0f} h: **{'met' if hours < JAX_TARGET_HOURS else 'not met'}"
               "**; the paper: 4 days on one V100)")
    if "forward_seconds" in r:
      f, fb, step = r["forward_seconds"], r["forward_backward_seconds"], r["step_seconds"]
      out.append(f"- where the step goes: forward {f * 1e3:.2f} ms, backward "
                 f"{(fb - f) * 1e3:.2f} ms, optimizer and the rest {(step - fb) * 1e3:.2f} ms "
                 f"of {step * 1e3:.2f} ms")
  return ["## Paper-small projection (JAX)", ""] + out + [""] if out else []


def jax_profiles(prof: List[Dict[str, Any]]) -> List[str]:
  """The JAX items' traced steps (bench/profiles/trace_summary.py summaries)."""
  out = ["## Where the step goes (JAX, traced)", ""]
  for p in prof:
    summary, steps = p["profile"], p["profile_steps"]
    out.append(f"- {model_label(p)} length {p['seq_len']} batch {p['batch']}, "
               f"{p['precision']}: {p['step_seconds'] * 1e3:.2f} ms per step untraced, "
               f"{summary['seconds'] / steps * 1e3:.2f} ms of {summary['source']} time per "
               "traced step; by kind: " + ", ".join(
                   f"{kind} {v['share']:.0%}" for kind, v in summary["kinds"].items()))
    out.append("  - longest: " + ", ".join(
        f"`{k['name'][:50]}` {k['seconds'] / steps * 1e3:.2f} ms ({k['kind']})"
        for k in summary["kernels"][:8]))
  return out + [""]


def levers(results: Results) -> List[str]:
  """The bf16 step re-measured with one change each, against the baseline of its model in
  the call (`lever/baseline`; `lever/base_baseline` for the `base_` levers)."""
  found = {r["key"].split("/", 1)[1]: r for r in rows(results, "lever")}
  out: List[str] = []
  def prefix_of(name: str) -> str:
    return "base_" if name.startswith("base_") else ""
  for prefix in sorted({prefix_of(name) for name in found}):
    group = {n: r for n, r in found.items() if prefix_of(n) == prefix}
    base = group.get(prefix + "baseline")
    lines = [[name, str(r["batch"]), fmt(r["seq_per_s"]), fmt(r["step_seconds"] * 1e3, ".2f"),
              fmt(r["seq_per_s"] / base["seq_per_s"], ".2f") if base else "-"]
             for name, r in group.items()]
    r = next(iter(group.values()))
    out += ([f"## Levers ({model_label(r)}, length {r['seq_len']}, bf16)", ""]
            + table(["lever", "batch", "seq/s", "step ms", "x baseline"], lines) + [""])
  return out


def trainer(results: Results) -> List[str]:
  """bench/training/reader_trainer.py: the reader, the step and the trainer, one run each."""
  found = rows(results, "trainer")
  lines = [[f"{r.get('hparams') or 'electra_small'}", str(r["seq_len"]), str(r["batch"]),
            fmt(r["reader_cpu"], ".0f"), fmt(r["reader_process"], ".0f"),
            fmt(r["step"], ".0f"), fmt(r.get("feed"), ".0f"),
            fmt(r.get("feed_at_once"), ".0f"), fmt(r["trainer"], ".0f"),
            fmt(r["feed"] / r["step"], ".3f") if "feed" in r else "-",
            fmt(r["trainer"] / r["step"], ".3f"),
            ", ".join(f"{x:.0f}" for x in r.get("trainer_lines", [])) or "-"] for r in found]
  return (["## The trainer against its step (bench/training/reader_trainer.py), seq/s", ""]
          + table(["electra_small +", "length", "batch", "reader (CPU)", "reader process",
                   "step", "feed (no logs)", "feed, state dropped at once", "trainer",
                   "feed / step", "trainer / step", "trainer's lines"], lines) + [""] + host_times(found)) if found else []


def host_times(found: List[Dict[str, Any]]) -> List[str]:
  """reader_trainer's host time a step: a call's wall far above its CPU time waited for
  the devices; near it, the host's own work set the pace."""
  lines = [[f"{r.get('hparams') or 'electra_small'}", str(r["seq_len"]), key,
            fmt(split["read_ms"], ".3f"), fmt(split["call_ms"], ".3f"),
            fmt(split["call_cpu_ms"], ".3f")]
           for r in found for key, split in r.get("host_ms", {}).items()]
  return (["The host's time a step, ms", ""]
          + table(["electra_small +", "length", "run", "taking the batch", "in the call",
                   "of it CPU"], lines) + [""]) if lines else []


def cudnn_dropout(results: Results) -> List[str]:
  """bench/gpu/cudnn_dropout.py's verdict lines."""
  found = rows(results, "cudnn")
  return (["## cuDNN's fused attention dropout (bench/gpu/cudnn_dropout.py)", "", "```"]
          + found[0]["verdict"] + ["```", ""]) if found else []


def embedding_gradients(results: Results) -> List[str]:
  """bench/gpu/embedding_grad.py's rows: each way of summing the word-embedding gradient."""
  found = rows(results, "embgrad")
  if not found:
    return []
  lines = [[f"{r['batch']}x{r['seq_len']}, E {r['width']}", r["way"], fmt(r["ms"], ".3f"),
            fmt(r["max_abs_error"], ".3g"), ", ".join(r["scatter_types"]) or "none"]
           for r in found]
  return (["## The word-embedding gradient alone (bench/gpu/embedding_grad.py)", ""]
          + table(["ids", "way", "ms", "max abs error", "scatter types"], lines) + [""])


def attention_ways(results: Results) -> List[str]:
  """bench/gpu/attention_ways.py's rows: each way of computing the attention block."""
  found = rows(results, "attention", failed_too=True)  # each way's row has its own status
  if not found:
    return []
  base = {(r["batch"], r["heads"]): r["ms"] for r in found
          if r["way"] == "official" and r["status"] == "ok"}
  lines = [[f"{r['batch']}x{r['seq_len']}, {r['heads']}x{r['head_size']}", r["way"],
            fmt(r["dropout"], ".2g"),
            fmt(r["ms"], ".3f") if r["status"] == "ok" else r["status"],
            fmt(base[(r["batch"], r["heads"])] / r["ms"], ".2f")
            if r["status"] == "ok" and (r["batch"], r["heads"]) in base else "-",
            fmt(r["max_abs_error"], ".3g") if "max_abs_error" in r else "-"]
           for r in found]
  return (["## The attention block alone, forward and backward (bench/gpu/attention_ways.py)", ""]
          + table(["tokens, heads", "way", "dropout", "ms", "x official", "max abs error"],
                  lines) + [""])


def profile(results: Results) -> List[str]:
  prof = rows(results, "profile")
  if not prof:
    return []
  if "profile" in prof[0]:
    return jax_profiles(prof)
  p = prof[0]
  out = ["## Where the step goes", "",
         f"{model_label(p)} length {p['seq_len']} batch {p['batch']}, {p['precision']}"
         f"{' + XLA' if p['jit_compile'] else ''}: {p['step_ms']:.2f} ms per step untraced "
         f"({p['traced_step_ms']:.2f} traced)."]
  for plane, lines in p["device_lines"].items():
    for line, summary in lines.items():
      out.append(f"- {plane} `{line}`: busy {summary['busy_ms']:.2f} ms "
                 f"({summary['busy_ms'] / p['step_ms']:.0%} of the step); longest: "
                 + ", ".join(f"`{name[:60]}` {ms:.2f}" for name, ms in summary["top"][:6]))
  out.append("- host op types (ms per step, summed over threads): " + ", ".join(
      f"{name} {ms:.1f}" for name, ms in p["host_op_types"][:8]))
  return out + [""]


def finetuning(results: Results) -> List[str]:
  ft = rows(results, "finetune")
  if not ft:
    return []
  lines = [[f"electra_{r['model_size']}", str(r["seq_len"]), str(r["batch"]), r["precision"],
            "yes" if r["jit_compile"] else "no", f"{r['ours_seq_per_s']:.1f}",
            fmt(r["anchor_seq_per_s"]) + (" (bf16 autocast)" if r["anchor_bf16_autocast"]
                                          else ""), fmt(r["ratio"], ".2f")] for r in ft]
  header = ["model", "length", "batch", "precision", "XLA", "ours seq/s",
            "transformers (torch) seq/s", "ratio"]
  return ["## Fine-tuning throughput (SQuAD shapes)", ""] + table(header, lines) + [""]


def curve_gap(a: Dict[str, Any], b: Dict[str, Any], loss: str = "total_loss") -> float:
  """Mean absolute difference of two runs' logged `loss` over their common steps."""
  pa = {h["step"]: h[loss] for h in a["history"]}
  pb = {h["step"]: h[loss] for h in b["history"]}
  steps = sorted(set(pa) & set(pb))
  return sum(abs(pa[s] - pb[s]) for s in steps) / len(steps)


def numerics(results: Results, out_dir: str) -> List[str]:
  runs = {r["key"].split("/", 1)[1]: r for r in rows(results, "numerics")}
  if not runs:
    return []
  lines = [[name, r["precision"] + (" + XLA" if r["jit_compile"] else ""), str(r["seed"]),
            *(f"{r['history'][-1][k]:.4f}" for k in LOSSES), f"{r['seconds']:.0f}"]
           for name, r in runs.items()]
  out = ["## Numerics", "",
         f"{next(iter(runs.values()))['model']}, {next(iter(runs.values()))['steps']} steps; "
         "final losses are the mean of the last logged interval.", ""]
  out += table(["run", "precision", "seed", *LOSSES, "seconds"], lines) + [""]
  pairs = {"precision gap (bf16 + XLA vs float32, seed 0)": ("bf16_xla_seed0", "f32_seed0"),
           "seed spread (float32, seed 1 vs seed 0)": ("f32_seed1", "f32_seed0"),
           "seed spread (bf16 + XLA, seed 1 vs seed 0)": ("bf16_xla_seed1", "bf16_xla_seed0"),
           "cuDNN attention gap (bf16, cudnn vs official kernel, seed 0)": (
               "bf16_cudnn_seed0", "bf16_xla_seed0")}
  gaps = {name: {k: curve_gap(runs[a], runs[b], k) for k in LOSSES}
          for name, (a, b) in pairs.items() if a in runs and b in runs}
  for name, by_loss in gaps.items():
    out.append(f"- {name}, mean |difference| over the logged steps: "
               + ", ".join(f"{k} {v:.4f}" for k, v in by_loss.items()))
  gap, spread = (gaps.get(list(pairs)[i]) for i in (0, 1))
  for label, gap in (("bf16 + XLA", gap), ("the cuDNN attention kernel",
                                            gaps.get(list(pairs)[3]))):
    if gap and spread:
      within = [k for k in LOSSES if gap[k] <= spread[k]]
      out.append(f"- {label} is within the float32 seed-to-seed spread on "
                 f"{len(within)} of {len(LOSSES)} losses ({', '.join(within) or 'none'})")
  out.append("- curves: numerics.png" if plot_curves(runs, os.path.join(out_dir, "numerics.png"))
             else "- numerics.png not drawn: this Python has no matplotlib")
  return out + [""]


def plot_curves(runs: Dict[str, Dict[str, Any]], path: str) -> bool:
  """One panel per loss, one line per run; False without matplotlib."""
  try:
    from bench.common import pyplot, save_figure
    plt = pyplot()
  except ImportError:
    return False
  figure, axes = plt.subplots(1, len(LOSSES), figsize=(5 * len(LOSSES), 4))
  for axis, loss in zip(axes, LOSSES):
    for name, run in runs.items():
      axis.plot([h["step"] for h in run["history"]], [h[loss] for h in run["history"]],
                label=name, color=f"C{run['seed']}",
                linestyle="-" if run["precision"] == "float32" else "--")
    axis.set_title(loss)
    axis.set_xlabel("step")
  axes[0].legend()
  figure.tight_layout()
  save_figure(figure, path, dpi=80)
  return True


def study(results: Results) -> List[str]:
  summaries = rows(results, "study")
  out = []
  for s in summaries:
    seq_per_s = s["last_throughput"].get("sequences_per_sec") if s["last_throughput"] else None
    if not seq_per_s:
      out.append(f"- {s['model_name']}: at step {s['step']}, no full logging interval yet")
      continue
    steps_per_s = seq_per_s / s["train_batch_size"]
    hours = s["num_train_steps"] / steps_per_s / 3600
    out.append(f"- paper-small (electra_0.25, batch {s['train_batch_size']}): "
               f"{steps_per_s:.2f} steps/s ({seq_per_s:.0f} seq/s) in the last logged "
               f"interval; at step {s['step']} of {s['num_train_steps']:,}; the whole 6.25% run "
               f"projects to {hours:.3g} h of pre-training (fine-tuning not counted)")
  return ["## Paper-scale projection", ""] + out + [""] if out else []


def language(results: Results) -> List[str]:
  """The language study's GPU pre-training (bench/studies/language_gpu.py), a line per kind."""
  out = []
  for r in rows(results, "language"):
    losses = r["summary"].get("final_losses") or {}
    seq_per_s = (r["summary"].get("last_throughput") or {}).get("sequences_per_sec")
    out.append(f"- {r['kind']}: step {r['step']:,} of {r['steps_asked']:,} in {r['seconds']:.0f} s "
               f"({fmt(seq_per_s, '.0f')} seq/s in the last logged interval); final MLM loss "
               f"{fmt(losses.get('mlm_loss'), '.3f')}, discriminator loss "
               f"{fmt(losses.get('disc_loss'), '.3f')}; weights in {', '.join(r['files'])}")
  return (["## Language study pre-training", ""] + out
          + ["", "Here: `python -m bench.studies.language_gpu unpack --results DIR`, then "
                 "bench/studies/language_study.py `--model-name gpu_small --stages finetune,report`.",
             ""]) if out else []


def feed(results: Results) -> List[str]:
  """bench/training/jax_feed.py: the trainer's feed against its step alone, a line per feed."""
  out = []
  for r in rows(results, "feed"):
    out.append(f"{r['model']} {r['hparams']}, length {r['seq_len']}, batch {r['batch']}, "
               f"{r['precision']}:")
    out.append("")
    out += table(["feed", "seq/s", "ms a step", "of the step alone", "split (ms a step)"], [
        [row["row"], fmt(row["seq_per_s"], ".0f"), fmt(row["ms_per_step"], ".2f"),
         fmt(row["of_step"], ".2f") + "x",
         ", ".join(f"{k[:-3]} {v:.2f}" for k, v in row.items()
                   if k.endswith("_ms") and k != "ms_per_step")]
        for row in r["rows"]])
    out.append("")
  return ["## The trainer's feed (bench/training/jax_feed.py)", ""] + out if out else []


def inference(results: Results) -> List[str]:
  record = results.get("inference/savedmodel")
  if not record or record["status"] != "ok":
    return []
  return ["## Inference", "", "```"] + record.get("output_tail", [])[-30:] + ["```", ""]


def not_ok(results: Results) -> List[str]:
  bad = [(k, r) for k, r in results.items() if r["status"] != "ok"]
  return (["## Not measured", ""] + [
      f"- {k}: {r['status']} "
      f"{r.get('reason') or r.get('error') or (r.get('output_tail') or [''])[-1]}"
      for k, r in bad] + [""]) if bad else []


def write(out_dir: str, paths: List[str]) -> str:
  """Writes out_dir/results.md (and numerics.png) from the results files; returns the text."""
  results = load_results(paths)
  text = "\n".join(["# GPU run", ""] + machine(results) + pretraining(results)
                   + jax_throughput(results) + embedding_gradients(results)
                   + attention_ways(results) + profile(results)
                   + levers(results) + cudnn_dropout(results) + trainer(results)
                   + finetuning(results)
                   + numerics(results, out_dir) + projection(results) + study(results)
                   + language(results) + feed(results)
                   + inference(results) + not_ok(results))
  write_text_atomic(os.path.join(out_dir, "results.md"), text)
  return text


def main(argv: Optional[List[str]] = None) -> int:
  parser = script_parser(__doc__, whole=False)
  parser.add_argument("--out", required=True, help="where results.md and numerics.png go")
  parser.add_argument("results", nargs="+", help="results.jsonl files, earliest first")
  args = parser.parse_args(argv)
  os.makedirs(args.out, exist_ok=True)
  print(write(args.out, args.results))
  return 0
