"""Gathering, scattering, dynamic masking and sampling for pre-training.

The official pretrain/pretrain_helpers.py:33-229 with the same semantics, quirks
included: positions masked with replacement (duplicates averaged, integer ids
floor-divided), 85% [MASK] / 15% kept, `num_to_predict` counting [CLS]/[SEP] and
rounding half to even, Gumbel-max sampling with `disallow`. Every random
function takes a `seed` ([2] int, or None for a fresh one) and draws statelessly
(electra_tf2/utils/stateless_random.py), on every Keras backend. The one change, and the
seeds: docs/design.md#masking-and-sampling. The official `gather_positions`
(pretrain_helpers.py:33-59) is `utils.backend_ops.gather_positions`, which the task heads
share.
"""

from __future__ import annotations

from typing import Any, Optional, Protocol, Sequence, Tuple, Union

import keras
import numpy as np
from keras import ops

from electra_tf2.utils import backend_ops, stateless_random
from electra_tf2.text import vocab as vocab_lib
from electra_tf2.utils.inputs import get_updated_inputs, Inputs

# A seed of the stateless draws: an int tensor (of any backend) or array of shape [2].
Seed = Union[np.ndarray, Sequence[int], Any]

# Probability that a selected slot shows [MASK]; otherwise the token is kept.
_MASK_TOKEN_PROB = 0.85


class MaskingConfig(Protocol):
  """What `mask` and `get_candidates_mask` read from the pre-training config."""
  max_predictions_per_seq: int
  special_ids: vocab_lib.SpecialTokenIds


# ---------------------------------------------------------------------------
# Seeds
# ---------------------------------------------------------------------------

def _resolve_seed(seed: Optional[Seed]):
  """`seed` as a [2] tensor; a fresh one from the backend's generator when None."""
  if seed is None:
    return stateless_random.fresh_seed()
  return ops.convert_to_tensor(seed)


# ---------------------------------------------------------------------------
# Gather / scatter (pretrain_helpers.py:33-115)
# ---------------------------------------------------------------------------

def scatter_update(sequence, updates, positions) -> Tuple:
  """Writes `updates` into `sequence` at `positions`, row by row.

  Official semantics: updates to position 0 are ignored (this is how padded
  prediction slots become no-ops); updates that share a position are summed and
  divided by their count, i.e. averaged for float sequences and floor-averaged
  for integer ones (two different ids t1, t2 give (t1 + t2) // 2); the result is
  the blend (1 - m) * sequence + m * updates with m the 0/1 update mask.

  Args:
    sequence: [batch, seq_len] or [batch, seq_len, depth], float or int.
    updates: [batch, n_positions] or [batch, n_positions, depth], same dtype as
      `sequence`.
    positions: [batch, n_positions] int indices into seq_len.

  Returns:
    updated_sequence: like `sequence`.
    updates_mask: [batch, seq_len] int32, 1 where a position (other than 0)
      was updated.
  """
  rank = len(sequence.shape)
  if rank not in (2, 3):
    raise ValueError(f"scatter_update: sequence must have rank 2 or 3, got shape "
                     f"{sequence.shape}")
  dtype = keras.backend.standardize_dtype(sequence.dtype)
  if not ("float" in dtype or "int" in dtype):
    raise TypeError(f"scatter_update: sequence must be float or int, got {dtype}")
  if rank == 2:
    sequence = ops.expand_dims(sequence, -1)
  batch_size, seq_len, depth = ops.shape(sequence)
  positions = ops.cast(positions, "int32")
  n_positions = ops.shape(positions)[1]

  # Sum the updates (duplicates add up) and count the writes per position.
  shift = ops.expand_dims(seq_len * ops.arange(batch_size, dtype="int32"), -1)
  flat_positions = ops.reshape(positions + shift, (-1, 1))
  flat_updates = ops.reshape(ops.cast(updates, dtype), (-1, depth))
  summed = ops.scatter(flat_positions, flat_updates, (batch_size * seq_len, depth))
  summed = ops.reshape(summed, (batch_size, seq_len, depth))
  counts = ops.scatter(flat_positions, ops.ones((batch_size * n_positions,), "int32"),
                       (batch_size * seq_len,))
  counts = ops.reshape(counts, (batch_size, seq_len))
  counts *= ops.cast(ops.arange(seq_len) > 0, "int32")  # ignore position 0

  # Divide duplicates by their count: true division for floats, floor for ints.
  one = ops.ones((), dtype)
  counts_3d = ops.cast(ops.expand_dims(counts, -1), dtype)
  divisor = ops.maximum(one, counts_3d)
  if "float" in dtype:
    averaged = summed / divisor
  else:
    averaged = ops.floor_divide(summed, divisor)

  # Blend, with the mask clipped to 1.
  updates_mask = ops.minimum(counts, 1)
  mask_3d = ops.minimum(counts_3d, one)
  updated_sequence = (1 - mask_3d) * sequence + mask_3d * averaged
  if rank == 2:
    updated_sequence = ops.squeeze(updated_sequence, -1)
  return updated_sequence, updates_mask


