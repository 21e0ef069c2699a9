"""Stage `order`: how local and how hard the training stream of each input pipeline is."""

from __future__ import annotations

import glob
import os
from typing import Any, Dict

from bench.common import log
from bench.parity.curves.report import spread
from bench.parity.curves.layout import EVAL_SEED, model_dir, our_config
from bench.parity.curves.official import run_official


def stage_order(args) -> Dict[str, Any]:
  """How local and how hard the training stream is, in the official input_fn and ours.

  Locality: which shard and record each example of the first num_train_steps batches
  comes from. Difficulty: the MLM loss of one fixed model (each side's seed-0 final
  checkpoint, dropout off) on the batches of the training-window steps, so the content
  of the two streams is compared apart from the models trained on them.
  """
  import numpy as np
  import tensorflow as tf
  from electra_tf2.models import model_directory
  from electra_tf2.data_io import input_pipeline
  from electra_tf2.utils.atomic_io import write_json_atomic
  out_dir = os.path.join(args.work_dir, "order")
  os.makedirs(out_dir, exist_ok=True)
  files = sorted(glob.glob(os.path.join(args.work_dir, "data", "pretrain_tfrecords",
                                        "pretrain_data.tfrecord*")))
  origin = {}
  feature = {"input_ids": tf.io.FixedLenFeature([args.hparams["max_seq_length"]], tf.int64)}
  for file_index, path in enumerate(files):
    for record, example in enumerate(tf.data.TFRecordDataset(path)):
      ids = tf.io.parse_single_example(example, feature)["input_ids"].numpy()
      origin.setdefault(ids.astype(np.int32).tobytes(), (file_index, record))
  steps, batch = args.hparams["num_train_steps"], args.hparams["train_batch_size"]
  final = max(args.eval_at)
  first = final - final // 3
  streams, results = {}, {}
  for seed in args.seeds:
    for side in ("official", "ours"):
      path = os.path.join(out_dir, f"{side}_seed{seed}.npz")
      if not os.path.exists(path):
        if side == "official":
          run_official(args, {"mode": "stream", "data_dir": os.path.join(args.work_dir, "data"),
                              "hparams": args.hparams, "seed": seed, "batches": steps,
                              "output": path})
        else:
          stream = list(input_pipeline.input_fn(our_config(args, seed=seed), True,
                                                batch).take(steps))
          np.savez(path, **{k: np.stack([b[k].numpy() for b in stream])
                            for k in ("input_ids", "input_mask", "segment_ids")})
      streams[side, seed] = dict(np.load(path))
      ids = streams[side, seed]["input_ids"].astype(np.int32)
      where = np.array([[origin[row.tobytes()] for row in rows] for rows in ids])
      near = []
      for k in range(5, steps):
        recent = where[k - 5:k].reshape(-1, 2)
        near.append(np.mean([np.any((recent[:, 0] == f) & (np.abs(recent[:, 1] - r) <= 10))
                             for f, r in where[k]]))
      results[f"{side}/{seed}"] = {
          "shards_per_batch": float(np.mean([len(set(where[k, :, 0])) for k in range(steps)])),
          "near_previous_5": float(np.mean(near))}
  judges = {"official": os.path.join(args.work_dir, "converted",
                                     f"seed{args.seeds[0]}_step{final}"),
            "ours": model_dir(args, "ours", args.seeds[0])}
  for judge, directory in judges.items():
    if not os.path.exists(os.path.join(directory, f"ckpt-{final}.index")):
      log(f"difficulty: no {directory}/ckpt-{final} (run the train and eval stages); skipped")
      continue
    model = model_directory.restore_pretrainer(directory,
                                               os.path.join(directory, f"ckpt-{final}"))
    loss = tf.function(lambda features, seed: model(features, training=False,
                                                    seed=seed)["mlm_loss"])
    for (side, seed), stream in streams.items():
      losses = [float(loss({k: tf.constant(v[step]) for k, v in stream.items()},
                           tf.constant([step, EVAL_SEED]))) for step in range(first, final)]
      results[f"{side}/{seed}"][f"difficulty_for_{judge}"] = float(np.mean(losses))
  log(f"training stream, {steps} batches of {batch} from {len(files)} shards: distinct "
      "shards per batch; the share of a batch's examples within 10 records (same shard) "
      "of an example of the 5 batches before it; the MLM loss of a fixed model (seed "
      f"{args.seeds[0]}, step {final}, dropout off) on the batches of steps {first}-{final}. "
      "Mean [min, max] over seeds")
  for name in results[f"ours/{args.seeds[0]}"]:
    cells = [f"{side} {spread([results[f'{side}/{s}'][name] for s in args.seeds])}"
             for side in ("official", "ours")]
    log(f"  {name:<25} " + "   ".join(cells))
  write_json_atomic(os.path.join(out_dir, "order.json"), results)
  return results

