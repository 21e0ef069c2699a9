"""Batched discriminator and generator passes, corruption and pseudo-log-likelihood."""

from __future__ import annotations

from typing import List, Sequence

import numpy as np

from bench.common import pad_rows


class Passes:
  """Batched forward passes of one `ElectraPretrainer` (dropout off)."""

  def __init__(self, model, batch_size: int = 128):
    import tensorflow as tf
    if model.mlm_head is None:
      raise ValueError("this model has no MLM generator (uniform or ELECTRIC generator): the "
                       "corruption and pseudo-log-likelihood need one")
    self.model, self.batch_size, self.tf = model, batch_size, tf

    @tf.function(reduce_retracing=True)
    def discriminate(ids, mask):
      return model.discriminator_head(model.discriminator(ids, mask, tf.zeros_like(ids)))

    @tf.function(reduce_retracing=True)
    def generate(ids, mask, positions):
      encoder = model.mlm_encoder
      hidden = tf.gather(encoder(ids, mask, tf.zeros_like(ids)), positions, batch_dims=1)
      return tf.nn.log_softmax(model.mlm_head(hidden, encoder.embedding_table))

    self._discriminate, self._generate = discriminate, generate

  def logits(self, rows: Sequence[Sequence[int]]) -> List[np.ndarray]:
    """Discriminator logits of each row (ids with [CLS]/[SEP]), same lengths."""
    out = []
    for begin in range(0, len(rows), self.batch_size):
      batch = rows[begin:begin + self.batch_size]
      ids, mask = pad_rows(batch)
      logits = self._discriminate(ids, mask).numpy()
      out.extend(logits[i, :len(r)] for i, r in enumerate(batch))
    return out

  def log_probs(self, rows: Sequence[Sequence[int]], positions: Sequence[int]) -> np.ndarray:
    """Generator log-softmax `[len(rows), vocab]` at one position of each row."""
    out = []
    for begin in range(0, len(rows), self.batch_size):
      ids, mask = pad_rows(rows[begin:begin + self.batch_size])
      at = np.asarray(positions[begin:begin + self.batch_size], np.int32)[:, None]
      out.append(self._generate(ids, mask, at).numpy()[:, 0])
    return np.concatenate(out) if out else np.zeros((0, 0), np.float32)


def sample(log_probs: np.ndarray, allowed: np.ndarray, rng: np.random.Generator) -> np.ndarray:
  """One id per row from softmax(log_probs) restricted to `allowed` (bool `[vocab]`)."""
  logits = np.where(allowed[None], log_probs, -np.inf)
  gumbel = -np.log(-np.log(rng.uniform(1e-12, 1.0, logits.shape)))
  return np.argmax(logits + gumbel, axis=1)


def pseudo_log_likelihood(passes: Passes, rows: Sequence[Sequence[int]], mask_id: int
                          ) -> np.ndarray:
  """Sum over each row's tokens (not [CLS]/[SEP]) of log P_generator(token | the rest),
  the token [MASK]ed: one pass per token."""
  masked, positions, owner, targets = [], [], [], []
  for r, row in enumerate(rows):
    for p in range(1, len(row) - 1):
      copy = list(row)
      copy[p] = mask_id
      masked.append(copy)
      positions.append(p)
      owner.append(r)
      targets.append(row[p])
  log_probs = passes.log_probs(masked, positions)
  picked = log_probs[np.arange(len(targets)), targets] if targets else np.zeros(0)
  return np.bincount(np.asarray(owner, int), picked, minlength=len(rows))


def corrupt(passes: Passes, rows: Sequence[Sequence[int]], chosen: Sequence[Sequence[int]],
            source: str, allowed: np.ndarray, mask_id: int, rng: np.random.Generator
            ) -> List[List[int]]:
  """Rows with the `chosen` positions replaced by generator samples (all of a row's
  positions [MASK]ed at once) or uniform draws from `allowed`."""
  out = [list(r) for r in rows]
  if source == "uniform":
    pool = np.flatnonzero(allowed)
    for row, where in zip(out, chosen):
      for p in where:
        row[p] = int(rng.choice(pool))
    return out
  masked, positions, slots = [], [], []
  for r, (row, where) in enumerate(zip(rows, chosen)):
    copy = list(row)
    for p in where:
      copy[p] = mask_id
    for p in where:
      masked.append(copy)
      positions.append(p)
      slots.append((r, p))
  if slots:
    for (r, p), token in zip(slots, sample(passes.log_probs(masked, positions), allowed, rng)):
      out[r][p] = int(token)
  return out
