"""Fine-tuning step throughput on SQuAD-shaped batches: ours against Hugging Face (PyTorch).

    python -m bench.training.finetune_throughput [--model-size base] [--seq-len 384]
        [--batch-size 32] [--steps 10] [--rounds 3] [--mixed-precision mixed_bfloat16]
        [--jit-compile] [--skip-torch] [--json FILE]

Times full training steps (forward, backward, optimizer update) of
  - ours: the fine-tuning runner's compiled train loop (`ModelRunner`, the
    official optimizer with layer-wise decay, the QA head and loss) on a
    randomly initialised ELECTRA of `--model-size`, and
  - the anchor: transformers' `ElectraForQuestionAnswering` of the same shapes
    with torch AdamW, in bfloat16 autocast when ours is mixed_bfloat16 and a
    GPU is there (its fastest plain setting), else float32;
alternating the two `--rounds` times and taking each one's best round. Inputs
are one in-memory batch of random ids with answer spans, so the input pipeline
and tokenization are not timed. Prints sequences/s and the ratio.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from typing import Any, Callable, Dict, List

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from bench.common import add_step_flags, append_json, script_parser  # noqa: E402
from electra_tf2.tasks.config import FinetuningConfig, resolve_finetuning_config  # noqa: E402
from electra_tf2.tasks.preprocessing import Preprocessor  # noqa: E402
from electra_tf2.training.finetuning import ModelRunner  # noqa: E402
from electra_tf2.tasks.task import Task  # noqa: E402
from electra_tf2.tasks.task_builder import TASKS  # noqa: E402
from electra_tf2.training.options import RunOptions  # noqa: E402
from bench.training.pretrain_throughput import device_name  # noqa: E402

TASK = "squad"


def squad_config(work_dir: str, args) -> FinetuningConfig:
  """A SQuAD fine-tuning config from random initialisation."""
  return resolve_finetuning_config(f"electra_{args.model_size}", work_dir, {
      "task_names": [TASK], "init_checkpoint": None, "model_size": args.model_size,
      "max_seq_length": args.seq_len, "train_batch_size": args.batch_size,
      **json.loads(args.hparams)})


def squad_tasks(config: FinetuningConfig) -> List[Task]:
  """The SQuAD task without a tokenizer: the batches are made here, not from text (and
  tensorflow-text, 62 MB, need not travel to a GPU machine)."""
  return [TASKS[TASK](config, None)]


def random_batch(config: FinetuningConfig, specs, seed: int = 0) -> Dict[str, np.ndarray]:
  """`[batch, ...]` features of `specs`: random ids, full masks, spans inside the text."""
  rng = np.random.default_rng(seed)
  B, L = config.train_batch_size, config.max_seq_length
  batch = {spec.name: np.zeros([B] + list(spec.shape),
                               np.int32 if spec.is_int_feature else np.float32)
           for spec in specs}
  batch["input_ids"] = rng.integers(1000, config.vocab_size, (B, L)).astype(np.int32)
  batch["input_mask"][:] = 1
  batch["segment_ids"][:, L // 8:] = 1
  starts = rng.integers(L // 8, L - 8, B).astype(np.int32)
  batch[f"{TASK}_start_positions"] = starts
  batch[f"{TASK}_end_positions"] = starts + rng.integers(0, 8, B).astype(np.int32)
  return batch


def ours_step(config: FinetuningConfig, options: RunOptions, steps: int) -> Callable:
  """Runs `steps` training steps of the runner's compiled loop; returns the mean loss."""
  strategy = tf.distribute.OneDeviceStrategy("/gpu:0" if tf.config.list_physical_devices("GPU")
                                             else "/cpu:0")
  tasks = squad_tasks(config)
  runner = ModelRunner(config, tasks, 1, strategy, options)
  with strategy.scope():
    optimizer, _ = runner._make_optimizer(10_000)  # pylint: disable=protected-access
  global_step = tf.Variable(0, dtype=tf.int64, trainable=False)
  loop = runner._build_train_loop(  # pylint: disable=protected-access
      optimizer, config.train_batch_size, global_step)
  batch = random_batch(config, Preprocessor(config, tasks).feature_specs)
  iterator = iter(strategy.experimental_distribute_dataset(
      tf.data.Dataset.from_tensors(batch).repeat()))
  n = tf.constant(steps)
  return lambda: loop(iterator, n)["loss"].numpy()