# ---------------------------------------------------------------------------
# Dynamic masking (pretrain_helpers.py:130-219)
# ---------------------------------------------------------------------------

def get_candidates_mask(config: MaskingConfig, inputs: Inputs, disallow_from_mask=None):
  """Positions that may be masked out: [batch, seq_len] bool.

  A position is a candidate when its id is not [SEP], [CLS] or [MASK], its
  input_mask is 1 (so padding is excluded) and it is not in
  `disallow_from_mask` ([batch, seq_len] bool). [UNK] and every other token,
  the [PAD] id included when input_mask is 1, may be masked.
  """
  special = config.special_ids
  input_ids = inputs.input_ids
  candidates = ops.cast(inputs.input_mask, "bool")
  for ignore_id in (special.sep, special.cls, special.mask):
    candidates = ops.logical_and(candidates, ops.not_equal(input_ids, ignore_id))
  if disallow_from_mask is not None:
    candidates = ops.logical_and(candidates,
                                 ops.logical_not(ops.cast(disallow_from_mask, "bool")))
  return candidates


def num_to_predict(config: MaskingConfig, input_mask, mask_prob):
  """Slots each row predicts: max(1, min(N, round_half_even(sum(input_mask) * mask_prob))).

  input_mask: [batch, seq_len]; returns [batch] int32. [CLS]/[SEP] count as tokens.
  """
  num_tokens = ops.cast(ops.sum(input_mask, -1), "float32")
  return ops.maximum(1, ops.minimum(config.max_predictions_per_seq, ops.cast(
      ops.round(num_tokens * ops.cast(mask_prob, "float32")), "int32")))


def mask(config: MaskingConfig, inputs: Inputs, mask_prob, proposal_distribution=1.0,
         disallow_from_mask=None, already_masked=None, *,
         seed: Optional[Seed] = None) -> Inputs:
  """Dynamic masking, as the official `mask` (pretrain_helpers.py:145-213).

  With N = config.max_predictions_per_seq, each row predicts
  k = max(1, min(N, round_half_even(sum(input_mask) * mask_prob))) slots: the
  first k of the N slots get weight 1, the rest weight 0. N positions are drawn
  independently *with replacement* from proposal_distribution * candidates
  (normalised per row); padded slots get position 0 and id 0. Each slot
  independently replaces its token with [MASK] with probability 0.85 and keeps
  it otherwise; no slot gets a random token.

  Args:
    config: provides max_predictions_per_seq and special_ids.
    inputs: Inputs with input_ids, input_mask ([batch, seq_len] int).
    mask_prob: fraction of the real tokens (specials included) to predict.
    proposal_distribution: scalar or [batch, seq_len] scores for masking each
      position (uniform by default).
    disallow_from_mask: optional [batch, seq_len] bool, positions never masked.
    already_masked: optional [batch, N] 0/1 (or bool) slots to switch off for
      multiple rounds of masking; they get weight 0, position 0 and id 0.
    seed: None or a [2] int32/int64 seed (see the module docstring).

  Returns:
    `inputs` with input_ids masked ([batch, seq_len]), masked_lm_positions and
    masked_lm_ids ([batch, N] int) and masked_lm_weights ([batch, N] float32).
    A row without any candidate gets all-zero weights and stays unmasked.
  """
  n_predictions = config.max_predictions_per_seq
  batch_size = ops.shape(inputs.input_ids)[0]
  input_ids = inputs.input_ids
  position_seed, keep_seed = stateless_random.split(_resolve_seed(seed), 2)

  slots = ops.arange(n_predictions, dtype="int32")
  to_predict = num_to_predict(config, inputs.input_mask, mask_prob)
  masked_lm_weights = ops.cast(slots[None] < to_predict[:, None], "float32")
  if already_masked is not None:
    masked_lm_weights *= 1.0 - ops.cast(already_masked, "float32")

  # The distribution over positions; rows without mass predict nothing.
  candidates = get_candidates_mask(config, inputs, disallow_from_mask)
  sample_prob = ops.cast(proposal_distribution, "float32") * ops.cast(candidates, "float32")
  row_mass = ops.sum(sample_prob, axis=-1, keepdims=True)
  sample_prob = ops.stop_gradient(sample_prob / row_mass)
  masked_lm_weights *= ops.cast(row_mass > 0, "float32")

  # N draws with replacement; padded slots go to position 0.
  weights_int = ops.cast(masked_lm_weights, "int32")
  masked_lm_positions = stateless_random.categorical(
      ops.log(sample_prob), n_predictions, seed=position_seed)
  masked_lm_positions *= weights_int
  masked_lm_ids = backend_ops.gather_positions(input_ids, masked_lm_positions)
  masked_lm_ids *= ops.cast(weights_int, input_ids.dtype)

  # 85% of the slots show [MASK], the rest keep their token (sent to position 0).
  show_mask = stateless_random.uniform((batch_size, n_predictions), seed=keep_seed)
  replace_positions = masked_lm_positions * ops.cast(show_mask < _MASK_TOKEN_PROB, "int32")
  mask_ids = ops.full((batch_size, n_predictions), config.special_ids.mask, input_ids.dtype)
  masked_input_ids, _ = scatter_update(input_ids, mask_ids, replace_positions)

  return get_updated_inputs(
      inputs,
      input_ids=ops.stop_gradient(masked_input_ids),
      masked_lm_positions=masked_lm_positions,
      masked_lm_ids=masked_lm_ids,
      masked_lm_weights=masked_lm_weights)


