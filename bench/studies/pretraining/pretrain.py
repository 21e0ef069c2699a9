"""Stage `pretrain`: one encoder per objective for the same FLOPs budget."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict

from bench.studies.pretraining.data import vocab_size
from bench.studies.pretraining.runs import log, run
from bench.studies.pretraining.settings import PRESETS


def objective_hparams(objective: str) -> Dict[str, Any]:
  """`mlm` or `electra_<generator fraction>` as pre-training hparams."""
  if objective == "mlm":
    return {"electra_objective": False, "untied_generator": False, "generator_hidden_size": 1.0}
  fraction = float(objective.split("_", 1)[1])
  if fraction == 1.0:  # a full-size but separate generator, as the paper's Figure 3
    return {"generator_hidden_size": 1.0}
  return {"generator_hidden_size": fraction}


def pretrain_hparams(args, objective: str) -> Dict[str, Any]:
  return dict(PRESETS[args.preset]["pretrain"], vocab_size=vocab_size(args),
              max_seq_length=args.max_seq_length, **args.pretrain_hparams,
              **objective_hparams(objective))


def pretrain_config(args, objective: str):
  from electra_tf2.config.pretraining import resolve_pretraining_config
  return resolve_pretraining_config("electra_small", args.work_dir,
                                    pretrain_hparams(args, objective))


def plan(args) -> Dict[str, Dict[str, Any]]:
  """Per objective: steps for the budget, FLOPs per step, checkpoint steps and the model dir."""
  from electra_tf2.pretraining.flops import pretraining_flops_per_step
  plans = {}
  for objective in args.objectives:
    per_step = pretraining_flops_per_step(pretrain_config(args, objective))
    # Steps and checkpoints in whole compiled loops (iterations_per_loop), so that
    # checkpoints land on them and one save interval (their gcd) reaches every one.
    unit = pretrain_config(args, objective).iterations_per_loop
    steps = unit * max(1, round(args.budget / per_step / unit))
    checkpoints = sorted({unit * max(1, round(steps * f / unit)) for f in args.checkpoints})
    plans[objective] = {
        "flops_per_step": per_step, "steps": steps, "checkpoint_steps": checkpoints,
        "model_dir": os.path.join(args.work_dir, "models", f"{objective}_{args.budget:.2g}")}
  return plans


def stage_pretrain(args, plans) -> None:
  import math
  for objective, p in plans.items():
    if all(os.path.exists(os.path.join(p["model_dir"], f"ckpt-{s}.index"))
           for s in p["checkpoint_steps"]):
      continue
    every = math.gcd(*p["checkpoint_steps"])
    preset = PRESETS[args.preset]
    warmup = preset.get("warmup_steps") or int(p["steps"] * preset["warmup_fraction"])
    hparams = dict(pretrain_hparams(args, objective), num_train_steps=p["steps"],
                   num_warmup_steps=warmup, save_checkpoints_steps=every,
                   model_dir=p["model_dir"])
    log(f"pre-training {objective}: {p['steps']} steps of {p['flops_per_step']:.3g} FLOPs")
    run([sys.executable, "run_pretraining.py", "--data-dir", args.work_dir,
         "--model-name", "electra_small", "--hparams", json.dumps(hparams)]
        + preset["run_flags"], args.deadline, args.preset == "debug")
