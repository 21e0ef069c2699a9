"""The Keras task models on JAX and PyTorch, and their files across backends (issue #39,
items 2 and 6; SentencePiece models, #42).

Oracles: transformers' PyTorch models (the same random Hugging Face directories), the
in-graph TensorFlow tokenizer (the features the Python one makes on the host: WordPiece,
and SentencePiece from the `sentencepiece` library), and the TensorFlow model's outputs
(files saved on one backend, loaded on another). JAX and
PyTorch each run tests/keras_backends.py once, in a subprocess where `tensorflow`
cannot be imported (tests/block_tensorflow.py).
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from hf_models import TEXTS, hf_tokenizer, load_hf, save_hf_model  # noqa: E402 (USE_TF=0)
from fixtures import WORD_VOCAB  # noqa: E402
from test_languages import WORDS, write_corpus  # noqa: E402
import torch  # noqa: E402
import electra_tf2  # noqa: E402
from electra_tf2.text import vocab as vocab_lib  # noqa: E402
from electra_tf2.checkpoints import official  # noqa: E402
from electra_tf2.data_prep import build_vocab  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PAIRS_B = ["a dog runs fast", "he was born in new york city", "paris", "we see it"]
# Texts where the host tokenizer could part from the graph's: whitespace that is not ASCII
# (no word boundary for tf.strings.split) and that is, words of no WordPiece (control
# characters), empty texts, texts longer than max_seq_length, bytes, accents, CJK.
# SentencePiece's: unicode, blank, non-ASCII whitespace, longer than max_seq_length.
SPM_TEXTS = ["한국어 문장 学校 老师", "", "Straße\u00a0über  schön", " ".join(WORDS * 2),
             "Привет мир. ＡＢＣ"]
TRICKY = ["the\u00a0cat sat", "a\x0bdog\x0c runs\r\nfast", "\x01 the \x02\x03 cat", "", "   ",
          " ".join(["john smith"] * 12), "Café PARIS 北京 !?", "unbelievable\tcats",
          b"the big red house", "s" * 250 + " cat"]


def graph_features(model, *texts, words: bool = False):
  features = model.text_features(*(tf.constant(t) for t in texts))
  return {k: v.numpy() for k, v in features.items()}


def tiny(kind, vocab=WORD_VOCAB, **options):
  config = electra_tf2.BertConfig(len(vocab), hidden_size=16, num_hidden_layers=1,
                                  num_attention_heads=2, intermediate_size=32,
                                  max_position_embeddings=16)
  return getattr(electra_tf2, kind)(config, None, vocab, max_seq_length=16, **options)


def spm_classifier(root):
  """A TextClassifier (3 classes) on a 60-piece SentencePiece model built in `root`."""
  path = os.path.join(root, "spm.model")
  build_vocab.learn_sentencepiece_from_files([write_corpus(os.path.join(root, "corpus"))], 60,
                                             path, log=None)
  vocab = vocab_lib.load_vocab(path)
  with open(path, "rb") as f:
    model = base64.b64encode(f.read()).decode("ascii")
  return tiny("TextClassifier", sorted(vocab, key=vocab.get), num_classes=3,
              sentencepiece_model=model)


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_host_features_equal_the_graph_tokenizer(do_lower_case):
  texts = TRICKY + TEXTS
  classifier = tiny("TextClassifier", do_lower_case=do_lower_case)
  for texts_b in (None, list(reversed(texts))):
    host = classifier.featurize(texts, texts_b)
    graph = graph_features(classifier, *(t for t in (texts, texts_b) if t is not None))
    assert host.keys() == graph.keys()
    for key in graph:
      np.testing.assert_array_equal(host[key], graph[key], err_msg=key)
    padded = classifier.featurize(texts, texts_b, pad_to_max_length=True)
    assert padded["input_ids"].shape == (len(texts), 16)
    np.testing.assert_array_equal(padded["input_ids"][:, :host["input_ids"].shape[1]],
                                  host["input_ids"])
  tagger = tiny("TokenClassifier", do_lower_case=do_lower_case)
  host, graph = tagger.featurize(texts), graph_features(tagger, texts)
  assert host.keys() == graph.keys()
  for key in graph:
    np.testing.assert_array_equal(host[key], graph[key], err_msg=key)
  assert host["words_mask"].sum() > 20  # words were labelled


def test_features_in_and_numpy_out_on_tensorflow():
  classifier, tagger = tiny("TextClassifier", num_classes=3), tiny("TokenClassifier")
  np.testing.assert_allclose(classifier.predict(classifier.featurize(TEXTS, PAIRS_B),
                                                verbose=0),
                             classifier.predict((TEXTS, PAIRS_B), verbose=0), atol=1e-6)
  np.testing.assert_allclose(tagger.predict(tagger.featurize(TEXTS), verbose=0),
                             tagger.predict(TEXTS, verbose=0), atol=1e-6)
  classifier.compile(optimizer="adam",
                     loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  history = classifier.fit(classifier.featurize(TEXTS, pad_to_max_length=True), [0, 1, 2, 1],
                           verbose=0)
  assert np.isfinite(history.history["loss"]).all()
  with pytest.raises(electra_tf2.ElectraError, match="lack labeled_positions"):
    tagger.predict(classifier.featurize(TEXTS), verbose=0)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
  """Hugging Face directories, transformers' probabilities, a TensorFlow .keras and
  .weights.h5 with their outputs, and an official checkpoint: what keras_backends.py reads."""
  root = str(tmp_path_factory.mktemp("backends"))
  pt = save_hf_model(os.path.join(root, "pt"), "ElectraForPreTraining")
  seq = save_hf_model(os.path.join(root, "seq"), "ElectraForSequenceClassification", seed=5,
                      num_labels=3)
  tok = save_hf_model(os.path.join(root, "tok"), "ElectraForTokenClassification", seed=6,
                      num_labels=4)
  encoded = hf_tokenizer(pt)(TEXTS, padding=True, return_tensors="pt")
  with torch.no_grad():
    disc_probs = torch.sigmoid(load_hf(pt, "ElectraForPreTraining")(**encoded).logits)
    seq_logits = load_hf(seq, "ElectraForSequenceClassification")(**encoded).logits
  tagger = electra_tf2.TokenClassifier.from_pretrained(tok)
  words = graph_features(tagger, TEXTS)  # official tagging features: segment 1 everywhere
  with torch.no_grad():
    token_logits = load_hf(tok, "ElectraForTokenClassification")(
        input_ids=torch.tensor(words["input_ids"], dtype=torch.long),
        attention_mask=torch.tensor(words["input_mask"]),
        token_type_ids=torch.tensor(words["segment_ids"], dtype=torch.long)).logits.numpy()
  tok_probs = np.take_along_axis(token_logits, words["labeled_positions"][..., None], 1)
  classifier = electra_tf2.TextClassifier.from_pretrained(seq)
  classifier.save(os.path.join(root, "tensorflow.keras"))
  classifier.save_weights(os.path.join(root, "tensorflow.weights.h5"))
  official.write_official_checkpoint(os.path.join(root, "official"), {
      official.WORD_EMBEDDINGS: np.zeros((len(WORD_VOCAB), 8), np.float32)})
  pairs = graph_features(classifier, TEXTS, PAIRS_B)
  spm = spm_classifier(root)
  spm.save(os.path.join(root, "spm.keras"))
  spm_pairs = graph_features(spm, SPM_TEXTS, SPM_TEXTS[::-1])
  spm_words = spm.text_inputs.call_words(tf.constant(SPM_TEXTS))
  np.savez(os.path.join(root, "references.npz"), texts=np.array(TEXTS, object),
           pairs_b=np.array(PAIRS_B, object), disc_ids=encoded["input_ids"].numpy(),
           disc_mask=encoded["attention_mask"].numpy().astype(bool),
           disc_probs=disc_probs.numpy(), seq_probs=torch.softmax(seq_logits, -1).numpy(),
           tok_probs=torch.softmax(torch.tensor(tok_probs), -1).numpy(),
           tok_words_mask=words["words_mask"],
           tf_keras_logits=classifier.predict(TEXTS, verbose=0),
           **{f"pair_{k}": v for k, v in pairs.items()},
           spm_texts=np.array(SPM_TEXTS, object), spm_logits=spm.predict(SPM_TEXTS, verbose=0),
           **{f"spm_pair_{k}": v for k, v in spm_pairs.items()},
           **{f"spm_words_{k}": v.numpy() for k, v in spm_words.items()})
  return root


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_task_models_run_without_tensorflow(backend, work):
  env = dict(os.environ, KERAS_BACKEND=backend, ELECTRA_BLOCK_TENSORFLOW="1",
             PYTHONPATH=os.pathsep.join([os.path.dirname(HERE), os.environ.get("PYTHONPATH",
                                                                                 "")]))
  result = subprocess.run([sys.executable, os.path.join(HERE, "keras_backends.py"), work],
                          env=env, capture_output=True, text=True, timeout=600,
                          cwd=os.path.dirname(HERE))
  print(result.stdout)
  assert result.returncode == 0, result.stdout + result.stderr[-3000:]
  assert f"{backend}: all agree" in result.stdout
  # Saved there, loaded on TensorFlow with the same outputs.
  loaded = keras.models.load_model(os.path.join(work, f"{backend}.keras"))
  np.testing.assert_allclose(loaded.predict(TEXTS, verbose=0),
                             np.load(os.path.join(work, f"{backend}_logits.npy")), atol=1e-5)
