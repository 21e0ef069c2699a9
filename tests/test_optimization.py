"""Tests for electra_tf2.models.optimization against independent numpy references.

The references below re-implement the official formulas (model/optimization.py) in float64:
TF1 `polynomial_decay(cycle=False, end=0)` times the warmup factor, and the
`AdamWeightDecayOptimizer` update (no bias correction, decoupled decay added to
the update, `tf.clip_by_global_norm` of all gradients first). Float32 results
are compared with rtol 1e-5 / atol 1e-6. Runs on every Keras backend (tests/test_backends.py);
the tests of tf.function, IndexedSlices and tf.distribute only on TensorFlow.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from typing import Callable, Dict, List, Optional

import keras
import numpy as np
import pytest

from backend_marks import BACKEND, numpy, tensor, tf_only
from electra_tf2.models import optimization as opt_lib

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RTOL, ATOL = 1e-5, 1e-6
EXCLUDE = ["LayerNorm", "layer_norm", "bias"]


# ---------------------------------------------------------------------------
# numpy references
# ---------------------------------------------------------------------------

def reference_lr(step: float, lr0: float, num_train_steps: int, warmup_steps: float,
                 power: float) -> float:
  """TF1 polynomial_decay (cycle=False, end 0) times min(1, step/warmup)."""
  clamped = min(step, num_train_steps)
  lr = lr0 * (1.0 - clamped / num_train_steps) ** power
  if warmup_steps > 0:
    lr *= min(1.0, step / warmup_steps)
  return lr


def reference_adam_wd(params: Dict[str, np.ndarray], grad_steps: List[Dict[str, np.ndarray]],
                      lr_of_step: Callable[[int], float], weight_decay_rate: float,
                      clip_norm: Optional[float],
                      multipliers: Optional[Dict[str, float]] = None
                      ) -> Dict[str, Dict[str, np.ndarray]]:
  """The official update, step by step; returns params and the adam_m/adam_v slots."""
  params = {k: v.astype(np.float64).copy() for k, v in params.items()}
  m = {k: np.zeros_like(v) for k, v in params.items()}
  v = {k: np.zeros_like(p) for k, p in params.items()}
  for step, grads in enumerate(grad_steps):
    grads = {k: g.astype(np.float64) for k, g in grads.items()}
    if clip_norm:
      norm = np.sqrt(sum(np.sum(g ** 2) for g in grads.values()))
      grads = {k: g * clip_norm / max(norm, clip_norm) for k, g in grads.items()}
    lr = lr_of_step(step)
    for name, g in grads.items():
      m[name] = 0.9 * m[name] + 0.1 * g
      v[name] = 0.999 * v[name] + 0.001 * g ** 2
      update = m[name] / (np.sqrt(v[name]) + 1e-6)
      if weight_decay_rate > 0 and not any(re.search(p, name) for p in EXCLUDE):
        update = update + weight_decay_rate * params[name]
      params[name] = params[name] - lr * (multipliers or {}).get(name, 1.0) * update
  return {"params": params, "m": m, "v": v}


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

class NamedVariables:
  """Keras variables keyed by official names (Keras names cannot contain "/")."""

  def __init__(self, values: Dict[str, np.ndarray]):
    self.by_name = {name: keras.Variable(value.astype(np.float32),
                                         name=re.sub(r"[^A-Za-z0-9_]", "_", name))
                    for name, value in values.items()}
    self._official = {id(var): name for name, var in self.by_name.items()}

  def name_fn(self, variable: keras.Variable) -> str:
    return self._official[id(variable)]

  @property
  def variables(self) -> List[keras.Variable]:
    return list(self.by_name.values())


PARAM_NAMES = [
    "electra/embeddings/word_embeddings",
    "electra/encoder/layer_0/attention/output/LayerNorm/gamma",
    "electra/encoder/layer_1/output/dense/bias",
    "electra/encoder/layer_1/output/dense/kernel",
    "generator_predictions/output_bias",
    "task_specific/cola/dense/kernel",
]
SHAPES = [(5, 3), (3,), (3,), (3, 3), (5,), (3, 2)]


def random_problem(n_steps: int, seed: int = 0):
  """Initial params and per-step gradients whose global norm is well above 1."""
  rng = np.random.default_rng(seed)
  params = {n: rng.normal(size=s).astype(np.float32) for n, s in zip(PARAM_NAMES, SHAPES)}
  grad_steps = [{n: (3.0 * rng.normal(size=s)).astype(np.float32)
                 for n, s in zip(PARAM_NAMES, SHAPES)} for _ in range(n_steps)]
  for grads in grad_steps:
    assert np.sqrt(sum(np.sum(g.astype(np.float64) ** 2) for g in grads.values())) > 5.0
  return params, grad_steps


def assert_close(actual, expected):
  np.testing.assert_allclose(numpy(actual), expected, rtol=RTOL, atol=ATOL)


def np_clip_by_global_norm(grads: List[np.ndarray], clip_norm: float) -> List[np.ndarray]:
  """`tf.clip_by_global_norm`'s definition: t * clip_norm / max(global_norm, clip_norm)."""
  norm = np.sqrt(sum(np.sum(g.astype(np.float64) ** 2) for g in grads))
  return [(g * clip_norm / max(norm, clip_norm)).astype(g.dtype) for g in grads]


