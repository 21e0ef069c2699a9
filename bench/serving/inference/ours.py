"""Our sides: the Keras `TextClassifier` (its SavedModel, `predict`), the SavedModel of
`electra export --kind finetuned`, and `TextScorer`, on the fixture's weights.

- `savedmodel`: `TextClassifier.from_pretrained(hf_dir)` (Hugging Face head), then
  `export_saved_model`, loaded with tf.saved_model.load; `serving_default(text=...)`;
  `savedmodel_bf16`: the same with `export_saved_model(dtype="bfloat16")`.
- `keras_predict`: the same Keras model's `predict(texts, batch_size=len(texts))`.
- `export_finetuned`: a fine-tuned model directory (the fixture's encoder, an official
  classification head with random weights) exported by `electra export`; its `text`
  (`text_pair`) signature. Compared with the PyTorch encoder plus that head.
- `text_scorer`: `TextScorer.load` of a pre-trained model directory converted from an
  `ElectraForPreTraining` with the fixture's encoder (`convert from-hf`), single texts;
  its token logits compared with that PyTorch discriminator's.
"""

from __future__ import annotations

import functools
import os

import numpy as np

from bench.serving.inference.side import Side, register


def _columns(texts):
  import tensorflow as tf
  return [tf.constant(column) for column in texts]


@functools.lru_cache(maxsize=None)
def keras_classifier(hf_dir: str, pairs: bool, max_seq_length: int):
  """Our `TextClassifier` with the directory's weights (its Hugging Face head)."""
  from electra_tf2 import TextClassifier
  return TextClassifier.from_pretrained(hf_dir, text_pairs=pairs, max_seq_length=max_seq_length)


def _keras(fixture):
  return keras_classifier(fixture.hf_dir, fixture.texts.pairs, fixture.max_seq_length)


def _pairs_suffix(fixture) -> str:
  return "pairs" if fixture.texts.pairs else "single"


def _savedmodel(fixture, dtype: str) -> Side:
  import tensorflow as tf
  import tensorflow_text  # noqa: F401  registers the tokenizer's ops
  path = fixture.path(f"savedmodel_{_pairs_suffix(fixture)}_{dtype}")
  if not os.path.exists(os.path.join(path, "saved_model.pb")):
    _keras(fixture).export_saved_model(path, dtype=dtype)
  serve = tf.saved_model.load(path).signatures["serving_default"]
  names = ["text", "text_b"]

  def predict(texts):
    return serve(**dict(zip(names, _columns(texts))))["logits"].numpy()
  suffix = "" if dtype == "float32" else f", {dtype}"
  return Side(f"ours: SavedModel (export_saved_model{suffix})", predict,
              note=f"serving_default on raw strings, tensorflow + tensorflow-text; {dtype}")


@register("savedmodel")
def savedmodel(fixture) -> Side:
  return _savedmodel(fixture, "float32")


@register("savedmodel_bf16")
def savedmodel_bf16(fixture) -> Side:
  return _savedmodel(fixture, "bfloat16")


@register("keras_predict")
def keras_predict(fixture) -> Side:
  model = _keras(fixture)

  def predict_all(texts, batch_size):
    return model.predict(tuple(texts) if len(texts) > 1 else texts[0], batch_size=batch_size,
                         verbose=0)
  return Side("ours: Keras predict", lambda texts: predict_all(texts, len(texts[0])),
              note="TextClassifier.predict(list of str, batch_size) over the whole set",
              predict_all=predict_all)


def _finetuned_model_dir(fixture):
  """A fine-tuned model directory: the fixture's encoder and a random official head."""
  import keras
  import tensorflow as tf
  from electra_tf2.networks import variable_names
  from electra_tf2.models import finetuning as finetune_model
  from electra_tf2.tasks.config import resolve_finetuning_config
  from electra_tf2.models import sources
  task = "mrpc" if fixture.texts.pairs else "sst"
  model_dir = fixture.path(f"finetuned_{task}")
  c = fixture.config
  values = {"task_names": [task], "init_checkpoint": None, "vocab_size": c["vocab_size"],
            "vocab_file": os.path.join(fixture.hf_dir, "vocab.txt"),
            "embedding_size": c["embedding_size"], "max_seq_length": fixture.max_seq_length,
            "model_hparam_overrides": {k: c[k] for k in (
                "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")}}
  config = resolve_finetuning_config(fixture.name, fixture.path("finetuning"), values)
  keras.utils.set_random_seed(0)
  model = finetune_model.build_model(
      config, [{"kind": "classification", "task": task, "label_list": ["0", "1"]}])
  if not os.path.exists(os.path.join(model_dir, "checkpoint")):
    sources.load_source(fixture.hf_dir).load(
        variable_names.encoder_variable_map(model.encoder, "electra"))
    finetune_model.save_model_files(model, config, model_dir)
    tf.train.CheckpointManager(tf.train.Checkpoint(model=model), model_dir, None,
                               checkpoint_name="ckpt").save(checkpoint_number=1)
  model, _ = finetune_model.load_finetuned_model(model_dir)
  names = model.variable_map()
  head = [names[f"task_specific/{task}/dense/{v}"].numpy() for v in ("kernel", "bias")]
  return model_dir, task, head


