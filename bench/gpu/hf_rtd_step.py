"""The anchor of the JAX step's throughput: Hugging Face transformers' ELECTRA replaced-token
detection step in PyTorch, at the sizes of one of our presets (no TensorFlow).

    python -m bench.gpu.hf_rtd_step [--model-name electra_small] [--hparams JSON] [--seq-len 128]
        [--batch-sizes 8,32 | --max-batch 256] [--mixed-precision float32|mixed_bfloat16]
        [--jit-compile] [--no-tf32] [--steps 10] [--rounds 3] [--peak-tflops 989.4]
        [--json FILE]

One training step, as the official recipe does it (run_pretraining.py, model_fn):
  - mask `max_predictions_per_seq` random positions per row (not [CLS]/[SEP]) with [MASK];
  - the generator `ElectraForMaskedLM` (the preset's generator size: hidden, layers,
    heads, intermediate of `generator_bert_config`) on the masked ids, its MLM head on the
    masked positions only, cross-entropy against the original tokens;
  - a sample per masked position from the generator's softmax (Gumbel-max, no gradient);
  - the discriminator `ElectraForPreTraining` on the ids with the samples put in, sigmoid
    cross-entropy against "replaced" over the input mask;
  - loss = mlm + 50 * disc (the official weights), backward, global-norm clipping at 1.0,
    AdamW (lr 1e-4, weight decay 0.01; fused on a GPU).
The generator and the discriminator share one embeddings module (the official
tie_embeddings). Models are built from config (random init, nothing downloaded).
`--mixed-precision mixed_bfloat16` runs the step under bf16 autocast; `--jit-compile`
compiles the loss with torch.compile (its backward too); float32 matmuls use TF32 unless
`--no-tf32` (XLA's default on a GPU, which the JAX rows use). Timing as
bench/gpu/jax_pretrain_step.py: two warm-up steps (their time is `compile_seconds`), then the
best of `--rounds` rounds of `--steps` steps; the same row fields.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from typing import Any, Callable, Dict, List, Optional

from bench import common

MASK_ID = 103  # [MASK] in the BERT vocabulary


def parse_args(argv=None) -> argparse.Namespace:
  parser = common.script_parser(__doc__, whole=False)
  common.add_batch_flags(parser)
  parser.add_argument("--no-tf32", action="store_true", help="float32 matmuls in full float32")
  parser.add_argument("--seed", type=int, default=0)
  args = parser.parse_args(argv)
  if args.mixed_precision not in ("float32", "mixed_bfloat16"):
    parser.error(f"--mixed-precision {args.mixed_precision}: float32 or mixed_bfloat16")
  return args


def electra_config(bert, embedding_size: int, vocab_size: int):
  """transformers' ElectraConfig of one of our encoders (electra_tf2 BertConfig)."""
  from transformers import ElectraConfig
  return ElectraConfig(
      vocab_size=vocab_size, embedding_size=embedding_size, hidden_size=bert.hidden_size,
      num_hidden_layers=bert.num_hidden_layers, num_attention_heads=bert.num_attention_heads,
      intermediate_size=bert.intermediate_size, hidden_act="gelu",
      hidden_dropout_prob=bert.hidden_dropout_prob,
      attention_probs_dropout_prob=bert.attention_probs_dropout_prob,
      max_position_embeddings=bert.max_position_embeddings, type_vocab_size=2)


class Step:
  """The generator, the discriminator, AdamW and one in-memory batch; `__call__` runs one
  training step and returns the loss tensor."""

  def __init__(self, args: argparse.Namespace, batch: int):
    import torch
    from transformers import ElectraForMaskedLM, ElectraForPreTraining

    from electra_tf2.config.pretraining import resolve_pretraining_config
    from electra_tf2.pretraining.flops import train_step_flops
    torch.manual_seed(args.seed)
    self.device = "cuda" if torch.cuda.is_available() else "cpu"
    config = resolve_pretraining_config(args.model_name, None, {
        **json.loads(args.hparams), "max_seq_length": args.seq_len,
        "train_batch_size": batch})
    self.flops = train_step_flops(config, batch)
    E, V = config.resolved_embedding_size, config.vocab_size
    self.generator = ElectraForMaskedLM(electra_config(
        config.generator_bert_config, E, V)).to(self.device).train()
    self.discriminator = ElectraForPreTraining(electra_config(
        config.bert_config, E, V)).to(self.device).train()
    self.discriminator.electra.embeddings = self.generator.electra.embeddings
    self.attention = self.discriminator.config._attn_implementation  # pylint: disable=protected-access
    params = list({id(p): p for m in (self.generator, self.discriminator)
                   for p in m.parameters()}.values())
    self.params = params
    self.optimizer = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01,
                                       fused=self.device == "cuda")
    self.batch, self.predictions = batch, config.max_predictions_per_seq
    fake = common.fake_pretraining_batch(batch, args.seq_len, V, args.seed)
    self.inputs = [torch.from_numpy(fake[k]).long().to(self.device)
                   for k in ("input_ids", "input_mask", "segment_ids")]
    self.autocast = args.mixed_precision == "mixed_bfloat16"
    self.loss = torch.compile(self._loss) if args.jit_compile else self._loss

  def _loss(self, ids, mask, segments):
    import torch
    import torch.nn.functional as F
    L = ids.shape[1]
    scores = torch.rand(ids.shape, device=ids.device)
    scores[:, 0] = scores[:, L // 2] = scores[:, L - 1] = -1.0  # [CLS] and [SEP]
    positions = scores.topk(self.predictions, dim=1).indices
    masked = ids.scatter(1, positions, MASK_ID)
    hidden = self.generator.electra(masked, attention_mask=mask,
                                    token_type_ids=segments).last_hidden_state
    hidden = hidden.gather(1, positions[..., None].expand(-1, -1, hidden.shape[-1]))
    logits = self.generator.generator_lm_head(self.generator.generator_predictions(hidden))
    targets = ids.gather(1, positions)
    mlm = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())
    with torch.no_grad():
      uniform = torch.rand(logits.shape, device=ids.device).clamp_(1e-9, 1.0)
      sampled = (logits.float() - torch.log(-torch.log(uniform))).argmax(-1)
    fake = ids.scatter(1, positions, sampled)
    disc_logits = self.discriminator(fake, attention_mask=mask,
                                     token_type_ids=segments).logits
    weights = mask.float()
    disc = F.binary_cross_entropy_with_logits(
        disc_logits.float(), (fake != ids).float(), weight=weights,
        reduction="sum") / weights.sum()
    return mlm + 50.0 * disc

  def __call__(self):
    import torch
    with torch.autocast(self.device, dtype=torch.bfloat16, enabled=self.autocast):
      loss = self.loss(*self.inputs)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(self.params, 1.0)
    self.optimizer.step()
    self.optimizer.zero_grad(set_to_none=True)
    return loss

  def seconds_per_step(self, steps: int) -> float:
    start = time.perf_counter()
    for _ in range(steps):
      loss = self()
    loss.item()  # waits for the device
    return (time.perf_counter() - start) / steps


