"""One pre-training step of a tiny ELECTRA on the current Keras backend, with every random draw
fed in: the forward outputs, the gradients and one optimizer update, saved to / compared with
an `.npz` (tests/test_backend_parity.py runs TensorFlow in-process and JAX and PyTorch here,
with TensorFlow blocked).

    python tests/backend_parity.py check REFERENCE.npz
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Dict, Iterator, List

import keras
import numpy as np
from keras import ops

from electra_tf2.utils import stateless_random
from electra_tf2.config.pretraining import resolve_pretraining_config
from electra_tf2.models.pretrainer import ElectraPretrainer
from electra_tf2.models.optimization import create_optimizer

OBJECTIVES = {
    "electra": {},
    "electric": {"electric_objective": True},
    "bert": {"electra_objective": False, "untied_generator": False, "generator_hidden_size": 1.0},
}
# Every output of the step compared across backends (floats within 1e-5, ints equal).
OUTPUTS = ("total_loss", "mlm_loss", "disc_loss", "cloze_loss", "mlm_per_example_loss",
           "disc_probs", "disc_per_example_loss", "masked_lm_positions", "masked_lm_ids",
           "masked_lm_weights", "sampled_tokids", "fake_input_ids", "disc_labels")
SEED = np.array([4, 2], np.int32)


def model_for(objective: str, **hparams) -> ElectraPretrainer:
  """A tiny pre-trainer without dropout (dropout draws from Keras' own streams); `hparams`
  over the objective's."""
  overrides = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
  config = resolve_pretraining_config("electra_small", None, dict(
      debug=True, vocab_size=1000, max_seq_length=16, model_hparam_overrides=overrides,
      **OBJECTIVES[objective], **hparams))
  return ElectraPretrainer.from_pretraining_config(config)


def features(batch: int = 3, seq_len: int = 16, seed: int = 0,
             word_ids=(200, 1000)) -> Dict[str, np.ndarray]:
  """[CLS] words [SEP] words [SEP] padding, rows of different lengths; words are drawn
  from the range `word_ids`."""
  rng = np.random.default_rng(seed)
  ids = rng.integers(*word_ids, (batch, seq_len)).astype(np.int32)
  mask = np.zeros((batch, seq_len), np.int32)
  segments = np.zeros((batch, seq_len), np.int32)
  for row, length in enumerate(rng.integers(seq_len // 2, seq_len + 1, batch)):
    ids[row, 0], ids[row, length // 2], ids[row, length - 1] = 101, 102, 102
    ids[row, length:] = 0
    mask[row, :length] = 1
    segments[row, length // 2 + 1:length] = 1
  return {"input_ids": ids, "input_mask": mask, "segment_ids": segments}


@contextlib.contextmanager
def draws_fed(draws: List[np.ndarray]) -> Iterator[None]:
  """Replaces the backend's stateless draws (categorical, uniform) by `draws`, in order."""
  stream = (ops.convert_to_tensor(draw) for draw in draws)
  real = stateless_random.categorical, stateless_random.uniform
  stateless_random.categorical = lambda logits, num_samples, seed: next(stream)
  stateless_random.uniform = lambda shape, seed: next(stream)
  try:
    yield
  finally:
    stateless_random.categorical, stateless_random.uniform = real


@contextlib.contextmanager
def draws_recorded(draws: List[np.ndarray]) -> Iterator[None]:
  """Appends every stateless draw the backend makes to `draws`."""
  real = stateless_random.categorical, stateless_random.uniform
  def record(function):
    def drawn(*args, **kwargs):
      value = function(*args, **kwargs)
      draws.append(ops.convert_to_numpy(value))
      return value
    return drawn
  stateless_random.categorical, stateless_random.uniform = (record(f) for f in real)
  try:
    yield
  finally:
    stateless_random.categorical, stateless_random.uniform = real


def forward_and_gradients(model: ElectraPretrainer, batch: Dict[str, np.ndarray]):
  """(outputs as numpy, gradients of total_loss w.r.t. the trainable variables)."""
  backend = keras.backend.backend()
  variables = model.trainable_variables
  if backend == "tensorflow":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    with tf.GradientTape() as tape:
      outputs = model(batch, training=True, seed=SEED)
    grads = [tf.convert_to_tensor(g) for g in tape.gradient(outputs["total_loss"], variables)]
  elif backend == "jax":
    import jax  # pylint: disable=g-import-not-at-top
    def loss(values):
      outputs, _ = model.stateless_call(values, [v.value for v in model.non_trainable_variables],
                                        batch, training=True, seed=SEED)
      return outputs["total_loss"], outputs
    grads, outputs = jax.grad(loss, has_aux=True)([v.value for v in variables])
  else:
    outputs = model(batch, training=True, seed=SEED)
    outputs["total_loss"].backward()
    grads = [v.value.grad for v in variables]
  return ({k: ops.convert_to_numpy(v) for k, v in outputs.items()},
          [ops.convert_to_numpy(g) for g in grads])


def optimizer_update(model: ElectraPretrainer, grads: List[np.ndarray]) -> List[np.ndarray]:
  """The change of every trainable variable by one official optimizer step on `grads`."""
  optimizer = create_optimizer(1e-3, num_train_steps=10, weight_decay_rate=0.01,
                               warmup_steps=0, clip_norm=1.0)
  variables = model.trainable_variables
  before = [ops.convert_to_numpy(v) for v in variables]
  optimizer.apply([ops.convert_to_tensor(g) for g in grads], variables)
  return [ops.convert_to_numpy(v) - b for v, b in zip(variables, before)]


def step(objective: str, weights=None, draws=None) -> Dict[str, object]:
  """Runs the step; records the weights and draws when they are not given."""
  model = model_for(objective)
  if weights is None:
    weights = [ops.convert_to_numpy(w) for w in model.weights]
  model.set_weights(weights)
  recorded: List[np.ndarray] = []
  context = draws_fed(draws) if draws is not None else draws_recorded(recorded)
  with context:
    outputs, grads = forward_and_gradients(model, features())
  return dict(weights=weights, draws=draws if draws is not None else recorded, outputs=outputs,
              grads=grads, names=[v.path for v in model.trainable_variables], model=model)


def flatten(objective: str, result: Dict[str, object]) -> Dict[str, np.ndarray]:
  arrays = {}
  for i, w in enumerate(result["weights"]):
    arrays[f"{objective}/weight/{i}"] = w
  for i, d in enumerate(result["draws"]):
    arrays[f"{objective}/draw/{i}"] = d
  for name in OUTPUTS:
    if name in result["outputs"]:
      arrays[f"{objective}/output/{name}"] = result["outputs"][name]
  for i, g in enumerate(result["grads"]):
    arrays[f"{objective}/grad/{i}"] = g
  for i, u in enumerate(optimizer_update(result["model"], result["grads"])):
    arrays[f"{objective}/update/{i}"] = u
  return arrays


def numbered(reference, prefix: str) -> List[np.ndarray]:
  count = len([k for k in reference.files if k.startswith(prefix)])
  return [reference[f"{prefix}{i}"] for i in range(count)]


def compare(objective: str, reference) -> List[str]:
  """The differences beyond the issue's tolerances, as lines (empty: all agree)."""
  result = step(objective, numbered(reference, f"{objective}/weight/"),
                numbered(reference, f"{objective}/draw/"))
  problems = []
  for name in OUTPUTS:
    key = f"{objective}/output/{name}"
    if key not in reference.files:
      continue
    want, got = reference[key], result["outputs"][name]
    if want.dtype.kind in "iub":
      ok = np.array_equal(want, got)
    elif name.endswith("_loss") and want.ndim == 0:
      ok = abs(float(got) - float(want)) <= 1e-5 * abs(float(want))
    else:
      ok = np.allclose(got, want, rtol=1e-5, atol=1e-5)
    if not ok:
      problems.append(f"{objective} output {name}: max |diff| "
                      f"{np.max(np.abs(got.astype(np.float64) - want)):.3g}")
  wanted_grads = numbered(reference, f"{objective}/grad/")
  # Relative to each variable's largest gradient, floored at 1e-6 of the model's largest:
  # the key biases' gradients are 0 in exact arithmetic (a softmax ignores a shift of all
  # its scores), their float values ~1e-11 rounding noise.
  floor = 1e-6 * max(float(np.max(np.abs(g))) for g in wanted_grads)
  for i, got in enumerate(result["grads"]):
    want = wanted_grads[i]
    scale = max(float(np.max(np.abs(want))), floor)
    if np.max(np.abs(got - want)) > 1e-4 * scale:
      problems.append(f"{objective} gradient of {result['names'][i]}: relative "
                      f"{np.max(np.abs(got - want)) / scale:.3g}")
  for i, got in enumerate(optimizer_update(result["model"], wanted_grads)):
    want = reference[f"{objective}/update/{i}"]
    if np.max(np.abs(got - want)) > 1e-6:
      problems.append(f"{objective} update of {result['names'][i]}: "
                      f"{np.max(np.abs(got - want)):.3g}")
  return problems


def main(argv: List[str]) -> int:
  if len(argv) != 3 or argv[1] not in ("record", "check"):
    print(__doc__)
    return 2
  if argv[1] == "record":
    arrays = {}
    for objective in OBJECTIVES:
      arrays.update(flatten(objective, step(objective)))
    np.savez(argv[2], **arrays)
    return 0
  reference = np.load(argv[2])
  problems = [line for objective in OBJECTIVES for line in compare(objective, reference)]
  print("\n".join(problems) or f"{keras.backend.backend()}: all agree")
  return 1 if problems else 0


if __name__ == "__main__":
  if os.environ.get("ELECTRA_BLOCK_TENSORFLOW"):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import block_tensorflow  # noqa: F401  pylint: disable=unused-import,g-import-not-at-top
  sys.exit(main(sys.argv))
