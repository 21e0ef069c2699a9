"""Does cuDNN's fused attention draw the official attention dropout? A check on a GPU.

    python -m bench.gpu.cudnn_dropout [--batch 64] [--heads 4] [--rate 0.1] [--json FILE]

`--attention-kernel cudnn` (electra_tf2/layers/fused_attention.py) runs the attention
through JAX's private `fused_attention_stablehlo.dot_product_attention(..., dropout_rate,
seed)`, whose seed is a Python int fixed when the step compiles. The official attention
(model/modeling.py:652-780) drops each probability with its own coin every step, keeping
it with probability 1 - rate and scaling the kept ones by 1 / (1 - rate). Here the values
are the identity (`v[b, t, h] = e_t`, length = head size = 64), so the kernel's output is
the dropped probabilities themselves, `[batch, query, heads, key]`, compared with numpy's
float64 softmax of the same bfloat16 q and k:

- `keep rate`: the share of nonzero probabilities (official: 1 - rate);
- `scale`: the median of kept / numpy's probability (official: 1 / (1 - rate));
- `calls differ`: the share of positions kept in one call of the compiled function and
  dropped in the next (or the reverse), same inputs: 0 means every step drops the same
  positions; independent masks give 2 rate (1 - rate);
- `sites differ`: the same between two calls inside one compiled program (two layers);
  `seeds differ`: the same with seeds 0 and 1 at the two sites;
- `backward agrees`: the gradient with respect to v equals the forward's dropped
  probabilities times the upstream (the backward pass drew the forward's mask): its
  largest relative error;
- `no dropout error`: with rate 0, the largest |output - numpy| (the kernel is right).
Each with what the official semantics give, and a verdict. Run with
XLA_FLAGS=--xla_gpu_enable_command_buffer= (gpu_suite does): inside a command buffer the
kernel with dropout stopped XLA (`cuda_dnn.cc:6951`, docs/benchmarks.md#gpu).
"""

from __future__ import annotations

import argparse
from typing import Any, Dict, List, Optional

import numpy as np

from bench import common

LENGTH = 64  # the sequence length and the head size: v can be the identity


def inputs(batch: int, heads: int, seed: int = 0):
  """q, k float32 `[batch, LENGTH, heads, LENGTH]` (scaled so that the softmax is not
  flat), v the identity over the keys, upstream float32 like the output."""
  rng = np.random.default_rng(seed)
  q, k = (rng.normal(size=(batch, LENGTH, heads, LENGTH)).astype(np.float32) * 0.5
          for _ in range(2))
  v = np.broadcast_to(np.eye(LENGTH, dtype=np.float32)[None, :, None, :],
                      (batch, LENGTH, heads, LENGTH)).copy()
  upstream = rng.normal(size=(batch, LENGTH, heads, LENGTH)).astype(np.float32)
  return q, k, v, upstream


def probabilities(q: np.ndarray, k: np.ndarray) -> np.ndarray:
  """numpy float64 softmax(q k^T / 8) as `[batch, query, heads, key]`."""
  scores = np.einsum("bqhd,bkhd->bqhk", q.astype(np.float64), k.astype(np.float64)) / 8.0
  scores -= scores.max(-1, keepdims=True)
  probs = np.exp(scores)
  return probs / probs.sum(-1, keepdims=True)


