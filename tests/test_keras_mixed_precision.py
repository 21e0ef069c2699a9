"""Each Keras task model trains and predicts under mixed_bfloat16.

Oracle: the same model in float32 with the same weights (bfloat16 keeps 8 bits of
mantissa, so outputs agree to about 1e-2 of their scale), and the dtypes Keras' policy
promises: bfloat16 compute, float32 variables, float32 outputs.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

import electra_tf2
from tests.fixtures import WORD_VOCAB

BERT = electra_tf2.BertConfig(len(WORD_VOCAB), hidden_size=16, num_hidden_layers=1,
                              num_attention_heads=2, intermediate_size=32)
TEXTS = ["the cat sat on the mat", "john smith was born in paris",
         "where is the big red house ?", "we see it and he runs fast"]
QUESTIONS = ["who sat ?", "where was john born ?", "what is red ?", "who runs ?"]


def build(kind, **options):
  """A tiny random task model, compiled, with what fit takes for it."""
  if kind == "Discriminator":
    model = electra_tf2.Discriminator(BERT, None, WORD_VOCAB)
    model.compile(optimizer="adam", loss={"logits": keras.losses.BinaryCrossentropy(
        from_logits=True)})
    lengths = model.predict(TEXTS, verbose=0)["input_ids"].shape[1]
    return model, TEXTS, {"logits": np.eye(len(TEXTS), lengths, 1, dtype=np.float32)}
  if kind == "TextClassifier":
    model = electra_tf2.TextClassifier(BERT, None, WORD_VOCAB, num_classes=3)
    model.compile(optimizer="adam",
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model, (TEXTS, QUESTIONS), [0, 1, 2, 1]
  if kind == "TokenClassifier":
    model = electra_tf2.TokenClassifier(BERT, None, WORD_VOCAB, max_seq_length=16,
                                        num_classes=3)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, ignore_class=-1))
    return model, TEXTS, [[i % 3 for i in range(len(t.split()))] for t in TEXTS]
  model = electra_tf2.QuestionAnswerer(BERT, None, WORD_VOCAB, max_seq_length=16,
                                       max_query_length=6, doc_stride=4, beam_size=6)
  model.compile(optimizer="adam")
  starts = [TEXTS[0].index("cat"), TEXTS[1].index("paris"), -1, TEXTS[3].index("he")]
  return model, (QUESTIONS, TEXTS), (starts, [s + 3 if s >= 0 else -1 for s in starts])


def numbers(outputs):
  """The float outputs as numpy (QuestionAnswerer: its scores)."""
  if not isinstance(outputs, dict):
    outputs = {"outputs": outputs}
  outputs = {k: np.asarray(v) for k, v in outputs.items()}
  return {k: v for k, v in outputs.items() if v.dtype.kind == "f"}


def convert(x):
  return tuple(tf.constant(t) for t in x) if isinstance(x, tuple) else tf.constant(x)


@pytest.mark.parametrize("kind", ["Discriminator", "TextClassifier", "TokenClassifier",
                                  "QuestionAnswerer"])
def test_trains_and_predicts_under_mixed_bfloat16(kind):
  keras.utils.set_random_seed(0)
  reference, x, _ = build(kind)
  keras.mixed_precision.set_global_policy("mixed_bfloat16")
  try:
    model, x, y = build(kind)
    model.set_weights(reference.get_weights())
    assert model.encoder.compute_dtype == "bfloat16"
    assert {v.dtype for v in model.trainable_variables} == {"float32"}
    expected = numbers(reference(convert(x)))  # eager: no second graph to trace
    got = numbers(model.predict(x, verbose=0))
    for key, value in expected.items():
      assert got[key].dtype == np.float32, key
      scale = float(np.abs(value).max()) + 1e-3
      np.testing.assert_allclose(got[key], value, atol=0.05 * scale, err_msg=key)
    losses = model.fit(x, y, batch_size=4, epochs=3, verbose=0).history["loss"]
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]
    assert {v.dtype for v in model.trainable_variables} == {"float32"}
  finally:
    keras.mixed_precision.set_global_policy("float32")
