"""What the Keras task models on raw text share: tokeniser, encoder, loading, recipe, serving.

A `TextModel` is a `keras.Model` on text: its `TextInputs` layer tokenises, the
`electra` `Encoder` runs, and a subclass's head (`self.head`, official variable
names under `task_specific/<task>/`, or the discriminator's) gives the outputs.
So `predict`, `fit` and `evaluate` take strings, with any Keras loss and metric,
on every Keras backend:
- TensorFlow: the inputs are tf.string tensors, tokenised in the graph (so
  SavedModels and LiteRT files take raw text);
- JAX and PyTorch (no string tensors, no TensorFlow needed): Python strings are
  tokenised on the host (text/py_tokenizer.py, the same ids) into token-id features.
On every backend the model also takes those features directly: a dict of
`input_ids`, `input_mask`, `segment_ids` `[batch, seq_len]` (`featurize(texts)`
makes it), and `predict` returns numpy arrays.

- `from_pretrained(path, ...)`: any checkpoint of electra_tf2/models/sources.py.
- `official_optimizer(...)`: the official fine-tuning optimizer (AdamWeightDecay,
  warm-up then linear decay, layer-wise learning-rate decay, clip 1.0).
- `export_saved_model(path)`: a SavedModel on raw strings that needs only
  tensorflow and tensorflow-text (import tensorflow_text before loading).
- `export_litert(path, quantize)`: a `.tflite` (LiteRT) file on raw strings
  (docs/deploy.md).
- `predict_file(path)`: batch prediction over a text file, with a progress bar.
The last three run on the TensorFlow backend only (elsewhere one line says so).
"""

from __future__ import annotations

import base64
from typing import Any, Dict, List, Optional, Sequence, Tuple

import keras
import numpy as np

from electra_tf2.utils import batching, precision, predictions
from electra_tf2.models import optimization
from electra_tf2.networks import variable_names
from electra_tf2.utils.atomic_io import atomic_directory
from electra_tf2.config.encoder import BertConfig
from electra_tf2.utils.errors import ElectraError
from electra_tf2.config.hparams import ConfigError
from electra_tf2.layers.text_inputs import TextInputs
from electra_tf2.models import keras_data, sources
from electra_tf2.networks.encoder import Encoder

VariableMap = Dict[str, keras.Variable]
Features = Dict[str, Any]
FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids")


class KerasFileError(ElectraError, ValueError):
  """A `.keras` file whose config this version of the models cannot build."""


class BackendError(ElectraError, ValueError):
  """What the current Keras backend cannot do (SavedModels, LiteRT: TensorFlow only)."""


def tensorflow_backend() -> bool:
  """Whether Keras runs on TensorFlow (string tensors, the in-graph tokenizer, export)."""
  return keras.backend.backend() == "tensorflow"


def require_tensorflow(what: str, instead: str) -> None:
  """One-line BackendError unless Keras runs on TensorFlow: `what` needs it, do `instead`."""
  if not tensorflow_backend():
    raise BackendError(f"{what} needs the tensorflow Keras backend, and this process runs "
                       f"{keras.backend.backend()}: {instead}")


