"""Stage `dropout`: the placement and rates of dropout, one trained model in both codes."""

from __future__ import annotations

import json
import os
from typing import Any, Dict

from bench.common import log
from bench.parity.curves.equivalence import our_draws
from bench.parity.curves.layout import model_dir, our_config
from bench.parity.curves.official import run_official


def stage_dropout(args) -> Dict[str, Any]:
  """Dropout placement and rates: the mean losses of one batch under dropout, both codes.

  The same trained weights (our seed-0 model at the last --eval-at step, written in the
  official layout), batch, masks and samples; only the dropout draws differ from pass
  to pass. Dropout in another place or at another rate moves the mean loss of a
  trained model, so the means must agree within their standard errors.
  """
  import numpy as np
  import tensorflow as tf
  from electra_tf2.models import model_directory
  from electra_tf2.conversion import convert
  out_dir = os.path.join(args.work_dir, "equivalence")
  ours_dir = model_dir(args, "ours", args.seeds[0])
  checkpoint = os.path.join(ours_dir, f"ckpt-{max(args.eval_at)}")
  official_prefix = convert.export_official_checkpoint(
      ours_dir, os.path.join(out_dir, "trained"), checkpoint)
  model = model_directory.restore_pretrainer(ours_dir, checkpoint)
  batches = np.load(os.path.join(out_dir, "batches.npz"))
  features = {k: tf.constant(batches[k][0]) for k in ("input_ids", "input_mask", "segment_ids")}
  seed = tf.constant([0, 0], tf.int32)
  seeds = [our_draws(seed)]
  call = tf.function(lambda: model(features, training=True, seed=seed))
  ours = []
  for _ in range(args.dropout_passes):
    out = call()
    ours.append({"total_loss": float(out["total_loss"]), "mlm_loss": float(out["mlm_loss"])})
  run_official(args, {"mode": "dropout", "data_dir": os.path.join(args.work_dir, "data"),
                      "hparams": args.hparams, "seed": 0, "init_checkpoint": official_prefix,
                      "batches": os.path.join(out_dir, "batches.npz"), "seeds": seeds,
                      "passes": args.dropout_passes,
                      "output": os.path.join(out_dir, "official_dropout")})
  with open(os.path.join(out_dir, "official_dropout.json"), encoding="utf-8") as f:
    official = json.load(f)
  result = {}
  log(f"\ndropout: mean loss of one batch over {args.dropout_passes} passes with dropout on "
      "(the same trained weights, masks and samples), +- standard error")
  disc_weight = our_config(args).disc_weight
  for sample in (ours, official):
    for row in sample:
      row["disc_loss"] = (row["total_loss"] - row["mlm_loss"]) / disc_weight
  for name in ("mlm_loss", "disc_loss"):
    stats = {}
    for side, sample in (("ours", ours), ("official", official)):
      values = np.array([row[name] for row in sample])
      stats[side] = (float(values.mean()), float(values.std(ddof=1) / np.sqrt(len(values))))
    z = (stats["ours"][0] - stats["official"][0]) / np.hypot(stats["ours"][1],
                                                              stats["official"][1])
    result[name] = {"ours": stats["ours"], "official": stats["official"], "z": float(z)}
    log(f"  {name:<10} ours {stats['ours'][0]:.4f} +- {stats['ours'][1]:.4f}   official "
        f"{stats['official'][0]:.4f} +- {stats['official'][1]:.4f}   z = {z:+.2f}")
  # Without dropout both codes give one value; the spread above is dropout's alone.
  no_dropout = model(features, training=False, seed=seed)
  log(f"  (dropout off: mlm_loss {float(no_dropout['mlm_loss']):.4f})")
  with open(os.path.join(out_dir, "dropout.json"), "w", encoding="utf-8") as f:
    json.dump(result, f, indent=1)
  return result

