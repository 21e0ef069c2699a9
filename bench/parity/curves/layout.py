"""The work directory's layout and what several stages share: configs, model dirs, metrics."""

from __future__ import annotations

import os

METRICS = ("masked_lm_loss", "masked_lm_accuracy", "sampled_masked_lm_accuracy", "disc_loss",
           "disc_auc", "disc_accuracy", "disc_precision", "disc_recall")
EVAL_SEED = 0  # every evaluation draws the same masks: eval batch i is seeded by (i, 0)
# Eval sets: WikiText-2 valid (held out, another domain) and the training data itself,
# which is what the official do_eval reads (pretrain/pretrain_data.py:32-76).
EVAL_SETS = {"heldout": "heldout_tfrecords", "train": "pretrain_tfrecords"}


def our_config(args, **hparams):
  from electra_tf2.config.pretraining import resolve_pretraining_config
  return resolve_pretraining_config("electra_small", os.path.join(args.work_dir, "data"),
                                    dict(args.hparams, **hparams))


def model_dir(args, side: str, seed: int) -> str:
  return os.path.join(args.work_dir, "models", f"{side}_seed{seed}")


def trained(args, side: str, seed: int) -> bool:
  """Whether this side and seed has its final checkpoint."""
  name = "model.ckpt" if side == "official" else "ckpt"
  return os.path.exists(os.path.join(model_dir(args, side, seed),
                                     f"{name}-{max(args.eval_at)}.index"))
