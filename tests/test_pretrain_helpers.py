"""Tests for electra_tf2.pretraining.pretrain_helpers against independent oracles.

Gather/scatter are checked against plain numpy loops; masking and sampling
against exact counts and analytic distributions (spec sections 3.1-3.6). Every
random test uses a fixed seed, so each is deterministic; the tolerances are
stated where they are used (4 binomial/analytic standard errors, or a
chi-square p-value above 1e-3). The file runs on every Keras backend (tests/test_backends.py):
each backend has its own random stream (electra_tf2/utils/stateless_random.py), so the random tests
compare distributions, never drawn values; the tests of TensorFlow's tf.function, XLA and
stream run only there, jax.jit's only on JAX.
"""

from __future__ import annotations

import types
from typing import List, Sequence

import numpy as np
import pytest
import scipy.stats
from keras import ops

from backend_marks import dtype_name, jax_only, numpy, tensor, tf_only
from electra_tf2.utils import inputs as inputs_lib
from electra_tf2.pretraining import pretrain_helpers as ph
from electra_tf2.utils import backend_ops, stateless_random
from electra_tf2.text import vocab as vocab_lib

SPECIAL = vocab_lib.BERT_UNCASED_SPECIAL_IDS
PAD, UNK, CLS, SEP, MASK = SPECIAL
P_VALUE_MIN = 1e-3  # significance level of every chi-square test
SIGMAS = 4.0        # tolerance of every mean/proportion test, in standard errors


def seed_of(*values: int):
  """A [2] int32 seed tensor of the current backend."""
  return tensor(np.array(values, np.int32))


# ---------------------------------------------------------------------------
# Shared fixtures: configs, batches and numpy oracles
# ---------------------------------------------------------------------------

def make_config(max_predictions: int) -> types.SimpleNamespace:
  return types.SimpleNamespace(max_predictions_per_seq=max_predictions, special_ids=SPECIAL)


def make_inputs(input_ids: np.ndarray, input_mask: np.ndarray) -> inputs_lib.Inputs:
  return inputs_lib.Inputs(
      input_ids=tensor(input_ids, "int32"),
      input_mask=tensor(input_mask, "int32"),
      segment_ids=ops.zeros(input_ids.shape, "int32"),
      masked_lm_positions=None, masked_lm_ids=None, masked_lm_weights=None)


def make_row(length: int, seq_len: int, rng: np.random.Generator,
             extra: Sequence[tuple] = ()) -> np.ndarray:
  """[CLS] words... [SEP] then [PAD]; `extra` = (index, id) overrides."""
  row = np.full([seq_len], PAD, np.int32)
  row[:length] = rng.integers(1000, 30000, size=length)
  row[0] = CLS
  if length >= 3:
    row[length - 1] = SEP
  for index, token in extra:
    row[index] = token
  return row


def num_to_predict_oracle(lengths: np.ndarray, mask_prob: float, n: int) -> np.ndarray:
  """max(1, min(N, round_half_even(len * p))) in float32, like the graph."""
  rounded = np.round(np.float32(lengths) * np.float32(mask_prob)).astype(np.int64)
  return np.maximum(1, np.minimum(n, rounded))


def np_gather_positions(sequence: np.ndarray, positions: np.ndarray) -> np.ndarray:
  return np.stack([sequence[b][positions[b]] for b in range(sequence.shape[0])])


def np_scatter_update(sequence: np.ndarray, updates: np.ndarray, positions: np.ndarray):
  """Loop oracle: average duplicates (floor for ints), ignore position 0."""
  result = sequence.copy()
  updates_mask = np.zeros(sequence.shape[:2], np.int32)
  for b in range(sequence.shape[0]):
    groups = {}
    for n, p in enumerate(positions[b]):
      if p != 0:
        groups.setdefault(int(p), []).append(updates[b, n])
    for p, values in groups.items():
      total = np.sum(values, axis=0, dtype=sequence.dtype)
      if np.issubdtype(sequence.dtype, np.integer):
        result[b, p] = total // len(values)
      else:
        result[b, p] = total / len(values)
      updates_mask[b, p] = 1
  return result, updates_mask


# ---------------------------------------------------------------------------
# gather_positions / scatter_update
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("rank", [2, 3])
@pytest.mark.parametrize("dtype", [np.int32, np.float32])
@pytest.mark.parametrize("trial", range(3))
def test_gather_positions_matches_numpy(rank, dtype, trial):
  rng = np.random.default_rng(trial)
  shape = [4, 9] if rank == 2 else [4, 9, 3]
  sequence = rng.integers(-100, 100, size=shape).astype(dtype)
  positions = rng.integers(0, 9, size=[4, 6]).astype(np.int32)
  got = numpy(backend_ops.gather_positions(tensor(sequence), tensor(positions)))
  np.testing.assert_array_equal(got, np_gather_positions(sequence, positions))
  # int64 positions (tf.random.categorical's default) are accepted too.
  got64 = backend_ops.gather_positions(tensor(sequence), tensor(positions.astype(np.int64)))
  np.testing.assert_array_equal(numpy(got64), got)


