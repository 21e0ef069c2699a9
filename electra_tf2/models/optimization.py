"""The official ELECTRA optimiser (model/optimization.py:25-193) as Keras 3 pieces.

`WarmupPolynomialDecay`: lr0 * (1 - min(step, T)/T)**power * min(1, step/W), the
warmup multiplying the decay (official lines 36-45). `AdamWeightDecay`: Adam
without bias correction plus decoupled weight decay, no decay for official names
matching LayerNorm/layer_norm/bias, layer-wise learning rates (`_get_layer_lrs`,
with its off-by-one by default), global-norm clipping at 1.0 of the gradient
summed over replicas. `create_optimizer` puts them together as the official
function does. Notes: docs/design.md#the-optimizer.

Backend-neutral (`keras.ops`); on TensorFlow the update is the fused Adam kernel
and the clipping sees the gradient summed over `tf.distribute` replicas.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Optional, Sequence

import keras
from keras import ops

DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")

VariableNameFn = Callable[[keras.Variable], str]


@keras.saving.register_keras_serializable(package="electra_tf2")
class WarmupPolynomialDecay(keras.optimizers.schedules.LearningRateSchedule):
  """`lr0 * (1 - min(step, T)/T)**power * min(1, step/W)`; see the module docstring.

  Args:
    initial_learning_rate: lr0.
    num_train_steps: T, the decay length (> 0). The rate is 0 from step T on.
    num_warmup_steps: the official `warmup_steps`.
    warmup_proportion: W is `max(num_train_steps * warmup_proportion,
      num_warmup_steps)`, as in the official code.
    power: the polynomial power (official `lr_decay_power`; 1 is linear).
  """

  def __init__(self, initial_learning_rate: float, num_train_steps: int,
               num_warmup_steps: float = 0, warmup_proportion: float = 0.0,
               power: float = 1.0, name: Optional[str] = None):
    super().__init__()
    if num_train_steps <= 0:
      raise ValueError(f"num_train_steps must be > 0, got {num_train_steps}")
    if num_warmup_steps < 0 or warmup_proportion < 0:
      raise ValueError(f"warmup must be >= 0, got num_warmup_steps={num_warmup_steps}, "
                       f"warmup_proportion={warmup_proportion}")
    self.initial_learning_rate = initial_learning_rate
    self.num_train_steps = num_train_steps
    self.num_warmup_steps = num_warmup_steps
    self.warmup_proportion = warmup_proportion
    self.power = power
    self.name = name

  @property
  def warmup_steps(self) -> float:
    """The effective W = max(T * warmup_proportion, num_warmup_steps)."""
    return max(self.num_train_steps * self.warmup_proportion, self.num_warmup_steps)

  def __call__(self, step):
    step = ops.cast(step, "float32")
    total = ops.cast(self.num_train_steps, "float32")
    progress = ops.minimum(step, total) / total
    lr = ops.cast(self.initial_learning_rate, "float32") * ops.power(
        1.0 - progress, ops.cast(self.power, "float32"))
    if self.warmup_steps > 0:
      lr *= ops.minimum(1.0, step / ops.cast(self.warmup_steps, "float32"))
    return lr

  def get_config(self) -> Dict[str, Any]:
    return {"initial_learning_rate": self.initial_learning_rate,
            "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps,
            "warmup_proportion": self.warmup_proportion,
            "power": self.power,
            "name": self.name}


def layerwise_lr_multipliers(variable_names: Sequence[str], decay: float, n_layers: int,
                             fix_off_by_one: bool = False) -> Dict[str, float]:
  """Official `_get_layer_lrs` as `{variable name: decay ** (top - depth)}`.

  Depths follow the official keys, each matched by a substring test
  (`key in name`):
  "/embeddings/" and "/embeddings_project/" have depth 0, "encoder/layer_<i>/"
  has depth i+1, and "task_specific/" has depth `top`.
  `top` is n_layers + 2 in the official code. The pooler it made room for does
  not exist, so the top transformer layer gets decay**2 (issue #51).
  With `fix_off_by_one` it is n_layers + 1, so the top layer gets decay**1 and
  the embeddings decay**(n_layers+1). Task heads get decay**0 in both cases.

  Raises ValueError for a name that matches no key, as the official
  `apply_gradients` does. It also raises for a name that matches more than one
  key. The official code would then apply the variable's update once per
  matching key. Its second `tf.get_variable("<name>/adam_m")` would fail
  because the variable already exists. With the official key set and
  official names, no name matches twice: "/embeddings/" does not match
  "embeddings_project/", and the trailing "/" keeps "layer_1/" from matching
  "layer_11/". So the official matching order never decides anything.
  """
  top = n_layers + 1 if fix_off_by_one else n_layers + 2
  key_to_depth = {"/embeddings/": 0, "/embeddings_project/": 0, "task_specific/": top}
  for layer in range(n_layers):
    key_to_depth[f"encoder/layer_{layer}/"] = layer + 1
  multipliers = {}
  for name in variable_names:
    keys = [key for key in key_to_depth if key in name]
    if not keys:
      raise ValueError(f"No layer-wise learning rate for variable {name!r}: it contains none "
                       f"of {list(key_to_depth)}")
    if len(keys) > 1:
      raise ValueError(f"Variable {name!r} matches several layer-wise keys {keys}")
    multipliers[name] = decay ** (top - key_to_depth[keys[0]])
  return multipliers


def _is_tensorflow() -> bool:
  return keras.backend.backend() == "tensorflow"


def add_gradients(a, b):
  """a + b for dense gradients; TensorFlow's `IndexedSlices` are concatenated (they stay
  sparse)."""
  if _is_tensorflow():
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    if isinstance(a, tf.IndexedSlices) and isinstance(b, tf.IndexedSlices):
      return tf.IndexedSlices(tf.concat([a.values, b.values], 0),
                              tf.concat([a.indices, b.indices], 0), a.dense_shape)
    return tf.convert_to_tensor(a) + tf.convert_to_tensor(b)
  return ops.add(a, b)


def clip_by_global_norm(gradients: List, clip_norm: float) -> List:
  """`tf.clip_by_global_norm` in `keras.ops`: every gradient times
  clip_norm * min(1 / global_norm, 1 / clip_norm) (None stays None)."""
  present = [g for g in gradients if g is not None]
  norm = ops.sqrt(ops.sum(ops.stack([ops.sum(ops.square(ops.cast(g, "float32")))
                                     for g in present])))
  scale = clip_norm * ops.minimum(1.0 / norm, 1.0 / clip_norm)
  return [None if g is None else g * ops.cast(scale, g.dtype) for g in gradients]


def variable_path(variable: keras.Variable) -> str:
  """The default `variable_name_fn`: the Keras variable path."""
  return variable.path


def _handle(variable):
  """The resource handle of a (Keras, distributed or plain) variable on this device."""
  if isinstance(variable, keras.Variable):
    variable = variable.value
  return variable.handle


@keras.saving.register_keras_serializable(package="electra_tf2")
class AdamWeightDecay(keras.optimizers.Optimizer):
  """The official `AdamWeightDecayOptimizer` as a Keras 3 optimizer.

  Args:
    learning_rate: a float or a schedule (usually `WarmupPolynomialDecay`).
    weight_decay_rate: wd in `update = m/(sqrt(v)+eps) + wd*p`. 0 disables it.
    beta_1, beta_2, epsilon: Adam constants (official 0.9, 0.999, 1e-6).
    exclude_from_weight_decay: regexes `re.search`ed in the official name.
      Matching variables are not decayed.
    layerwise_lr_decay: the layer-wise decay base. 0 means off. When on, every
      variable's official name must match one of the keys of
      `layerwise_lr_multipliers`.
    n_transformer_layers: required when `layerwise_lr_decay` is on.
    fix_layerwise_lr_off_by_one: see `layerwise_lr_multipliers`.
    variable_name_fn: `keras.Variable -> official checkpoint name`, used for
      the exclusion regexes, the layer-wise depths and the slot names. The
      default is `variable_path`. It is a Python callable and NOT part of
      `get_config`. After `from_config`, assign `optimizer.variable_name_fn`
      again before the optimizer is built.
    **kwargs: Keras optimizer arguments (`global_clipnorm`, `name`, ...).
      Keras' own `weight_decay` is rejected, because it applies a different
      decay; use `weight_decay_rate`.
  """

  def __init__(self, learning_rate: Any = 0.001, weight_decay_rate: float = 0.0,
               beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-6,
               exclude_from_weight_decay: Sequence[str] = DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
               layerwise_lr_decay: float = 0.0, n_transformer_layers: Optional[int] = None,
               fix_layerwise_lr_off_by_one: bool = False,
               variable_name_fn: Optional[VariableNameFn] = None, **kwargs):
    if kwargs.get("weight_decay") is not None:
      raise ValueError("AdamWeightDecay does not use Keras' `weight_decay` (it decays before "
                       "the Adam step with another formula); pass `weight_decay_rate`.")
    super().__init__(learning_rate=learning_rate, **kwargs)
    if layerwise_lr_decay > 0 and n_transformer_layers is None:
      raise ValueError("layerwise_lr_decay > 0 needs n_transformer_layers")
    self.weight_decay_rate = weight_decay_rate
    self.beta_1 = beta_1
    self.beta_2 = beta_2
    self.epsilon = epsilon
    self.weight_decay_exclusions = list(exclude_from_weight_decay)
    self.layerwise_lr_decay = layerwise_lr_decay
    self.n_transformer_layers = n_transformer_layers
    self.fix_layerwise_lr_off_by_one = fix_layerwise_lr_off_by_one
    self.variable_name_fn = variable_name_fn or variable_path

  def exclude_from_weight_decay(self, var_list=None, var_names=None):
    """Keras' hook configures Keras' decay, which this optimizer does not use."""
    raise NotImplementedError("AdamWeightDecay excludes variables by the regexes passed as "
                              "the `exclude_from_weight_decay` constructor argument.")

  def _uses_weight_decay(self, official_name: str) -> bool:
    if not self.weight_decay_rate > 0:
      return False
    return not any(re.search(pattern, official_name) is not None
                   for pattern in self.weight_decay_exclusions)

  def build(self, var_list: List[keras.Variable]):
    if self.built:
      return
    super().build(var_list)
    names = [self.variable_name_fn(variable) for variable in var_list]
    self._official_names = tuple(names)
    self._weight_decay_flags = tuple(self._uses_weight_decay(name) for name in names)
    if self.layerwise_lr_decay > 0:
      by_name = layerwise_lr_multipliers(names, self.layerwise_lr_decay,
                                         self.n_transformer_layers,
                                         self.fix_layerwise_lr_off_by_one)
      self._lr_multipliers = tuple(by_name[name] for name in names)
    else:
      self._lr_multipliers = (1.0,) * len(names)
    self._adam_m, self._adam_v = self.add_optimizer_variables(var_list, ["adam_m", "adam_v"])

  def update_step(self, gradient, variable, learning_rate):
    """p -= lr * (m / (sqrt(v) + eps) + wd * p), with m, v updated first.

    On TensorFlow the Adam part is the fused `ResourceApplyAdam` kernel (one
    pass over p, m, v instead of a dozen) given beta powers of 0, which turns
    its bias correction off: its step is exactly lr * m / (sqrt(v) + eps). The
    decay term reads p before that update.
    """
    index = self._get_variable_index(variable)
    m, v = self._adam_m[index], self._adam_v[index]
    dtype = variable.dtype
    if _is_tensorflow():
      import tensorflow as tf  # pylint: disable=g-import-not-at-top
      gradient = tf.convert_to_tensor(gradient)  # IndexedSlices -> dense
    gradient = ops.cast(gradient, dtype)
    lr = ops.cast(learning_rate, dtype) * self._lr_multipliers[index]
    decay = None
    if self._weight_decay_flags[index]:
      decay = lr * self.weight_decay_rate * ops.convert_to_tensor(variable)
    if _is_tensorflow():
      self._fused_adam(variable, m, v, gradient, lr)
    else:
      self.assign(m, self.beta_1 * m + (1.0 - self.beta_1) * gradient)
      self.assign(v, self.beta_2 * v + (1.0 - self.beta_2) * ops.square(gradient))
      self.assign_sub(variable, lr * (m / (ops.sqrt(v) + self.epsilon)))
    if decay is not None:
      self.assign_sub(variable, decay)

  def _fused_adam(self, variable, m, v, gradient, lr) -> None:
    """TensorFlow's `ResourceApplyAdam` without bias correction (beta powers of 0)."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    dtype = variable.dtype
    zero = tf.zeros([], dtype)
    tf.raw_ops.ResourceApplyAdam(
        var=_handle(variable), m=_handle(m), v=_handle(v), beta1_power=zero, beta2_power=zero,
        lr=lr, beta1=tf.cast(self.beta_1, dtype), beta2=tf.cast(self.beta_2, dtype),
        epsilon=tf.cast(self.epsilon, dtype), grad=gradient)

  def _clip_gradients(self, grads):
    """No per-replica clipping: `_backend_update_step` clips the summed gradient."""
    return grads

  def _backend_update_step(self, grads, trainable_variables, learning_rate):
    """All-reduces (sums) the replicas' gradients, clips them, then updates.

    On JAX and PyTorch the gradient is already the global batch's (JAX's data
    parallelism shards one program): it is clipped, then applied."""
    if not _is_tensorflow():
      if self.global_clipnorm:
        grads = clip_by_global_norm(list(grads), self.global_clipnorm)
      super()._backend_update_step(grads, trainable_variables, learning_rate)
      return
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    trainable_variables = [v.value if isinstance(v, keras.Variable) else v
                           for v in trainable_variables]
    context = tf.distribute.get_replica_context()
    if context is not None and context.num_replicas_in_sync > 1:
      grads = context.all_reduce(tf.distribute.ReduceOp.SUM, list(grads))
    if self.global_clipnorm:
      grads, _ = tf.clip_by_global_norm(list(grads), self.global_clipnorm)
    tf.__internal__.distribute.interim.maybe_merge_call(
        self._distributed_tf_update_step, self._distribution_strategy,
        list(zip(grads, trainable_variables)), learning_rate)

  def slot_variables_by_official_name(self) -> Dict[str, keras.Variable]:
    """`{"<official name>/adam_m": m, "<official name>/adam_v": v}` for every variable."""
    self._check_built()
    slots = {}
    for name, m, v in zip(self._official_names, self._adam_m, self._adam_v):
      if m is None:  # an `overwrite_with_gradient` variable has no slots
        continue
      if f"{name}/adam_m" in slots:
        raise ValueError(f"two variables have the official name {name!r}")
      slots[f"{name}/adam_m"] = m
      slots[f"{name}/adam_v"] = v
    return slots

  def _check_built(self):
    if not self.built:
      raise ValueError("the optimizer is not built; call `build(model.trainable_variables)`")

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update({"weight_decay_rate": self.weight_decay_rate,
                   "beta_1": self.beta_1,
                   "beta_2": self.beta_2,
                   "epsilon": self.epsilon,
                   "exclude_from_weight_decay": list(self.weight_decay_exclusions),
                   "layerwise_lr_decay": self.layerwise_lr_decay,
                   "n_transformer_layers": self.n_transformer_layers,
                   "fix_layerwise_lr_off_by_one": self.fix_layerwise_lr_off_by_one})
    return config