def measure(args: argparse.Namespace) -> Dict[str, Any]:
  import jax
  import jax.numpy as jnp
  from jax._src.cudnn import fused_attention_stablehlo as fused

  def attend(q, k, v, rate, seed=0):
    return fused.dot_product_attention(q, k, v, scale=1.0 / 8.0, dropout_rate=rate, seed=seed)

  q, k, v, upstream = inputs(args.batch, args.heads)
  want = probabilities(q.astype(jnp.bfloat16).astype(np.float32),
                       k.astype(jnp.bfloat16).astype(np.float32))
  device = [jnp.asarray(x, jnp.bfloat16) for x in (q, k, v)]
  one = jax.jit(lambda q, k, v: attend(q, k, v, args.rate))
  two = jax.jit(lambda q, k, v: (attend(q, k, v, args.rate), attend(q, k, v, args.rate),
                                 attend(q, k, v, args.rate, seed=1)))

  def with_grad(q, k, v, u):
    out, pullback = jax.vjp(lambda v: attend(q, k, v, args.rate), v)
    return out, pullback(u.astype(out.dtype))[0]
  first, second = (np.asarray(one(*device), np.float64) for _ in range(2))
  site_a, site_b, seed_b = (np.asarray(x, np.float64) for x in two(*device))
  out, grad_v = (np.asarray(x, np.float64) for x in
                 jax.jit(with_grad)(*device, jnp.asarray(upstream)))
  clean = np.asarray(jax.jit(lambda q, k, v: attend(q, k, v, 0.0))(*device), np.float64)
  result = summary(args.rate, want, first, second, site_a, site_b, out, grad_v, upstream,
                   clean)
  result.update(device=str(jax.devices()[0].device_kind), jax=jax.__version__)
  result["seeds_differ"] = float(((site_a != 0) != (seed_b != 0)).mean())
  return result


def summary(rate, want, first, second, site_a, site_b, out, grad_v, upstream, clean
            ) -> Dict[str, Any]:
  kept = first != 0
  # d sum(out * u) / d v[b, k, h, :] = sum_q dropped[b, q, h, k] u[b, q, h, :]
  expected = np.einsum("bqhk,bqhd->bkhd", out, upstream)
  return {
      "rate": rate, "keep_rate": float(kept.mean()), "official_keep_rate": 1 - rate,
      "keep_rate_sd": float(np.sqrt(rate * (1 - rate) / kept.size)),
      "scale": float(np.median(first[kept] / want[kept])), "official_scale": 1 / (1 - rate),
      "calls_differ": float(((first != 0) != (second != 0)).mean()),
      "sites_differ": float(((site_a != 0) != (site_b != 0)).mean()),
      "independent_differ": 2 * rate * (1 - rate),
      "backward_error": float(np.abs(grad_v - expected).max() / np.abs(expected).max()),
      "no_dropout_error": float(np.abs(clean - want).max())}


def verdict(r: Dict[str, Any]) -> List[str]:
  """One line per property: what the kernel gave, what the official semantics give."""
  lines = [f"keep rate        {r['keep_rate']:.4f}   official {r['official_keep_rate']:.4f} "
           f"(one standard deviation {r['keep_rate_sd']:.5f})",
           f"scale            {r['scale']:.4f}   official {r['official_scale']:.4f}",
           f"calls differ     {r['calls_differ']:.4f}   independent masks "
           f"{r['independent_differ']:.4f}, the same masks 0",
           f"sites differ     {r['sites_differ']:.4f}   independent masks "
           f"{r['independent_differ']:.4f}",
           f"backward error   {r['backward_error']:.2e} (relative; bf16 ~1e-2)",
           f"no dropout error {r['no_dropout_error']:.2e} (max abs; bf16 ~4e-3)"]
  if "seeds_differ" in r:
    lines.append(f"seeds differ     {r['seeds_differ']:.4f}   (two sites, seeds 0 and 1)")
  masks_move = r["calls_differ"] > r["independent_differ"] / 2
  lines.append("verdict: the masks " + ("change" if masks_move else "do NOT change")
               + " from step to step")
  return lines


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
  parser = common.script_parser(__doc__, whole=False)
  parser.add_argument("--batch", type=int, default=64)
  parser.add_argument("--heads", type=int, default=4)
  parser.add_argument("--rate", type=float, default=0.1)
  parser.add_argument("--json", default=None, help="append the result as one JSON line")
  args = parser.parse_args(argv)
  import jax  # pylint: disable=g-import-not-at-top
  if jax.devices()[0].platform != "gpu":
    print("skipped: needs a GPU (cuDNN)", flush=True)
    return {}
  result = measure(args)
  result["verdict"] = verdict(result)
  print("\n".join(result["verdict"]), flush=True)
  common.append_json(args.json, result)
  return result


if __name__ == "__main__":
  common.block_tensorflow_if_asked()
  main()
