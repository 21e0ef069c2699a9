"""Prediction paths: the encoder's inference path, batches sorted by length, output order.

Oracles: the encoder's training path with dropout off (today's formula: fused q/k/v
kernels, one-hot token types), each text predicted alone (no padding), and a
numpy sort for the batching helpers. Tiny random models built here.
"""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from hf_models import save_hf_model  # noqa: E402 (USE_TF=0 before transformers)
from fixtures import WORD_VOCAB, noisy_pretrainer, write_vocab  # noqa: E402
import electra_tf2  # noqa: E402
from electra_tf2.utils import batching  # noqa: E402
from electra_tf2.config.encoder import BertConfig  # noqa: E402
from electra_tf2.networks.encoder import Encoder  # noqa: E402
from electra_tf2.scoring.scorer import TextScorer  # noqa: E402

TOLERANCE = 1e-5
WORDS = [w for w in WORD_VOCAB if w.isalpha() and not w.startswith("[")]


def shuffled_texts(n, seed=0):
  """Texts of 1..n words in shuffled order (lengths far apart, so sorting moves them)."""
  rng = np.random.default_rng(seed)
  texts = [" ".join(rng.choice(WORDS, size=k)) for k in range(1, n + 1)]
  return [texts[i] for i in rng.permutation(n)]


def test_length_batches_sort_stably_and_restore_order():
  rng = np.random.default_rng(3)
  lengths = rng.integers(0, 6, size=41)
  order, batches = batching.length_batches(lengths, 8)
  assert [len(b) for b in batches] == [8] * 5 + [1]
  assert np.concatenate(batches).tolist() == order.tolist()
  expected = sorted(range(41), key=lambda i: (lengths[i], i))  # stable: ties in input order
  assert order.tolist() == expected
  values = rng.normal(size=(41, 3))
  np.testing.assert_array_equal(batching.restore_order(values[order], order), values)
  assert batching.text_lengths([["ab", "é"], [b"c", ""]]) == [3, 2]
  with pytest.raises(ValueError, match="batch_size"):
    batching.length_batches([1], 0)


def test_predict_rows_calls_run_once_on_rows_in_length_order():
  """predictions.predict_rows: rows already sorted by length that fit one batch (one row,
  say) go to `run` as given and come back as it returns them; other rows are sorted into
  batches and put back in input order (oracle: a run that echoes each row's length)."""
  from electra_tf2.utils import predictions
  calls, returned = [], []

  def run(texts):
    calls.append(list(texts))
    returned.append({"n": np.array([len(t) for t in texts])})
    return returned[-1]
  one = predictions.predict_rows(run, [["abc"]], 32, progress=False)
  assert one["n"].tolist() == [3] and one["n"] is returned[0]["n"]  # not copied
  rows = [["a"], ["bb"], ["bb"], ["dddd"]]
  assert predictions.predict_rows(run, rows, 4, progress=False)["n"].tolist() == [1, 2, 2, 4]
  assert calls == [["abc"], ["a", "bb", "bb", "dddd"]]
  calls.clear()
  out = predictions.predict_rows(run, [["dddd"], ["a"], ["bb"]], 2, progress=False)
  assert out["n"].tolist() == [4, 1, 2] and calls == [["a", "bb"], ["dddd"]]
  with pytest.raises(ValueError, match="batch_size"):
    predictions.predict_rows(run, [["a"]], 0, progress=False)


def test_encoder_inference_path_equals_the_training_formula():
  config = BertConfig(vocab_size=50, hidden_size=36, num_hidden_layers=2, num_attention_heads=3,
                      intermediate_size=52, hidden_dropout_prob=0.0,
                      attention_probs_dropout_prob=0.0)
  keras.utils.set_random_seed(1)
  encoder = Encoder(config, embedding_size=20)
  encoder.build()
  rng = np.random.default_rng(1)
  for variable in encoder.trainable_variables:
    variable.assign(variable + rng.normal(0, 0.3, variable.shape).astype(np.float32))
  ids = tf.constant(rng.integers(0, 50, (3, 11)), tf.int32)
  mask = tf.constant(np.arange(11)[None] < np.array([[11], [4], [1]]), tf.int32)
  segments = tf.constant(np.arange(11)[None] >= np.array([[6], [2], [11]]), tf.int32)
  for run in (lambda f: f(), tf.function(lambda f: f())):
    infer = run(lambda: encoder(ids, mask, segments, training=False)).numpy()
    train = run(lambda: encoder(ids, mask, segments, training=True)).numpy()
    assert np.abs(train).max() > 1
    np.testing.assert_allclose(infer, train, atol=TOLERANCE)


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
  path = save_hf_model(str(tmp_path_factory.mktemp("hf") / "seq"),
                       "ElectraForSequenceClassification", seed=7, num_labels=3)
  return electra_tf2.TextClassifier.from_pretrained(path)


