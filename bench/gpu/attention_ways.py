"""The self-attention block alone, each way of computing it, on the JAX backend's device.

    python -m bench.gpu.attention_ways [--batch 512] [--seq-len 128] [--heads 12]
        [--head-size 64] [--dropout 0.1] [--rounds 5] [--json FILE]

From the fused projection's output `qkv` `[batch, seq_len, 3, heads, head_size]` (bfloat16,
right-padded: each sequence's length drawn from [seq_len / 2, seq_len]) to the context
`[batch, seq_len, heads * head_size]`, forward and backward (the gradient of a fixed random
upstream with respect to `qkv`), each way timed (best of --rounds, each of 10 calls):
  official            what layers/transformer.py runs (model/modeling.py:652-780): heads
                      transposed out, scores q k^T / sqrt(d) plus the -10000 bias in
                      float32, softmax, the attention dropout, probs v, heads transposed back
  official_no_dropout the same with attention dropout 0
  dpa_xla             jax.nn.dot_product_attention, implementation "xla", in the layout the
                      projection gives ([batch, seq, heads, size]: no transposes), the
                      padding as key lengths; no dropout (it has none)
  dpa_cudnn           the same by cuDNN's fused kernel (a GPU only)
  cudnn_dropout       cuDNN's fused kernel with the attention dropout, through JAX's private
                      fused_attention_stablehlo: its seed is a Python int fixed when the
                      step compiles, so every step would drop the same positions. Not the
                      official semantics and not shippable: the ceiling a fused kernel with
                      dropout gives (a GPU only)
The ways without dropout are checked against numpy's float64 attention on the same inputs
(max abs error of the context), so a fast way computes the same function.
"""

from __future__ import annotations

import argparse
import math
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from bench import common

WAYS = ("official", "official_no_dropout", "dpa_xla", "dpa_cudnn", "cudnn_dropout")
GPU_ONLY = ("dpa_cudnn", "cudnn_dropout")
WITH_DROPOUT = ("official", "cudnn_dropout")


def inputs(batch: int, seq_len: int, heads: int, head_size: int, seed: int = 0):
  """qkv float32 `[batch, seq_len, 3, heads, head_size]`, lengths int32 `[batch]` in
  [seq_len / 2, seq_len], upstream float32 `[batch, seq_len, heads * head_size]`."""
  rng = np.random.default_rng(seed)
  qkv = rng.normal(size=(batch, seq_len, 3, heads, head_size)).astype(np.float32)
  lengths = rng.integers(seq_len // 2, seq_len + 1, batch).astype(np.int32)
  upstream = rng.normal(size=(batch, seq_len, heads * head_size)).astype(np.float32)
  return qkv, lengths, upstream


def reference(qkv: np.ndarray, lengths: np.ndarray) -> np.ndarray:
  """numpy float64 attention without dropout: `[batch, seq_len, heads * head_size]`."""
  q, k, v = (np.moveaxis(qkv[:, :, i].astype(np.float64), 2, 1) for i in range(3))
  scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])  # [b, h, s, s]
  keys = np.arange(qkv.shape[1])[None, :] < lengths[:, None]  # [b, s]
  scores = scores + np.where(keys, 0.0, -10000.0)[:, None, None, :]
  probs = np.exp(scores - scores.max(-1, keepdims=True))
  probs /= probs.sum(-1, keepdims=True)
  context = np.moveaxis(probs @ v, 1, 2)  # [b, s, h, d]
  return context.reshape(context.shape[0], context.shape[1], -1)


def ways(dropout: float) -> Dict[str, Callable]:
  """name -> f(qkv bf16 [b, s, 3, h, d], lengths [b], key) -> context [b, s, h * d]."""
  import jax
  import jax.numpy as jnp

  def official(rate):
    def f(qkv, lengths, key):
      b, s, _, h, d = qkv.shape
      q, k, v = jnp.unstack(jnp.transpose(qkv, (2, 0, 3, 1, 4)), axis=0)  # [b, h, s, d]
      keys = jnp.arange(s)[None, :] < lengths[:, None]
      bias = jnp.where(keys, 0.0, -10000.0)[:, None, None, :]
      scores = (q * jnp.asarray(1.0 / math.sqrt(d), q.dtype)) @ jnp.swapaxes(k, -1, -2)
      probs = jax.nn.softmax(scores.astype(jnp.float32) + bias, axis=-1).astype(qkv.dtype)
      if rate:
        keep = jax.random.bernoulli(key, 1.0 - rate, probs.shape)
        probs = jnp.where(keep, probs / jnp.asarray(1.0 - rate, probs.dtype), 0)
      return jnp.transpose(probs @ v, (0, 2, 1, 3)).reshape(b, s, h * d)
    return f

  def dpa(implementation):
    def f(qkv, lengths, key):
      del key
      b, s, _, h, d = qkv.shape
      q, k, v = (qkv[:, :, i] for i in range(3))
      context = jax.nn.dot_product_attention(
          q, k, v, query_seq_lengths=lengths, key_value_seq_lengths=lengths,
          implementation=implementation)
      # Padded queries: zero there (cuDNN's rule), not the official mean over the keys;
      # the loss never reads them.
      return context.reshape(b, s, h * d)
    return f

  def cudnn_dropout(qkv, lengths, key):
    del key
    from jax._src.cudnn import fused_attention_stablehlo  # pylint: disable=g-import-not-at-top
    b, s, _, h, d = qkv.shape
    q, k, v = (qkv[:, :, i] for i in range(3))
    context = fused_attention_stablehlo.dot_product_attention(
        q, k, v, q_seqlen=lengths, kv_seqlen=lengths, scale=1.0 / math.sqrt(d),
        mask_type=fused_attention_stablehlo.MaskType.PADDING, dropout_rate=dropout, seed=0)
    return context.reshape(b, s, h * d)

  return {"official": official(dropout), "official_no_dropout": official(0.0),
          "dpa_xla": dpa("xla"), "dpa_cudnn": dpa("cudnn"), "cudnn_dropout": cudnn_dropout}


