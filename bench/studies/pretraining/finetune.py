"""Stage `finetune`: every checkpoint and a random initialisation on every task and seed."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List

from bench.studies.pretraining.pretrain import pretrain_config
from bench.studies.pretraining.runs import log, run
from bench.studies.pretraining.settings import FINETUNE_DEFAULTS, PRESETS, RANDOM, TASK_MAX_SEQ_LENGTH


def finetune_points(args, plans) -> List[Dict[str, Any]]:
  """Every (objective, checkpoint) to fine-tune, plus random initialisation."""
  points = [{"name": RANDOM, "objective": RANDOM, "flops": 0.0, "checkpoint": None}]
  for objective, p in plans.items():
    for step in p["checkpoint_steps"]:
      points.append({"name": f"{objective}_{args.budget:.2g}_step{step}",
                     "objective": objective, "step": step,
                     "flops": step * p["flops_per_step"],
                     "checkpoint": os.path.join(p["model_dir"], f"ckpt-{step}")})
  return points


def random_init_hparams(config) -> Dict[str, Any]:
  """init_checkpoint null with the encoder shape of `config` (a PretrainingConfig)."""
  shape = {k: v for k, v in config.bert_config.to_dict().items() if k != "vocab_size"}
  return {"init_checkpoint": None, "model_size": config.model_size,
          "embedding_size": config.embedding_size, "vocab_size": config.vocab_size,
          "model_hparam_overrides": shape}


def results_path(args, point: Dict[str, Any], task: str) -> str:
  return os.path.join(args.work_dir, "results", point["name"], f"{task}.json")


def stage_finetune(args, points) -> None:
  for point in points:
    if point["checkpoint"] and not os.path.exists(point["checkpoint"] + ".index"):
      log(f"skipping {point['name']}: no checkpoint yet")
      continue
    for task in args.tasks:
      path = results_path(args, point, task)
      done = json.load(open(path, encoding="utf-8"))["trials"] if os.path.exists(path) else []
      if len(done) >= len(args.seeds):
        continue
      base = {"init_checkpoint": point["checkpoint"]} if point["checkpoint"] else \
          random_init_hparams(pretrain_config(args, "mlm"))
      where = os.path.join(args.work_dir, "finetuning", point["name"], task)
      hparams = dict(FINETUNE_DEFAULTS,
                     max_seq_length=min(TASK_MAX_SEQ_LENGTH.get(task, 128), args.max_seq_length),
                     **args.finetune_hparams, **base,
                     num_trials=len(args.seeds), seed=args.seeds[0],
                     model_dir=os.path.join(where, "model"), keep_all_models=False,
                     results_txt=os.path.join(where, "results.txt"), results_json=path,
                     preprocessed_data_dir=os.path.join(args.work_dir, "finetuning_tfrecords",
                                                        task))
      run([sys.executable, "run_finetuning.py", "--data-dir", args.work_dir,
           "--model-name", "study", "--task", task, "--hparams", json.dumps(hparams)]
          + PRESETS[args.preset]["run_flags"], args.deadline, args.preset == "debug")