def torch_step(config: FinetuningConfig, bf16: bool, steps: int) -> Callable:
  """transformers' ElectraForQuestionAnswering of the same shapes, torch AdamW."""
  import torch
  import transformers
  e = config.encoder_config
  device = "cuda" if torch.cuda.is_available() else "cpu"
  torch.set_flush_denormal(True)  # as TensorFlow does: Adam's tiny moments crawl on a CPU
  model = transformers.ElectraForQuestionAnswering(transformers.ElectraConfig(
      vocab_size=config.vocab_size, embedding_size=config.embedding_size or e.hidden_size,
      hidden_size=e.hidden_size, num_hidden_layers=e.num_hidden_layers,
      num_attention_heads=e.num_attention_heads, intermediate_size=e.intermediate_size,
      max_position_embeddings=e.max_position_embeddings)).to(device).train()
  optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
  batch = random_batch(config, Preprocessor(config, squad_tasks(config)).feature_specs)
  inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["input_mask"],
            "token_type_ids": batch["segment_ids"],
            "start_positions": batch[f"{TASK}_start_positions"],
            "end_positions": batch[f"{TASK}_end_positions"]}
  inputs = {k: torch.as_tensor(v, dtype=torch.long, device=device) for k, v in inputs.items()}

  def run() -> float:
    for _ in range(steps):
      with torch.autocast(device, dtype=torch.bfloat16, enabled=bf16):
        loss = model(**inputs).loss
      loss.backward()
      torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
      optimizer.step()
      optimizer.zero_grad(set_to_none=True)
    return float(loss.detach())
  return run


def best_seconds(run: Callable, steps: int) -> float:
  start = time.perf_counter()
  run()
  return (time.perf_counter() - start) / steps


def main(argv=None) -> Dict[str, Any]:
  parser = script_parser(__doc__, whole=False)
  parser.add_argument("--model-size", default="base", choices=("small", "base", "large"))
  parser.add_argument("--seq-len", type=int, default=384)
  parser.add_argument("--batch-size", type=int, default=32)
  parser.add_argument("--skip-torch", action="store_true")
  add_step_flags(parser, steps=10)
  args = parser.parse_args(argv)

  with tempfile.TemporaryDirectory() as work_dir:
    config = squad_config(work_dir, args)
    options = RunOptions(mixed_precision=args.mixed_precision, jit_compile=args.jit_compile)
    runs = {"ours": ours_step(config, options, args.steps)}
    bf16 = args.mixed_precision == "mixed_bfloat16" and bool(
        tf.config.list_physical_devices("GPU"))
    if not args.skip_torch:
      runs["torch"] = torch_step(config, bf16, args.steps)
    for run in runs.values():  # compile and warm up
      run()
    best = {name: float("inf") for name in runs}
    for _ in range(args.rounds):
      for name, run in runs.items():
        best[name] = min(best[name], best_seconds(run, args.steps))
  ours = args.batch_size / best["ours"]
  anchor = args.batch_size / best["torch"] if "torch" in best else None
  record = {"model_size": args.model_size, "seq_len": args.seq_len, "batch": args.batch_size,
            "precision": args.mixed_precision, "jit_compile": args.jit_compile,
            "ours_seq_per_s": ours, "anchor": "transformers (torch)" if anchor else None,
            "anchor_bf16_autocast": bf16 if anchor else None, "anchor_seq_per_s": anchor,
            "ratio": ours / anchor if anchor else None, "device": device_name(),
            "steps": args.steps, "rounds": args.rounds}
  print(f"electra_{args.model_size} SQuAD length {args.seq_len} batch {args.batch_size} "
        f"{args.mixed_precision}{' + XLA' if args.jit_compile else ''}: ours {ours:.2f} seq/s"
        + (f", transformers {anchor:.2f} seq/s, ratio {ours / anchor:.2f}" if anchor else ""),
        flush=True)
  append_json(args.json, record)
  return record


if __name__ == "__main__":
  main()
