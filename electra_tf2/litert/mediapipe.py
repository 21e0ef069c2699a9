"""`.tflite` files for MediaPipe Tasks' `TextClassifier` (Android, iOS, web, Python).

MediaPipe tokenizes the text itself, from the file's metadata, and runs the model on
token ids (its BERT path, mediapipe/calculators/tensor/bert_preprocessor_calculator.cc):

  inputs   `input_word_ids`, `input_mask`, `input_type_ids`: int32 [1, max_seq_length]
           ([CLS] text [SEP], zero-padded; type ids all 0);
  output   `probabilities`: float32 [1, num_labels] (MediaPipe reports them as scores).

The metadata is the TFLite metadata schema's (mediapipe/tasks/metadata/metadata_schema.fbs,
root `ModelMetadata`, identifier "M001"), written here with the `flatbuffers` package
alone, with what MediaPipe's `text_classifier.MetadataWriter.create_for_bert_model`
writes (mediapipe/tasks/python/metadata/metadata_writers/metadata_writer.py,
metadata_info.py): the inputs' metadata named `ids`, `mask`, `segment_ids` (MediaPipe
finds the tensors by these names), a `BertTokenizerOptions` input process unit naming
`vocab.txt`, the output `score` with `labels.txt` (TENSOR_AXIS_LABELS). It is stored as
the model's metadata entry "TFLITE_METADATA"; `vocab.txt` and `labels.txt` follow the
flatbuffer as an uncompressed zip archive (metadata.py's MetadataPopulator).

MediaPipe lowercases every text (ASCII only) and never strips accents: a cased model is
refused, and where its tokens differ from ours is measured in docs/deploy.md. It has
no SentencePiece path for these models here: such a model is refused too.
"""

from __future__ import annotations

import dataclasses
import io
import zipfile
from typing import Any, Callable, Dict, List, NoReturn, Optional, Sequence

import flatbuffers
import tensorflow as tf

from electra_tf2.litert import convert

# The model's inputs, as BERT's TF Hub models and MediaPipe Model Maker name them, and the
# metadata names MediaPipe looks them up by (same order).
INPUTS = convert.MEDIAPIPE_IDS
INPUT_METADATA = (("ids", "Tokenized ids of the input text."),
                  ("mask", "Mask with 1 for real tokens and 0 for padding tokens."),
                  ("segment_ids", "0 for the first sequence, 1 for the second sequence if "
                                  "exists."))
OUTPUT = "probabilities"
TARGETS = ("litert", "mediapipe")  # export_litert's: LiteRTModel's file, or MediaPipe's
VOCAB_FILE, LABELS_FILE = "vocab.txt", "labels.txt"
METADATA_FIELD = "TFLITE_METADATA"  # the model's metadata entry MediaPipe reads
METADATA_IDENTIFIER = b"M001"
# The oldest metadata parser that reads what is written here: the highest version of the
# schema members used (mediapipe/tasks/cc/metadata/metadata_version.cc: the VOCABULARY
# file type 1.0.1, input process units and BertTokenizerOptions 1.1.0).
MIN_PARSER_VERSION = "1.1.0"
# The tokens MediaPipe's BERT preprocessing adds or falls back to, by these spellings.
SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[UNK]")

# What each refusal says to do instead.
_INSTEAD = "export it with target litert (--target litert), for LiteRTModel"
# Enum and union values of the schema.
_FEATURE_PROPERTIES = 1  # ContentProperties
_BERT_TOKENIZER_OPTIONS = 4  # ProcessUnitOptions
_TENSOR_AXIS_LABELS, _VOCABULARY = 2, 5  # AssociatedFileType


class MediaPipeError(convert.LiteRTError):
  """A model that MediaPipe's TextClassifier cannot run as it was trained."""


@dataclasses.dataclass
class Byte:
  """A one-byte scalar field (an enum, or a union's type)."""
  value: int


@dataclasses.dataclass
class Table:
  """A table of the metadata schema: its number of fields (a union counts two: its type,
  then its value) and {field index: value}; a value is a str, a Byte, a Table, a list of
  Tables or a list of floats (a vector of float32)."""
  size: int
  fields: Dict[int, Any]


