"""The Keras models on raw text: Discriminator, TextClassifier, TokenClassifier.

Oracles: transformers (the same checkpoint run by PyTorch, token ids from its
own tokenizer), run_finetuning.py's `FinetuningModel` on features made by our
FullTokenizer as the official tasks make them, and the models themselves
before a save (round trips). Every checkpoint is built here, tiny and random.
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from hf_models import TEXTS, hf_tokenizer, load_hf, save_hf_model  # noqa: E402 (USE_TF=0)
from fixtures import make_config  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
import electra_tf2  # noqa: E402
from electra_tf2.conversion import convert, hf_import  # noqa: E402
from electra_tf2.models import finetuning as finetune_model  # noqa: E402
from electra_tf2.models import sources  # noqa: E402
from electra_tf2.text.tokenizer import FullTokenizer  # noqa: E402

TOLERANCE = 1e-5
PAIRS_B = ["a dog runs fast", "he was born in new york city", "paris", "we see it"]
LABELS = [0, 1, 2, 1]


@pytest.fixture(scope="module")
def hf(tmp_path_factory):
  """Hugging Face directories by name."""
  root = tmp_path_factory.mktemp("hf")
  dirs = {"pretraining": save_hf_model(str(root / "pt"), "ElectraForPreTraining"),
          "cased": save_hf_model(str(root / "cased"), "ElectraForPreTraining", cased=True,
                                 seed=1),
          "bin": save_hf_model(str(root / "bin"), "ElectraForPreTraining", safe=False, seed=2),
          "masked_lm": save_hf_model(str(root / "mlm"), "ElectraForMaskedLM", seed=3),
          "model": save_hf_model(str(root / "model"), "ElectraModel", seed=4),
          "sequence": save_hf_model(str(root / "seq"), "ElectraForSequenceClassification",
                                    seed=5, num_labels=3),
          "token": save_hf_model(str(root / "tok"), "ElectraForTokenClassification", seed=6,
                                 num_labels=4)}
  return dirs


@pytest.fixture(scope="module")
def discriminator(hf):
  """The Discriminator of hf["pretraining"], shared (its traced functions too)."""
  return electra_tf2.Discriminator.from_pretrained(hf["pretraining"])


def torch_inputs(path, texts, texts_b=None):
  encoded = hf_tokenizer(path)(texts, texts_b, padding=True, return_tensors="pt")
  return encoded, encoded["input_ids"].numpy(), encoded["attention_mask"].numpy().astype(bool)


def max_diff(a, b, mask):
  return float(np.abs(np.asarray(a) - np.asarray(b))[mask].max())


# ---------------------------------------------------------------------------
# Equal to transformers
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["pretraining", "cased", "bin"])
def test_discriminator_equals_transformers(hf, name):
  model = electra_tf2.Discriminator.from_pretrained(hf[name])
  assert model.loading_report.ok
  out = model.predict(TEXTS, verbose=0)
  encoded, ids, mask = torch_inputs(hf[name], TEXTS)
  np.testing.assert_array_equal(out["input_ids"], ids)
  fast = transformers.ElectraTokenizerFast.from_pretrained(hf[name])
  np.testing.assert_array_equal(out["input_ids"], fast(TEXTS, padding=True)["input_ids"])
  assert (ids != 1).sum() > 30  # mostly real words, not [UNK]
  with torch.no_grad():
    logits = load_hf(hf[name], "ElectraForPreTraining")(**encoded).logits.numpy()
  diff = max_diff(out["logits"], logits, mask)
  print(f"\nDiscriminator ({name}) vs ElectraForPreTraining: max |diff| = {diff:.2g}")
  assert diff <= TOLERANCE
  np.testing.assert_allclose(out["replaced_probability"], tf.sigmoid(out["logits"]), atol=1e-7)


def test_cased_vocabulary_keeps_case(hf, discriminator):
  upper = electra_tf2.Discriminator.from_pretrained(hf["cased"]).predict(["The Cat"], verbose=0)
  lower = discriminator.predict(["The Cat"], verbose=0)
  assert upper["input_ids"].tolist() != lower["input_ids"].tolist()
  assert 1 not in upper["input_ids"]  # "The", "Cat" are cased tokens


@pytest.mark.parametrize("name,architecture", [("masked_lm", "ElectraForMaskedLM"),
                                               ("model", "ElectraModel")])
def test_encoder_of_other_architectures_equals_transformers(hf, name, architecture):
  model = electra_tf2.TextClassifier.from_pretrained(hf[name], num_classes=2)
  assert not model.loading_report.missing
  features = model.text_inputs(tf.constant(TEXTS), tf.constant(PAIRS_B))
  encoded, ids, mask = torch_inputs(hf[name], TEXTS, PAIRS_B)
  np.testing.assert_array_equal(features["input_ids"], ids)
  np.testing.assert_array_equal(features["segment_ids"], encoded["token_type_ids"].numpy())
  torch_model = load_hf(hf[name], architecture)
  base = torch_model if architecture == "ElectraModel" else torch_model.electra
  with torch.no_grad():
    hidden = base(**encoded).last_hidden_state.numpy()
  diff = max_diff(model.encode(features), hidden, mask)
  print(f"\nencoder vs {architecture} (pairs): max |diff| = {diff:.2g}")
  assert diff <= TOLERANCE


def test_masked_lm_logits_equal_transformers(tmp_path, hf):
  from electra_tf2.models import model_directory
  hf_import.convert_directory(hf["masked_lm"], str(tmp_path / "mlm"))
  pretrainer = model_directory.restore_pretrainer(str(tmp_path / "mlm"))
  encoded, _, mask = torch_inputs(hf["masked_lm"], TEXTS)
  args = [tf.constant(encoded[k].numpy(), tf.int32)
          for k in ("input_ids", "attention_mask", "token_type_ids")]
  ours = pretrainer.mlm_head(pretrainer.discriminator(*args),
                             pretrainer.discriminator.embedding_table)
  with torch.no_grad():
    theirs = load_hf(hf["masked_lm"], "ElectraForMaskedLM")(**encoded).logits.numpy()
  diff = max_diff(ours, theirs, mask)
  print(f"\nMLM logits vs ElectraForMaskedLM: max |diff| = {diff:.2g}")
  assert diff <= TOLERANCE


def test_sequence_classification_head_loads_as_the_hf_head(hf, capsys):
  model = electra_tf2.TextClassifier.from_pretrained(hf["sequence"])
  assert model.head_kind == "hf" and model.num_classes == 3 and model.loading_report.ok
  encoded, _, _ = torch_inputs(hf["sequence"], TEXTS, PAIRS_B)
  with torch.no_grad():
    theirs = load_hf(hf["sequence"], "ElectraForSequenceClassification")(**encoded).logits
  ours = model.predict((TEXTS, PAIRS_B), verbose=0)
  diff = float(np.abs(ours - theirs.numpy()).max())
  with capsys.disabled():
    print(f"\nTextClassifier(head='hf') vs ElectraForSequenceClassification: max |diff| = "
          f"{diff:.2g}")
  assert diff <= TOLERANCE
  assert model.label_list == ["LABEL_0", "LABEL_1", "LABEL_2"]
  # The official head instead: the encoder loads, a notice names the unused HF head.
  official = electra_tf2.TextClassifier.from_pretrained(hf["sequence"], head="official",
                                                       num_classes=3)
  assert "classifier/out_proj/kernel" in capsys.readouterr().err
  assert official.loading_report.unused


def test_token_classification_equals_transformers_at_first_wordpieces(hf):
  model = electra_tf2.TokenClassifier.from_pretrained(hf["token"])
  assert model.num_classes == 4 and model.loading_report.ok
  words = [text.split() for text in TEXTS]
  tokenizer = hf_tokenizer(hf["token"])
  torch_model = load_hf(hf["token"], "ElectraForTokenClassification")
  ours = model.predict(TEXTS, verbose=0)
  for row, sentence in enumerate(words):
    ids = [tokenizer.cls_token_id]
    firsts = []
    for word in sentence:
      firsts.append(len(ids))
      ids += tokenizer.encode(word, add_special_tokens=False)
    ids.append(tokenizer.sep_token_id)
    ids_t = torch.tensor([ids])
    with torch.no_grad():  # official tagging features: segment 1 for every token
      logits = torch_model(input_ids=ids_t, token_type_ids=torch.ones_like(ids_t)).logits[0]
    np.testing.assert_allclose(ours[row, :len(sentence)], logits.numpy()[firsts],
                               atol=TOLERANCE)


# ---------------------------------------------------------------------------
# Equal to run_finetuning.py's model; our directories and official checkpoints
# ---------------------------------------------------------------------------


HEADS = [{"kind": "classification", "task": "sst", "label_list": ["neg", "pos"]},
         {"kind": "regression", "task": "sts", "min_value": 0.0, "max_value": 5.0},
         {"kind": "tagging", "task": "chunk", "label_list": ["B-NP", "I-NP", "O"]}]
SENTENCES = ["the cat sat on the mat .", "john smith was born in paris",
             "where is the big red house ?"]


@pytest.fixture(scope="module")
def finetuned(tmp_path_factory):
  """A random FinetuningModel (three heads) saved as run_finetuning.py does, its config."""
  root = tmp_path_factory.mktemp("finetuned")
  config = make_config(str(root / "data"), ["sst", "sts", "chunk"])
  keras.utils.set_random_seed(2)
  model = finetune_model.build_model(config, HEADS)
  rng = np.random.default_rng(2)
  for variable in model.trainable_variables:
    variable.assign(variable + rng.normal(0, 0.2, variable.shape).astype(np.float32))
  model_dir = str(root / "sst_sts_chunk_model_1")
  finetune_model.save_model_files(model, config, model_dir)
  tf.train.CheckpointManager(tf.train.Checkpoint(model=model), model_dir, 1,
                             checkpoint_name="ckpt").save(checkpoint_number=3)
  return model, config, model_dir


def official_features(config, texts_a, texts_b=None):
  """[CLS] a [SEP] (b [SEP]) padded to max_seq_length, by the official rules."""
  tokenizer = FullTokenizer(config.vocab_file)
  rows = []
  for i, a in enumerate(texts_a):
    ids_a = tokenizer.encode(a)
    ids_b = tokenizer.encode(texts_b[i]) if texts_b else []
    ids = [2] + ids_a + [3] + (ids_b + [3] if texts_b else [])
    rows.append((ids, [0] * (len(ids_a) + 2) + [1] * (len(ids) - len(ids_a) - 2)))
  return _padded(rows, config.max_seq_length)


def tagging_features(config, texts):
  """The official tagging features: words tokenised alone, segment 1, first pieces."""
  tokenizer = FullTokenizer(config.vocab_file)
  rows, positions = [], []
  for text in texts:
    ids, firsts = [2], []
    for word in text.split():
      firsts.append(len(ids))
      ids += tokenizer.encode(word)
    rows.append((ids + [3], [1] * (len(ids) + 1)))
    positions.append(firsts + [0] * (config.max_seq_length - len(firsts)))
  features = _padded(rows, config.max_seq_length)
  features["chunk_labeled_positions"] = tf.constant(positions, tf.int32)
  return features


def _padded(rows, length):
  ids, mask, segments = (np.zeros((len(rows), length), np.int32) for _ in range(3))
  for i, (row, segs) in enumerate(rows):
    ids[i, :len(row)], mask[i, :len(row)], segments[i, :len(row)] = row, 1, segs
  return {"input_ids": tf.constant(ids), "input_mask": tf.constant(mask),
          "segment_ids": tf.constant(segments),
          "chunk_labeled_positions": tf.zeros_like(ids)}  # the model runs every head


def test_task_models_equal_run_finetuning_model(finetuned):
  reference, config, model_dir = finetuned
  classifier = electra_tf2.TextClassifier.from_pretrained(model_dir, task="sst")
  assert classifier.loading_report.complete and classifier.label_list == ["neg", "pos"]
  expected = reference(official_features(config, SENTENCES, PAIRS_B[:3]))
  np.testing.assert_allclose(classifier.predict((SENTENCES, PAIRS_B[:3]), verbose=0),
                             expected["sst"]["logits"], atol=TOLERANCE)

  regressor = electra_tf2.TextClassifier.from_pretrained(model_dir, task="sts")
  assert regressor.num_classes == 1
  expected = reference(official_features(config, SENTENCES))
  np.testing.assert_allclose(regressor.predict(SENTENCES, verbose=0),
                             expected["sts"]["predictions"], atol=TOLERANCE)

  tagger = electra_tf2.TokenClassifier.from_pretrained(model_dir, task="chunk")
  assert tagger.label_list == ["B-NP", "I-NP", "O"]
  expected = reference(tagging_features(config, SENTENCES))["chunk"]["logits"].numpy()
  ours = tagger.predict(SENTENCES, verbose=0)
  for row, text in enumerate(SENTENCES):
    n = len(text.split())
    np.testing.assert_allclose(ours[row, :n], expected[row, :n], atol=TOLERANCE)


def test_official_finetuning_checkpoint_loads_the_same(tmp_path, finetuned):
  reference, config, model_dir = finetuned
  prefix = convert.export_official_finetuned(model_dir, str(tmp_path / "tf1"))
  preset = str(tmp_path / "tiny.json")  # 32 wide over 2 heads: the shapes do not say 2
  with open(preset, "w") as f:
    json.dump({"model_hparam_overrides": {"hidden_size": 32, "num_attention_heads": 2}}, f)
  ours = electra_tf2.TextClassifier.from_pretrained(
      prefix, task="sts", vocab_file=config.vocab_file, model_name=preset)
  assert sources.load_source(prefix).kind == "official"
  expected = reference(official_features(config, SENTENCES))["sts"]["predictions"]
  np.testing.assert_allclose(ours.predict(SENTENCES, verbose=0), expected, atol=TOLERANCE)


def test_official_and_our_pretrained_layouts_load_through_from_pretrained(tmp_path, hf,
                                                                         discriminator):
  expected = discriminator.predict(TEXTS, verbose=0)
  model_dir = str(tmp_path / "ours")
  hf_import.convert_directory(hf["pretraining"], model_dir)
  assert convert.main(["to-official", "--model-dir", model_dir,
                       "--output-dir", str(tmp_path / "tf1")]) == 0
  shutil_copy = os.path.join(str(tmp_path / "tf1"), "vocab.txt")
  with open(os.path.join(hf["pretraining"], "vocab.txt")) as src, open(shutil_copy, "w") as dst:
    dst.write(src.read())
  # 36 wide over 3 heads: the shapes do not say 3, a preset (model_name) does.
  preset = str(tmp_path / "odd.json")
  with open(preset, "w") as f:
    json.dump({"model_hparam_overrides": {"hidden_size": 36, "num_attention_heads": 3}}, f)
  for path, options in ((model_dir, {}), (str(tmp_path / "tf1"), {"model_name": preset})):
    out = electra_tf2.Discriminator.from_pretrained(path, **options).predict(TEXTS, verbose=0)
    np.testing.assert_array_equal(out["input_ids"], expected["input_ids"])
    np.testing.assert_allclose(out["logits"], expected["logits"], atol=TOLERANCE)
  guessed = sources.load_source(str(tmp_path / "tf1"))
  assert guessed.kind == "official" and guessed.bert_config.num_attention_heads == 1


# ---------------------------------------------------------------------------
# fit, save, serve
# ---------------------------------------------------------------------------


def test_fit_lowers_the_loss_and_round_trips_keep_predictions(tmp_path, hf):
  keras.utils.set_random_seed(0)  # the dropout draws
  model = electra_tf2.TextClassifier.from_pretrained(hf["pretraining"], num_classes=3,
                                                     text_pairs=True)
  texts_a, texts_b = tf.constant(TEXTS * 2), tf.constant(PAIRS_B * 2)
  labels = tf.constant(LABELS * 2)
  data = tf.data.Dataset.from_tensor_slices(((texts_a, texts_b), labels)).batch(4)
  model.compile(optimizer=model.official_optimizer(3e-3, 12, warmup_proportion=0.1),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=["accuracy"])
  losses = model.fit(data, epochs=6, verbose=0).history["loss"]
  assert losses[-1] < 0.5 * losses[0]
  expected = model.predict((texts_a, texts_b), verbose=0)

  model.save(str(tmp_path / "m.keras"))
  loaded = keras.models.load_model(str(tmp_path / "m.keras"))
  np.testing.assert_array_equal(loaded.predict((texts_a, texts_b), verbose=0), expected)
  # The optimizer is back with its official names: the same layer-wise rates and decay.
  assert loaded.optimizer._lr_multipliers == model.optimizer._lr_multipliers
  assert loaded.optimizer._weight_decay_flags == model.optimizer._weight_decay_flags
  assert int(loaded.optimizer.iterations) == int(model.optimizer.iterations) == 12

  path = model.export_saved_model(str(tmp_path / "saved"))
  import tensorflow_text  # noqa: F401  (registers the tokenizer's ops)
  served = tf.saved_model.load(path).signatures["serving_default"](text=texts_a,
                                                                         text_b=texts_b)
  np.testing.assert_allclose(served["logits"], expected, atol=1e-6)
  assert [s.decode() for s in served["label"].numpy()] == [str(i) for i in expected.argmax(-1)]
  # The SavedModel's graph skips the padding's rows (Encoder skip_padding): its encoder
  # scatters the real tokens' keys and values back into the padded layout.
  graph = tf.saved_model.load(path).signatures["serving_default"].graph.as_graph_def()
  assert any(node.op == "ScatterNd" and "/layer_0" in node.name
             for f in graph.library.function for node in f.node_def)


def test_keras_files_of_the_other_models_keep_predictions(tmp_path, hf, discriminator):
  for model, key in ((discriminator, "logits"),
                     (electra_tf2.TokenClassifier.from_pretrained(hf["token"]), None)):
    expected = model.predict(TEXTS, verbose=0)
    path = str(tmp_path / f"{model.name}.keras")
    model.save(path)
    loaded = keras.models.load_model(path).predict(TEXTS, verbose=0)
    if key:
      expected, loaded = expected[key], loaded[key]
    np.testing.assert_array_equal(loaded, expected)


@pytest.mark.parametrize("fixed", [False, True])
def test_official_optimizer_decays_by_layer_over_official_names(hf, fixed):
  model = electra_tf2.TextClassifier.from_pretrained(hf["model"], num_classes=2)
  optimizer = model.official_optimizer(1e-4, 10, layerwise_lr_decay=0.5,
                                       fix_layerwise_lr_off_by_one=fixed)
  optimizer.build(model.trainable_variables)
  rates = dict(zip(optimizer._official_names, optimizer._lr_multipliers))
  top = 3 if fixed else 4  # 2 layers: n + 2 (model/optimization.py:181-190), fixed n + 1
  assert rates["task_specific/classifier/dense/kernel"] == 1.0
  assert rates["electra/encoder/layer_1/output/dense/kernel"] == 0.5 ** (top - 2)
  assert rates["electra/encoder/layer_0/attention/self/query/bias"] == 0.5 ** (top - 1)
  assert rates["electra/embeddings/word_embeddings"] == 0.5 ** top
  assert rates["electra/embeddings_project/kernel"] == 0.5 ** top
  decayed = dict(zip(optimizer._official_names, optimizer._weight_decay_flags))
  assert decayed["electra/encoder/layer_1/output/dense/kernel"]
  assert not decayed["electra/encoder/layer_1/output/LayerNorm/gamma"]
  assert not decayed["task_specific/classifier/dense/bias"]


def test_regression_and_tagging_train_on_strings(hf):
  texts = tf.constant(TEXTS * 2)
  keras.utils.set_random_seed(0)  # the dropout draws
  regressor = electra_tf2.TextClassifier.from_pretrained(hf["model"], num_classes=1)
  regressor.compile(optimizer=regressor.official_optimizer(1e-3, 16), loss="mse")
  data = tf.data.Dataset.from_tensor_slices((texts, tf.constant([0.1, 0.9, 0.5, 0.3] * 2))
                                            ).batch(4)
  before = regressor.evaluate(data, verbose=0)  # without dropout: the regression is noisy
  regressor.fit(data, epochs=8, verbose=0)
  assert regressor.evaluate(data, verbose=0) < before

  tagger = electra_tf2.TokenClassifier.from_pretrained(hf["model"], num_classes=3)
  tags = keras.utils.pad_sequences([[i % 3 for i in range(len(t.split()))] for t in TEXTS * 2],
                                   tagger.max_seq_length, padding="post", value=-1)
  tagger.compile(optimizer=tagger.official_optimizer(3e-3, 12, fix_layerwise_lr_off_by_one=True),
                 loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                                 ignore_class=-1))
  data = tf.data.Dataset.from_tensor_slices((texts, tags)).batch(4)
  losses = tagger.fit(data, epochs=6, verbose=0).history["loss"]
  assert losses[-1] < 0.5 * losses[0]
  np.testing.assert_allclose(tagger.evaluate(data, verbose=0), losses[-1], rtol=0.5)


def test_predict_file_shows_progress_and_writes_lines(tmp_path, discriminator, capsys):
  model = discriminator
  path = str(tmp_path / "texts.txt")
  with open(path, "w") as f:
    f.write("\n".join(TEXTS * 3) + "\n")
  outputs = model.predict_file(path, str(tmp_path / "out.jsonl"), batch_size=5)
  assert "12/12" in capsys.readouterr().out
  with open(tmp_path / "out.jsonl") as f:
    rows = [json.loads(line) for line in f]
  assert len(rows) == 12 and rows[4]["input_ids"] == rows[0]["input_ids"]
  expected = model.predict(TEXTS, verbose=0)
  n = int(expected["input_mask"][0].sum())  # its tokens (lines are batched by length)
  np.testing.assert_allclose(rows[0]["replaced_probability"][:n],
                             expected["replaced_probability"][0][:n], atol=1e-6)
  assert outputs["logits"].shape[0] == 12


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------


def test_bad_sources_are_one_line_errors(tmp_path, hf):
  cases = [(lambda: electra_tf2.TextClassifier.from_pretrained(str(tmp_path), num_classes=2),
            "is no ELECTRA checkpoint"),
           (lambda: electra_tf2.Discriminator.from_pretrained(hf["model"]),
            "discriminator_predictions/dense/bias"),
           (lambda: electra_tf2.TextClassifier.from_pretrained(hf["pretraining"]),
            "pass num_classes")]
  for load, words in cases:
    with pytest.raises(sources.SourceError) as error:
      load()
    assert "\n" not in str(error.value) and words in str(error.value)


@pytest.mark.slow
def test_saved_model_serves_with_tensorflow_and_tensorflow_text_only(tmp_path, discriminator,
                                                                     monkeypatch):
  """The signature and the `serve` attribute of the SavedModel, loaded without electra_tf2,
  give `predict`'s outputs; the export builds the serving graph once (tf.saved_model.save
  traces a tf.function attribute once more: the SavedModel holds the traced function)."""
  model = discriminator
  traced, serve = [], model.serve
  monkeypatch.setattr(model, "serve", lambda *texts: traced.append(1) or serve(*texts))
  path = model.export_saved_model(str(tmp_path / "saved"))
  assert len(traced) == 1
  expected = model.predict(TEXTS, verbose=0)["replaced_probability"]
  script = ("import sys, json, tensorflow as tf, tensorflow_text\n"
            "assert not any(m.startswith('electra_tf2') for m in sys.modules)\n"
            f"loaded = tf.saved_model.load({path!r})\n"
            f"texts = tf.constant({TEXTS!r})\n"
            "for out in (loaded.signatures['serving_default'](text=texts), loaded.serve(texts)):\n"
            "  print(json.dumps(out['replaced_probability'].numpy().tolist()))\n")
  env = dict(os.environ, PYTHONPATH="")
  result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, cwd=str(tmp_path), check=True)
  lines = result.stdout.strip().splitlines()[-2:]
  for line in lines:
    np.testing.assert_allclose(np.array(json.loads(line)), expected, atol=1e-6)
