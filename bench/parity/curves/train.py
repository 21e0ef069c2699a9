"""Stage `train`: the official code and ours (and other checkouts), each seed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from bench.common import REPO
from bench.parity.curves.layout import model_dir, trained
from bench.parity.curves.official import run_official


def stage_train(args) -> None:
  final = max(args.eval_at)
  for seed in args.seeds:
    for side in args.sides:
      if trained(args, side, seed):
        continue
      directory = model_dir(args, side, seed)
      if side == "official":
        run_official(args, {"mode": "train", "data_dir": os.path.join(args.work_dir, "data"),
                            "hparams": dict(args.hparams, num_train_steps=final),
                            "seed": seed, "model_dir": directory, "save_at": args.eval_at})
      else:
        hparams = dict(args.hparams, num_train_steps=final, seed=seed, model_dir=directory,
                       save_checkpoints_steps=min(args.eval_at), keep_checkpoint_max=0,
                       iterations_per_loop=50)
        subprocess.run([sys.executable, "run_pretraining.py", "--data-dir",
                        os.path.join(args.work_dir, "data"), "--model-name", "electra_small",
                        "--hparams", json.dumps(hparams)], check=True,
                       cwd=args.trees.get(side, REPO))