def _build(builder: flatbuffers.Builder, value) -> int:
  """The offset of `value` (not a Byte) written into `builder`."""
  if isinstance(value, str):
    return builder.CreateString(value)
  if isinstance(value, Table):
    offsets = {i: _build(builder, v) for i, v in value.fields.items() if not isinstance(v, Byte)}
    builder.StartObject(value.size)
    for i, v in value.fields.items():
      if isinstance(v, Byte):
        builder.PrependUint8Slot(i, v.value, 0)
      else:
        builder.PrependUOffsetTRelativeSlot(i, offsets[i], 0)
    return builder.EndObject()
  floats = bool(value) and all(isinstance(v, float) for v in value)
  offsets = value if floats else [_build(builder, v) for v in value]
  builder.StartVector(4, len(offsets), 4)
  for v in reversed(offsets):
    if floats:
      builder.PrependFloat32(v)
    else:
      builder.PrependUOffsetTRelative(v)
  return builder.EndVector()


def _file(name: str, description: str, file_type: int) -> Table:
  """An AssociatedFile: name, description, type (of 5 fields)."""
  return Table(5, {0: name, 1: description, 2: Byte(file_type)})


def _tensor(name: str, description: str, low_high: Optional[Sequence[float]] = None,
            files: Sequence[Table] = ()) -> Table:
  """A TensorMetadata: name, description, content (FeatureProperties), stats (min, max),
  associated files (of 7 fields)."""
  content = Table(3, {0: Byte(_FEATURE_PROPERTIES), 1: Table(0, {})})
  stats = Table(2, {} if low_high is None else {0: [float(low_high[1])],
                                                1: [float(low_high[0])]})
  fields = {0: name, 1: description, 3: content, 5: stats}
  if files:
    fields[6] = list(files)
  return Table(7, fields)


def metadata_buffer(input_order: Sequence[int], name: str, description: str) -> bytes:
  """The ModelMetadata flatbuffer of a text classifier whose model inputs are INPUTS in
  `input_order` (the model's input i is INPUTS[input_order[i]])."""
  vocab = _file(VOCAB_FILE, "Vocabulary file to convert natural language words to "
                "embedding vectors.", _VOCABULARY)
  tokenizer = Table(2, {0: Byte(_BERT_TOKENIZER_OPTIONS), 1: Table(1, {0: [vocab]})})
  labels = _file(LABELS_FILE, "Labels for categories that the model can recognize.",
                 _TENSOR_AXIS_LABELS)
  score = _tensor("score", "Score of the labels respectively.", (0.0, 1.0), [labels])
  subgraph = Table(10, {2: [_tensor(*INPUT_METADATA[i]) for i in input_order],
                        3: [score], 5: [tokenizer]})
  root = Table(8, {0: name, 1: description, 3: [subgraph], 7: MIN_PARSER_VERSION})
  builder = flatbuffers.Builder(1024)
  builder.Finish(_build(builder, root), METADATA_IDENTIFIER)
  return bytes(builder.Output())


def input_order(model: bytes) -> List[int]:
  """The index in INPUTS of each input of `model`'s graph, in its order."""
  from tensorflow.lite.python import schema_py_generated as schema
  graph = schema.Model.GetRootAsModel(model, 0).Subgraphs(0)
  names = [graph.Tensors(graph.Inputs(i)).Name().decode("utf-8")
           for i in range(graph.InputsLength())]
  order = [next((j for j, want in enumerate(INPUTS) if name.endswith(f"_{want}:0")), None)
           for name in names]
  if None in order or sorted(order) != [0, 1, 2]:
    raise MediaPipeError(f"the converted model's inputs are {', '.join(names)}, not "
                         f"{', '.join(INPUTS)}")
  return order


def populate(model: bytes, vocab: Sequence[str], labels: Sequence[str], name: str) -> bytes:
  """`model` with MediaPipe's metadata and, after it, `vocab.txt` and `labels.txt`."""
  metadata = metadata_buffer(input_order(model), name,
                             "Classifies a text: the probability of each label.")
  archive = io.BytesIO()
  with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as zf:
    zf.writestr(VOCAB_FILE, "\n".join(vocab) + "\n")
    zf.writestr(LABELS_FILE, "\n".join(labels))
  # As the zip metadata.py's populator appends: offsets from the archive's own start;
  # readers (zipfile, MediaPipe's) find it from the file's end.
  return convert.add_metadata(model, {METADATA_FIELD: metadata}) + archive.getvalue()


