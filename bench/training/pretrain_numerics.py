"""One short pre-training run's loss curve, for comparing precisions and seeds.

    python -m bench.training.pretrain_numerics --data-dir DIR [--model-name electra_small]
        [--steps 300] [--seed 0] [--mixed-precision mixed_bfloat16] [--jit-compile]
        [--log-every 10] [--json FILE]

Trains `--model-name` from scratch on DIR's pretrain_tfrecords/ (vocab.txt
gives the vocab size) with the official optimizer, warm-up over the first 10%
of `--steps` and linear decay to 0 at the end, and records the mean losses of
every `--log-every` steps. Run it in float32 and in bf16 + XLA from one seed,
and in float32 from a second seed: the precisions agree when their gap is
within the seed-to-seed spread (scripts/gpu_run.sh's numerics stage compares
them and plots the curves).
"""

from __future__ import annotations

import json
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from bench.common import add_step_flags, append_json, script_parser  # noqa: E402
from electra_tf2.config.pretraining import resolve_pretraining_config  # noqa: E402
from electra_tf2.training.options import RunOptions  # noqa: E402
from electra_tf2.training.tf_pretraining import PretrainingRun  # noqa: E402


def count_lines(path: str) -> int:
  with open(path, encoding="utf-8") as f:
    return sum(1 for _ in f)


def main(argv=None) -> None:
  parser = script_parser(__doc__, whole=False)
  parser.add_argument("--data-dir", required=True,
                      help="holds vocab.txt and pretrain_tfrecords/ (the data builder's output)")
  parser.add_argument("--model-name", default="electra_small")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--log-every", type=int, default=10)
  add_step_flags(parser, steps=300, rounds=None)
  args = parser.parse_args(argv)

  with tempfile.TemporaryDirectory() as model_dir:
    config = resolve_pretraining_config(args.model_name, args.data_dir, {
        "vocab_size": count_lines(os.path.join(args.data_dir, "vocab.txt")),
        **json.loads(args.hparams), "num_train_steps": args.steps,
        "num_warmup_steps": max(1, args.steps // 10), "iterations_per_loop": args.log_every,
        "save_checkpoints_steps": args.steps, "seed": args.seed, "model_dir": model_dir})
    options = RunOptions(distribution_strategy="one_device", mixed_precision=args.mixed_precision,
                         jit_compile=args.jit_compile, log_every=args.log_every)
    start = time.perf_counter()
    result = PretrainingRun(config, options).train()
    seconds = time.perf_counter() - start
  record = {"model": args.model_name, "precision": args.mixed_precision,
            "jit_compile": args.jit_compile, "seed": args.seed, "steps": args.steps,
            "batch": config.train_batch_size, "seq_len": config.max_seq_length,
            "seconds": seconds, "history": result["history"]}
  print(json.dumps({k: v for k, v in record.items() if k != "history"}), flush=True)
  append_json(args.json, record)


if __name__ == "__main__":
  main()