# ---------------------------------------------------------------------------
# learning-rate schedule
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("power", [1.0, 2.0])
@pytest.mark.parametrize("num_warmup_steps,warmup_proportion,expected_warmup", [
    (0, 0.1, 100.0),    # proportion wins
    (150, 0.1, 150.0),  # explicit steps win (max of the two)
    (0, 0.0, 0.0),      # no warmup: factor 1, no division by zero
])
def test_schedule_matches_official_formula(power, num_warmup_steps, warmup_proportion,
                                           expected_warmup):
  total = 1000
  schedule = opt_lib.WarmupPolynomialDecay(3e-4, total, num_warmup_steps=num_warmup_steps,
                                           warmup_proportion=warmup_proportion, power=power)
  assert schedule.warmup_steps == expected_warmup
  steps = [0, 1, 37, 99, 100, 101, 149, 150, 151, 500, 998, 999, 1000, 1001, 5000]
  got = [float(schedule(np.int64(s))) for s in steps]
  want = [reference_lr(s, 3e-4, total, expected_warmup, power) for s in steps]
  # float32 (as in TF1): 1 - step/T loses ~1e-7 absolute near the end of training.
  np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * 3e-4)
  # Multiplied, not switched: at the end of warmup the rate is already decayed.
  if expected_warmup:
    w = int(expected_warmup)
    np.testing.assert_allclose(float(schedule(w)), 3e-4 * (1 - w / total) ** power, rtol=1e-6)
  assert float(schedule(0)) == (0.0 if expected_warmup else pytest.approx(3e-4))
  assert float(schedule(total)) == 0.0 and float(schedule(10 * total)) == 0.0


