"""Stage `equivalence`: optimizer steps of both codes from the same weights and draws."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List

from bench.common import log
from bench.parity.curves.layout import our_config
from bench.parity.curves.official import run_official

NO_DROPOUT = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}


def our_draws(seed) -> Dict[str, List[int]]:
  """The stateless seeds our model splits a step's `seed` into: mask positions, the
  [MASK]-or-keep draw and the generator samples, as `SeededRandom.feed` takes them."""
  import tensorflow as tf
  mask_seed, sample_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
  position, keep = tf.unstack(tf.random.experimental.stateless_split(mask_seed, 2))
  return {"position": position.numpy().tolist(), "keep": keep.numpy().tolist(),
          "sample": sample_seed.numpy().tolist()}


def stage_equivalence(args) -> Dict[str, Any]:
  """K optimizer steps of both codes from our initial weights with shared randomness."""
  import numpy as np
  import tensorflow as tf
  from electra_tf2.networks import variable_names
  from electra_tf2.conversion import convert
  from electra_tf2.data_io import input_pipeline
  from electra_tf2.training.tf_pretraining import PretrainingRun

  out_dir = os.path.join(args.work_dir, "equivalence")
  os.makedirs(out_dir, exist_ok=True)
  overrides = dict(args.hparams.get("model_hparam_overrides", {}), **NO_DROPOUT)
  config = our_config(args, model_hparam_overrides=overrides, seed=0, deterministic=True,
                      model_dir=os.path.join(out_dir, "ours"))
  run = PretrainingRun(config)
  init = convert.official_tensors(run.variable_names)
  init_prefix = convert.write_official_checkpoint(os.path.join(out_dir, "init"), init)
  steps = args.equivalence_steps
  batches = list(input_pipeline.input_fn(config, False, config.train_batch_size).take(steps))
  np.savez(os.path.join(out_dir, "batches.npz"),
           **{k: np.stack([b[k].numpy() for b in batches]) for k in batches[0]})
  # PretrainingRun._seed of shard 0, then the splits of our model
  seeds = [our_draws(tf.constant([step, config.seed * 65536], tf.int32))
           for step in range(steps)]

  # The official update of step k runs with lr(k + 1): the graph's global_step.assign is
  # not ordered before the learning-rate read, and TensorFlow runs it first (measured:
  # the first official step moves the weights although lr(0) = 0). Start our optimizer's
  # step counter at 1 so both codes apply the same rates here.
  run.base_optimizer.iterations.assign(1)
  train_loop = run._build_train_loop()  # pylint: disable=protected-access
  iterator = iter(tf.data.Dataset.from_tensor_slices(
      {k: tf.stack([b[k] for b in batches]) for k in batches[0]}))
  ours = []
  for _ in range(steps):
    lr = float(run.base_optimizer.learning_rate)
    values = train_loop(iterator, tf.constant(1))
    ours.append(dict({k: float(v) for k, v in values.items() if not k.startswith("metric/")},
                     learning_rate=lr))

  official_hparams = dict(args.hparams, model_hparam_overrides=overrides)
  run_official(args, {"mode": "steps", "data_dir": os.path.join(args.work_dir, "data"),
                      "hparams": official_hparams, "seed": 0, "init_checkpoint": init_prefix,
                      "batches": os.path.join(out_dir, "batches.npz"), "seeds": seeds,
                      "output": os.path.join(out_dir, "official")})
  with open(os.path.join(out_dir, "official.json"), encoding="utf-8") as f:
    official = json.load(f)
  after = dict(np.load(os.path.join(out_dir, "official.npz")))
  after = {k.replace("|", "/"): v for k, v in after.items()}

  log("\nequivalence: the same weights, batches and draws, dropout off (our optimizer one "
      "step ahead: the official step k applies lr(k + 1), see stage_equivalence)")
  log(f"{'step':>4} {'lr(k+1) ours':>12} {'lr(k) official':>14} {'total ours':>11} "
      f"{'total official':>15} {'mlm ours':>9} {'mlm official':>13}")
  for step, (a, b) in enumerate(zip(ours, official["steps"])):
    log(f"{step:>4} {a['learning_rate']:>12.3e} {b['learning_rate']:>14.3e} "
        f"{a['total_loss']:>11.6f} {b['total_loss']:>15.6f} {a['mlm_loss']:>9.6f} "
        f"{b['mlm_loss']:>13.6f}")
  # Weight updates: |(ours - init) - (official - init)| relative to the official update.
  names = variable_names.pretrainer_variable_map(run.model)
  worst = []
  # The attention key biases get a gradient of zero up to rounding (a softmax does not
  # change when every score of a query moves by q.b); Adam turns that rounding noise into
  # full-size steps in both codes, so their updates are noise and are not compared.
  for name, variable in names.items():
    if name.endswith("attention/self/key/bias"):
      continue
    update_ours = variable.numpy() - init[name]
    update_official = after[name] - init[name]
    scale = float(np.abs(update_official).max()) or 1.0
    worst.append((float(np.abs(update_ours - update_official).max()) / scale, name))
  worst.sort(reverse=True)
  log("largest relative differences of the weight updates after "
      f"{steps} steps (|ours - official| / max |official update|):")
  for value, name in worst[:6]:
    log(f"  {value:.2e}  {name}")
  # Initial spreads: our initialisers against the official ones (fresh official init).
  ours_init = {name: float(np.std(value)) for name, value in init.items()}
  ratios = sorted(((ours_init[name] / official["init_stats"][name][1], name)
                   for name in ours_init if official["init_stats"][name][1] > 0),
                  key=lambda r: abs(np.log(r[0])), reverse=True)
  log("initial standard deviations, ours / official (most different first):")
  for ratio, name in ratios[:4]:
    log(f"  {ratio:.3f}  {name}")
  result = {"ours": ours, "official": official["steps"],
            "max_relative_update_difference": worst[0][0], "worst_variable": worst[0][1],
            "init_std_ratio_range": [min(r for r, _ in ratios), max(r for r, _ in ratios)]}
  with open(os.path.join(out_dir, "equivalence.json"), "w", encoding="utf-8") as f:
    json.dump(result, f, indent=1)
  return result

