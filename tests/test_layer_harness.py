"""The shared harness (tests/harness.py) on every layer, head and model of the library."""

import pytest
import tensorflow as tf

from electra_tf2.config.pretraining import resolve_pretraining_config

from electra_tf2.config.encoder import BertConfig
from electra_tf2.layers import task_heads as heads
from electra_tf2.models.finetuning import FinetuningModel
from electra_tf2.layers import (DiscriminatorHead, EmbeddingBlock, LayerNorm, MaskedLMHead,
                                TransformerLayer, attention_bias)
from electra_tf2.models.pretrainer import ElectraPretrainer, PretrainerConfig
from electra_tf2.networks.encoder import Encoder
from harness import check_layer

ENCODER = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2,
                     num_attention_heads=2, intermediate_size=32)
IDS = tf.constant([[2, 7, 9, 3, 11, 3], [2, 5, 3, 14, 3, 0]])
MASK = tf.constant([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0]])
SEGMENTS = tf.constant([[0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 0]])
HIDDEN = tf.random.stateless_normal([2, 6, 16], seed=[3, 4])
FEATURES = {"input_ids": IDS, "input_mask": MASK, "segment_ids": SEGMENTS}


def built(layer, *shape):
  layer.build(*shape)
  return layer


LAYERS = {
    "LayerNorm": (lambda: built(LayerNorm(), (None, 16)),
                  lambda l, x, t: l(x), HIDDEN),
    "EmbeddingBlock": (lambda: built(EmbeddingBlock(vocab_size=50, embedding_size=8)),
                       lambda l, x, t: l(*x, training=t), (IDS, SEGMENTS)),
    "TransformerLayer": (lambda: built(TransformerLayer(16, 2, 32)),
                         lambda l, x, t: l(x, attention_bias(MASK, "bidirectional",
                                                             l.compute_dtype), training=t),
                         HIDDEN),
    "Encoder": (lambda: built(Encoder(ENCODER, 8, attention_direction="ltr")),
                lambda l, x, t: l(*x, training=t), (IDS, MASK, SEGMENTS)),
    "MaskedLMHead": (lambda: built(MaskedLMHead(8, 50), (None, None, 16)),
                     lambda l, x, t: l(x, tf.random.stateless_normal([50, 8], seed=[5, 6])),
                     HIDDEN),
    "DiscriminatorHead": (lambda: built(DiscriminatorHead(16), (None, None, 16)),
                          lambda l, x, t: l(x), HIDDEN),
    "ClassificationHead": (lambda: built(heads.ClassificationHead("mnli", ["a", "b", "c"]),
                                         (None, None, 16)),
                           lambda l, x, t: l(x, {}, training=t), HIDDEN),
    "RegressionHead": (lambda: built(heads.RegressionHead("sts", 0.0, 5.0), (None, None, 16)),
                       lambda l, x, t: l(x, {}, training=t), HIDDEN),
    "TaggingHead": (lambda: built(heads.TaggingHead("chunk", ["B", "I", "O"]), (None, None, 16)),
                    lambda l, x, t: l(x, {"chunk_labeled_positions": tf.constant(
                        [[1, 2, 4, 0, 0, 0], [1, 3, 0, 0, 0, 0]])}, training=t), HIDDEN),
    "QAHead": (lambda: built(heads.QAHead("squad", beam_size=3), (None, None, 16)),
               lambda l, x, t: {k: v for k, v in l(x, dict(
                   FEATURES, squad_start_positions=tf.constant([4, 3])), training=t).items()
                                if "logit" in k}, HIDDEN),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer(name):
  make, call, inputs = LAYERS[name]
  # The QA head's training path (teacher-forced end logits) is the one with every variable.
  check_layer(make, call, inputs, train_with_training=name == "QAHead")


@pytest.mark.parametrize("objective", [{}, {"electric_objective": True},
                                       {"untied_generator_embeddings": True}])
def test_pretrainer(objective):
  config = resolve_pretraining_config("electra_small", None, dict(
      objective, vocab_size=50, embedding_size=8, max_seq_length=6,
      model_hparam_overrides={"hidden_size": 16, "num_hidden_layers": 2}))
  seed = tf.constant([1, 2])
  check_layer(lambda: ElectraPretrainer(PretrainerConfig.from_pretraining_config(config)),
              lambda model, x, t: {k: v for k, v in model(x, training=t, seed=seed).items()
                                   if k.endswith("loss")},
              FEATURES)


def test_finetuning_model():
  specs = [{"kind": "classification", "task": "mnli", "label_list": ["a", "b", "c"]},
           {"kind": "regression", "task": "sts", "min_value": 0.0, "max_value": 5.0}]
  check_layer(lambda: FinetuningModel(ENCODER, 8, specs),
              lambda model, x, t: {f"{task}_{k}": v for task, out in model(x, training=t).items()
                                   for k, v in out.items()},
              dict(FEATURES, task_id=tf.constant([0, 1])))