def create_optimizer(learning_rate: float, num_train_steps: int,
                     weight_decay_rate: float = 0.01, warmup_steps: float = 0,
                     warmup_proportion: float = 0.0, lr_decay_power: float = 1.0,
                     layerwise_lr_decay_power: float = -1.0,
                     n_transformer_layers: Optional[int] = None,
                     variable_name_fn: Optional[VariableNameFn] = None,
                     fix_layerwise_lr_off_by_one: bool = False,
                     clip_norm: Optional[float] = 1.0) -> AdamWeightDecay:
  """The official `create_optimizer` (optimization.py:30-67) as a Keras optimizer.

  It uses the warmup-times-polynomial-decay schedule to 0, Adam with β
  0.9/0.999, ε 1e-6, and no weight decay for LayerNorm/layer_norm/bias. All
  gradients are clipped to global norm `clip_norm` (1.0; None or 0 turns it
  off). Layer-wise decay is on when `layerwise_lr_decay_power > 0`, as in the
  official code. The official signature defaults `weight_decay_rate` to 0.0,
  but both official configs pass 0.01. Keras' `iterations` plays the part of
  `global_step`: the step-k update uses lr(k), and the counter is then
  incremented.
  """
  schedule = WarmupPolynomialDecay(learning_rate, num_train_steps,
                                   num_warmup_steps=warmup_steps,
                                   warmup_proportion=warmup_proportion, power=lr_decay_power)
  return AdamWeightDecay(
      learning_rate=schedule, weight_decay_rate=weight_decay_rate,
      beta_1=0.9, beta_2=0.999, epsilon=1e-6,
      exclude_from_weight_decay=DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
      layerwise_lr_decay=layerwise_lr_decay_power if layerwise_lr_decay_power > 0 else 0.0,
      n_transformer_layers=n_transformer_layers,
      fix_layerwise_lr_off_by_one=fix_layerwise_lr_off_by_one,
      variable_name_fn=variable_name_fn,
      global_clipnorm=clip_norm if clip_norm else None)


def pretraining_optimizer(config, model) -> AdamWeightDecay:
  """The official pre-training optimizer of a `PretrainingConfig` for its `ElectraPretrainer`
  (run_pretraining.py:114-118), with the model's official variable names."""
  from electra_tf2.networks import variable_names  # pylint: disable=g-import-not-at-top
  names = variable_names.pretrainer_variable_map(model)
  return create_optimizer(
      learning_rate=config.learning_rate, num_train_steps=config.num_train_steps,
      weight_decay_rate=config.weight_decay_rate, warmup_steps=config.num_warmup_steps,
      lr_decay_power=config.lr_decay_power,
      variable_name_fn=variable_names.official_name_fn(names))