def make_step(args: argparse.Namespace, batch: int) -> Step:
  step = Step(args, batch)
  start = time.perf_counter()
  step.seconds_per_step(2)
  step.compile_seconds = time.perf_counter() - start
  return step


def environment(step: Step) -> Dict[str, Any]:
  import torch
  import transformers
  device = torch.cuda.get_device_name(0) if step.device == "cuda" else "cpu"
  return {"backend": "torch", "device": f"{step.device}: {device}", "torch": torch.__version__,
          "transformers": transformers.__version__, "attention": step.attention,
          "tf32": torch.get_float32_matmul_precision() != "highest",
          "python": platform.python_version()}


def row(args: argparse.Namespace, step: Step) -> Dict[str, Any]:
  best = min(step.seconds_per_step(args.steps) for _ in range(args.rounds))
  return {"model": args.model_name, "hparams": json.loads(args.hparams),
          "seq_len": args.seq_len, "precision": args.mixed_precision,
          "jit_compile": args.jit_compile, "batch": step.batch,
          "seq_per_s": step.batch / best, "steps_per_s": 1 / best, "step_seconds": best,
          "hours_per_million_steps": 1e6 * best / 3600, "compile_seconds": step.compile_seconds,
          "train_step_tflop": step.flops / 1e12, "tflops": step.flops / best / 1e12,
          "peak_tflops": args.peak_tflops,
          "mfu": step.flops / best / (args.peak_tflops * 1e12) if args.peak_tflops else None,
          "steps": args.steps, "rounds": args.rounds, **environment(step)}


def main(argv: Optional[List[str]] = None) -> List[Dict[str, Any]]:
  import torch
  args = parse_args(argv)
  os.environ.setdefault("USE_TF", "0")  # transformers 4 imports TensorFlow where it finds it
  # electra_tf2.config.pretraining imports Keras: on torch, so that no JAX in this process
  # takes GPU memory.
  os.environ["KERAS_BACKEND"] = "torch"
  torch.set_float32_matmul_precision("highest" if args.no_tf32 else "high")
  print(f"{'batch':>5} {'seq/s':>10} {'step ms':>10} {'compile s':>9} {'GFLOP/s':>12}"
        + (f" {'MFU':>6}" if args.peak_tflops else ""), flush=True)
  makers: List[Callable[[], Step]] = (
      [lambda: common.largest_batch(lambda b: make_step(args, b), args.max_batch,
                                    warm_up=lambda step: None, name="hf")[1]]
      if args.max_batch else
      [lambda b=int(b): make_step(args, b) for b in args.batch_sizes.split(",")])
  rows = []
  for make in makers:
    record = row(args, make())
    mfu = "" if record["mfu"] is None else f" {record['mfu']:>6.1%}"
    print(f"{record['batch']:>5} {record['seq_per_s']:>10.2f} "
          f"{record['step_seconds'] * 1e3:>10.1f} {record['compile_seconds']:>9.1f} "
          f"{record['tflops'] * 1e3:>12.1f}{mfu}", flush=True)
    common.append_json(args.json, record)
    rows.append(record)
  print(f"device: {rows[-1]['device']}, torch {rows[-1]['torch']}, transformers "
        f"{rows[-1]['transformers']}, attention {rows[-1]['attention']}")
  return rows


if __name__ == "__main__":
  common.block_tensorflow_if_asked()
  main()
