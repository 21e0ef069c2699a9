"""fit, evaluate and predict on what Keras users pass (electra_tf2/models/keras_data.py).

Oracle: Keras itself on the equivalent input it reads natively (a tf.data dataset, or
tf.string tensors with numpy labels): the same losses and weights after the same steps.
Tiny random models, built here, without dropout so that two runs can be compared.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

import electra_tf2
from electra_tf2.models import keras_data
from tests.fixtures import WORD_VOCAB

BERT = electra_tf2.BertConfig(len(WORD_VOCAB), hidden_size=16, num_hidden_layers=1,
                              num_attention_heads=2, intermediate_size=32,
                              hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
TEXTS = ["the cat sat on the mat", "a dog runs fast", "john smith was born in paris", "we see it",
         "the big red house", "where is paris ?"]
PAIRS = ["he runs", "the mat", "new york city", "she sees it", "a cafe", "paris is big"]
LABELS = [0, 1, 2, 1, 0, 2]
WEIGHTS = [1.0, 0.5, 2.0, 1.0, 0.0, 1.5]


def classifier(seed=0, **options):
  keras.utils.set_random_seed(seed)
  model = electra_tf2.TextClassifier(BERT, None, WORD_VOCAB, max_seq_length=16, num_classes=3,
                                     dropout_rate=0.0, **options)
  model.compile(optimizer=keras.optimizers.Adam(1e-2),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  return model


def assert_same_weights(a, b):
  for x, y in zip(a.get_weights(), b.get_weights()):
    np.testing.assert_allclose(x, y, atol=1e-6)


def test_lists_train_as_the_equivalent_dataset():
  """Pairs as two lists, labels, sample weights and validation data as lists, batch_size 2,
  no shuffling: the steps Keras takes on the same dataset."""
  ours = classifier()
  history = ours.fit((TEXTS, PAIRS), LABELS, batch_size=2, epochs=2, shuffle=False,
                     sample_weight=WEIGHTS, validation_data=((TEXTS, PAIRS), LABELS),
                     verbose=0).history
  keras_own = classifier()
  data = tf.data.Dataset.from_tensor_slices(((TEXTS, PAIRS), LABELS, WEIGHTS)).batch(2)
  validation = tf.data.Dataset.from_tensor_slices(((TEXTS, PAIRS), LABELS)).batch(32)
  expected = keras_own.fit(data, epochs=2, validation_data=validation, verbose=0).history
  for key in ("loss", "val_loss"):
    np.testing.assert_allclose(history[key], expected[key], rtol=1e-5)
  assert history["loss"][1] < history["loss"][0]
  assert_same_weights(ours, keras_own)
  # evaluate and predict: numpy arrays of str, of bytes and of objects, as tensors
  arrays = (np.array(TEXTS), np.array([p.encode() for p in PAIRS], dtype=object))
  tensors = (tf.constant(TEXTS), tf.constant(PAIRS))
  np.testing.assert_allclose(ours.evaluate(arrays, np.array(LABELS), verbose=0),
                             ours.evaluate(tensors, np.array(LABELS), verbose=0), rtol=1e-6)
  np.testing.assert_array_equal(ours.predict(arrays, verbose=0),
                                ours.predict(tensors, verbose=0))


def test_shuffled_lists_train_as_keras_shuffles_tensors():
  """shuffle=True draws Keras' own permutation: lists give the steps tensors give."""
  runs = []
  for x, y in ((TEXTS, LABELS), (tf.constant(TEXTS), np.array(LABELS))):
    model = classifier(seed=3)
    keras.utils.set_random_seed(7)  # the shuffling
    runs.append((model, model.fit(x, y, batch_size=4, epochs=2, shuffle=True,
                                  verbose=0).history["loss"]))
  np.testing.assert_allclose(runs[0][1], runs[1][1], rtol=1e-5)
  assert_same_weights(runs[0][0], runs[1][0])