@pytest.mark.parametrize("rank", [2, 3])
@pytest.mark.parametrize("dtype", [np.int32, np.float32])
@pytest.mark.parametrize("trial", range(4))
def test_scatter_update_matches_numpy(rank, dtype, trial):
  rng = np.random.default_rng(100 + trial)
  batch, seq_len, n, depth = 5, 8, 7, 3
  seq_shape = [batch, seq_len] + ([depth] if rank == 3 else [])
  upd_shape = [batch, n] + ([depth] if rank == 3 else [])
  sequence = rng.integers(-50, 50, size=seq_shape).astype(dtype)
  updates = rng.integers(-50, 50, size=upd_shape).astype(dtype)
  if dtype == np.float32:
    updates += rng.random(upd_shape, dtype=np.float32)
  # Few distinct positions: many duplicates and many updates to position 0.
  positions = rng.integers(0, 4, size=[batch, n]).astype(np.int32)
  got, got_mask = ph.scatter_update(tensor(sequence), tensor(updates), tensor(positions))
  want, want_mask = np_scatter_update(sequence, updates, positions)
  assert dtype_name(got) == np.dtype(dtype).name and dtype_name(got_mask) == "int32"
  np.testing.assert_array_equal(numpy(got_mask), want_mask)
  if dtype == np.float32:
    np.testing.assert_allclose(numpy(got), want, rtol=1e-6, atol=1e-6)
  else:
    np.testing.assert_array_equal(numpy(got), want)


def test_scatter_update_hand_checked_int():
  sequence = tensor([[10, 11, 12, 13, 14]], "int32")
  updates = tensor([[3, 4, 9, -3, -4, 7]], "int32")
  positions = tensor([[2, 2, 0, 3, 3, 4]], "int32")
  got, updates_mask = ph.scatter_update(sequence, updates, positions)
  # (3+4)//2 = 3 (true mean 3.5); (-3-4)//2 = -4 (floor, not truncation);
  # the update 9 to position 0 is ignored.
  np.testing.assert_array_equal(numpy(got), [[10, 11, 3, -4, 7]])
  np.testing.assert_array_equal(numpy(updates_mask), [[0, 0, 1, 1, 1]])