@register("export_finetuned")
def export_finetuned(fixture) -> Side:
  import tensorflow as tf
  import tensorflow_text  # noqa: F401
  from electra_tf2.serving import export
  model_dir, task, (kernel, bias) = _finetuned_model_dir(fixture)
  path = fixture.path(f"export_finetuned_{task}")
  if not os.path.exists(os.path.join(path, "saved_model.pb")):
    export.main(["--model-dir", model_dir, "--output-dir", path, "--kind", "finetuned"])
  pairs = fixture.texts.pairs
  function = tf.saved_model.load(path).signatures["text_pair" if pairs else "text"]
  names = ["text", "text_b"]

  def predict(texts):
    return function(**dict(zip(names, _columns(texts))))[f"{task}_logits"].numpy()

  def reference(texts):
    import torch
    with torch.inference_mode():
      hidden = fixture.torch_model.electra(**fixture.encode(texts, "pt")).last_hidden_state
    return hidden[:, 0].numpy() @ kernel + bias
  return Side("ours: electra export --kind finetuned", predict, reference,
              note=f"the {'text_pair' if pairs else 'text'} signature; official head")


def _discriminator_dir(fixture) -> str:
  """Our pre-trained model directory of an ElectraForPreTraining with the fixture's encoder."""
  import torch
  import transformers
  from electra_tf2.conversion import convert
  model_dir = fixture.path("discriminator_model")
  hf_dir = fixture.path("discriminator_hf")
  if not os.path.exists(os.path.join(model_dir, "pretrain_config.json")):
    torch.manual_seed(1)
    model = transformers.ElectraForPreTraining(fixture.torch_model.config)
    model.electra.load_state_dict(fixture.torch_model.electra.state_dict())
    model.save_pretrained(hf_dir)
    for name in ("vocab.txt", "tokenizer_config.json"):
      with open(os.path.join(fixture.hf_dir, name), "rb") as src, \
          open(os.path.join(hf_dir, name), "wb") as dst:
        dst.write(src.read())
    convert.main(["from-hf", "--hf-dir", hf_dir, "--output-dir", model_dir])
  return model_dir


def _padded(rows) -> np.ndarray:
  out = np.full((len(rows), max(len(r) for r in rows)), np.nan, np.float32)
  for i, row in enumerate(rows):
    out[i, :len(row)] = row
  return out


@register("text_scorer")
def text_scorer(fixture):
  if fixture.texts.pairs:
    return None
  import torch
  import transformers
  from electra_tf2.scoring.scorer import TextScorer
  model_dir = _discriminator_dir(fixture)
  scorer = TextScorer.load(model_dir, batch_size=32, max_seq_length=fixture.max_seq_length)
  torch_model = transformers.ElectraForPreTraining.from_pretrained(
      fixture.path("discriminator_hf")).eval()

  def predict(texts):
    return _padded([s.token_log_odds for s in scorer.score(texts[0])])

  def predict_all(texts, batch_size):
    scorer.batch_size = batch_size
    return predict(texts)

  def reference(texts):
    features = fixture.encode(texts, "pt")
    with torch.inference_mode():
      logits = torch_model(**features).logits.numpy()
    lengths = features["attention_mask"].numpy().sum(1) - 2  # less [CLS] and [SEP]
    return _padded([row[1:1 + n] for row, n in zip(logits, lengths)])
  return Side("ours: TextScorer", predict, reference,
              note="score(list of str) over the whole set: per-WordPiece log-odds, words, "
              "sentence scores", predict_all=predict_all)