def test_tag_lists_are_padded_as_the_loss_ignores():
  keras.utils.set_random_seed(0)
  tagger = electra_tf2.TokenClassifier(BERT, None, WORD_VOCAB, max_seq_length=12,
                                       num_classes=3)
  tagger.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(
      from_logits=True, ignore_class=-1))
  tags = [[i % 3 for i in range(len(text.split()))] for text in TEXTS]
  padded = keras.utils.pad_sequences(tags, 12, padding="post", value=-1)
  expected = tagger.evaluate(tf.data.Dataset.from_tensor_slices((TEXTS, padded)).batch(3),
                             verbose=0)
  np.testing.assert_allclose(tagger.evaluate(TEXTS, tags, batch_size=3, verbose=0), expected,
                             rtol=1e-6)  # fit converts y the same way


@pytest.fixture(scope="module")
def models():
  return {"classifier": classifier(),
          "tagger": electra_tf2.TokenClassifier(BERT, None, WORD_VOCAB, num_classes=2),
          "discriminator": electra_tf2.Discriminator(BERT, None, WORD_VOCAB)}


@pytest.mark.parametrize("call,words", [
    (lambda m: m["classifier"].fit(TEXTS, LABELS[:5]), "y has 5 rows but x has 6"),
    (lambda m: m["classifier"].fit([], []), "x is empty"),
    (lambda m: m["classifier"].fit(TEXTS[:2] + [3], [0, 1, 2]), "x[2] is int 3, not a string"),
    (lambda m: m["classifier"].fit((TEXTS, PAIRS[:4]), LABELS), "4 rows"),
    (lambda m: m["classifier"].fit(TEXTS, ["positive", "negative"] * 3),
     "y holds strings ('positive'): give class ids 0, 1, ... as numbers"),
    (lambda m: m["classifier"].fit(TEXTS, ["1", "0", "2"] * 2),
     "y holds numbers as strings ('1', as csv.reader gives them): convert them, e.g. "
     "y = [int(v) for v in y]"),
    (lambda m: m["classifier"].fit(TEXTS, [5, 0, 1, 0, 1, 2]),
     "y: label 5 is no class id of this model's 3 classes (0..2)"),
    (lambda m: m["classifier"].fit(TEXTS, [0, 1.5, 1, 0, 1, 2]), "label 1.5 is no class id"),
    (lambda m: m["classifier"].predict("a fine film"),
     "x is one string, not a list of texts: give a list, e.g. ['a fine film']"),
    (lambda m: m["classifier"].fit(TEXTS, [{}] * 6), "y: expected numbers, got values of type "
                                                      "dict"),
    (lambda m: m["classifier"].fit(TEXTS, [[0], [1, 2]] * 3), "y: rows of different lengths"),
    (lambda m: m["classifier"].fit(TEXTS, LABELS, sample_weight=[1.0]), "sample_weight has 1"),
    (lambda m: m["classifier"].fit(TEXTS, LABELS, validation_data=(TEXTS[:2], LABELS)),
     "validation_data[1] has 6 rows but validation_data[0] has 2"),
    (lambda m: m["classifier"].evaluate(np.array([[1, 2]]), LABELS[:1]), "1-D array"),
    (lambda m: m["classifier"].predict(np.array([1.0, 2.0])), "numpy array of float64"),
    (lambda m: m["tagger"].fit((TEXTS, PAIRS), [[0]] * 6), "one text per row"),
    (lambda m: m["tagger"].fit(TEXTS, [["B", "I"]] * 6), "y[0] holds strings ('B')"),
    (lambda m: m["discriminator"].predict([None]), "x[0] is NoneType None"),
])
def test_bad_input_is_one_line_naming_the_argument(models, call, words):
  for model in models.values():
    model.compile(optimizer="sgd", loss="mse")
  with pytest.raises(keras_data.InputDataError) as error:
    call(models)
  assert "\n" not in str(error.value) and words in str(error.value)


def test_models_on_strings_never_compile_with_xla():
  """Keras' jit_compile="auto" means XLA where there is a GPU; string ops cannot run there."""
  model = classifier()
  with pytest.warns(UserWarning, match="jit_compile"):
    model.compile(optimizer="sgd", loss="mse", jit_compile=True)
  assert model.jit_compile is False
