"""The quickstart's pre-training run on each Keras backend, several seeds: do the loss
curves and the final metrics agree within the seed-to-seed spread?

    python -m bench.parity.backend_curves [--data-dir runs/default] [--work-dir /tmp/backend_curves]
        [--backends tensorflow,jax] [--seeds 0,1,2] [--steps 300] [--batch-size 32]
        [--log-every 10]
        [--json docs/backend_curves.json] [--plot docs/backend_curves.png]

Each (backend, seed) is `electra pretrain --backend B` with scripts/quickstart.sh's
hparams (the debug-size `electra_small`, batch 32, learning rate 1e-3, 30 warm-up steps)
and `seed`, in its own model directory under `--work-dir`; a run whose final checkpoint
is there is not run again, so the script resumes. `--data-dir` is built with `electra
default-data` first when it has no TFRecords. The losses and metrics are read back from
each run's TensorBoard events (the same tags on both backends). The comparison: the mean
absolute difference of the backends' seed-mean curves against the mean absolute
difference between seeds of one backend (its spread), per loss, and the final metrics
(mean and standard deviation over seeds). The figures go to `--json` and the curves to
`--plot`.
"""

from __future__ import annotations

import argparse
import glob
import itertools
import json
import os
import subprocess
import sys
from typing import Any, Dict, List

import numpy as np

from electra_tf2.utils.atomic_io import write_text_atomic
from bench.common import script_parser

QUICKSTART = {"debug": True, "vocab_size": 8000, "train_batch_size": 32,
              "num_warmup_steps": 30, "learning_rate": 1e-3, "save_checkpoints_steps": 100}
LOSSES = ("total_loss", "mlm_loss", "disc_loss")
FINAL = ("train_metrics/masked_lm_accuracy", "train_metrics/disc_accuracy",
         "train_metrics/disc_auc", "train_metrics/disc_precision", "train_metrics/disc_recall")


def parse_args(argv=None) -> argparse.Namespace:
  parser = script_parser(__doc__, whole=False)
  parser.add_argument("--data-dir", default="runs/default")
  parser.add_argument("--work-dir", default="/tmp/backend_curves")
  parser.add_argument("--backends", default="tensorflow,jax")
  parser.add_argument("--seeds", default="0,1,2")
  parser.add_argument("--steps", type=int, default=300)
  parser.add_argument("--batch-size", type=int, default=QUICKSTART["train_batch_size"])
  parser.add_argument("--log-every", type=int, default=10)
  parser.add_argument("--json", default=None, help="write the comparison here")
  parser.add_argument("--plot", default=None, help="write the curves here (PNG)")
  return parser.parse_args(argv)


def electra(*args: str) -> List[str]:
  return [sys.executable, "-m", "electra_tf2", *args]


def ensure_data(data_dir: str) -> None:
  if glob.glob(os.path.join(data_dir, "pretrain_tfrecords", "*")):
    return
  subprocess.run(electra("default-data", "--data-dir", data_dir, "--vocab-size", "8000"),
                 check=True)


def run(args: argparse.Namespace, backend: str, seed: int) -> str:
  """The model directory of (backend, seed), trained to `--steps` unless it already is."""
  model_dir = os.path.join(args.work_dir, f"{backend}-seed{seed}")
  if glob.glob(os.path.join(model_dir, f"*{args.steps}.index")) or glob.glob(
      os.path.join(model_dir, f"portable-{args.steps}.npz")):
    return model_dir
  hparams = {**QUICKSTART, "num_train_steps": args.steps, "seed": seed,
             "train_batch_size": args.batch_size, "model_dir": model_dir}
  print(f"== {backend} seed {seed} -> {model_dir}", flush=True)
  subprocess.run(electra("pretrain", "--backend", backend, "--data-dir", args.data_dir,
                         "--model-name", "electra_small", "--hparams", json.dumps(hparams),
                         "--log-every", str(args.log_every)), check=True)
  return model_dir