def check_model(vocab: Sequence[str], labels: Sequence[str], do_lower_case: bool,
                sentencepiece: bool, text_pairs: bool, what: str) -> None:
  """One line when MediaPipe's TextClassifier would not run the model as trained; `what`
  names the model (and the option to use instead)."""
  if text_pairs:
    raise MediaPipeError(f"{what} takes text pairs; MediaPipe's TextClassifier takes one "
                         f"text: {_INSTEAD}")
  if sentencepiece:
    raise MediaPipeError(f"{what} has a SentencePiece tokenizer; target mediapipe writes "
                         f"WordPiece metadata only: {_INSTEAD}")
  if not do_lower_case:
    raise MediaPipeError(f"{what} is cased (do_lower_case false); MediaPipe's TextClassifier "
                         f"lowercases every text: {_INSTEAD}")
  missing = [t for t in SPECIAL_TOKENS if t not in vocab]
  if missing:
    raise MediaPipeError(f"{what}'s vocabulary lacks {', '.join(missing)}, which MediaPipe's "
                         f"BERT tokenizer adds: {_INSTEAD}")
  if len(labels) < 2:
    raise MediaPipeError(f"{what} gives a score (regression); MediaPipe's TextClassifier "
                         f"takes class probabilities: {_INSTEAD}")
  bad = [label for label in labels if "\n" in label or "\r" in label]
  if bad:
    raise MediaPipeError(f"{what}'s label {bad[0]!r} holds a line break, which labels.txt "
                         "cannot: rename it")


def write_mediapipe(path: str, probabilities: Callable[..., tf.Tensor], variables: Sequence,
                    vocab: Sequence[str], labels: Sequence[str], max_seq_length: int,
                    quantize: str = "none", calibration_texts: Optional[Sequence[str]] = None,
                    name: str = "ELECTRA text classifier") -> str:
  """Writes the `.tflite` of `probabilities(input_ids, input_mask, segment_ids)` (int32
  `[1, max_seq_length]` each -> `[1, len(labels)]`) for MediaPipe's TextClassifier to
  `path` (atomically); returns `path`. `variables`: the TensorFlow variables it reads.

  quantize: "none", "float16" or "dynamic-int8" (convert.write_tflite's; "int8" and
  `calibration_texts` are refused there: the file takes no texts).
  """
  def serve(input_ids, input_mask, segment_ids):
    return {OUTPUT: probabilities(input_ids, input_mask, segment_ids)}
  settings = {"do_lower_case": True, "max_seq_length": max_seq_length, "target": "mediapipe"}
  model = convert.tflite_model(serve, INPUTS, variables, settings, quantize, calibration_texts)
  return convert.write_file(path, populate(model, vocab, labels, name))


def check_target(target: str) -> None:
  """Refuses an unknown `export_litert` target in one line."""
  if target not in TARGETS:
    raise convert.LiteRTError(f"target must be one of {', '.join(TARGETS)}, got {target!r}")


def refuse_non_classifier(target: str, what: str) -> NoReturn:
  """`export_litert(target=...)`, other than "litert", of a model (`what`, its class name)
  that is no text classifier: refused in one line."""
  check_target(target)
  raise MediaPipeError(f"target mediapipe writes a file for MediaPipe's TextClassifier; a "
                       f"{what} is no text classifier: {_INSTEAD}")


def export_classifier(model, path: str, quantize: str = "none",
                      calibration_texts: Optional[Sequence[str]] = None) -> str:
  """`TextClassifier.export_litert(path, quantize, target="mediapipe")`: the Keras text
  classifier `model`'s file for MediaPipe (its `serve`'s probabilities)."""
  what = type(model).__name__
  inputs = model.text_inputs
  check_model(inputs.vocab, model.label_list, inputs.do_lower_case,
              bool(inputs.sentencepiece_model), model.text_pairs, f"this {what}")

  def probabilities(input_ids, input_mask, segment_ids):
    return model.serve_features({"input_ids": input_ids, "input_mask": input_mask,
                                 "segment_ids": segment_ids})[OUTPUT]
  return write_mediapipe(path, probabilities, [v.value for v in model.variables],
                         inputs.vocab, model.label_list, model.max_seq_length, quantize,
                         calibration_texts)