class TextModel(keras.Model):
  """Raw text -> TextInputs -> `electra` Encoder -> a subclass's head.

  Args:
    bert_config: the encoder's `BertConfig` (or its dict).
    embedding_size: E (None: the hidden size).
    vocab: the WordPiece tokens in id order.
    do_lower_case: the tokenizer's lowercasing.
    max_seq_length: WordPieces per text, [CLS] and [SEP] included.
    sentencepiece_model: a SentencePiece model (base64 of its bytes; `vocab` its pieces):
      text is tokenized with it instead of WordPiece.
    strip_accents: WordPiece's accent stripping; None is the official rule (stripped when
      lowercasing). `from_pretrained` takes it from the checkpoint's tokenizer description.
  """

  def __init__(self, bert_config: BertConfig | Dict[str, Any], embedding_size: Optional[int],
               vocab: List[str], do_lower_case: bool = True, max_seq_length: int = 128,
               sentencepiece_model: Optional[str] = None, strip_accents: Optional[bool] = None,
               **kwargs):
    super().__init__(**kwargs)
    if isinstance(bert_config, dict):
      bert_config = BertConfig(**bert_config)
    if max_seq_length > bert_config.max_position_embeddings:
      raise ConfigError(f"max_seq_length {max_seq_length} exceeds max_position_embeddings "
                        f"{bert_config.max_position_embeddings}: pass max_seq_length <= "
                        f"{bert_config.max_position_embeddings}")
    self.bert_config = bert_config
    self.max_seq_length = max_seq_length
    self.text_inputs = TextInputs(vocab, do_lower_case, max_seq_length, sentencepiece_model,
                                  strip_accents, name="text_inputs")
    self.encoder = Encoder(bert_config, embedding_size, name="electra", dtype=self.dtype_policy)
    self.loading_report = None

  def build(self, input_shape=None):
    if self.built:
      return
    self.encoder.build()
    self.head.build((None, None, self.bert_config.hidden_size))
    super().build(input_shape)

  def __call__(self, inputs, *args, **kwargs):
    if isinstance(inputs, (tuple, list)) and len(inputs) > 1:
      self.check_pairs()
    if not isinstance(inputs, dict) and not tensorflow_backend():
      raise BackendError(f"{type(self).__name__} on {keras.backend.backend()} takes token-id "
                         "features, not strings: call it on model.featurize(texts), or use "
                         "predict, fit and evaluate, which take strings")
    return super().__call__(inputs, *args, **kwargs)

  def call(self, inputs, training: bool = False):
    """Token-id features (a dict: `input_ids`, `input_mask`, `segment_ids` `[batch,
    seq_len]`, and what the subclass needs), or on TensorFlow tf.string `[batch]` texts
    (a tuple of two for pairs), -> `call_features`."""
    if not isinstance(inputs, dict):
      inputs = self.text_features(*(tuple(inputs) if isinstance(inputs, (tuple, list))
                                    else (inputs,)))
    missing = [k for k in self.feature_names() if k not in inputs]
    if missing:
      raise keras_data.InputDataError(f"{type(self).__name__}: the features lack "
                                      f"{', '.join(missing)}; model.featurize(texts) makes "
                                      "them all")
    return self.call_features(inputs, training)

  def call_features(self, features: Features, training: bool = False):
    """The outputs of token-id features (subclasses define it)."""
    raise NotImplementedError(f"{type(self).__name__} defines no call_features")

  def feature_names(self) -> Tuple[str, ...]:
    """The features `call_features` reads."""
    return FEATURE_NAMES

  def featurize(self, texts: Sequence, texts_b: Optional[Sequence] = None,
                pad_to_max_length: bool = False) -> Dict[str, np.ndarray]:
    """The features of Python strings (and second texts of pairs), int32 numpy `[batch,
    longest row]` (or max_seq_length), made on the host without TensorFlow: what `call`
    takes on every backend, equal to the in-graph tokenizer's."""
    if texts_b is not None:
      self.check_pairs()
    return self.text_inputs.featurize(texts, texts_b, pad_to_max_length)

  def check_pairs(self) -> None:
    """One line unless the encoder has a second token type for the second text of a pair
    (segment id 1: a checkpoint with type_vocab_size 1 has no embedding for it)."""
    if self.bert_config.type_vocab_size < 2:
      raise keras_data.InputDataError(
          f"this model's encoder has type_vocab_size {self.bert_config.type_vocab_size}: no "
          "token type for the second text of a pair (segment id 1); give single texts")

  def encode(self, features: Features, training: bool = False, skip_padding: bool = False):
    """The encoder's states `[batch, seq_len, hidden]` of TextInputs' features
    (skip_padding: `Encoder.call`'s, zeros at the padding)."""
    return self.encoder(features["input_ids"], features["input_mask"],
                        features["segment_ids"], training=training, skip_padding=skip_padding)

  # -- names and weights -----------------------------------------------------

  def head_variable_map(self) -> VariableMap:
    """The head's variables by official name (`task_specific/<task>/<layer>/...`)."""
    names = {}
    for layer in self.head.official_layers:
      names.update({f"task_specific/{self.head.task}/{layer.name}/kernel": layer.kernel,
                    f"task_specific/{self.head.task}/{layer.name}/bias": layer.bias})
    return names

  def variable_map(self) -> VariableMap:
    """{official checkpoint name: variable} for every trainable variable."""
    names = variable_names.encoder_variable_map(self.encoder, "electra")
    names.update(self.head_variable_map())
    return names

  def source_head(self, source: sources.Source) -> Tuple[VariableMap, Dict[str, str]]:
    """The head variables to load from `source` and their source names; none by default."""
    del source
    return {}, {}

  def load_source(self, source: sources.Source, strict: bool = True):
    """Loads the encoder (strictly) and, where the source has it, the head."""
    variable_map = variable_names.encoder_variable_map(self.encoder, "electra")
    heads, rename = self.source_head(source)
    variable_map.update(heads)
    self.loading_report = source.load(variable_map, rename, strict)
    return self.loading_report

  @classmethod
  def from_source(cls, source: sources.Source, **options) -> "TextModel":
    """A model of `source`'s shape and vocabulary (weights not loaded); max_seq_length
    defaults to 128 or the source's max_position_embeddings if fewer."""
    limit = source.bert_config.max_position_embeddings
    options.setdefault("max_seq_length", min(128, limit))
    if options["max_seq_length"] > limit:
      raise sources.SourceError(f"max_seq_length {options['max_seq_length']} exceeds the "
                                f"max_position_embeddings {limit} of {source.path}: pass "
                                f"max_seq_length <= {limit}")
    options.setdefault("sentencepiece_model", source.sentencepiece_model())
    options.setdefault("strip_accents", source.strip_accents)
    return cls(source.bert_config, source.embedding_size, source.vocab_tokens(),
               source.do_lower_case, **options)

  @classmethod
  def from_pretrained(cls, path: str, *, model_name: Optional[str] = None,
                      vocab_file: Optional[str] = None, strict: bool = True,
                      **options) -> "TextModel":
    """The model with the weights at `path` (any checkpoint of models/sources.py).

    Args:
      path: a Hugging Face directory, our pre-trained or fine-tuned model
        directory, or an official TF1 checkpoint (prefix or directory).
      model_name: an official checkpoint's preset (e.g. electra_base_released),
        for what its shapes do not give (the number of attention heads).
      vocab_file: the vocabulary, when the source has none beside it.
      strict: every encoder variable must load (else one-line SourceError).
      **options: the model's constructor arguments (num_classes, max_seq_length, ...).
    """
    source = sources.load_source(path, model_name, vocab_file)
    model = cls.from_source(source, **options)
    model.load_source(source, strict)
    return model

  # -- what fit, evaluate and predict take -------------------------------------

  def text_columns(self) -> Tuple[int, ...]:
    """How many texts a row of x may have (1; a TextClassifier also 2)."""
    return (1,)

  def prepare_labels(self, y, name: str, x):
    """y as Keras reads it: lists (or dicts of them, for named outputs) as numpy arrays."""
    del x
    if isinstance(y, dict):
      return {key: keras_data.numbers(value, f"{name}[{key!r}]") for key, value in y.items()}
    return keras_data.numbers(y, name)

  def _keras_arguments(self, method, args, kwargs) -> Dict[str, Any]:
    return keras_data.keras_arguments(keras_data.bind(method, args, kwargs),
                                      self.text_columns(), self.prepare_labels,
                                      self._text_inputs_of)

  def _text_inputs_of(self, columns: Tuple[np.ndarray, ...]):
    """Checked text columns -> what `call` takes from Keras: tf.string tensors on
    TensorFlow, else their features padded to max_seq_length (Keras batches them)."""
    if len(columns) > 1:
      self.check_pairs()
    if not tensorflow_backend():
      return self.featurize(*columns, pad_to_max_length=True)
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    tensors = tuple(tf.constant(column.tolist(), tf.string) for column in columns)
    return tensors if len(tensors) > 1 else tensors[0]

  def fit(self, *args, **kwargs):
    """Keras' fit; x, y, sample_weight and validation_data may also be Python lists and
    numpy arrays of strings (a tuple of two for pairs; models/keras_data.py), and x a
    dict of token-id features (`featurize`)."""
    return super().fit(**self._keras_arguments(keras.Model.fit, args, kwargs))

  def evaluate(self, *args, **kwargs):
    """Keras' evaluate, on the same inputs as `fit`."""
    return super().evaluate(**self._keras_arguments(keras.Model.evaluate, args, kwargs))

  def predict(self, x, batch_size: Optional[int] = None, verbose="auto", steps=None,
              callbacks=None, dtype: Optional[str] = None):
    """Keras' predict, on the same inputs as `fit`.

    Texts (lists, numpy arrays or 1-D tf.string tensors; pairs as a tuple of two),
    without `steps` or `callbacks`, are predicted in batches of texts of similar
    length (electra_tf2/utils/batching.py), outputs in input order as numpy arrays
    (per-token ones padded with 0 to the longest row): Keras' values, with fewer pad
    tokens and without its per-call dataset set-up. Anything else (token-id features,
    datasets) goes through Keras' loop, whose ragged per-token outputs are padded the
    same way: never a tf.RaggedTensor.

    dtype: "bfloat16" predicts with a bfloat16 copy of the model (electra_tf2/
    precision.py), its weights copied from this model's at every call.
    """
    if dtype is not None and precision.check_dtype(dtype) != self.dtype_policy.name:
      return self.with_dtype(dtype).predict(x, batch_size, verbose, steps, callbacks)
    columns = _string_columns(keras_data.texts(x, "x", self.text_columns()))
    if columns is not None and len(columns) > 1:
      self.check_pairs()
    if columns is None or steps is not None or callbacks is not None:
      return _padded(super().predict(**self._keras_arguments(
          keras.Model.predict, (x,), dict(batch_size=batch_size, verbose=verbose, steps=steps,
                                          callbacks=callbacks))))
    return self._predict_texts(columns, batch_size or 32, verbose)

  def _predict_texts(self, columns: List[np.ndarray], batch_size: int, verbose):
    if not len(columns[0]):  # empty tensors (an empty list is refused when checked)
      raise keras_data.InputDataError("x is empty: give at least one text")
    run = self._batch_predictor(len(columns))
    order, batches = batching.length_batches(batching.text_lengths(columns), batch_size)
    progress = keras.utils.Progbar(len(batches)) if verbose not in (0, False) else None
    parts = []
    for batch in batches:
      parts.append(run([column[batch] for column in columns]))
      if progress is not None:
        progress.add(1)
    return keras.tree.map_structure(
        lambda *arrays: batching.restore_order(predictions.concatenate_padded(list(arrays)),
                                               order), *parts)

  def _batch_predictor(self, num_inputs: int):
    """Text columns of one batch -> the model's outputs as numpy: on TensorFlow one
    tf.function on the strings, elsewhere Keras' predict step on `featurize`'s features."""
    if not tensorflow_backend():
      return lambda columns: self.predict_on_batch(self.featurize(*columns))
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    function = self._text_function(num_inputs)
    return lambda columns: keras.tree.map_structure(
        lambda t: t.numpy(), function(*[tf.constant(column.tolist(), tf.string)
                                        for column in columns]))

  def with_dtype(self, dtype: Optional[str]) -> "TextModel":
    """This model computing in `dtype` ("float32", "bfloat16"): itself, or a copy (made
    once, its weights copied from this model's at every call)."""
    dtype = precision.check_dtype(dtype)
    if dtype == self.dtype_policy.name:
      return self
    copies = self.__dict__.setdefault("_dtype_copies", {})  # not tracked by Keras
    if dtype not in copies:
      copies[dtype] = precision.with_dtype(self, dtype)
    else:
      precision.copy_weights(self, copies[dtype])
    return copies[dtype]

  def _text_function(self, num_inputs: int):
    """`self(texts, training=False)` as a tf.function on tf.string `[batch]` inputs."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    functions = self.__dict__.setdefault("_text_functions", {})  # not tracked by Keras
    if num_inputs not in functions:
      functions[num_inputs] = tf.function(
          lambda *texts: self(texts if len(texts) > 1 else texts[0], training=False),
          input_signature=[tf.TensorSpec([None], tf.string)] * num_inputs)
    return functions[num_inputs]

  # -- the official recipe ---------------------------------------------------

  def official_optimizer(self, learning_rate: float, num_train_steps: int,
                         layerwise_lr_decay: float = 0.8, fix_layerwise_lr_off_by_one=False,
                         warmup_proportion: float = 0.1, weight_decay_rate: float = 0.01,
                         clip_norm: Optional[float] = 1.0) -> optimization.AdamWeightDecay:
    """The official fine-tuning optimizer (model/optimization.py:30-67) for this model.

    layerwise_lr_decay: the official 0.8 (0 turns it off); with
    `fix_layerwise_lr_off_by_one` the top layer gets decay**1, not decay**2.
    port: Keras losses average over the batch where the official fine-tuning
    loss sums over the batch (run_finetuning.py:71-73): scale the
    learning rate if you want the official step sizes.
    """
    return optimization.create_optimizer(
        learning_rate=learning_rate, num_train_steps=num_train_steps,
        weight_decay_rate=weight_decay_rate, warmup_proportion=warmup_proportion,
        layerwise_lr_decay_power=layerwise_lr_decay,
        n_transformer_layers=self.bert_config.num_hidden_layers,
        variable_name_fn=variable_names.official_name_fn(self.variable_map()),
        fix_layerwise_lr_off_by_one=fix_layerwise_lr_off_by_one, clip_norm=clip_norm)

  def compile_from_config(self, config: Dict[str, Any]) -> None:
    """Compiles as saved in a .keras file; an AdamWeightDecay gets back the official
    variable names its weight-decay and layer-wise rules read (not part of its config).
    On PyTorch a saved `jit_compile` (another backend's XLA) becomes Keras' torch default,
    eager: torch.compile of these models recompiles on layer attributes, with pages of
    torch._dynamo warnings."""
    config = keras.saving.deserialize_keras_object(config)
    if keras.backend.backend() == "torch" and config.get("jit_compile") not in (None, "auto"):
      config = dict(config, jit_compile="auto")
    self.compile(**config)
    if isinstance(self.optimizer, optimization.AdamWeightDecay):
      self.optimizer.variable_name_fn = variable_names.official_name_fn(self.variable_map())
    self.optimizer.build(self.trainable_variables)

  # -- serving -----------------------------------------------------------------

  def text_features(self, *texts) -> Features:
    """The BERT features `call` computes from tf.string `[batch]` texts (TextInputs')."""
    if len(texts) > 1:
      self.check_pairs()
    return self.text_inputs(*texts)

  def litert_features(self, featurizer, *texts) -> Features:
    """The same features from a `LiteRTFeaturizer` (electra_tf2/text/litert_tokenizer.py)."""
    return featurizer.features(*texts)

  def serve_features(self, features: Features) -> Features:
    """The SavedModel's outputs for `text_features` (subclasses name them)."""
    raise NotImplementedError(f"{type(self).__name__} defines no serve_features: a TextModel "
                              "subclass names its SavedModel outputs there (or overrides serve)")

  def serve(self, *texts) -> Features:
    """The SavedModel's outputs for tf.string `[batch]` inputs."""
    return self.serve_features(self.text_features(*texts))

  def serving_inputs(self) -> Tuple[str, ...]:
    """The names of the tf.string `[batch]` tensors `serve` takes."""
    return ("text",)

  def extra_signatures(self) -> Dict[str, Any]:
    """tf.functions the SavedModel also has as signatures, by name (none here)."""
    return {}

  def export_saved_model(self, path: str, dtype: Optional[str] = None) -> str:
    """Writes a SavedModel whose `serving_default` takes raw strings; returns `path`.

    Its inputs are `serving_inputs()` (`text`, and `text_b` for a TextClassifier
    with text_pairs), tf.string `[batch]`; its outputs the model's `serve` dict. dtype
    "bfloat16" stores bfloat16 weights and computes in bfloat16 (electra_tf2/utils/precision.py).

    Serving needs tensorflow and tensorflow-text only (`import tensorflow_text`
    registers the tokenizer's ops before `tf.saved_model.load`). TensorFlow backend only.
    """
    require_tensorflow("export_saved_model", _EXPORT_ELSEWHERE)
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    model = self.with_dtype(dtype)
    root = tf.Module()
    # The TensorFlow variables under the Keras ones, as export.ServingModule does.
    root.weights = [v.value for v in model.variables]
    root.featurizer = model.text_inputs.featurizer
    # Each function as its concrete function: a tf.function attribute would be traced
    # once more by tf.saved_model.save, in its save context (the model's graph built again).
    root.serve = tf.function(lambda *texts: model.serve(*texts), input_signature=[
        tf.TensorSpec([None], tf.string, name) for name in self.serving_inputs()]
                             ).get_concrete_function()
    signatures = {"serving_default": root.serve}
    for name, function in self.extra_signatures().items():
      signatures[name] = function.get_concrete_function()
      setattr(root, name, signatures[name])
    with atomic_directory(path) as tmp:
      tf.saved_model.save(root, tmp, signatures=signatures)
    return path

  def read_rows(self, path: str) -> predictions.Rows:
    """The inputs of every line of a UTF-8 file and for each what its output line starts
    with: `predictions.read_rows` (text: the `serving_inputs()` tab-separated in that
    order, nothing; JSON lines for a .jsonl/.json file: those fields, the "id")."""
    return predictions.read_rows(path, self.serving_inputs(), flag="path")

  def predict_file(self, path: str, output_path: Optional[str] = None,
                   batch_size: int = 32) -> Dict[str, np.ndarray]:
    """Predictions for every row of a file (`read_rows`: a text, or tab-separated pair, per
    line; or JSON lines), with a progress bar; with `output_path`, also one JSON object
    per row there.

    Rows are predicted in batches of similar length (electra_tf2/utils/batching.py);
    outputs are in row order, per-token ones padded with zeros to the longest.
    TensorFlow backend only (its outputs are the SavedModel's, label strings included).
    """
    require_tensorflow("predict_file", "use predict(texts), which runs on every backend")
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    rows, keys = self.read_rows(path)
    outputs = predictions.predict_rows(
        lambda *texts: {k: v.numpy() for k, v in self.serve(*map(tf.constant, texts)).items()},
        rows, batch_size)
    if output_path is not None:
      predictions.write_jsonl(output_path, outputs, keys)
    return outputs

  def export_litert(self, path: str, quantize: str = "none",
                    calibration_texts: Optional[List[str]] = None,
                    target: str = "litert") -> str:
    """Writes a `.tflite` (LiteRT) file that takes raw strings; returns `path`.

    Its `serving_default` signature has the inputs and outputs of
    `export_saved_model`'s; the tokenizer runs inside, on TFLite kernels
    (electra_tf2/text/litert_tokenizer.py). Run it with
    `electra_tf2.LiteRTModel(path).predict(texts)`; docs/deploy.md.

    Args:
      quantize: "none" (float32), "float16", "dynamic-int8" or "int8" (int8
        activations too, calibrated on `calibration_texts`; pairs tab-separated).
      target: "litert" (the above), or "mediapipe" for a TextClassifier: a file for
        MediaPipe Tasks' TextClassifier, on token ids, its tokenizer in the metadata
        (electra_tf2/litert/mediapipe.py; docs/deploy.md).
    TensorFlow backend only.
    """
    require_tensorflow("export_litert", _EXPORT_ELSEWHERE)
    from electra_tf2.litert import convert  # pylint: disable=g-import-not-at-top
    if target != "litert":
      return self._export_for_target(target, path, quantize, calibration_texts)
    from electra_tf2.text.litert_tokenizer import litert_featurizer
    sentencepiece = self.text_inputs.sentencepiece_model
    featurizer = litert_featurizer(self.text_inputs.vocab, self.text_inputs.do_lower_case,
                                   self.max_seq_length,
                                   sentencepiece and base64.b64decode(sentencepiece),
                                   self.text_inputs.strip_accents)
    settings = {"do_lower_case": featurizer.do_lower_case,
                "strip_accents": self.text_inputs.strip_accents,
                "max_seq_length": self.max_seq_length}
    if sentencepiece:
      settings["tokenizer"] = "sentencepiece"
    return convert.write_tflite(
        path, lambda *texts: self.serve_features(self.litert_features(featurizer, *texts)),
        list(self.serving_inputs()), [v.value for v in self.variables], settings, quantize,
        calibration_texts)


  def _export_for_target(self, target: str, path: str, quantize: str,
                         calibration_texts: Optional[List[str]]) -> str:
    """`export_litert` for a target other than "litert": refused here in one line (a
    text classifier overrides it for target mediapipe)."""
    from electra_tf2.litert import mediapipe  # pylint: disable=g-import-not-at-top
    mediapipe.refuse_non_classifier(target, type(self).__name__)
  @classmethod
  def from_config(cls, config: Dict[str, Any], custom_objects=None) -> "TextModel":
    """Keras' `from_config`; a config that does not fit (a file of another version) is one
    line without the config, which holds the whole vocabulary."""
    try:
      return super().from_config(config, custom_objects)
    except TypeError as e:
      raise KerasFileError(f"a {cls.__name__} config that this version cannot build: "
                           f"{str(e).splitlines()[-1]}") from None

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(bert_config=self.bert_config.to_dict(),
                  embedding_size=self.encoder.embedding_size, vocab=self.text_inputs.vocab,
                  do_lower_case=self.text_inputs.do_lower_case,
                  max_seq_length=self.max_seq_length,
                  sentencepiece_model=self.text_inputs.sentencepiece_model,
                  strip_accents=self.text_inputs.strip_accents)
    return config


# What an export on another backend says to do instead.
_EXPORT_ELSEWHERE = ("save the model (model.save('x.keras') or model.save_weights("
                     "'x.weights.h5')), then load it and export it with KERAS_BACKEND=tensorflow")


def head_options(source: sources.Source, found: Optional[Tuple[str, List[str]]],
                 options: Dict[str, Any], what: str) -> Dict[str, Any]:
  """`options` with num_classes (and label_list) of the source's head `found`
  (`(task, [..., out kernel name])`), unless given; what: "classification" or "tagging"."""
  if found is not None:
    task, names = found
    options.setdefault("num_classes", source.tensors[names[-1]].shape[-1])
    labels = source.label_lists.get(task)
    if labels and len(labels) == options["num_classes"]:
      options.setdefault("label_list", labels)
  if "num_classes" not in options:
    raise sources.SourceError(f"{source.path} has no {what} head: pass num_classes")
  return options


def head_to_load(model: TextModel, source: sources.Source,
                 found: Optional[Tuple[str, List[str]]]) -> Tuple[VariableMap, Dict[str, str]]:
  """The model's head variables and their names in `source` (its head `found`, names
  sorted), or nothing when there is none or it has other shapes (the notice names it)."""
  if found is None:
    return {}, {}
  ours = model.head_variable_map()
  rename = dict(zip(sorted(ours), found[1]))
  if any(tuple(ours[k].shape) != source.tensors[v].shape for k, v in rename.items()):
    return {}, {}
  return ours, rename


def _padded(outputs):
  """Keras' loop outputs (an array or a dict of them) with each ragged one (TensorFlow's
  batches padded to different lengths) as one numpy array padded with zeros to the
  longest row."""
  if isinstance(outputs, dict):
    return {k: _padded(v) for k, v in outputs.items()}
  ragged = hasattr(outputs, "flat_values") and hasattr(outputs, "to_tensor")  # tf.RaggedTensor
  return outputs.to_tensor().numpy() if ragged else outputs


def _string_columns(checked) -> Optional[List[np.ndarray]]:
  """Texts checked by `keras_data.texts` as numpy columns (one, or two for a pair); None
  for anything else (features, datasets, tensors of numbers)."""
  parts = checked if isinstance(checked, tuple) else (checked,)
  columns = [p if isinstance(p, np.ndarray) else keras_data.string_tensor_values(p)
             for p in parts]
  if any(c is None for c in columns) or any(len(c) != len(columns[0]) for c in columns):
    return None
  return columns