def alone(model, *columns):
  """Each row predicted by itself: no padding, no batching."""
  return np.concatenate([model(tuple(tf.constant([c[i]]) for c in columns)
                               if len(columns) > 1 else tf.constant([columns[0][i]]),
                               training=False).numpy() for i in range(len(columns[0]))])


def test_predict_sorts_by_length_and_keeps_input_order(classifier):
  texts = shuffled_texts(23)
  expected = alone(classifier, texts)
  for x in (texts, tf.constant(texts), np.array(texts)):
    np.testing.assert_allclose(classifier.predict(x, batch_size=4, verbose=0), expected,
                               atol=TOLERANCE)
  # Keras' own loop (taken with callbacks) gives the same values
  keras_loop = classifier.predict(texts, batch_size=4, verbose=0, callbacks=[])
  np.testing.assert_allclose(keras_loop, expected, atol=TOLERANCE)
  pairs_b = shuffled_texts(23, seed=1)
  np.testing.assert_allclose(classifier.predict((texts, pairs_b), batch_size=5, verbose=0),
                             alone(classifier, texts, pairs_b), atol=TOLERANCE)


def test_predict_of_per_token_outputs_keeps_each_row(tmp_path_factory):
  """More texts than a batch, batches of other lengths: numpy arrays padded with zeros to
  the longest row (as `electra predict`), never a tf.RaggedTensor; Keras' own loop too."""
  path = save_hf_model(str(tmp_path_factory.mktemp("hf") / "pt"), "ElectraForPreTraining")
  model = electra_tf2.Discriminator.from_pretrained(path)
  texts = shuffled_texts(9)
  alone_outputs = [model.predict([text], verbose=0) for text in texts]
  longest = max(one["input_ids"].shape[1] for one in alone_outputs)
  for out in (model.predict(texts, batch_size=2, verbose=0),
              model.predict(texts, batch_size=2, verbose=0, callbacks=[])):
    for key, value in out.items():
      assert isinstance(value, np.ndarray) and value.shape[:2] == (9, longest), key
    for i, one in enumerate(alone_outputs):
      n = one["input_ids"].shape[1]
      np.testing.assert_array_equal(out["input_ids"][i][:n], one["input_ids"][0])
      np.testing.assert_array_equal(out["input_mask"][i][n:], 0)
      np.testing.assert_allclose(out["logits"][i][:n], one["logits"][0], atol=TOLERANCE)


def test_predict_file_writes_lines_in_input_order(classifier, tmp_path):
  texts = shuffled_texts(13)
  path = tmp_path / "texts.txt"
  path.write_text("\n".join(texts) + "\n", encoding="utf-8")
  outputs = classifier.predict_file(str(path), str(tmp_path / "out.jsonl"), batch_size=4)
  expected = alone(classifier, texts)
  np.testing.assert_allclose(outputs["logits"], expected, atol=TOLERANCE)
  rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
  np.testing.assert_allclose([r["logits"] for r in rows], expected, atol=TOLERANCE)


def test_text_scorer_keeps_input_order(tmp_path):
  vocab = str(tmp_path / "vocab.txt")
  write_vocab(vocab)
  model = noisy_pretrainer({"model_hparam_overrides": {"hidden_size": 32, "num_hidden_layers": 2},
                            "embedding_size": 16, "generator_hidden_size": 0.5,
                            "max_seq_length": 16, "vocab_size": len(WORD_VOCAB)}, 3, 0.2)
  scorer = TextScorer.from_pretrainer(model, vocab, True, 16, batch_size=3)
  texts = shuffled_texts(10)
  results = scorer.score(texts)
  assert [r.text for r in results] == texts
  for text, result in zip(texts, results):
    one = scorer.score([text])[0]
    assert result.tokens == one.tokens
    np.testing.assert_allclose(result.token_log_odds, one.token_log_odds, atol=TOLERANCE)


def test_bfloat16_predict_and_saved_model(classifier, tmp_path):
  import tensorflow_text  # noqa: F401
  texts = shuffled_texts(7)
  full = classifier.predict(texts, verbose=0)
  half = classifier.predict(texts, verbose=0, dtype="bfloat16")
  assert half.dtype == np.float32 and 0 < np.abs(half - full).max() < 0.05 * np.abs(full).max()
  copy = classifier.with_dtype("bfloat16")
  assert copy.dtype_policy.name == "bfloat16" and classifier.with_dtype("float32") is classifier
  in_graph = tf.function(lambda t: copy(t, training=False))  # fused as predict's graph
  np.testing.assert_allclose(half, in_graph(tf.constant(texts)).numpy(), atol=1e-3)
  path = classifier.export_saved_model(str(tmp_path / "bf16"), dtype="bfloat16")
  loaded = tf.saved_model.load(path)
  assert {v.dtype for v in loaded.weights if v.dtype.is_floating} == {tf.bfloat16}
  served = loaded.signatures["serving_default"](text=tf.constant(texts))["logits"].numpy()
  np.testing.assert_allclose(served, half, atol=0.02 * np.abs(full).max())
  with pytest.raises(electra_tf2.ElectraError, match="float16"):
    classifier.predict(texts, dtype="float16")


