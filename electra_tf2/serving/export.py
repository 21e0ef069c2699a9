r"""TF SavedModels with serving signatures on token ids and on raw text.

  electra export --model-dir DATA/models/electra_small \
      --kind discriminator --output-dir export/electra_small_discriminator

  import tensorflow as tf, tensorflow_text  # tensorflow_text registers the tokenizer ops
  model = tf.saved_model.load("export/electra_small_discriminator")
  model.signatures["text"](text=tf.constant(["the chef ate the meal"]))["replaced_probability"]

Kinds: encoder, discriminator (also the `score` signature of scoring.py) and
finetuned; signatures: token_ids, text, text_pair, score. Their inputs,
outputs and truncation rules: docs/design.md#savedmodels.

`--format litert` writes the `text` signature (`text_pair` with --text-pairs) as
a `.tflite` file instead, tokenizer included (docs/deploy.md):

  electra export --model-dir DIR --format litert --quantize dynamic-int8 --output model.tflite

`--target mediapipe` writes a fine-tuned classifier's `.tflite` for MediaPipe Tasks'
TextClassifier instead: token ids in, probabilities out, the WordPiece vocabulary and the
labels in its metadata (electra_tf2/litert/mediapipe.py):

  electra export --model-dir DIR --format litert --target mediapipe --output model.tflite
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
from typing import Any, Callable, Dict, Iterator, NamedTuple, Optional, Sequence


import tensorflow as tf

from electra_tf2.models import model_directory
from electra_tf2.utils import output_names, precision, predictions
from electra_tf2.text import vocab as vocab_lib
from electra_tf2.text import description as tokenizer_description
from electra_tf2.checkpoints import describe as describe_lib
from electra_tf2.scoring import graph as scoring_graph
from electra_tf2.utils.atomic_io import atomic_directory
from electra_tf2.utils.errors import ElectraError, command
from electra_tf2.tasks import task_builder
from electra_tf2.layers.task_heads import ClassificationHead, QAHead
from electra_tf2.litert.convert import MEDIAPIPE_IDS, QUANTIZE, check_quantize
from electra_tf2.litert.mediapipe import TARGETS
from electra_tf2.utils.run_lock import hold
from electra_tf2.text.packing import TextFeaturizer

KINDS = ("encoder", "discriminator", "finetuned")
_IDS = tf.TensorSpec([None, None], tf.int32)
_TEXT = tf.TensorSpec([None], tf.string)


class ExportError(ElectraError, ValueError):
  """A model or option that cannot be exported as asked."""


class ServingModule(tf.Module):
  """A SavedModel root: `token_ids` and, with a vocabulary, `text` / `text_pair` functions.

  Args:
    predict: `(input_ids, input_mask, segment_ids) -> {name: tensor}` on int32
      `[batch, seq_len]` inputs, a Python function over Keras layers.
    variables: the `keras.Variable`s that `predict` reads.
    vocab_file: the vocabulary of the in-graph tokenizer; None for no text signatures.
    do_lower_case: the tokenizer's lowercasing.
    max_seq_length: WordPieces per row of the text signatures, [CLS]/[SEP] included.
    score_logits: `(input_ids, input_mask, segment_ids) -> [batch, seq_len]` discriminator
      logits; with a vocabulary, adds the windowed `score` signature.
    window_stride: tokens between the score signature's windows (default half a window).
    litert_predict: `predict` of a `.tflite`, where it differs (a fine-tuned model's:
      without the old output names the SavedModel keeps as aliases).
    strip_accents: WordPiece's accent stripping; None is the official rule (stripped when
      lowercasing).

  The module tracks the TensorFlow variables under the Keras ones, not the
  Keras layers: a Keras 3 variable is saved as a copy of itself, which TF2
  loading maps back but a TF1 loader (`saved_model_cli run`, TF Serving) does
  not, leaving the functions' own variables uninitialised.
  """

  def __init__(self, predict: Callable[..., Dict[str, tf.Tensor]], variables: Sequence,
               vocab_file: Optional[str] = None, do_lower_case: bool = True,
               max_seq_length: int = 128, score_logits: Optional[Callable] = None,
               window_stride: Optional[int] = None,
               litert_predict: Optional[Callable[..., Dict[str, tf.Tensor]]] = None,
               strip_accents: Optional[bool] = None):
    super().__init__()
    self._predict = predict
    self._litert_predict = litert_predict or predict
    self._variables = [v.value for v in variables]
    self.description = None
    self.token_ids = tf.function(predict, input_signature=[_IDS] * 3)
    self.featurizer = None
    if vocab_file is None:
      return
    if max_seq_length < 3:
      raise ExportError(f"max_seq_length must be >= 3 for text pairs, got {max_seq_length}")
    self.description = tokenizer_description.describe_vocab(vocab_file, do_lower_case,
                                                            strip_accents)
    vocab = vocab_lib.load_vocab(vocab_file)
    self._vocab_tokens = sorted(vocab, key=vocab.get)
    self._sentencepiece_model = None  # the .model's bytes, for a SentencePiece vocabulary
    if self.description.kind == "sentencepiece":
      with tf.io.gfile.GFile(vocab_file, "rb") as f:
        self._sentencepiece_model = f.read()
    self.featurizer = TextFeaturizer(self._vocab_tokens, do_lower_case, max_seq_length,
                                     sentencepiece_model=self._sentencepiece_model,
                                     strip_accents=self.description.strip_accents)
    self.vocab_file = tf.saved_model.Asset(vocab_file)
    self.text = tf.function(lambda text: self._with_features(self.featurizer.single(text)),
                            input_signature=[_TEXT])
    self.text_pair = tf.function(
        lambda text, text_b: self._with_features(self.featurizer.pair(text, text_b)),
        input_signature=[_TEXT, _TEXT])
    self.score = None
    if score_logits is not None:
      stride = scoring_graph.check_stride(max_seq_length, window_stride)
      self.window_stride = stride
      self.score = tf.function(
          lambda text: scoring_graph.score_text_graph(self.featurizer, score_logits, text,
                                                      stride),
          input_signature=[_TEXT])
      settings = {"max_seq_length": max_seq_length, "window_stride": stride,
                  "do_lower_case": bool(do_lower_case),
                  "strip_accents": self.description.strip_accents}
      self.score_settings = tf.function(
          lambda: {k: tf.constant(v) for k, v in settings.items()}, input_signature=[])

  def _with_features(self, features: Dict[str, tf.Tensor],
                     predict: Optional[Callable] = None) -> Dict[str, tf.Tensor]:
    outputs = dict((predict or self._predict)(**features))
    outputs.update(features)
    return outputs

  def write_litert(self, path: str, quantize: str = "none",
                   calibration_texts: Optional[Sequence[str]] = None,
                   text_pairs: bool = False) -> str:
    """Writes the `text` signature (`text_pair` with text_pairs) as a `.tflite` file
    whose tokenizer runs on TFLite kernels (electra_tf2/litert/convert.py)."""
    from electra_tf2.litert import convert  # pylint: disable=g-import-not-at-top
    from electra_tf2.text.litert_tokenizer import litert_featurizer
    if self.featurizer is None:
      raise ExportError("a .tflite takes text: it needs the vocabulary (--vocab-file)")
    length = self.featurizer.max_seq_length
    featurizer = litert_featurizer(self._vocab_tokens, self.description.do_lower_case, length,
                                   self._sentencepiece_model, self.description.strip_accents)
    settings = {"do_lower_case": featurizer.do_lower_case, "max_seq_length": length,
                "strip_accents": self.description.strip_accents}
    if self._sentencepiece_model is not None:
      settings["tokenizer"] = "sentencepiece"
    return convert.write_tflite(
        path, lambda *texts: self._with_features(featurizer.features(*texts),
                                                 self._litert_predict),
        ["text", "text_b"] if text_pairs else ["text"], self._variables, settings, quantize,
        calibration_texts)

  def write_mediapipe(self, path: str, quantize: str, labels: Sequence[str],
                      text_pairs: bool, what: str) -> str:
    """Writes the `probabilities` of a one-head classifier as a `.tflite` for MediaPipe's
    TextClassifier (electra_tf2/litert/mediapipe.py); `what` names the model."""
    from electra_tf2.litert import mediapipe  # pylint: disable=g-import-not-at-top
    if self.featurizer is None:
      raise ExportError("a .tflite for MediaPipe carries the vocabulary: pass --vocab-file")
    mediapipe.check_model(self._vocab_tokens, labels, self.description.do_lower_case,
                          self._sentencepiece_model is not None, text_pairs, what)
    return mediapipe.write_mediapipe(
        path, lambda *ids: self._litert_predict(*ids)[mediapipe.OUTPUT], self._variables,
        self._vocab_tokens, labels, self.featurizer.max_seq_length, quantize)

  def signatures(self) -> Dict[str, tf.types.experimental.ConcreteFunction]:
    functions = {"token_ids": self.token_ids.get_concrete_function()}
    if self.featurizer is not None:
      functions["text"] = self.text.get_concrete_function()
      functions["text_pair"] = self.text_pair.get_concrete_function()
      if self.score is not None:
        functions["score"] = self.score.get_concrete_function()
    functions["serving_default"] = functions.get("text", functions["token_ids"])
    return functions

  @contextlib.contextmanager
  def _traced(self) -> Iterator[None]:
    """Each tf.function attribute as its one concrete function while the module is saved:
    `tf.saved_model.save` would trace every tf.function attribute once more in its save
    context (the model's graph built again per function); the SavedModel's attributes
    call the same graphs (`model.score_settings()`, `model.text(text)`)."""
    functions = {name: value for name, value in vars(self).items()
                 if isinstance(value, tf.types.experimental.PolymorphicFunction)}
    for name, function in functions.items():
      setattr(self, name, function.get_concrete_function())
    try:
      yield
    finally:
      for name, function in functions.items():
        setattr(self, name, function)

  @staticmethod
  def check_output(path: str) -> None:
    """ExportError when `path` holds files that are not a SavedModel (never overwritten)."""
    if tf.io.gfile.isdir(path) and tf.io.gfile.listdir(path) and \
        not tf.io.gfile.exists(os.path.join(path, "saved_model.pb")):
      raise ExportError(f"{path} already holds files that are not a SavedModel; give a new or "
                        "empty output directory")

  def save(self, path: str) -> str:
    """Writes the SavedModel to `path` (through a temporary directory); returns `path`.

    An existing SavedModel at `path` is replaced; a directory holding anything
    else is refused, so that nothing already written is lost.
    """
    self.check_output(path)
    signatures = self.signatures()
    with atomic_directory(path) as tmp, self._traced():
      tf.saved_model.save(self, tmp, signatures=signatures)
      if self.description is not None:
        tokenizer_description.write_description(tmp, self.description)
    return path


def encoder_outputs(encoder) -> Callable[..., Dict[str, tf.Tensor]]:
  """`sequence_output` [batch, seq_len, H] and `pooled_output` [batch, H] (the [CLS] state)."""
  def predict(input_ids, input_mask, segment_ids):
    sequence = encoder(input_ids, input_mask, segment_ids, training=False)
    return {"sequence_output": sequence, "pooled_output": sequence[:, 0]}
  return predict


def discriminator_outputs(encoder, head) -> Callable[..., Dict[str, tf.Tensor]]:
  """`logits` and `replaced_probability` (their sigmoid), [batch, seq_len]."""
  def predict(input_ids, input_mask, segment_ids):
    logits = head(encoder(input_ids, input_mask, segment_ids, training=False))
    return {"logits": logits, "replaced_probability": tf.sigmoid(logits)}
  return predict


def finetuned_outputs(model, legacy: bool = True, skip_padding: bool = False
                      ) -> Callable[..., Dict[str, tf.Tensor]]:
  """Every head's outputs as its `serving_outputs` names them (electra_tf2/utils/output_names.py):
  `logits`, `probabilities`, `label` (classification), `score` (regression), `logits`,
  `labels` (tagging); with several heads, `<task>_<name>`. With legacy, also the names
  before that rule (a SavedModel's aliases): `<task>_<head output>` and `<task>_label`.

  Each head gets its `serving_features`: a tagging head is asked for every position, so
  its predictions are per WordPiece (the official task reads the first WordPiece of
  each word). skip_padding:
  the encoder's (`Encoder.call`), for a model whose heads read [CLS] alone.
  """

  def predict(input_ids, input_mask, segment_ids):
    features = {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}
    for head in model.heads:
      features.update(head.serving_features(input_ids))
    heads = model(features, training=False, skip_padding=skip_padding)
    outputs = {}
    for task, head in heads.items():
      named = model.head(task).serving_outputs(head, _label_names)
      if legacy:
        outputs.update({f"{task}_{name}": value for name, value in head.items()})
        if "label" in named:
          outputs[f"{task}_label"] = named["label"]
      outputs.update({output_names.output_name(task, name, len(heads)): value
                      for name, value in named.items()})
    return outputs
  return predict


def _label_names(labels: Sequence[str], ids: tf.Tensor) -> tf.Tensor:
  """The label strings of label ids (a head's `serving_outputs` asks for them)."""
  return tf.gather(tf.constant(list(labels)), ids)


def float32_outputs(predict: Callable[..., Dict[str, tf.Tensor]]
                    ) -> Callable[..., Dict[str, tf.Tensor]]:
  """`predict` with its bfloat16 outputs cast to float32."""
  def cast(input_ids, input_mask, segment_ids):  # the token_ids signature's input names
    return {k: tf.cast(v, tf.float32) if v.dtype == tf.bfloat16 else v
            for k, v in predict(input_ids, input_mask, segment_ids).items()}
  return cast


def serving_module(model, kind: str, vocab_file: Optional[str] = None,
                   do_lower_case: bool = True, max_seq_length: int = 128,
                   window_stride: Optional[int] = None,
                   dtype: Optional[str] = None, *,
                   strip_accents: Optional[bool] = None) -> ServingModule:
  """The `ServingModule` of one `kind`.

  `model` is an `ElectraPretrainer` for "encoder" and "discriminator", a
  `FinetuningModel` for "finetuned". `window_stride` is the discriminator's
  `score` signature's (default half a window). dtype "bfloat16": bfloat16 weights
  and matmuls (electra_tf2/utils/precision.py), float32 outputs. strip_accents: WordPiece's
  accent stripping (None: the official rule, stripped when lowercasing).
  """
  if kind not in KINDS:
    raise ExportError(f"unknown kind {kind!r}: use one of {', '.join(KINDS)}")
  precision.check_dtype(dtype, "--dtype")
  encoder = model.encoder if kind == "finetuned" else model.discriminator
  if max_seq_length > encoder.bert_config.max_position_embeddings:
    raise ExportError(f"max_seq_length {max_seq_length} exceeds max_position_embeddings "
                      f"{encoder.bert_config.max_position_embeddings}")
  options = dict(vocab_file=vocab_file, do_lower_case=do_lower_case,
                 max_seq_length=max_seq_length, strip_accents=strip_accents)
  if kind == "finetuned":
    model = precision.with_dtype(model, dtype)
    # The SavedModel skips the padding's rows where no output is per token.
    saved = finetuned_outputs(model, skip_padding=model.reads_first_token_only())
    return ServingModule(float32_outputs(saved), model.variables,
                         litert_predict=float32_outputs(finetuned_outputs(model, legacy=False)),
                         **options)
  encoder = precision.with_dtype(encoder, dtype)
  if kind == "encoder":
    return ServingModule(float32_outputs(encoder_outputs(encoder)), encoder.variables,
                         **options)
  model.check_electra_discriminator("--kind discriminator", "export --kind encoder")
  head = precision.with_dtype(model.discriminator_head, dtype,
                              lambda h: h.build((None, None, encoder.hidden_size)))
  outputs = float32_outputs(discriminator_outputs(encoder, head))
  return ServingModule(outputs, encoder.variables + head.variables,
                       score_logits=lambda *features: outputs(*features)["logits"],
                       window_stride=window_stride, **options)


class _Loaded(NamedTuple):
  """A model directory, loaded for export."""
  model: Any  # the pre-trainer, or the fine-tuned model
  kind: str  # "encoder", "discriminator" or "finetuned"
  vocab_file: Optional[str]
  do_lower_case: bool
  max_seq_length: int
  finetuned: Optional[tuple]  # a fine-tuned model's (Description, FinetuningConfig)
  tokenizer: Any  # its tokenizer description (text/description.py), or None


def _load(model_dir: str, kind: Optional[str], checkpoint_path: Optional[str]) -> _Loaded:
  """The model of a model directory, with what its export needs."""
  found = describe_lib.describe(model_dir)
  if found.kind not in ("pretrained", "finetuned"):
    raise ExportError(f"--model-dir {model_dir} is {describe_lib.KIND_NAMES[found.kind]}: export "
                      "takes our model directories (electra convert to-tf2, to-tf2-finetuned or "
                      "from-hf writes one)")
  if kind is None:
    kind = "finetuned" if found.kind == "finetuned" else "discriminator"
  if kind == "finetuned":
    from electra_tf2.models import (  # pylint: disable=g-import-not-at-top
        finetuning as finetune_model)
    model, config = finetune_model.load_finetuned_model(found.model_dir,
                                                        checkpoint_path or found.checkpoint)
    return _Loaded(model, kind, found.vocab_file, found.do_lower_case, config.max_seq_length,
                   (found, config), found.tokenizer)
  config = found.pretraining_config
  model = model_directory.restore_pretrainer(found.model_dir, checkpoint_path or found.checkpoint,
                                             config)
  return _Loaded(model, kind, found.vocab_file, found.do_lower_case, config.max_seq_length,
                 None, found.tokenizer)


def _question_answerer(finetuned, model, vocab_file: str, do_lower_case: bool,
                       max_seq_length: Optional[int], doc_stride: Optional[int] = None,
                       strip_accents: Optional[bool] = None):
  """The `QuestionAnswerer` of a loaded fine-tuned QA model (SQuAD, MRQA); doc_stride:
  the tokens between its windows over a long context (default the config's)."""
  from electra_tf2.models import sources as source_lib  # pylint: disable=g-import-not-at-top
  from electra_tf2.models import question_answerer  # pylint: disable=g-import-not-at-top
  source = dataclasses.replace(source_lib.finetuned_source(*finetuned, model),
                               vocab_file=vocab_file, do_lower_case=do_lower_case,
                               strip_accents=strip_accents)
  options = {} if max_seq_length is None else {"max_seq_length": max_seq_length}
  if doc_stride is not None:
    options["doc_stride"] = doc_stride
  answerer = question_answerer.QuestionAnswerer.from_source(source, **options)
  answerer.load_source(source)
  return answerer


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
                                   description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--model-dir", required=True,
                      help="a pre-trained model directory (pretrain_config.json + ckpt-N) or "
                           "a fine-tuned one (finetuning_models/<tasks>_model_<trial>)")
  parser.add_argument("--checkpoint", default=None, help="a ckpt-N prefix (default the latest)")
  parser.add_argument("--kind", choices=KINDS, default=None,
                      help="default: finetuned for a fine-tuned model dir, else discriminator")
  parser.add_argument("--format", choices=("savedmodel", "litert", "keras-hub"),
                      default="savedmodel",
                      help="a SavedModel directory (default), a .tflite file (LiteRT), or a "
                           "keras-hub preset directory of the discriminator's encoder "
                           "(ElectraBackbone and ElectraTokenizer; the keras-hub extra)")
  parser.add_argument("--output-dir", default=None, help="SavedModel directory to write")
  parser.add_argument("--output", default=None, help="--format litert: the .tflite file to write")
  parser.add_argument("--target", choices=TARGETS, default="litert",
                      help="--format litert: litert (the tokenizer inside; LiteRTModel, "
                           "electra predict) or mediapipe (token ids in, probabilities out, "
                           "for MediaPipe Tasks' TextClassifier: a fine-tuned model with one "
                           "classification head on single texts)")
  parser.add_argument("--quantize", choices=QUANTIZE, default="none",
                      help="--format litert: float32 weights (none), float16, int8 weights "
                           "(dynamic-int8) or int8 weights and activations (int8, calibrated "
                           "on --calibration-file)")
  parser.add_argument("--calibration-file", default=None,
                      help="--quantize int8: representative texts, one per line (pairs "
                           "tab-separated)")
  parser.add_argument("--text-pairs", action="store_true",
                      help="--format litert: the .tflite takes text and text_b (default for "
                           "a fine-tuned pair task, e.g. MNLI or MRPC)")
  parser.add_argument("--vocab-file", default=None,
                      help="vocabulary (default: the model dir's vocab.txt or the config's)")
  parser.add_argument("--do-lower-case", action=argparse.BooleanOptionalAction, default=None,
                      help="lowercase text (default: the config's do_lower_case)")
  parser.add_argument("--max-seq-length", type=int, default=None,
                      help="WordPieces per row of the text signatures, [CLS] and [SEP] "
                           "included (default: the config's max_seq_length)")
  parser.add_argument("--window-stride", type=int, default=None,
                      help="tokens between the windows of the discriminator's score signature "
                           "(default half of max_seq_length - 2), or of a QA model's windows "
                           "over long contexts (its doc_stride; default the config's)")
  parser.add_argument("--no-text-signatures", dest="text", action="store_false",
                      help="only the token_ids signature: no tensorflow-text op in the model")
  parser.add_argument("--dtype", choices=precision.DTYPES, default="float32",
                      help="bfloat16: bfloat16 weights and matmuls, faster on CPUs with bf16 "
                           "units (AVX512_BF16, AMX); outputs stay float32")
  return parser


@command
def main(argv: Optional[Sequence[str]] = None) -> int:
  args = _parser().parse_args(argv)
  if args.format == "keras-hub":
    return _write_keras_hub(args)
  calibration_texts = _check_format_flags(args)
  model, kind, vocab_file, lower, max_seq_length, finetuned, tokenizer = _load(
      args.model_dir, args.kind, args.checkpoint)
  vocab_file = args.vocab_file or vocab_file
  if args.text and vocab_file is None:
    raise ExportError("the text signatures need the vocabulary: pass --vocab-file (or "
                      "--no-text-signatures)")
  lower = lower if args.do_lower_case is None else args.do_lower_case
  # The directory's accent stripping, where its casing is the one exported.
  strip = tokenizer.strip_accents if tokenizer and tokenizer.do_lower_case == lower else None
  qa = kind == "finetuned" and any(isinstance(head, QAHead) for head in model.heads)
  _check_window_stride(args, kind, qa)
  if args.target == "mediapipe":
    return _write_mediapipe(args, model, kind, vocab_file, lower, max_seq_length, strip)
  if qa and args.text:
    return _write_question_answerer(args, _question_answerer(
        finetuned, model, vocab_file, lower, args.max_seq_length, args.window_stride, strip),
        calibration_texts)
  module = serving_module(model, kind, vocab_file if args.text else None, lower,
                          args.max_seq_length or max_seq_length, args.window_stride, args.dtype,
                          strip_accents=strip)
  if args.format == "litert":
    text_pairs = args.text_pairs or (kind == "finetuned" and any(
        task_builder.takes_pairs(task) for task in model.task_names))
    module.write_litert(args.output, args.quantize, calibration_texts, text_pairs)
    print(f"wrote {args.output} ({kind}, quantize {args.quantize}; inputs: text"
          f"{', text_b' if text_pairs else ''})")
    return 0
  with hold(args.output_dir):
    module.save(args.output_dir)
  print(f"wrote {args.output_dir} ({kind}; signatures: {', '.join(sorted(module.signatures()))})")
  return 0


def _write_question_answerer(args, answerer, calibration_texts) -> int:
  """A QA model on raw text: a SavedModel (question, context), or a .tflite file whose
  windows and answers LiteRTModel computes in Python."""
  if args.format == "litert":
    answerer.export_litert(args.output, args.quantize, calibration_texts)
    print(f"wrote {args.output} (question answering, quantize {args.quantize}; inputs: "
          "question, context through LiteRTModel: windows and answers in Python)")
    return 0
  with hold(args.output_dir):
    ServingModule.check_output(args.output_dir)
    answerer.export_saved_model(args.output_dir, args.dtype)
  print(f"wrote {args.output_dir} (question answering; signatures: serving_default "
        f"(question, context), {', '.join(answerer.extra_signatures())})")
  return 0


def _write_keras_hub(args) -> int:
  """--format keras-hub: the preset directory --output-dir."""
  if args.output_dir is None:
    raise ExportError("--format keras-hub writes a preset directory: pass --output-dir")
  from electra_tf2.conversion import keras_hub  # pylint: disable=g-import-not-at-top
  with hold(args.output_dir):
    print(keras_hub.export_preset(args.model_dir, args.output_dir))
  print(f"wrote {args.output_dir} (keras-hub preset: ElectraBackbone, ElectraTokenizer)")
  return 0


def _write_mediapipe(args, model, kind: str, vocab_file: str, lower: bool,
                     max_seq_length: int, strip_accents: Optional[bool]) -> int:
  """--target mediapipe: a fine-tuned model with one classification head."""
  heads = [f"{spec['task']} ({spec['kind']})" for spec in model.head_specs] \
      if kind == "finetuned" else []
  if len(heads) != 1 or not isinstance(model.heads[0], ClassificationHead):
    has = f"kind {kind}" if kind != "finetuned" else f"heads {', '.join(heads)}"
    raise ExportError(f"--target mediapipe writes a text classifier: give a fine-tuned model "
                      f"with one classification head ({args.model_dir} has {has})")
  spec = model.head_specs[0]
  module = serving_module(model, kind, vocab_file, lower, args.max_seq_length or max_seq_length,
                          strip_accents=strip_accents)
  module.write_mediapipe(args.output, args.quantize, list(spec["label_list"]),
                         args.text_pairs or task_builder.takes_pairs(spec["task"]),
                         f"--model-dir {args.model_dir}")
  print(f"wrote {args.output} ({spec['task']} classifier for MediaPipe, quantize "
        f"{args.quantize}; inputs: {', '.join(MEDIAPIPE_IDS)} [1, "
        f"{module.featurizer.max_seq_length}]; metadata: vocab.txt, labels.txt)")
  return 0


def _check_window_stride(args, kind: str, qa: bool) -> None:
  """--window-stride is the score signature's stride (discriminator SavedModels) or the
  stride of a QA model's windows over long contexts; refused where nothing has windows."""
  if args.window_stride is None:
    return
  if args.window_stride < 1:
    raise ExportError(f"--window-stride must be >= 1, got {args.window_stride}")
  if not (qa or (kind == "discriminator" and args.format == "savedmodel")):
    what = (f"a .tflite of kind {kind}" if args.format == "litert" and not qa
            else f"kind {kind} without question answering")
    raise ExportError(f"--window-stride sets the windows of the discriminator's score "
                      f"signature (a SavedModel) or of question answering: {what} has none")


def _check_format_flags(args) -> Optional[Sequence[str]]:
  """The output flag of --format and the --quantize flags (one line if wrong); returns
  the calibration texts."""
  if args.format == "savedmodel":
    if args.output_dir is None:
      raise ExportError("--output-dir is required (the SavedModel directory to write)")
    litert_only = [f"--{name.replace('_', '-')}" for name in
                   ("output", "calibration_file", "text_pairs") if getattr(args, name)]
    if args.quantize != "none":
      litert_only.append("--quantize")
    if args.target != "litert":
      litert_only.append("--target")
    if litert_only:
      raise ExportError(f"{', '.join(litert_only)} only apply to --format litert")
    return None
  if args.output is None:
    raise ExportError("--format litert writes one file: give --output MODEL.tflite")
  if args.dtype != "float32":
    raise ExportError(f"--dtype {args.dtype} applies to SavedModels: a .tflite computes in "
                      "float32; --quantize float16 or dynamic-int8 make it smaller")
  if not args.text:
    raise ExportError("--format litert takes text: --no-text-signatures does not apply")
  if args.calibration_file is None:
    check_quantize(args.quantize, None)
    return None
  texts = [line for _, line, _ in predictions.text_lines(args.calibration_file,
                                                          "--calibration-file", ExportError)
           if line.strip()]
  check_quantize(args.quantize, texts)
  return texts