def test_scatter_update_hand_checked_float():
  sequence = tensor([[[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]], "float32")
  updates = tensor([[[5.0, 6.0], [8.0, 9.0], [0.5, 0.5], [7.0, 7.0]]], "float32")
  positions = tensor([[1, 1, 0, 2]], "int32")
  got, updates_mask = ph.scatter_update(sequence, updates, positions)
  np.testing.assert_allclose(numpy(got), [[[1.0, 1.0], [6.5, 7.5], [7.0, 7.0]]])
  np.testing.assert_array_equal(numpy(updates_mask), [[0, 1, 1]])


# ---------------------------------------------------------------------------
# get_candidates_mask
# ---------------------------------------------------------------------------

def test_get_candidates_mask():
  ids = np.array([[CLS, 2000, UNK, MASK, 2001, SEP, PAD, PAD],
                  [CLS, 2002, PAD, 2003, SEP, 2004, SEP, PAD]], np.int32)
  input_mask = np.array([[1, 1, 1, 1, 1, 1, 0, 0],
                         [1, 1, 1, 1, 1, 1, 1, 0]], np.int32)
  inputs = make_inputs(ids, input_mask)
  got = numpy(ph.get_candidates_mask(make_config(3), inputs))
  # [UNK] may be masked; so may the [PAD] id under input_mask 1 (only
  # [SEP]/[CLS]/[MASK] ids and input_mask 0 are excluded, pretrain/pretrain_helpers.py:130-142).
  np.testing.assert_array_equal(got, [[0, 1, 1, 0, 1, 0, 0, 0],
                                      [0, 1, 1, 1, 0, 1, 0, 0]])
  assert got.dtype == np.bool_
  disallow = tensor([[False, True] + [False] * 6, [False] * 5 + [True, False, False]])
  got = numpy(ph.get_candidates_mask(make_config(3), inputs, disallow))
  np.testing.assert_array_equal(got, [[0, 0, 1, 0, 1, 0, 0, 0],
                                      [0, 1, 1, 1, 0, 0, 0, 0]])


# ---------------------------------------------------------------------------
# mask / unmask: one large seeded draw, many statistics
# ---------------------------------------------------------------------------

STAT_SEQ_LEN = 32
STAT_N = 6
STAT_PROB = 0.25
# lengths -> num_to_predict at p = 0.25, N = 6:
# 2: 0.5 -> 0 -> max 1; 5: 1.25 -> 1; 6: 1.5 -> 2; 10: 2.5 -> 2 (half to even);
# 14: 3.5 -> 4; 18: 4.5 -> 4; 22: 5.5 -> 6; 26: 6.5 -> 6; 32: 8 -> min 6.
STAT_LENGTHS = [2, 5, 6, 10, 14, 18, 22, 26, 32]
STAT_REPEATS = 2000  # 18,000 rows: the rows are independent draws


def _stat_template() -> np.ndarray:
  rng = np.random.default_rng(7)
  rows = []
  for length in STAT_LENGTHS:
    extra = []
    if length >= 10:  # a second [SEP], a [MASK] already present and an [UNK]
      extra = [(length // 2, SEP), (2, MASK), (3, UNK)]
    rows.append(make_row(length, STAT_SEQ_LEN, rng, extra))
  return np.stack(rows)


@pytest.fixture(scope="module")
def stat_draw():
  template = _stat_template()
  ids = np.tile(template, [STAT_REPEATS, 1])
  lengths = np.tile(np.array(STAT_LENGTHS), STAT_REPEATS)
  input_mask = (np.arange(STAT_SEQ_LEN)[None, :] < lengths[:, None]).astype(np.int32)
  inputs = make_inputs(ids, input_mask)
  out = ph.mask(make_config(STAT_N), inputs, STAT_PROB, seed=seed_of(11, 12))
  return types.SimpleNamespace(
      inputs=inputs, out=out, ids=ids, input_mask=input_mask, lengths=lengths,
      positions=numpy(out.masked_lm_positions), lm_ids=numpy(out.masked_lm_ids),
      weights=numpy(out.masked_lm_weights), new_ids=numpy(out.input_ids),
      candidates=numpy(ph.get_candidates_mask(make_config(STAT_N), inputs)))


def test_mask_output_types(stat_draw):
  out = stat_draw.out
  assert dtype_name(out.input_ids) == "int32"
  assert tuple(out.input_ids.shape) == stat_draw.ids.shape
  assert dtype_name(out.masked_lm_positions) == "int32"
  assert dtype_name(out.masked_lm_ids) == "int32"
  assert dtype_name(out.masked_lm_weights) == "float32"
  assert tuple(out.masked_lm_positions.shape) == (len(stat_draw.ids), STAT_N)
  assert out.segment_ids is stat_draw.inputs.segment_ids
  assert out.input_mask is stat_draw.inputs.input_mask


def test_mask_weight_counts_exact(stat_draw):
  want = num_to_predict_oracle(stat_draw.lengths, STAT_PROB, STAT_N)
  assert list(want[:len(STAT_LENGTHS)]) == [1, 1, 2, 2, 4, 4, 6, 6, 6]
  slots = np.arange(STAT_N)[None, :]
  np.testing.assert_array_equal(stat_draw.weights, (slots < want[:, None]).astype(np.float32))


@pytest.mark.parametrize("length,mask_prob,want", [
    (10, 0.25, 2), (14, 0.25, 4), (18, 0.25, 4), (22, 0.25, 6), (3, 0.15, 1),
    (10, 0.15, 2), (30, 0.15, 4), (128, 0.15, 19), (2, 0.25, 1)])
def test_mask_num_to_predict_rounding(length, mask_prob, want):
  n = 19
  assert num_to_predict_oracle(np.array([length]), mask_prob, n)[0] == want
  ids = make_row(length, 128, np.random.default_rng(length))[None]
  input_mask = (np.arange(128) < length).astype(np.int32)[None]
  out = ph.mask(make_config(n), make_inputs(ids, input_mask), mask_prob, seed=seed_of(1, 2))
  assert numpy(out.masked_lm_weights).sum() == want


def test_mask_padded_slots_and_ids(stat_draw):
  active = stat_draw.weights > 0
  assert np.all(stat_draw.positions[~active] == 0)
  assert np.all(stat_draw.lm_ids[~active] == 0)
  np.testing.assert_array_equal(
      stat_draw.lm_ids[active], np_gather_positions(stat_draw.ids, stat_draw.positions)[active])


def test_mask_only_candidates_selected(stat_draw):
  active = stat_draw.weights > 0
  rows = np.nonzero(active)[0]
  chosen = stat_draw.positions[active]
  assert np.all(stat_draw.candidates[rows, chosen])
  chosen_ids = stat_draw.ids[rows, chosen]
  for special in (CLS, SEP, MASK):
    assert not np.any(chosen_ids == special)
  assert np.all(stat_draw.input_mask[rows, chosen] == 1)  # never padding
  assert np.any(chosen_ids == UNK)  # [UNK] is an ordinary candidate


def _selection_counts(stat_draw) -> np.ndarray:
  """[rows, seq_len] how many active slots chose each position."""
  counts = np.zeros(stat_draw.ids.shape, np.int64)
  rows = np.nonzero(stat_draw.weights > 0)[0]
  np.add.at(counts, (rows, stat_draw.positions[stat_draw.weights > 0]), 1)
  return counts


def test_mask_input_ids_and_85_15_split(stat_draw):
  counts = _selection_counts(stat_draw)
  new_ids, ids = stat_draw.new_ids, stat_draw.ids
  # Unselected positions are untouched; selected ones hold [MASK] or the original.
  np.testing.assert_array_equal(new_ids[counts == 0], ids[counts == 0])
  selected = counts > 0
  assert np.all((new_ids[selected] == MASK) | (new_ids[selected] == ids[selected]))
  # Each slot shows [MASK] with probability 0.85 independently, so a position
  # chosen once is [MASK] w.p. 0.85 and one chosen twice w.p. 1 - 0.15^2.
  # Tolerance: 4 binomial standard errors.
  for times, p in ((1, 0.85), (2, 1 - 0.15 ** 2)):
    is_mask = new_ids[counts == times] == MASK
    n = is_mask.size
    assert n > 1000
    tolerance = SIGMAS * np.sqrt(p * (1 - p) / n)
    assert abs(is_mask.mean() - p) < tolerance, (times, is_mask.mean(), p, tolerance)
  # The [MASK]/keep draw is independent of the position draw: for positions
  # chosen once, [MASK] vs kept is independent of the position (chi-square
  # contingency test, p > 1e-3).
  once = counts == 1
  columns = np.nonzero(once.sum(0) >= 50)[0]
  table = np.stack([((new_ids == MASK) & once)[:, columns].sum(0),
                    ((new_ids != MASK) & once)[:, columns].sum(0)])
  result = scipy.stats.chi2_contingency(table)
  assert result.pvalue > P_VALUE_MIN, result


def _row_groups(stat_draw):
  """(template index, rows of the big batch that repeat it)."""
  n_template = len(STAT_LENGTHS)
  for t in range(n_template):
    yield t, np.arange(t, len(stat_draw.ids), n_template)


def test_mask_positions_uniform_over_candidates(stat_draw):
  # Pooled over the repeats, every candidate of a row is drawn equally often
  # (chi-square, p > 1e-3).
  counts = _selection_counts(stat_draw)
  for t, rows in _row_groups(stat_draw):
    candidates = stat_draw.candidates[t]
    observed = counts[rows].sum(0)
    assert observed[~candidates].sum() == 0
    if candidates.sum() < 2:
      continue
    result = scipy.stats.chisquare(observed[candidates])
    assert result.pvalue > P_VALUE_MIN, (STAT_LENGTHS[t], result)


def _distinct_moments(c: int, k: int):
  """Mean and variance of the number of distinct values in k uniform draws from c."""
  q1, q2 = (1 - 1 / c) ** k, (1 - 2 / c) ** k
  mean = c * (1 - q1)
  variance = c * q1 + c * (c - 1) * q2 - c * c * q1 * q1  # that of the empty count
  return mean, max(variance, 0.0)  # exactly 0 when k == 1, up to rounding


def test_mask_duplicate_rate_with_replacement(stat_draw):
  # E[distinct] = c (1 - (1 - 1/c)^k); tolerance 4 standard errors of the mean
  # from the analytic variance of the occupancy count.
  counts = _selection_counts(stat_draw)
  k_all = num_to_predict_oracle(np.array(STAT_LENGTHS), STAT_PROB, STAT_N)
  saw_duplicates = False
  for t, rows in _row_groups(stat_draw):
    c, k = int(stat_draw.candidates[t].sum()), int(k_all[t])
    distinct = (counts[rows] > 0).sum(1)
    mean, variance = _distinct_moments(c, k)
    tolerance = SIGMAS * np.sqrt(variance / len(rows)) + 1e-9
    assert abs(distinct.mean() - mean) <= tolerance, (STAT_LENGTHS[t], distinct.mean(), mean)
    saw_duplicates |= bool(np.any(distinct < k))
  assert saw_duplicates


def test_mask_spec_numbers_for_full_128_token_example():
  # Spec 3.4: 128 real tokens, [CLS] + 2 [SEP] -> 125 candidates, N = 19 draws:
  # E[distinct] ~= 17.7, P(no duplicate) ~= 0.24, ~13.8% of tokens masked.
  rows, seq_len, n = 1500, 128, 19
  rng = np.random.default_rng(3)
  ids = np.stack([make_row(seq_len, seq_len, rng, [(60, SEP)]) for _ in range(rows)])
  out = ph.mask(make_config(n), make_inputs(ids, np.ones_like(ids)), 0.15, seed=seed_of(5, 6))
  positions = numpy(out.masked_lm_positions)
  assert np.all(numpy(out.masked_lm_weights) == 1)
  distinct = np.array([len(set(p)) for p in positions])
  mean, variance = _distinct_moments(125, 19)
  assert abs(mean - 17.69) < 0.01
  assert abs(distinct.mean() - mean) < SIGMAS * np.sqrt(variance / rows)
  p_no_dup = np.prod([(125 - i) / 125 for i in range(19)])  # 0.2367
  tolerance = SIGMAS * np.sqrt(p_no_dup * (1 - p_no_dup) / rows)
  assert abs(np.mean(distinct == 19) - p_no_dup) < tolerance


def test_unmask_restores_inputs(stat_draw):
  restored = ph.unmask(stat_draw.out)
  np.testing.assert_array_equal(numpy(restored.input_ids), stat_draw.ids)
  assert restored.masked_lm_positions is stat_draw.out.masked_lm_positions


# ---------------------------------------------------------------------------
# mask: options and edge cases
# ---------------------------------------------------------------------------

def test_mask_proposal_distribution_and_disallow():
  rows, seq_len, n = 4000, 12, 4
  ids = np.tile(make_row(12, seq_len, np.random.default_rng(0)), [rows, 1])
  # Scores on [CLS]/[SEP] are ignored (not candidates); position 5 has score 0;
  # position 8 is disallowed.
  scores = np.array([9.0, 1.0, 2.0, 3.0, 4.0, 0.0, 1.0, 2.0, 5.0, 1.0, 0.5, 7.0], np.float32)
  disallow = np.zeros([rows, seq_len], bool)
  disallow[:, 8] = True
  out = ph.mask(make_config(n), make_inputs(ids, np.ones_like(ids)), 0.34,
                proposal_distribution=tensor(np.tile(scores, [rows, 1])),
                disallow_from_mask=tensor(disallow), seed=seed_of(8, 9))
  assert np.all(numpy(out.masked_lm_weights) == 1)  # round(12 * 0.34) = 4
  observed = np.bincount(numpy(out.masked_lm_positions).ravel(), minlength=seq_len)
  expected_prob = scores.astype(np.float64)
  expected_prob[[0, 11, 5, 8]] = 0.0
  expected_prob /= expected_prob.sum()
  assert observed[expected_prob == 0].sum() == 0
  support = expected_prob > 0
  result = scipy.stats.chisquare(observed[support], expected_prob[support] * observed.sum())
  assert result.pvalue > P_VALUE_MIN, result


def test_mask_already_masked_slots_are_dropped():
  ids = make_row(20, 20, np.random.default_rng(1))[None]
  already = tensor([[0.0, 1.0, 0.0, 1.0]], "float32")
  out = ph.mask(make_config(4), make_inputs(ids, np.ones_like(ids)), 0.5,
                already_masked=already, seed=seed_of(4, 4))
  np.testing.assert_array_equal(numpy(out.masked_lm_weights), [[1, 0, 1, 0]])
  positions, lm_ids = numpy(out.masked_lm_positions), numpy(out.masked_lm_ids)
  assert np.all(positions[0, [1, 3]] == 0) and np.all(lm_ids[0, [1, 3]] == 0)
  assert np.all(positions[0, [0, 2]] > 0)


def test_mask_rows_without_candidates_predict_nothing():
  # Rows with nothing to mask (only [CLS] [SEP], all padding, zero proposal)
  # get no slots instead of the official out-of-range draw; placed last so an
  # out-of-range index would fail on CPU.
  seq_len = 8
  rng = np.random.default_rng(2)
  ids = np.stack([make_row(8, seq_len, rng), make_row(2, seq_len, rng, [(1, SEP)]),
                  make_row(6, seq_len, rng), np.zeros(seq_len, np.int32)])
  input_mask = (np.arange(seq_len)[None] < np.array([8, 2, 6, 0])[:, None]).astype(np.int32)
  proposal = np.ones([4, seq_len], np.float32)
  proposal[2] = 0.0
  out = ph.mask(make_config(3), make_inputs(ids, input_mask), 0.25,
                proposal_distribution=tensor(proposal), seed=seed_of(3, 3))
  np.testing.assert_array_equal(numpy(out.masked_lm_weights)[1:], 0)
  np.testing.assert_array_equal(numpy(out.masked_lm_positions)[1:], 0)
  np.testing.assert_array_equal(numpy(out.masked_lm_ids)[1:], 0)
  np.testing.assert_array_equal(numpy(out.input_ids)[1:], ids[1:])
  np.testing.assert_array_equal(numpy(out.masked_lm_weights)[0], [1, 1, 0])


def test_mask_seeds():
  ids = np.tile(make_row(30, 32, np.random.default_rng(5)), [64, 1])
  inputs, config = make_inputs(ids, (ids != PAD).astype(np.int32)), make_config(5)

  def run(seed) -> List[np.ndarray]:
    out = ph.mask(config, inputs, 0.15, seed=seed)
    return [numpy(out.input_ids), numpy(out.masked_lm_positions),
            numpy(out.masked_lm_ids), numpy(out.masked_lm_weights)]

  first = run(seed_of(1, 2))
  for a, b in zip(first, run(seed_of(1, 2))):
    np.testing.assert_array_equal(a, b)
  # An int32 numpy seed or list draws what the same seed as a tensor draws. (An int64
  # seed draws other numbers on TensorFlow, whose stateless_split keeps the dtype.)
  for seed in (np.array([1, 2], np.int32), [1, 2]):
    for a, b in zip(first, run(seed)):
      np.testing.assert_array_equal(a, b)
  for a, b in zip(run(np.array([1, 2], np.int64)), run(np.array([1, 2], np.int64))):
    np.testing.assert_array_equal(a, b)
  assert not np.array_equal(first[1], run(seed_of(1, 3))[1])
  assert not np.array_equal(first[1], run(seed_of(2, 2))[1])
  assert not np.array_equal(run(None)[1], run(None)[1])


# ---------------------------------------------------------------------------
# sample_from_softmax / sample_ids_from_softmax
# ---------------------------------------------------------------------------

LOGITS_8 = np.array([1.0, 0.5, -0.3, 2.0, 0.0, -1.0, 1.5, 0.2], np.float32)


def _softmax(x: np.ndarray) -> np.ndarray:
  e = np.exp(x - x.max())
  return e / e.sum()


@pytest.mark.parametrize("temperature", [1.0, 2.0])
def test_sample_matches_softmax_distribution(temperature):
  # 20,000 draws; chi-square goodness of fit against softmax(logits / T), p > 1e-3.
  logits = tensor(np.tile(LOGITS_8, [400, 50, 1]))
  ids = ph.sample_ids_from_softmax(logits / temperature, seed=seed_of(21, int(temperature)))
  observed = np.bincount(numpy(ids).ravel(), minlength=8)
  expected = _softmax(LOGITS_8.astype(np.float64) / temperature) * observed.sum()
  result = scipy.stats.chisquare(observed, expected)
  assert result.pvalue > P_VALUE_MIN, (temperature, observed, expected, result)


def test_sample_disallow():
  logits = np.zeros([300, 40, 8], np.float32)
  logits[..., 2] = 10.0  # the favourite, but disallowed
  disallow = np.zeros_like(logits)
  disallow[..., 2] = 1.0
  ids = numpy(ph.sample_ids_from_softmax(tensor(logits), tensor(disallow), seed=seed_of(31, 1)))
  assert not np.any(ids == 2)
  observed = np.bincount(ids.ravel(), minlength=8)[[0, 1, 3, 4, 5, 6, 7]]
  assert scipy.stats.chisquare(observed).pvalue > P_VALUE_MIN  # uniform over the rest
  # Per-slot disallow given as bool, like one_hot(masked_lm_ids).
  targets = np.random.default_rng(0).integers(0, 8, size=[300, 40])
  big = np.where(np.eye(8, dtype=bool)[targets], 20.0, 0.0).astype(np.float32)
  ids = numpy(ph.sample_ids_from_softmax(tensor(big), tensor(np.eye(8, dtype=bool)[targets]),
                                         seed=seed_of(31, 2)))
  assert not np.any(ids == targets)


def test_sample_exact_gumbel_formula():
  # Oracle on the same uniform draw (the backend's stateless stream):
  # argmax(logits - 1000 * disallow + g), g = -log(-log(u + 1e-9) + 1e-9). The
  # 1000 penalty is soft, as in the official code: a disallowed logit of 1500 still wins.
  rng = np.random.default_rng(9)
  logits = rng.normal(size=[6, 5, 8]).astype(np.float32)
  disallow = (rng.random([6, 5, 8]) < 0.3).astype(np.float32)
  logits[0, 0, 4], disallow[0, 0, 4] = 1500.0, 1.0
  seed = seed_of(41, 42)
  u = numpy(stateless_random.uniform(logits.shape, seed))
  assert u.dtype == np.float32 and u.min() >= 0.0 and u.max() < 1.0
  gumbel = -np.log(-np.log(u + np.float32(1e-9)) + np.float32(1e-9))
  want = np.argmax(logits - np.float32(1000.0) * disallow + gumbel, -1)
  got = numpy(ph.sample_ids_from_softmax(tensor(logits), tensor(disallow), seed=seed))
  np.testing.assert_array_equal(got, want)
  assert got[0, 0] == 4


@tf_only
def test_tensorflow_draws_are_the_tf_random_streams():
  """On TensorFlow the draws are those of earlier releases: `tf.random.stateless_uniform`,
  `stateless_categorical` and `stateless_split`, so resumed runs draw the same numbers."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  for seed in (tf.constant([41, 42], tf.int64), tf.constant([41, 42], tf.int32)):
    np.testing.assert_array_equal(numpy(stateless_random.uniform([6, 5, 8], seed)),
                                  tf.random.stateless_uniform([6, 5, 8], seed=seed).numpy())
    logits = tf.math.log(tf.constant([[0.1, 0.2, 0.7], [0.5, 0.0, 0.5]]))
    np.testing.assert_array_equal(
        numpy(stateless_random.categorical(logits, 9, seed)),
        tf.random.stateless_categorical(logits, 9, seed=seed, dtype=tf.int32).numpy())
    np.testing.assert_array_equal(
        np.stack([numpy(s) for s in stateless_random.split(seed, 3)]),
        tf.random.experimental.stateless_split(seed, 3).numpy())


def test_sample_one_hot_agrees_with_ids():
  rng = np.random.default_rng(4)
  logits = tensor(rng.normal(size=[7, 5, 11]).astype(np.float32))
  seed = seed_of(51, 52)
  one_hot = ph.sample_from_softmax(logits, seed=seed)
  ids = ph.sample_ids_from_softmax(logits, seed=seed)
  assert tuple(one_hot.shape) == (7, 5, 11) and dtype_name(one_hot) == "float32"
  assert tuple(ids.shape) == (7, 5) and dtype_name(ids) == "int32"
  np.testing.assert_array_equal(numpy(one_hot).sum(-1), 1.0)
  np.testing.assert_array_equal(np.argmax(numpy(one_hot), -1), numpy(ids))
  # Each slot samples from its own logits.
  targets = rng.integers(0, 11, size=[7, 5])
  peaked = tensor(np.where(np.eye(11, dtype=bool)[targets], 50.0, 0.0).astype(np.float32))
  np.testing.assert_array_equal(numpy(ph.sample_ids_from_softmax(peaked, seed=seed)), targets)


def test_sample_seeds():
  logits = ops.zeros([16, 8, 50])

  def sample(seed=None) -> np.ndarray:
    return numpy(ph.sample_ids_from_softmax(logits, seed=seed))

  a = sample(seed_of(1, 1))
  np.testing.assert_array_equal(a, sample(seed_of(1, 1)))
  assert not np.array_equal(a, sample(seed_of(1, 2)))
  assert not np.array_equal(sample(), sample())


# ---------------------------------------------------------------------------
# Compiled: tf.function and XLA on TensorFlow, jax.jit on JAX
# ---------------------------------------------------------------------------

def _compiled_case():
  """A batch of 64 rows (config N = 5) and generator logits [64, 5, 40] for a compiled step."""
  seq_len, n, vocab_size = 32, 5, 40
  ids = np.tile(make_row(28, seq_len, np.random.default_rng(6)), [64, 1])
  ids[:, 2] = np.arange(64) % 30 + 1000
  logits = np.random.default_rng(0).normal(size=[64, n, vocab_size]).astype(np.float32)
  return make_config(n), ids, logits


def _mask_sample_step(config, inputs, input_ids, input_mask, logits, seed):
  """mask + sample + unmask + scatter, as a pre-training step does."""
  masked = ph.mask(config, inputs._replace(input_ids=input_ids, input_mask=input_mask), 0.15,
                   seed=seed)
  sampled = ph.sample_ids_from_softmax(logits, seed=seed)
  restored = ph.unmask(masked).input_ids
  fake, _ = ph.scatter_update(restored, sampled, masked.masked_lm_positions)
  return masked.input_ids, masked.masked_lm_positions, sampled, restored, fake


def _check_compiled_equals_eager(compiled, config, inputs, ids, logits, seed):
  eager_masked = ph.mask(config, inputs, 0.15, seed=seed)
  np.testing.assert_array_equal(compiled[0], numpy(eager_masked.input_ids))
  np.testing.assert_array_equal(compiled[1], numpy(eager_masked.masked_lm_positions))
  np.testing.assert_array_equal(compiled[2],
                                numpy(ph.sample_ids_from_softmax(logits, seed=seed)))
  np.testing.assert_array_equal(compiled[3], ids)


@tf_only
@pytest.mark.parametrize("batch_dim", [64, None])
def test_mask_and_sample_in_tf_function(batch_dim):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  config, ids, logits_np = _compiled_case()
  inputs = make_inputs(ids, (ids != PAD).astype(np.int32))
  seq_len, (n, vocab_size) = ids.shape[1], logits_np.shape[1:]

  @tf.function(input_signature=[
      tf.TensorSpec([batch_dim, seq_len], tf.int32), tf.TensorSpec([batch_dim, seq_len], tf.int32),
      tf.TensorSpec([batch_dim, n, vocab_size], tf.float32), tf.TensorSpec([2], tf.int64)])
  def step(input_ids, input_mask, logits, seed):
    return _mask_sample_step(config, inputs, input_ids, input_mask, logits, seed)

  logits = tf.constant(logits_np)
  seed = tf.constant([61, 62], tf.int64)
  graph = [t.numpy() for t in step(inputs.input_ids, inputs.input_mask, logits, seed)]
  _check_compiled_equals_eager(graph, config, inputs, ids, logits, seed)

  @tf.function
  def unseeded(logits):
    return ph.sample_ids_from_softmax(logits)

  assert not np.array_equal(unseeded(logits).numpy(), unseeded(logits).numpy())


@jax_only
def test_mask_and_sample_in_jax_jit():
  """The same step under jax.jit (one XLA program) draws what eager mode draws."""
  import jax  # pylint: disable=g-import-not-at-top
  config, ids, logits_np = _compiled_case()
  inputs = make_inputs(ids, (ids != PAD).astype(np.int32))
  step = jax.jit(lambda *args: _mask_sample_step(config, inputs, *args))
  logits, seed = tensor(logits_np), seed_of(61, 62)
  compiled = [numpy(t) for t in step(inputs.input_ids, inputs.input_mask, logits, seed)]
  _check_compiled_equals_eager(compiled, config, inputs, ids, logits, seed)
  # The seed is an argument of the program, not a constant of it.
  other = [numpy(t) for t in step(inputs.input_ids, inputs.input_mask, logits, seed_of(1, 2))]
  assert not np.array_equal(compiled[1], other[1])


def _check_compiled_draw(masked, sampled, again, config, inputs, ids):
  """Validity of a compiled mask + sample: the same seed draws the same positions, the
  positions are candidates, and a peaked logit is sampled."""
  np.testing.assert_array_equal(numpy(masked.masked_lm_positions),
                                numpy(again.masked_lm_positions))
  np.testing.assert_array_equal(numpy(masked.masked_lm_weights), np.tile([1, 1, 1, 0], [16, 1]))
  positions = numpy(masked.masked_lm_positions)
  candidates = numpy(ph.get_candidates_mask(config, inputs))
  assert np.all(candidates[np.arange(16)[:, None], positions[:, :3]])
  # Logit 40 beats any other logit plus Gumbel noise (g < 17 for float32 u).
  np.testing.assert_array_equal(numpy(sampled), numpy(masked.masked_lm_ids))
  np.testing.assert_array_equal(numpy(ph.unmask(masked).input_ids), ids)


def _xla_step(config, inputs, seed):
  masked = ph.mask(config, inputs, 0.15, seed=seed)
  logits = 40.0 * ops.one_hot(masked.masked_lm_ids, 30000)
  return masked, ph.sample_ids_from_softmax(logits, seed=seed)


@tf_only
def test_mask_and_sample_under_xla():
  # jit_compile works with int32 seeds (XLA's stateless ops take no int64 seed);
  # XLA draws other numbers than the TF kernels, so check validity, not values.
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  ids = np.tile(make_row(20, 24, np.random.default_rng(8)), [16, 1])
  inputs, config = make_inputs(ids, (ids != PAD).astype(np.int32)), make_config(4)
  step = tf.function(lambda seed: _xla_step(config, inputs, seed), jit_compile=True)
  masked, sampled = step(tf.constant([7, 8], tf.int32))
  again, _ = step(tf.constant([7, 8], tf.int32))
  _check_compiled_draw(masked, sampled, again, config, inputs, ids)


@jax_only
def test_mask_and_sample_under_jax_jit_with_a_30000_vocab():
  """The TensorFlow XLA test's JAX counterpart: a [16, 4, 30000] draw inside jax.jit."""
  import jax  # pylint: disable=g-import-not-at-top
  ids = np.tile(make_row(20, 24, np.random.default_rng(8)), [16, 1])
  inputs, config = make_inputs(ids, (ids != PAD).astype(np.int32)), make_config(4)
  step = jax.jit(lambda seed: _xla_step(config, inputs, seed))
  masked, sampled = step(seed_of(7, 8))
  again, _ = step(seed_of(7, 8))
  _check_compiled_draw(masked, sampled, again, config, inputs, ids)
