"""The official TF1 ELECTRA code under TensorFlow 2.20: its process, shims and random draws."""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from typing import Dict


def official_env(official_dir: str) -> Dict[str, str]:
  """The environment of a process that imports the official code from `official_dir`:
  legacy Keras, the tree first on PYTHONPATH, CPU only."""
  path = [os.path.abspath(official_dir)] + [p for p in [os.environ.get("PYTHONPATH")] if p]
  return dict(os.environ, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="3",
              CUDA_VISIBLE_DEVICES="", PYTHONPATH=os.pathsep.join(path))


def install_official_shims(official_dir: str):
  """Makes google-research/electra importable under TF 2.20; returns `tf.compat.v1`.

  Runs in a process started with `official_env(official_dir)` (TF_USE_LEGACY_KERAS=1
  before TensorFlow is imported). The tree goes first on sys.path, before the repository
  root that `python -m` puts there: `run_pretraining` and `run_finetuning` are the
  official ones.
  """
  sys.path.insert(0, os.path.realpath(official_dir))
  found = importlib.util.find_spec("run_pretraining")
  if found is None or os.path.dirname(os.path.realpath(found.origin)) != sys.path[0]:
    raise RuntimeError(f"{official_dir} has no run_pretraining.py: give the root of a "
                       "google-research/electra checkout")
  import tensorflow.compat.v1 as tf1
  tf1.disable_v2_behavior()

  def layer_norm(inputs, begin_norm_axis=-1, begin_params_axis=-1, scope=None, reuse=None):
    """tf.contrib.layers.layer_norm over the last axis: `<scope>/{beta,gamma}`, eps 1e-12."""
    del begin_norm_axis, begin_params_axis  # always -1 in ELECTRA
    with tf1.variable_scope(scope, default_name="LayerNorm", values=[inputs], reuse=reuse):
      depth = inputs.shape[-1]
      beta = tf1.get_variable("beta", [depth], initializer=tf1.zeros_initializer())
      gamma = tf1.get_variable("gamma", [depth], initializer=tf1.ones_initializer())
      mean, variance = tf1.nn.moments(inputs, [-1], keep_dims=True)
      return tf1.nn.batch_normalization(inputs, mean, variance, offset=beta, scale=gamma,
                                        variance_epsilon=1e-12)

  contrib = types.ModuleType("tensorflow.contrib")
  contrib.layers = types.ModuleType("tensorflow.contrib.layers")
  contrib.layers.layer_norm = layer_norm
  sys.modules["tensorflow.contrib"] = contrib
  sys.modules["tensorflow.contrib.layers"] = contrib.layers
  tf1.estimator = types.SimpleNamespace(SessionRunHook=object)  # util/training_utils.ETAHook
  return tf1


class SeededRandom:
  """`tf.random` for the official pretrain_helpers, drawing from given stateless seeds.

  `categorical` (mask positions), `uniform` of rank 2 (the 85% [MASK] draw) and
  of rank 3 (the Gumbel noise) use the placeholders `position_seed`,
  `keep_seed` and `sample_seed`: the draws our `mask` and
  `sample_ids_from_softmax` make from the same seeds.
  """

  def __init__(self, tf1):
    self._tf1 = tf1
    self.position_seed = tf1.placeholder(tf1.int32, [2], "position_seed")
    self.keep_seed = tf1.placeholder(tf1.int32, [2], "keep_seed")
    self.sample_seed = tf1.placeholder(tf1.int32, [2], "sample_seed")

  def categorical(self, logits, num_samples, dtype=None, **_):
    return self._tf1.random.stateless_categorical(logits, num_samples, self.position_seed,
                                                  dtype=dtype)

  def uniform(self, shape, minval=0, maxval=1, **_):
    seed = self.keep_seed if len(shape) == 2 else self.sample_seed
    return self._tf1.random.stateless_uniform(shape, seed, minval=minval, maxval=maxval)

  def feed(self, seeds: Dict[str, list]):
    """The placeholders' values for `seeds` ({"position", "keep", "sample"}: [2] each)."""
    return {self.position_seed: seeds["position"], self.keep_seed: seeds["keep"],
            self.sample_seed: seeds["sample"]}


class TensorFlowWith:
  """`tf.compat.v1` with another `random` module."""

  def __init__(self, tf1, random):
    self._tf1 = tf1
    self.random = random

  def __getattr__(self, name):
    return getattr(self._tf1, name)