def read_scalars(model_dir: str) -> Dict[str, Dict[int, float]]:
  """Every scalar of the run's TensorBoard event files (not eval/): tag -> step -> value."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  scalars: Dict[str, Dict[int, float]] = {}
  files = [f for f in glob.glob(os.path.join(model_dir, "**", "events.out.tfevents.*"),
                                recursive=True) if "/eval" not in f]
  for path in sorted(files):
    for record in tf.data.TFRecordDataset(path):
      event = tf.compat.v1.Event.FromString(record.numpy())
      for value in event.summary.value:
        number = (value.simple_value if value.HasField("simple_value")
                  else float(tf.make_ndarray(value.tensor)))
        scalars.setdefault(value.tag, {})[int(event.step)] = number
  return scalars


def curve(scalars: Dict[str, Dict[int, float]], tag: str, steps: List[int]) -> np.ndarray:
  return np.array([scalars[tag][s] for s in steps])


def compare(runs: Dict[str, List[Dict[str, Dict[int, float]]]]) -> Dict[str, Any]:
  """Backend gap against seed spread, per loss; final metrics per backend."""
  steps = sorted(set.intersection(*(set(r[LOSSES[0]]) for rs in runs.values() for r in rs)))
  out: Dict[str, Any] = {"steps": steps, "losses": {}, "final": {}}
  backends = list(runs)
  for tag in LOSSES:
    curves = {b: np.stack([curve(r, tag, steps) for r in rs]) for b, rs in runs.items()}
    spread = {b: float(np.mean([np.mean(np.abs(x - y))
                                for x, y in itertools.combinations(c, 2)]))
              for b, c in curves.items()}
    gap = float(np.mean(np.abs(curves[backends[0]].mean(0) - curves[backends[-1]].mean(0))))
    out["losses"][tag] = {"gap": gap, "spread": spread,
                          "within": gap <= max(spread.values()),
                          "curves": {b: c.tolist() for b, c in curves.items()}}
  last = steps[-1]
  for tag in FINAL:
    out["final"][tag] = {b: {"mean": float(np.mean(v)), "std": float(np.std(v)),
                             "values": v}
                         for b, rs in runs.items()
                         for v in [[r[tag][last] for r in rs if last in r.get(tag, {})]] if v}
  return out


def plot(result: Dict[str, Any], path: str) -> None:
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  colours = {"tensorflow": "tab:blue", "jax": "tab:orange", "torch": "tab:green"}
  fig, axes = plt.subplots(1, len(LOSSES), figsize=(15, 4))
  for ax, tag in zip(axes, LOSSES):
    for backend, curves in result["losses"][tag]["curves"].items():
      for i, c in enumerate(curves):
        ax.plot(result["steps"], c, color=colours.get(backend), alpha=0.8,
                linestyle="-" if backend == "tensorflow" else "--",
                label=f"{backend} seed {i}" if tag == LOSSES[0] else None)
    info = result["losses"][tag]
    ax.set_title(f"{tag}: backend gap {info['gap']:.3f}, seed spread "
                 + "/".join(f"{v:.3f}" for v in info["spread"].values()), fontsize=9)
    ax.set_xlabel("step")
  axes[0].legend(fontsize=8)
  fig.tight_layout()
  tmp = path + ".tmp.png"
  fig.savefig(tmp, dpi=100)
  os.replace(tmp, path)


def main(argv=None) -> Dict[str, Any]:
  args = parse_args(argv)
  ensure_data(args.data_dir)
  seeds = [int(s) for s in args.seeds.split(",")]
  runs = {b: [read_scalars(run(args, b, s)) for s in seeds] for b in args.backends.split(",")}
  result = compare(runs)
  for tag, info in result["losses"].items():
    print(f"{tag}: backend gap {info['gap']:.4f}, seed spread "
          + ", ".join(f"{b} {v:.4f}" for b, v in info["spread"].items())
          + (" (within)" if info["within"] else " (OUTSIDE)"))
  for tag, by_backend in result["final"].items():
    print(f"{tag} at step {result['steps'][-1]}: " + ", ".join(
        f"{b} {v['mean']:.4f} +- {v['std']:.4f}" for b, v in by_backend.items()))
  if args.json:
    write_text_atomic(args.json, json.dumps(result, indent=1) + "\n")
  if args.plot:
    plot(result, args.plot)
  return result


if __name__ == "__main__":
  main()