def unmask(inputs: Inputs) -> Inputs:
  """Puts masked_lm_ids back at masked_lm_positions ([batch, seq_len] input_ids).

  Padded slots (position 0) are ignored, so `unmask(mask(x))` restores x.
  """
  unmasked_ids, _ = scatter_update(inputs.input_ids, inputs.masked_lm_ids,
                                   inputs.masked_lm_positions)
  return get_updated_inputs(inputs, input_ids=unmasked_ids)


# ---------------------------------------------------------------------------
# Sampling (pretrain_helpers.py:222-229)
# ---------------------------------------------------------------------------

def sample_ids_from_softmax(logits, disallow=None, *, seed: Optional[Seed] = None):
  """One sample per slot from softmax(logits), by the Gumbel-max trick.

  Exactly the official draw: logits -= 1000 * disallow;
  u ~ U[0, 1); g = -log(-log(u + 1e-9) + 1e-9); sample = argmax(logits + g).
  The official code takes a softmax before the argmax; a softmax is monotonic
  and does not change the argmax, so it is skipped here. Temperature is the
  caller's business: pass `logits / temperature`. Special tokens can be drawn.

  Args:
    logits: [batch, n_positions, vocab_size] float; computed in float32.
    disallow: optional [batch, n_positions, vocab_size] 0/1 (float or bool);
      a 1 lowers that logit by 1000, so the id is in effect never drawn
      (the official use is one_hot(masked_lm_ids) for `disallow_correct`).
    seed: None or a [2] int32/int64 seed (see the module docstring).

  Returns:
    [batch, n_positions] int32 sampled ids.
  """
  logits = ops.cast(logits, "float32")
  if disallow is not None:
    logits -= 1000.0 * ops.cast(disallow, "float32")
  # logits + g == logits - log(1e-9 - log(u + 1e-9)) bit for bit (negation is
  # exact): one op fewer on the [batch, n_positions, vocab] tensor, and only the
  # final noise is kept alive, so eager mode frees the intermediates at once.
  minus_gumbel = ops.log(1e-9 - ops.log(
      stateless_random.uniform(ops.shape(logits), seed=_resolve_seed(seed)) + 1e-9))
  return backend_ops.argmax(logits - minus_gumbel, axis=-1)


def sample_from_softmax(logits, disallow=None, *, seed: Optional[Seed] = None):
  """The official output of `sample_ids_from_softmax`: a one-hot sample.

  Args and randomness as `sample_ids_from_softmax` (the same seed gives the same
  ids). Returns [batch, n_positions, vocab_size] float32 one-hot vectors.
  """
  vocab_size = logits.shape[-1]
  return ops.one_hot(sample_ids_from_softmax(logits, disallow, seed=seed), vocab_size,
                     dtype="float32")