@tf_only
def test_schedule_in_tf_function():
  """Traceable inside tf.function with a symbolic int64 step."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  schedule = opt_lib.WarmupPolynomialDecay(3e-4, 1000, warmup_proportion=0.1)
  assert float(tf.function(schedule)(tf.constant(500, tf.int64))) == pytest.approx(
      reference_lr(500, 3e-4, 1000, 100.0, 1.0))


# ---------------------------------------------------------------------------
# optimizer update
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("layerwise", [False, True])
def test_steps_match_official_update(layerwise):
  """Three steps with warmup, decay, clipping, weight decay and (optionally) layer-wise LRs."""
  params, grad_steps = random_problem(n_steps=3)
  if layerwise:  # `generator_predictions/` matches no layer-wise key: the official raises.
    del params["generator_predictions/output_bias"]
    for grads in grad_steps:
      del grads["generator_predictions/output_bias"]
  named = NamedVariables(params)
  lr0, total, warmup, wd, decay = 0.05, 10, 2, 0.3, 0.8
  opt = opt_lib.create_optimizer(lr0, total, weight_decay_rate=wd, warmup_steps=warmup,
                                 layerwise_lr_decay_power=decay if layerwise else -1.0,
                                 n_transformer_layers=2, variable_name_fn=named.name_fn)
  # The official depths for 2 layers, written out: top = n + 2 = 4.
  multipliers = {
      "electra/embeddings/word_embeddings": decay ** 4,
      "electra/encoder/layer_0/attention/output/LayerNorm/gamma": decay ** 3,
      "electra/encoder/layer_1/output/dense/bias": decay ** 2,
      "electra/encoder/layer_1/output/dense/kernel": decay ** 2,
      "task_specific/cola/dense/kernel": 1.0,
  }

  def apply(grads):
    opt.apply_gradients(zip(grads, named.variables))

  if BACKEND == "tensorflow":  # the update as a training step runs it: in a graph
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    apply = tf.function(apply)
  for grads in grad_steps:
    apply([tensor(grads[n]) for n in named.by_name])

  ref = reference_adam_wd(params, grad_steps,
                          lambda s: reference_lr(s, lr0, total, warmup, 1.0), wd, clip_norm=1.0,
                          multipliers=multipliers if layerwise else None)
  slots = opt.slot_variables_by_official_name()
  for name, var in named.by_name.items():
    assert_close(var, ref["params"][name])
    assert_close(slots[f"{name}/adam_m"], ref["m"][name])
    assert_close(slots[f"{name}/adam_v"], ref["v"][name])
  assert int(opt.iterations) == 3


def test_weight_decay_only_for_non_excluded_official_names():
  """With zero gradients the update is exactly wd * param, and only where not excluded."""
  names = ["electra/embeddings/word_embeddings", "electra/embeddings/LayerNorm/beta",
           "electra/encoder/layer_0/output/dense/bias", "generator_predictions/output_bias",
           "electra/encoder/layer_0/output/dense/kernel", "x/layer_norm/gamma"]
  values = {n: np.full((2, 2), 2.0, np.float32) for n in names}
  named = NamedVariables(values)
  opt = opt_lib.AdamWeightDecay(learning_rate=0.1, weight_decay_rate=0.5,
                                variable_name_fn=named.name_fn)
  opt.apply_gradients([(tensor(np.zeros((2, 2), np.float32)), v) for v in named.variables])
  decayed = {"electra/embeddings/word_embeddings", "electra/encoder/layer_0/output/dense/kernel"}
  for name, var in named.by_name.items():
    assert_close(var, np.full((2, 2), 2.0 * (1 - 0.1 * 0.5) if name in decayed else 2.0))


def test_default_name_fn_is_keras_path():
  output_bias = keras.Variable(np.ones(3, np.float32), name="output_bias")
  kernel = keras.Variable(np.ones(3, np.float32), name="kernel")
  opt = opt_lib.AdamWeightDecay(learning_rate=0.1, weight_decay_rate=0.5)
  zeros = tensor(np.zeros(3, np.float32))
  opt.apply_gradients([(zeros, output_bias), (zeros, kernel)])
  assert_close(output_bias, np.ones(3))
  assert_close(kernel, np.full(3, 0.95))
  assert set(opt.slot_variables_by_official_name()) == {
      "output_bias/adam_m", "output_bias/adam_v", "kernel/adam_m", "kernel/adam_v"}


def test_first_step_has_no_bias_correction_unlike_keras_adamw():
  g = np.array([0.5, -2.0, 0.1, 30.0], np.float32)
  lr = 0.01
  ours_var = keras.Variable(np.zeros(4, np.float32), name="w")
  ours = opt_lib.AdamWeightDecay(learning_rate=lr)
  ours.apply_gradients([(tensor(g), ours_var)])
  # m = (1-b1) g, v = (1-b2) g^2 -> step = lr (1-b1) g / (sqrt(1-b2)|g| + eps) ~ 3.16 lr sign(g)
  want = -lr * 0.1 * g.astype(np.float64) / (np.sqrt(0.001) * np.abs(g) + 1e-6)
  assert_close(ours_var, want)
  np.testing.assert_allclose(np.abs(numpy(ours_var)), lr * 0.1 / np.sqrt(0.001), rtol=2e-3)

  keras_var = keras.Variable(np.zeros(4, np.float32), name="w")
  keras_adamw = keras.optimizers.AdamW(learning_rate=lr, weight_decay=0.0, epsilon=1e-6)
  keras_adamw.apply_gradients([(tensor(g), keras_var)])
  np.testing.assert_allclose(np.abs(numpy(keras_var)), lr, rtol=2e-3)  # bias-corrected
  assert np.all(np.abs(numpy(ours_var)) > 3.0 * np.abs(numpy(keras_var)))


def test_keras_adamw_weight_decay_differs():
  """Keras' AdamW decays by lr*wd*p BEFORE the Adam step; ours adds wd*p to the update."""
  g, p0, lr, wd = np.array([1.0], np.float32), np.array([2.0], np.float32), 0.1, 0.5
  ours_var = keras.Variable(p0, name="w")
  opt_lib.AdamWeightDecay(learning_rate=lr, weight_decay_rate=wd).apply_gradients(
      [(tensor(g), ours_var)])
  ref = reference_adam_wd({"w": p0}, [{"w": g}], lambda s: lr, wd, clip_norm=None)
  assert_close(ours_var, ref["params"]["w"])
  keras_var = keras.Variable(p0, name="w")
  keras.optimizers.AdamW(learning_rate=lr, weight_decay=wd, epsilon=1e-6).apply_gradients(
      [(tensor(g), keras_var)])
  assert abs(float(numpy(keras_var)[0]) - float(numpy(ours_var)[0])) > 0.1


