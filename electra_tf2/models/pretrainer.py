"""The trainable ELECTRA pre-training model (official `PretrainingModel`).

One forward pass, run_pretraining.py:37-162: mask the inputs, run the
generator (a small MLM, the ELECTRIC two-tower cloze model, a uniform
distribution, or the discriminator itself when tied), sample fake tokens,
run the discriminator on them, and return the losses plus everything the eval
metrics need.

Layer names are the official checkpoint scopes: `electra` (discriminator
encoder), `generator`, `generator_ltr`/`generator_rtl`, `generator_predictions`,
`cloze_predictions`, `discriminator_predictions`; the shared embedding block is
the official `electra/embeddings` (see electra_tf2/networks/variable_names.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Mapping, Optional

import keras
from keras import ops

from electra_tf2.utils import backend_ops, stateless_random
from electra_tf2.pretraining import pretrain_helpers, objectives
from electra_tf2.config.pretraining import ObjectiveConfig, PretrainingConfig
from electra_tf2.config.encoder import BertConfig
from electra_tf2.utils.errors import ElectraError
from electra_tf2.utils.inputs import features_to_inputs
from electra_tf2.layers import DiscriminatorHead, EmbeddingBlock, MaskedLMHead
from electra_tf2.networks.encoder import Encoder


@dataclasses.dataclass(frozen=True)
class PretrainerConfig:
  """What an `ElectraPretrainer` is built from: its encoders' shapes and its objective.

  discriminator: the discriminator (or full-size MLM) encoder; generator: the
  generator encoder (each tower of the ELECTRIC two-tower generator), None when
  the generator is uniform, tied or the encoder itself; embedding_size: E of
  the shared embedding block (None: the discriminator's hidden size).
  """
  discriminator: BertConfig
  generator: Optional[BertConfig]
  objective: ObjectiveConfig
  embedding_size: Optional[int] = None

  @classmethod
  def from_pretraining_config(cls, config: PretrainingConfig) -> "PretrainerConfig":
    return cls(config.bert_config, config.generator_bert_config, config.objective,
               config.resolved_embedding_size)

  def to_dict(self) -> Dict[str, Any]:
    return {"discriminator": self.discriminator.to_dict(),
            "generator": self.generator and self.generator.to_dict(),
            "objective": self.objective.to_dict(), "embedding_size": self.embedding_size}

  @classmethod
  def from_dict(cls, values: Mapping[str, Any]) -> "PretrainerConfig":
    return cls(BertConfig(**values["discriminator"]),
               values["generator"] and BertConfig(**values["generator"]),
               ObjectiveConfig.from_dict(values["objective"]), values["embedding_size"])


class NoDiscriminatorError(ElectraError, ValueError):
  """A use that needs the ELECTRA discriminator, asked of an ELECTRIC or MLM-only model."""


@keras.saving.register_keras_serializable(package="electra_tf2")
class ElectraPretrainer(keras.Model):
  """Generator + discriminator with the ELECTRA, ELECTRIC or BERT (MLM) objective.

  Args:
    config: a `PretrainerConfig` (or its `to_dict()`); `from_pretraining_config`
      builds one from a resolved `PretrainingConfig`.

  `call(features, training, seed)` takes features `{"input_ids", "input_mask",
  "segment_ids"}` (`[batch, seq_len]` int32) and an optional `[2]` int seed of
  the masking and sampling draws, and returns a dict with `total_loss`,
  `mlm_loss` (and `cloze_loss`, `disc_loss` when used) and the per-slot /
  per-token tensors that `objectives.metric_statistics` consumes.

  >>> import numpy as np
  >>> from electra_tf2 import PretrainingConfig
  >>> config = PretrainingConfig.from_preset("electra_small", debug=True, max_seq_length=16)
  >>> model = ElectraPretrainer.from_pretraining_config(config)
  >>> ids = np.random.default_rng(0).integers(1000, 2000, (2, 16), dtype="int32")
  >>> outputs = model({"input_ids": ids, "input_mask": np.ones_like(ids),
  ...                  "segment_ids": np.zeros_like(ids)}, seed=np.array([3, 4], "int32"))
  >>> [name for name in ("total_loss", "mlm_loss", "disc_loss") if outputs[name].shape == []]
  ['total_loss', 'mlm_loss', 'disc_loss']
  """

  def __init__(self, config: PretrainerConfig | Mapping[str, Any], **kwargs):
    kwargs.setdefault("name", "electra_pretrainer")
    super().__init__(**kwargs)
    if not isinstance(config, PretrainerConfig):
      config = PretrainerConfig.from_dict(config)
    self.config = config
    objective = self.objective = config.objective
    bert = config.discriminator
    embedding_size = config.embedding_size or bert.hidden_size
    self.has_discriminator = objective.has_discriminator

    def encoder(bert_config, name: str, direction: str = "bidirectional") -> Encoder:
      if name != "electra" and objective.untied_generator_embeddings:
        # Official: `embedding_size=None`, so the generator's own embeddings have
        # its hidden size and it has no embeddings_project (run_pretraining.py:80-86, 294-305).
        return Encoder(bert_config, None, attention_direction=direction, name=name,
                       dtype=self.dtype_policy)
      return Encoder(bert_config, embedding_size, attention_direction=direction,
                     embeddings=self.embeddings, name=name, dtype=self.dtype_policy)

    # ---- encoders ----
    self.embeddings = EmbeddingBlock(
        vocab_size=bert.vocab_size, embedding_size=embedding_size,
        max_position_embeddings=bert.max_position_embeddings,
        type_vocab_size=bert.type_vocab_size, initializer_range=bert.initializer_range,
        dropout_rate=bert.hidden_dropout_prob, name="embeddings", dtype=self.dtype_policy)
    self.discriminator = encoder(bert, "electra")
    self.generator = self.generator_ltr = self.generator_rtl = None
    if config.generator is not None:
      if objective.two_tower_generator:
        self.generator_ltr = encoder(config.generator, "generator_ltr", "ltr")
        self.generator_rtl = encoder(config.generator, "generator_rtl", "rtl")
      else:
        self.generator = encoder(config.generator, "generator")

    # ---- heads ----
    # The MLM/cloze dense maps to the width of the table it is tied to
    # (`get_token_logits`, run_pretraining.py:254-268).
    self.mlm_head = self.cloze_head = self.discriminator_head = None
    if objective.two_tower_generator:
      self.cloze_head = MaskedLMHead(self.generator_ltr.embedding_size, bert.vocab_size,
                                     bert.initializer_range, bert.hidden_act,
                                     objective.vocab_pad_multiple,
                                     name="cloze_predictions", dtype=self.dtype_policy)
    elif not objective.uniform_generator:
      self.mlm_head = MaskedLMHead((self.generator or self.discriminator).embedding_size,
                                   bert.vocab_size, bert.initializer_range, bert.hidden_act,
                                   objective.vocab_pad_multiple,
                                   name="generator_predictions", dtype=self.dtype_policy)
    if self.has_discriminator:
      self.discriminator_head = DiscriminatorHead(
          bert.hidden_size, bert.initializer_range, bert.hidden_act,
          name="discriminator_predictions", dtype=self.dtype_policy)
    self.build()

  @classmethod
  def from_pretraining_config(cls, config: PretrainingConfig, **kwargs) -> "ElectraPretrainer":
    """The pre-trainer of a resolved `PretrainingConfig`."""
    return cls(PretrainerConfig.from_pretraining_config(config), **kwargs)

  @property
  def mlm_encoder(self) -> Optional[Encoder]:
    """The encoder under the MLM head: the generator, or the discriminator when tied/BERT."""
    if self.mlm_head is None:
      return None
    return self.generator or self.discriminator

  def build(self, input_shape=None):
    """Creates every variable without running a forward pass."""
    if self.built:
      return
    encoders = [self.discriminator, self.generator, self.generator_ltr, self.generator_rtl]
    for encoder in encoders:
      if encoder is not None:
        encoder.build()
    if self.mlm_head is not None:
      self.mlm_head.build((None, None, self.mlm_encoder.hidden_size))
    if self.cloze_head is not None:
      self.cloze_head.build((None, None, 2 * self.generator_ltr.hidden_size))
    if self.discriminator_head is not None:
      self.discriminator_head.build((None, None, self.discriminator.hidden_size))
    super().build(input_shape)

  # -------------------------------------------------------------------------

  def _cloze_logits(self, inputs, training: bool):
    """Two-tower cloze logits `[batch, seq_len, vocab]` (run_pretraining.py:288-315).

    Position t sees the left-to-right state of t-1 and the right-to-left state
    of t+1 (wrapping at the ends, as the official `roll`).
    """
    ltr = self.generator_ltr(inputs.input_ids, inputs.input_mask, inputs.segment_ids,
                             training=training)
    rtl = self.generator_rtl(inputs.input_ids, inputs.input_mask, inputs.segment_ids,
                             training=training)
    states = ops.concatenate([ops.roll(ltr, shift=1, axis=1), ops.roll(rtl, shift=-1, axis=1)],
                             -1)
    return self.cloze_head(states, self.generator_ltr.embedding_table)

  def check_electra_discriminator(self, needed_by: str, instead: str) -> None:
    """Raises NoDiscriminatorError unless the model has an ELECTRA discriminator head.

    ELECTRIC's noise-contrastive scores also need its cloze generator, and an
    MLM-only model has no discriminator: `needed_by` names what asked, `instead`
    what the user can do.
    """
    electric = self.objective.electric_objective
    if self.discriminator_head is None or electric:
      raise NoDiscriminatorError(f"{needed_by} needs an ELECTRA discriminator; this model was "
                                 f"pre-trained as {'ELECTRIC' if electric else 'MLM only'}: "
                                 f"{instead}")

  def call(self, features: Mapping, training: bool = False, seed=None,
           denominators: Optional[Mapping] = None) -> Dict:
    """Forward pass; `denominators` (see `objectives.loss_denominators`) are those
    of the global batch when it is split over replicas or accumulation steps."""
    config = self.objective
    denominators = denominators or {}
    if seed is None:
      seed = stateless_random.fresh_seed()
    mask_seed, sample_seed = stateless_random.split(seed, 2)
    unmasked = features_to_inputs(features)
    masked = pretrain_helpers.mask(config, unmasked, config.mask_prob, seed=mask_seed)
    outputs: Dict = dict(
        input_mask=unmasked.input_mask, masked_lm_ids=masked.masked_lm_ids,
        masked_lm_weights=masked.masked_lm_weights,
        masked_lm_positions=masked.masked_lm_positions)

    # ---- generator ----
    cloze = None
    if config.uniform_generator:
      batch, slots = ops.shape(masked.masked_lm_positions)
      mlm_logits = ops.zeros((batch, slots, config.vocab_size), "float32")
    elif config.two_tower_generator:
      cloze_logits = self._cloze_logits(unmasked, training)
      candidates = ops.cast(pretrain_helpers.get_candidates_mask(config, unmasked), "float32")
      cloze = objectives.softmax_output(cloze_logits, unmasked.input_ids, candidates,
                                        denominators.get("cloze"))
      mlm_logits = backend_ops.gather_positions(cloze_logits, masked.masked_lm_positions)
    else:
      hidden = self.mlm_encoder(masked.input_ids, masked.input_mask, masked.segment_ids,
                                training=training)
      hidden = backend_ops.gather_positions(hidden, masked.masked_lm_positions)
      mlm_logits = self.mlm_head(hidden, self.mlm_encoder.embedding_table)
    mlm = objectives.softmax_output(mlm_logits, masked.masked_lm_ids, masked.masked_lm_weights,
                                    denominators.get("mlm"))
    outputs.update(mlm_loss=mlm["loss"], mlm_preds=mlm["preds"],
                   mlm_per_example_loss=mlm["per_example_loss"])
    if cloze is not None:
      outputs["cloze_loss"] = cloze["loss"]
    total_loss = config.gen_weight * (cloze["loss"] if cloze is not None else mlm["loss"])

    # ---- discriminator ----
    if self.has_discriminator:
      fake = objectives.get_fake_data(config, masked, mlm_logits, seed=sample_seed)
      hidden = self.discriminator(fake.inputs.input_ids, fake.inputs.input_mask,
                                  fake.inputs.segment_ids, training=training)
      disc_logits = self.discriminator_head(hidden)
      if config.electric_objective:
        disc_logits += objectives.electric_logit_offset(
            cloze["log_probs"], fake.inputs.input_ids, config.mask_prob)
      disc = objectives.discriminator_output(disc_logits, fake.is_fake_tokens,
                                             unmasked.input_mask, denominators.get("disc"))
      total_loss += config.disc_weight * disc["loss"]
      outputs.update(disc_loss=disc["loss"], disc_probs=disc["probs"], disc_preds=disc["preds"],
                     disc_labels=disc["labels"], disc_per_example_loss=disc["per_example_loss"],
                     sampled_tokids=fake.sampled_tokids, fake_input_ids=fake.inputs.input_ids)
    outputs["total_loss"] = total_loss
    return outputs

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(config=self.config.to_dict())
    return config

  @classmethod
  def from_config(cls, config: Dict[str, Any]) -> "ElectraPretrainer":
    return cls(**config)