def forward_backward(way: Callable) -> Callable:
  """(qkv, lengths, key, upstream) -> (context, d(sum(context * upstream))/d qkv)."""
  import jax
  import jax.numpy as jnp

  def f(qkv, lengths, key, upstream):
    def loss(x):
      out = way(x, lengths, key)
      return jnp.sum(out.astype(jnp.float32) * upstream), out
    (_, out), grad = jax.value_and_grad(loss, has_aux=True)(qkv)
    return out, grad
  return f


def valid_error(got: np.ndarray, want: np.ndarray, lengths: np.ndarray) -> float:
  """Max abs difference over the real (unpadded) query positions."""
  rows = np.arange(want.shape[1])[None, :] < lengths[:, None]
  return float(np.abs(got.astype(np.float64) - want)[rows].max())


def measure(args: argparse.Namespace, json_path: Optional[str] = None) -> List[Dict[str, Any]]:
  """Each way's row, printed and appended to `json_path` as it is measured."""
  import jax
  import jax.numpy as jnp
  qkv, lengths, upstream = inputs(args.batch, args.seq_len, args.heads, args.head_size)
  dtype = jnp.dtype(args.dtype)
  cast = qkv.astype(dtype)
  want = reference(cast.astype(np.float32), lengths)
  device_args = [jax.device_put(x) for x in (cast, lengths, jax.random.key(0), upstream)]
  on_gpu = jax.devices()[0].platform == "gpu"
  rows = []
  for name, way in ways(args.dropout).items():
    row = {"way": name, "batch": args.batch, "seq_len": args.seq_len, "heads": args.heads,
           "head_size": args.head_size,
           "dropout": args.dropout if name in WITH_DROPOUT else 0.0, "dtype": args.dtype,
           "device": str(jax.devices()[0].device_kind), "jax": jax.__version__}
    if name in GPU_ONLY and not on_gpu:
      row.update(status="skipped", reason="needs a GPU (cuDNN)")
    else:
      try:
        row.update(status="ok", **time_way(forward_backward(way), device_args, args.rounds))
      except Exception as error:  # pylint: disable=broad-except
        row.update(status="failed", reason=f"{type(error).__name__}: {str(error)[:300]}")
    if row["status"] == "ok" and row["dropout"] == 0.0:
      row["max_abs_error"] = valid_error(row.pop("context"), want, lengths)
    row.pop("context", None)
    rows.append(row)
    print(f"{name:<20} " + (f"{row['ms']:>9.3f} ms" if row["status"] == "ok" else
                            f"{row['status']}: {row['reason']}")
          + (f"  max |error| {row['max_abs_error']:.3g}" if "max_abs_error" in row else ""),
          flush=True)
    common.append_json(json_path, row)
  return rows


def time_way(f: Callable, device_args: list, rounds: int) -> Dict[str, Any]:
  """The compiled step's best time of `rounds` (each 10 calls) and its context output."""
  import jax
  compiled = jax.jit(f).lower(*device_args).compile()
  context = np.asarray(compiled(*device_args)[0]).astype(np.float32)
  return {"ms": common.best_seconds(compiled, device_args, rounds) * 1e3, "context": context}


def add_flags(parser: argparse.ArgumentParser) -> None:
  parser.add_argument("--heads", type=int, default=12)
  parser.add_argument("--head-size", type=int, default=64)
  parser.add_argument("--dropout", type=float, default=0.1,
                      help="the attention dropout of the ways that have one (official 0.1)")
  parser.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float32"))


def main(argv: Optional[List[str]] = None) -> int:
  return common.kernel_bench_main(__doc__, argv, 512, add_flags, measure)


if __name__ == "__main__":
  raise SystemExit(main())
