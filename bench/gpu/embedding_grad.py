"""The word-embedding gradient alone, each way of computing it, on the JAX backend's device.

    python -m bench.gpu.embedding_grad [--batch 1024] [--seq-len 128] [--width 128]
        [--vocab 30522] [--rounds 5] [--json FILE]

The gradient of a `[vocab, E]` table looked up at `[batch, seq_len]` ids and cast to
bfloat16 is the sum of the bfloat16 upstream rows landing on each id. The ids are a masked
generator input: [CLS] and two [SEP] per sequence, 15% [MASK] (103), the rest uniform, so
one id repeats thousands of times, as in pre-training. Each way, timed (best of --rounds,
each of 10 calls) and checked against numpy's float64 `add.at`:
  autodiff_f32_gather   jax.grad of a float32 gather cast to bfloat16: what the model runs
                        (layers/embeddings.lookup on a table made with autocast=False)
  autodiff_bf16_table   jax.grad of a gather from a bfloat16 copy of the table: what the
                        model ran before (Keras autocasts a variable read in a call)
  scatter_f32           a float32 scatter-add of the rows
  sorted_scatter_f32    the same after sorting the ids (indices_are_sorted)
  one_hot               one_hot(ids)^T @ rows in chunks of 4,096 ids: no atomics (what the
                        official code does on TPU for the lookup, model/modeling.py:410-464)
With each: the element type of every scatter in XLA's optimized program.
"""

from __future__ import annotations

import argparse
import re
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from bench import common


def masked_ids(batch: int, seq_len: int, vocab: int, seed: int = 0) -> np.ndarray:
  """int32 `[batch, seq_len]`: [CLS] a [SEP] b [SEP] with 15% of the rest [MASK] (103)."""
  rng = np.random.default_rng(seed)
  ids = rng.integers(min(1000, vocab - 1), vocab, (batch, seq_len))
  ids[rng.random((batch, seq_len)) < 0.15] = 103
  ids[:, 0], ids[:, seq_len // 2], ids[:, -1] = 101, 102, 102
  return ids.astype(np.int32)


def ways(vocab: int) -> Dict[str, Callable]:
  """name -> f(table f32 [V, E], ids [B, L], upstream bf16 [B, L, E]) -> float32 [V, E]."""
  import jax
  import jax.numpy as jnp

  def grad_of(gather):
    def f(table, ids, upstream):
      return jax.grad(lambda t: jnp.sum(gather(t, ids).astype(jnp.float32)
                                        * upstream.astype(jnp.float32)))(table)
    return f

  def flat(ids, upstream):
    return ids.reshape(-1), upstream.reshape(-1, upstream.shape[-1])

  def scatter(table, ids, upstream):
    ids, rows = flat(ids, upstream)
    return jnp.zeros(table.shape, jnp.float32).at[ids].add(rows.astype(jnp.float32))

  def sorted_scatter(table, ids, upstream):
    ids, rows = flat(ids, upstream)
    order = jnp.argsort(ids)
    return jax.ops.segment_sum(rows[order].astype(jnp.float32), ids[order], table.shape[0],
                               indices_are_sorted=True)

  def one_hot(table, ids, upstream, chunk=4096):
    ids, rows = flat(ids, upstream)
    pad = -ids.shape[0] % chunk  # id -1: an all-zero one-hot row
    ids = jnp.pad(ids, (0, pad), constant_values=-1).reshape(-1, chunk)
    rows = jnp.pad(rows, ((0, pad), (0, 0))).reshape(-1, chunk, rows.shape[1])

    def add(total, part):
      hot = jax.nn.one_hot(part[0], vocab, dtype=part[1].dtype)
      return total + jnp.einsum("nv,ne->ve", hot, part[1],
                                preferred_element_type=jnp.float32), None
    return jax.lax.scan(add, jnp.zeros(table.shape, jnp.float32), (ids, rows))[0]

  return {
      "autodiff_f32_gather": grad_of(
          lambda t, i: jnp.take(t, i, axis=0).astype(jnp.bfloat16)),
      "autodiff_bf16_table": grad_of(
          lambda t, i: jnp.take(t.astype(jnp.bfloat16), i, axis=0)),
      "scatter_f32": scatter,
      "sorted_scatter_f32": sorted_scatter,
      "one_hot": one_hot,
  }


def scatter_types(hlo: str) -> List[str]:
  """The result element types of the scatters in an optimized HLO text."""
  return sorted(set(re.findall(r"= (\w+)\[[\d,]*\][^=]*? scatter\(", hlo)))


def measure(args: argparse.Namespace, json_path: Optional[str] = None) -> List[Dict[str, Any]]:
  """Each way's row, printed and appended to `json_path` as it is measured."""
  import jax
  import jax.numpy as jnp
  rng = np.random.default_rng(0)
  ids = masked_ids(args.batch, args.seq_len, args.vocab)
  upstream = rng.normal(size=(args.batch, args.seq_len, args.width)).astype(jnp.bfloat16)
  want = np.zeros((args.vocab, args.width))
  np.add.at(want, ids.reshape(-1), upstream.reshape(-1, args.width).astype(np.float64))
  device_args = [jax.device_put(x) for x in (
      np.zeros((args.vocab, args.width), np.float32), ids, upstream)]
  rows = []
  for name, way in ways(args.vocab).items():
    compiled = jax.jit(way).lower(*device_args).compile()
    got = np.asarray(compiled(*device_args))
    best = common.best_seconds(compiled, device_args, args.rounds)
    rows.append({"way": name, "ms": best * 1e3, "max_abs_error": float(np.abs(got - want).max()),
                 "hot_id_repeats": int((ids == 103).sum()), "scatter_types":
                 scatter_types(compiled.as_text()), "batch": args.batch,
                 "seq_len": args.seq_len, "width": args.width, "vocab": args.vocab,
                 "device": str(jax.devices()[0].device_kind), "jax": jax.__version__})
    print(f"{name:<22} {best * 1e3:>9.3f} ms  max |error| {rows[-1]['max_abs_error']:.3g}  "
          f"scatters {rows[-1]['scatter_types']}", flush=True)
    common.append_json(json_path, rows[-1])
  return rows


def add_flags(parser: argparse.ArgumentParser) -> None:
  parser.add_argument("--width", type=int, default=128, help="the embedding size E")
  parser.add_argument("--vocab", type=int, default=30522)


def main(argv: Optional[List[str]] = None) -> int:
  return common.kernel_bench_main(__doc__, argv, 1024, add_flags, measure)


if __name__ == "__main__":
  raise SystemExit(main())
