"""The Keras task models on the current backend, checked against what TensorFlow and
transformers computed (tests/test_keras_backends.py writes `references.npz` and the files
in WORK, runs this with KERAS_BACKEND=jax or torch and `tensorflow` blocked):

    python tests/keras_backends.py WORK

- `from_pretrained` of Hugging Face directories, then `predict` on strings: the
  probabilities of transformers' PyTorch models within 1e-4;
- `predict` on token-id features equals `predict` on strings; `fit` and `evaluate` on
  strings (pairs too) and on tag lists;
- a SentencePiece TextClassifier saved on TensorFlow: the host features (the
  `sentencepiece` library) equal the graph's id for id, its probabilities TensorFlow's;
- a `.keras` file and a `.weights.h5` saved on TensorFlow load with TensorFlow's outputs;
- this backend's `.keras` and its predictions, written to WORK for TensorFlow to load;
- one-line refusals: SavedModel and LiteRT export, `predict_file`, a TensorFlow
  checkpoint, `QuestionAnswerer`.
"""

from __future__ import annotations

import os
import sys

import numpy as np

TOLERANCE = 1e-4  # against transformers
SAME = 1e-5  # against TensorFlow's outputs of the same weights


def softmax(logits: np.ndarray) -> np.ndarray:
  e = np.exp(logits - logits.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


def close(name: str, ours, expected, atol: float) -> None:
  diff = float(np.abs(np.asarray(ours, np.float64) - np.asarray(expected)).max())
  print(f"{name}: max |diff| {diff:.2g}")
  assert diff <= atol, f"{name}: max |diff| {diff} > {atol}"


def refuses(name: str, function, error_type, *words: str) -> None:
  try:
    function()
  except error_type as e:
    message = str(e)
    assert "\n" not in message and all(w in message for w in words), message
    print(f"{name} refused: {message}")
  else:
    raise AssertionError(f"{name} was not refused")


def main(work: str) -> int:
  import keras  # pylint: disable=g-import-not-at-top
  import electra_tf2  # pylint: disable=g-import-not-at-top
  backend = keras.backend.backend()
  ref = np.load(os.path.join(work, "references.npz"), allow_pickle=True)
  texts, pairs_b = list(ref["texts"]), list(ref["pairs_b"])

  # Equal to transformers.
  disc = electra_tf2.Discriminator.from_pretrained(os.path.join(work, "pt"))
  out = disc.predict(texts, verbose=0, batch_size=len(texts))
  assert all(isinstance(v, np.ndarray) for v in out.values())
  np.testing.assert_array_equal(out["input_ids"], ref["disc_ids"])
  mask = ref["disc_mask"]
  close("Discriminator probabilities vs ElectraForPreTraining",
        out["replaced_probability"][mask], ref["disc_probs"][mask], TOLERANCE)
  classifier = electra_tf2.TextClassifier.from_pretrained(os.path.join(work, "seq"))
  probs = softmax(classifier.predict(texts, verbose=0, batch_size=len(texts)))
  close("TextClassifier probabilities vs ElectraForSequenceClassification", probs,
        ref["seq_probs"], TOLERANCE)
  tagger = electra_tf2.TokenClassifier.from_pretrained(os.path.join(work, "tok"))
  tags = tagger.predict(texts, verbose=0, batch_size=len(texts))
  words = ref["tok_words_mask"].astype(bool)
  close("TokenClassifier probabilities vs ElectraForTokenClassification",
        softmax(tags)[words], ref["tok_probs"][words], TOLERANCE)

  # Token-id features in: the same outputs; Python features: the graph tokenizer's.
  features = classifier.featurize(texts, pairs_b)
  for key in ("input_ids", "input_mask", "segment_ids"):
    np.testing.assert_array_equal(features[key], ref[f"pair_{key}"])
  close("TextClassifier on features vs on string pairs",
        classifier.predict(features, verbose=0),
        classifier.predict((texts, pairs_b), verbose=0, batch_size=len(texts)), SAME)
  close("TokenClassifier on features vs on strings",
        tagger.predict(tagger.featurize(texts), verbose=0), tags, SAME)

  # Saved on TensorFlow, loaded here.
  loaded = keras.models.load_model(os.path.join(work, "tensorflow.keras"))
  close(".keras from TensorFlow", loaded.predict(texts, verbose=0, batch_size=len(texts)),
        ref["tf_keras_logits"], SAME)
  rebuilt = electra_tf2.TextClassifier.from_config(loaded.get_config())
  rebuilt.load_weights(os.path.join(work, "tensorflow.weights.h5"))
  close(".weights.h5 from TensorFlow", rebuilt.predict(texts, verbose=0, batch_size=4),
        ref["tf_keras_logits"], SAME)

  # SentencePiece: the host tokenizer gives the graph's ids, the model TensorFlow's outputs.
  spm = keras.models.load_model(os.path.join(work, "spm.keras"))
  spm_texts = list(ref["spm_texts"])
  for name, features in (("spm_pair", spm.featurize(spm_texts, spm_texts[::-1])),
                         ("spm_words", spm.text_inputs.featurize_words(spm_texts))):
    for key, value in features.items():
      np.testing.assert_array_equal(value, ref[f"{name}_{key}"], err_msg=f"{name} {key}")
  close("SentencePiece TextClassifier probabilities vs TensorFlow's",
        softmax(spm.predict(spm_texts, verbose=0, batch_size=len(spm_texts))),
        softmax(ref["spm_logits"]), SAME)

  # Training on strings, pairs and tag lists.
  loaded.compile(optimizer=loaded.official_optimizer(1e-3, 2),
                 loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                 metrics=["accuracy"])
  history = loaded.fit((texts, pairs_b), [0, 1, 2, 1], batch_size=2, epochs=1, verbose=0)
  assert np.isfinite(history.history["loss"]).all(), history.history
  assert not np.allclose(loaded.predict(texts, verbose=0, batch_size=4),
                         ref["tf_keras_logits"]), "fit changed nothing"
  loss, accuracy = loaded.evaluate(texts, [0, 1, 2, 1], verbose=0)
  assert np.isfinite(loss) and 0 <= accuracy <= 1
  tagger.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(
      from_logits=True, ignore_class=-1))
  history = tagger.fit(texts, [[0, 1, 2], [1], [2, 2], [0]], batch_size=4, verbose=0)
  assert np.isfinite(history.history["loss"]).all(), history.history

  # This backend's file, for TensorFlow to load.
  mine = os.path.join(work, f"{backend}.keras")
  classifier.save(mine)
  np.save(os.path.join(work, f"{backend}_logits.npy"),
          classifier.predict(texts, verbose=0, batch_size=4))

  # One-line refusals.
  refuses("export_saved_model", lambda: classifier.export_saved_model(
      os.path.join(work, "sm")), electra_tf2.ElectraError, "KERAS_BACKEND=tensorflow",
          "save_weights")
  refuses("export_litert", lambda: classifier.export_litert(os.path.join(work, "m.tflite")),
          electra_tf2.ElectraError, "KERAS_BACKEND=tensorflow")
  refuses("predict_file", lambda: classifier.predict_file(os.path.join(work, "x.txt")),
          electra_tf2.ElectraError, "predict(texts)")
  refuses("official checkpoint", lambda: electra_tf2.TextClassifier.from_pretrained(
      os.path.join(work, "official"), num_classes=2), electra_tf2.ElectraError,
          "KERAS_BACKEND=tensorflow")
  refuses("QuestionAnswerer", lambda: electra_tf2.QuestionAnswerer, electra_tf2.ElectraError,
          "KERAS_BACKEND=tensorflow")
  refuses("strings in call", lambda: classifier(texts), electra_tf2.ElectraError,
          "featurize")
  print(f"{backend}: all agree")
  return 0


if __name__ == "__main__":
  if os.environ.get("ELECTRA_BLOCK_TENSORFLOW") == "1":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import block_tensorflow  # noqa: F401  pylint: disable=unused-import,g-import-not-at-top
  sys.exit(main(sys.argv[1]))