def test_electra_export_bfloat16(tmp_path):
  from electra_tf2.serving import export
  from electra_tf2.models import finetuning as finetune_model
  from fixtures import make_config
  config = make_config(str(tmp_path / "data"), ["sst"])
  keras.utils.set_random_seed(5)
  finetuned = finetune_model.build_model(
      config, [{"kind": "classification", "task": "sst", "label_list": ["0", "1"]}])
  pretrainer = noisy_pretrainer({"model_hparam_overrides": {"hidden_size": 32,
                                                            "num_hidden_layers": 2},
                                 "embedding_size": 16, "generator_hidden_size": 0.5,
                                 "max_seq_length": 16, "vocab_size": len(WORD_VOCAB)}, 3, 0.2)
  texts = tf.constant(shuffled_texts(5))
  for model, kind, output in ((finetuned, "finetuned", "sst_logits"),
                              (pretrainer, "discriminator", "logits"),
                              (pretrainer, "encoder", "sequence_output")):
    modules = {dtype: export.serving_module(model, kind, config.vocab_file, max_seq_length=16,
                                            dtype=dtype)
               for dtype in ("float32", "bfloat16")}
    full, half = (modules[d].text(texts)[output].numpy() for d in ("float32", "bfloat16"))
    assert half.dtype == np.float32, kind
    assert 0 < np.abs(half - full).max() < 0.05 * np.abs(full).max(), kind
    assert {v.dtype for v in modules["bfloat16"]._variables
            if v.dtype.is_floating} == {tf.bfloat16}, kind
  with pytest.raises(SystemExit):
    export.main(["--model-dir", str(tmp_path), "--output-dir", str(tmp_path / "x"),
                 "--dtype", "float16"])


def test_bench_times_self_batching_sides_against_pytorch_on_the_same_batches(monkeypatch):
  """bench/serving/inference_throughput.py: Keras predict (which sorts texts by length) is compared
  with `pytorch_sorted`, PyTorch fed the batches `TextModel.predict` makes, not with the
  shuffled batches of the `pytorch` side."""
  from bench.serving import inference_throughput
  from bench.serving.inference import anchors
  seen = []
  monkeypatch.setattr(anchors, "torch_logits", lambda fixture, texts: (
      seen.append(list(texts[0])) or np.array([[len(t)] for t in texts[0]], np.float32)))
  texts = shuffled_texts(11)
  side = anchors.pytorch_sorted(None)
  out = side.predict_all([texts], 4)
  order, chunks = batching.length_batches(batching.text_lengths([np.array(texts)]), 4)
  assert seen == [[texts[i] for i in chunk] for chunk in chunks]  # TextModel.predict's
  assert out[:, 0].tolist() == [len(t) for t in texts]  # input order
  row = dict(p50_ms=1.0, p95_ms=1.0, max_diff=0.0)
  result = {"model": "m", "texts": "t", "load": [0.0, 0.0], "sides": {
      "pytorch": dict(row, side="PyTorch eager", rate=100.0, sorts=False),
      "pytorch_sorted": dict(row, side="PyTorch sorted", rate=200.0, sorts=True),
      "keras_predict": dict(row, side="Keras predict", rate=300.0, sorts=True),
      "savedmodel": dict(row, side="SavedModel", rate=300.0, sorts=False)}}
  rows = {line.split(" | ")[0][2:]: line.split(" | ")[6]
          for line in inference_throughput.table(result).splitlines()[4:]}
  assert rows["Keras predict"] == "1.50x" and rows["SavedModel"] == "3.00x"


def test_bench_has_the_short_cola_sentences():
  """The inference bench's short-text set: CoLA dev (no header line), 1043 sentences of
  about 8 words, beside SST-2's of about 19."""
  from conftest import shared_data_path
  from bench.serving.inference import texts
  shared_data_path("glue", "CoLA", "dev.tsv")  # skips without ../shared
  sets = {s.name: s for s in texts.glue_sets(os.path.dirname(shared_data_path("glue")))}
  cola = sets["cola_dev"]
  assert len(cola) == 1043 and not cola.pairs and set(cola.labels) == {0, 1}
  assert cola.columns[0][0] == "The sailors rode the breeze clear of the rocks."
  words = lambda s: np.mean([len(t.split()) for t in s.columns[0]])
  assert words(cola) < 10 < words(sets["sst2_dev"])