def test_global_clipnorm_equals_tf_clip_by_global_norm():
  params, grad_steps = random_problem(n_steps=1, seed=1)
  grads = [grad_steps[0][n] for n in PARAM_NAMES]
  clipped = np_clip_by_global_norm(grads, 1.0)
  assert not np.allclose(clipped[0], grads[0])  # the global norm is above 1
  clipping, pre_clipped = NamedVariables(params), NamedVariables(params)
  opt_lib.AdamWeightDecay(learning_rate=0.1, weight_decay_rate=0.1, global_clipnorm=1.0,
                          variable_name_fn=clipping.name_fn).apply_gradients(
                              zip(map(tensor, grads), clipping.variables))
  opt_lib.AdamWeightDecay(learning_rate=0.1, weight_decay_rate=0.1,
                          variable_name_fn=pre_clipped.name_fn).apply_gradients(
                              zip(map(tensor, clipped), pre_clipped.variables))
  for a, b in zip(clipping.variables, pre_clipped.variables):
    np.testing.assert_allclose(numpy(a), numpy(b), rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------------------
# sparse gradients
# ---------------------------------------------------------------------------

def _embedding_grads(table: keras.Variable, kernel: keras.Variable):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  ids = tf.constant([1, 3, 1, 5])  # row 1 twice: duplicate slices must be summed
  with tf.GradientTape() as tape:
    hidden = tf.gather(table, ids)
    loss = tf.reduce_sum(tf.square(tf.matmul(hidden, kernel))) * 4.0
  return tape.gradient(loss, [table, kernel])


@tf_only
@pytest.mark.parametrize("clip", [None, 1.0])
def test_sparse_gradient_matches_dense(clip):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(2)
  table0 = rng.normal(size=(6, 4)).astype(np.float32)
  kernel0 = rng.normal(size=(4, 2)).astype(np.float32)
  results = {}
  for mode in ("sparse", "dense"):
    named = NamedVariables({"electra/embeddings/word_embeddings": table0,
                            "task_specific/x/kernel": kernel0})
    table, kernel = named.variables
    opt = opt_lib.AdamWeightDecay(learning_rate=0.01, weight_decay_rate=0.1,
                                  global_clipnorm=clip, variable_name_fn=named.name_fn)
    for _ in range(2):
      grads = _embedding_grads(table, kernel)
      assert isinstance(grads[0], tf.IndexedSlices)
      if mode == "dense":
        # What the optimizer must be equivalent to: tf.clip_by_global_norm of the
        # gradients as given (slice values, as in the official code), then densified.
        if clip:
          grads, _ = tf.clip_by_global_norm(grads, clip)
        grads = [tf.convert_to_tensor(g) for g in grads]
        opt.global_clipnorm = None
      opt.apply_gradients(zip(grads, [table, kernel]))
    results[mode] = [table.numpy(), kernel.numpy()]
  for a, b in zip(results["sparse"], results["dense"]):
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
  untouched = [0, 2, 4]  # rows without gradient: m=v=0, so only weight decay moves them
  np.testing.assert_allclose(results["sparse"][0][untouched],
                             table0[untouched] * (1 - 0.01 * 0.1) ** 2, rtol=1e-6)


# ---------------------------------------------------------------------------
# layer-wise learning rates
# ---------------------------------------------------------------------------

def _twelve_layer_names() -> List[str]:
  names = ["electra/embeddings/word_embeddings", "electra/embeddings/LayerNorm/gamma",
           "electra/embeddings_project/kernel", "task_specific/squad/start_logits/dense/kernel"]
  return names + [f"electra/encoder/layer_{i}/attention/self/query/kernel" for i in range(12)]


@pytest.mark.parametrize("fix,top", [(False, 14), (True, 13)])
def test_layerwise_multipliers_twelve_layers(fix, top):
  decay = 0.8
  got = opt_lib.layerwise_lr_multipliers(_twelve_layer_names(), decay, 12, fix_off_by_one=fix)
  assert got["electra/embeddings/word_embeddings"] == pytest.approx(decay ** top)
  assert got["electra/embeddings/LayerNorm/gamma"] == pytest.approx(decay ** top)
  assert got["electra/embeddings_project/kernel"] == pytest.approx(decay ** top)
  for i in range(12):  # layer_i has depth i + 1; "layer_1/" must not match "layer_11/"
    assert got[f"electra/encoder/layer_{i}/attention/self/query/kernel"] == pytest.approx(
        decay ** (top - 1 - i))
  assert got["electra/encoder/layer_0/attention/self/query/kernel"] == pytest.approx(
      decay ** (13 if not fix else 12))
  assert got["electra/encoder/layer_11/attention/self/query/kernel"] == pytest.approx(
      decay ** (2 if not fix else 1))
  assert got["task_specific/squad/start_logits/dense/kernel"] == 1.0


def test_layerwise_unknown_or_ambiguous_name_raises():
  with pytest.raises(ValueError, match="generator_predictions/output_bias"):
    opt_lib.layerwise_lr_multipliers(["electra/embeddings/word_embeddings",
                                      "generator_predictions/output_bias"], 0.8, 12)
  with pytest.raises(ValueError, match="several"):
    opt_lib.layerwise_lr_multipliers(["task_specific/encoder/layer_0/kernel"], 0.8, 12)
  # The optimizer builds the multipliers once and raises in `build` for such a name.
  named = NamedVariables({"generator/encoder/layer_0/x/kernel": np.ones(2, np.float32),
                          "discriminator_predictions/dense/kernel": np.ones(2, np.float32)})
  opt = opt_lib.create_optimizer(1e-4, 10, layerwise_lr_decay_power=0.8,
                                 n_transformer_layers=1, variable_name_fn=named.name_fn)
  with pytest.raises(ValueError, match="discriminator_predictions/dense/kernel"):
    opt.build(named.variables)
  with pytest.raises(ValueError, match="n_transformer_layers"):
    opt_lib.create_optimizer(1e-4, 10, layerwise_lr_decay_power=0.8)


# ---------------------------------------------------------------------------
# config round trips and argument checks
# ---------------------------------------------------------------------------

def test_schedule_config_round_trip():
  schedule = opt_lib.WarmupPolynomialDecay(2e-4, 500, num_warmup_steps=20,
                                           warmup_proportion=0.1, power=0.5, name="lr")
  config = schedule.get_config()
  restored = opt_lib.WarmupPolynomialDecay.from_config(config)
  assert restored.get_config() == config
  again = keras.optimizers.schedules.deserialize(keras.optimizers.schedules.serialize(schedule))
  assert isinstance(again, opt_lib.WarmupPolynomialDecay)
  for step in (0, 10, 50, 499, 600):
    assert float(restored(step)) == float(schedule(step)) == float(again(step))


def test_optimizer_config_round_trip():
  opt = opt_lib.create_optimizer(1e-4, 1000, weight_decay_rate=0.02, warmup_proportion=0.1,
                                 lr_decay_power=2.0, layerwise_lr_decay_power=0.9,
                                 n_transformer_layers=24, fix_layerwise_lr_off_by_one=True)
  config = opt.get_config()
  assert config["global_clipnorm"] == 1.0 and config["weight_decay"] is None
  assert "variable_name_fn" not in config
  for key, value in {"weight_decay_rate": 0.02, "beta_1": 0.9, "beta_2": 0.999,
                     "epsilon": 1e-6, "exclude_from_weight_decay": EXCLUDE,
                     "layerwise_lr_decay": 0.9, "n_transformer_layers": 24,
                     "fix_layerwise_lr_off_by_one": True}.items():
    assert config[key] == value, key
  restored = opt_lib.AdamWeightDecay.from_config(dict(config))
  assert restored.get_config() == config
  assert isinstance(restored._learning_rate, opt_lib.WarmupPolynomialDecay)
  again = keras.optimizers.deserialize(keras.optimizers.serialize(opt))
  assert isinstance(again, opt_lib.AdamWeightDecay) and again.get_config() == config
  assert float(again.learning_rate) == 0.0  # iteration 0 is the start of warmup


def test_argument_checks():
  with pytest.raises(ValueError, match="weight_decay_rate"):
    opt_lib.AdamWeightDecay(learning_rate=0.1, weight_decay=0.01)
  with pytest.raises(ValueError, match="num_train_steps"):
    opt_lib.WarmupPolynomialDecay(1e-4, 0)
  opt = opt_lib.AdamWeightDecay(learning_rate=0.1)
  with pytest.raises(ValueError, match="not built"):
    opt.slot_variables_by_official_name()
  with pytest.raises(NotImplementedError):
    opt.exclude_from_weight_decay(var_names=["bias"])
  assert opt_lib.create_optimizer(1e-4, 10, clip_norm=None).global_clipnorm is None


# ---------------------------------------------------------------------------
# tf.distribute
# ---------------------------------------------------------------------------

MIRRORED_SCRIPT = textwrap.dedent("""
    import numpy as np
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import keras
    from electra_tf2.models import optimization as opt_lib

    NAMES = ["electra/embeddings/word_embeddings", "task_specific/t/kernel",
             "task_specific/t/bias"]
    table0 = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3)
    kernel0 = np.full((3, 2), 0.5, np.float32)
    bias0 = np.array([0.1, -0.2], np.float32)
    IDS = [tf.constant([0, 2, 2]), tf.constant([3, 1, 0])]  # one row per replica

    def make(initial):
      variables = [keras.Variable(v, name=n.replace("/", "_")) for v, n in zip(initial, NAMES)]
      names = {id(v): n for v, n in zip(variables, NAMES)}
      opt = opt_lib.create_optimizer(0.1, 10, weight_decay_rate=0.1,
                                     variable_name_fn=lambda v: names[id(v)])
      return variables, opt

    def grads_of(variables, ids):
      table, kernel, bias = variables
      with tf.GradientTape() as tape:
        out = tf.matmul(tf.gather(table, ids), kernel) + bias
        loss = tf.reduce_sum(tf.square(out)) * 3.0
      return tape.gradient(loss, variables)

    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    assert strategy.num_replicas_in_sync == 2
    with strategy.scope():
      variables, opt = make([table0, kernel0, bias0])
      opt.build(variables)  # required before the first distributed step

    @tf.function
    def train_step(ids):
      def replica_fn(ids):
        opt.apply_gradients(zip(grads_of(variables, ids), variables))
      strategy.run(replica_fn, args=(ids,))

    train_step(strategy.experimental_distribute_values_from_function(
        lambda ctx: IDS[ctx.replica_id_in_sync_group]))
    assert int(opt.iterations.numpy()) == 1

    # The replicas' gradients are summed, then clipped at global norm 1.0: what
    # one device does with the whole batch. (Plain Keras clips each replica's
    # gradient before the sum.) Replay that on one device.
    single, ref_opt = make([table0, kernel0, bias0])
    # A sparse (embedding) gradient all-reduces to the concatenation of the slices.
    def add(a, b):
      if isinstance(a, tf.IndexedSlices):
        return tf.IndexedSlices(tf.concat([a.values, b.values], 0),
                                tf.concat([a.indices, b.indices], 0), a.dense_shape)
      return a + b
    summed = [add(a, b) for a, b in zip(grads_of(single, IDS[0]), grads_of(single, IDS[1]))]
    ref_opt.apply_gradients(zip(summed, single))
    for got, want in zip(variables, single):
      for local in strategy.experimental_local_results(got.value):
        np.testing.assert_allclose(local.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    assert not np.allclose(variables[0].numpy(), table0)
    slots = opt.slot_variables_by_official_name()
    assert sorted(slots) == sorted(n + s for n in NAMES for s in ("/adam_m", "/adam_v"))
    print("MIRRORED_OK")
""")


@tf_only
@pytest.mark.slow
def test_mirrored_strategy_two_logical_cpus_build_and_step():
  env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2",
             PYTHONPATH=REPO_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
  result = subprocess.run([sys.executable, "-c", MIRRORED_SCRIPT], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120)
  assert result.returncode == 0 and "MIRRORED_OK" in result.stdout, (
      result.stdout[-3000:] + result.stderr[-5000:])
