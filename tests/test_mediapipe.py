"""`.tflite` files for MediaPipe Tasks' TextClassifier (export_litert(target="mediapipe")):
the metadata MediaPipe reads, the model on token ids, refusals; and MediaPipe's own
TextClassifier on the file, where the `mediapipe` package is installed (the extra).

Oracles: the metadata is parsed with a reader written here from the schema
(mediapipe/tasks/metadata/metadata_schema.fbs), apart from the writer, and with zipfile;
the probabilities are the Keras model's `serve` (what its SavedModel returns) on the
same texts; MediaPipe's TextClassifier tokenizes the texts itself.
"""

import io
import zipfile

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")

from flatbuffers import encode, number_types, packer, table  # noqa: E402

from fixtures import WORD_VOCAB  # noqa: E402

import electra_tf2  # noqa: E402
from electra_tf2 import BertConfig, LiteRTModel  # noqa: E402
from electra_tf2.utils.errors import ElectraError  # noqa: E402
from electra_tf2.litert import mediapipe  # noqa: E402

MAX_SEQ_LENGTH = 16
LABELS = ["negative", "neutral", "positive"]
# Lower-case ASCII words of WORD_VOCAB: MediaPipe's tokenizer and ours agree on them.
TEXTS = ["the cat sat on the mat .", "what is the capital of france ?", "the dog runs fast",
         "a big red house", "he runs " * 12]


def bert_config():
  return BertConfig(len(WORD_VOCAB), hidden_size=32, num_hidden_layers=2,
                    num_attention_heads=2, intermediate_size=64)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
  """A tiny random classifier, its probabilities on TEXTS and its MediaPipe files."""
  root = tmp_path_factory.mktemp("mediapipe")
  tf.keras.utils.set_random_seed(7)
  model = electra_tf2.TextClassifier(bert_config(), None, WORD_VOCAB, num_classes=3,
                                     max_seq_length=MAX_SEQ_LENGTH, label_list=LABELS)
  paths = {q: model.export_litert(str(root / f"{q}.tflite"), q, target="mediapipe")
           for q in ("none", "dynamic-int8")}
  expected = model.serve(tf.constant(TEXTS))["probabilities"].numpy()
  return model, paths, expected


class Node:
  """A table of a flatbuffer, read by field index (each field's vtable entry)."""

  def __init__(self, buf: bytes, pos: int):
    self.t = table.Table(bytearray(buf), pos)

  def _at(self, field: int) -> int:
    return self.t.Offset(4 + 2 * field)

  def str(self, field: int):
    o = self._at(field)
    return self.t.String(o + self.t.Pos).decode("utf-8") if o else None

  def byte(self, field: int) -> int:
    o = self._at(field)
    return self.t.Get(number_types.Uint8Flags, o + self.t.Pos) if o else 0

  def node(self, field: int):
    o = self._at(field)
    return Node(self.t.Bytes, self.t.Indirect(o + self.t.Pos)) if o else None

  def nodes(self, field: int):
    o = self._at(field)
    if not o:
      return []
    start = self.t.Vector(o)
    return [Node(self.t.Bytes, self.t.Indirect(start + 4 * i)) for i in range(self.t.VectorLen(o))]

  def floats(self, field: int):
    o = self._at(field)
    if not o:
      return []
    start = self.t.Vector(o)
    return [encode.Get(packer.float32, self.t.Bytes, start + 4 * i)
            for i in range(self.t.VectorLen(o))]


def metadata_of(content: bytes) -> bytes:
  """The TFLITE_METADATA buffer of a .tflite (TensorFlow's own schema reader)."""
  from tensorflow.lite.python import schema_py_generated as schema
  root = schema.Model.GetRootAsModel(content, 0)
  found = [root.Buffers(root.Metadata(i).Buffer()).DataAsNumpy().tobytes()
           for i in range(root.MetadataLength()) if root.Metadata(i).Name() == b"TFLITE_METADATA"]
  assert len(found) == 1
  return found[0]


def test_metadata_names_the_inputs_the_vocabulary_and_the_labels(exported):
  _, paths, _ = exported
  for path in paths.values():
    with open(path, "rb") as f:
      content = f.read()
    buf = metadata_of(content)
    assert buf[4:8] == b"M001"  # the schema's file_identifier
    model_md = Node(buf, encode.Get(packer.uoffset, bytearray(buf), 0))
    # ModelMetadata: name 0, description 1, version 2, subgraph_metadata 3, ...,
    # min_parser_version 7 (BertTokenizerOptions and input process units: 1.1.0)
    assert model_md.str(7) == "1.1.0"
    (subgraph,) = model_md.nodes(3)
    # SubGraphMetadata: input_tensor_metadata 2, output_tensor_metadata 3,
    # input_process_units 5; TensorMetadata: name 0, content 3, stats 5, associated_files 6
    interpreter = tf.lite.Interpreter(model_path=path)  # no tensorflow-text kernels needed
    inputs = interpreter.get_input_details()
    by_tensor = {"serving_default_input_word_ids:0": "ids",
                 "serving_default_input_mask:0": "mask",
                 "serving_default_input_type_ids:0": "segment_ids"}
    assert [t.str(0) for t in subgraph.nodes(2)] == [by_tensor[d["name"]] for d in inputs]
    for d in inputs:
      assert d["dtype"] == np.int32 and list(d["shape"]) == [1, MAX_SEQ_LENGTH]
    (output,) = interpreter.get_output_details()
    assert output["dtype"] == np.float32 and list(output["shape"]) == [1, len(LABELS)]
    (score,) = subgraph.nodes(3)
    assert score.str(0) == "score"
    assert score.node(3).byte(0) == 1  # Content: content_properties_type FeatureProperties
    assert (score.node(5).floats(1), score.node(5).floats(0)) == ([0.0], [1.0])  # Stats min, max
    (labels,) = score.nodes(6)  # AssociatedFile: name 0, description 1, type 2
    assert (labels.str(0), labels.byte(2)) == ("labels.txt", 2)  # TENSOR_AXIS_LABELS
    (unit,) = subgraph.nodes(5)  # ProcessUnit: options_type 0, options 1
    assert unit.byte(0) == 4  # BertTokenizerOptions
    (vocab,) = unit.node(1).nodes(0)  # BertTokenizerOptions: vocab_file 0
    assert (vocab.str(0), vocab.byte(2)) == ("vocab.txt", 5)  # VOCABULARY
    with zipfile.ZipFile(io.BytesIO(content)) as zf:
      assert sorted(zf.namelist()) == ["labels.txt", "vocab.txt"]
      assert zf.read("vocab.txt").decode("utf-8").splitlines() == WORD_VOCAB
      assert zf.read("labels.txt").decode("utf-8").splitlines() == LABELS


def token_ids(model, text):
  """[CLS] WordPieces [SEP], zero-padded to MAX_SEQ_LENGTH: what MediaPipe's BERT
  preprocessing feeds (bert_preprocessor_calculator.cc), from our tokenizer."""
  features = model.text_inputs(tf.constant([text]))
  pad = [[0, 0], [0, MAX_SEQ_LENGTH - features["input_ids"].shape[1]]]
  return {k: tf.pad(v, pad).numpy().astype(np.int32) for k, v in features.items()}


def run_interpreter(path, model, texts):
  interpreter = tf.lite.Interpreter(model_path=path)
  runner = interpreter.get_signature_runner("serving_default")
  names = {"input_ids": "input_word_ids", "input_mask": "input_mask",
           "segment_ids": "input_type_ids"}
  return np.concatenate([
      runner(**{names[k]: v for k, v in token_ids(model, text).items()})["probabilities"]
      for text in texts])


def test_the_file_on_token_ids_gives_the_model_s_probabilities(exported):
  model, paths, expected = exported
  np.testing.assert_allclose(run_interpreter(paths["none"], model, TEXTS), expected, atol=1e-4)
  assert token_ids(model, TEXTS[-1])["input_mask"].sum() == MAX_SEQ_LENGTH  # truncated
  int8 = run_interpreter(paths["dynamic-int8"], model, TEXTS)
  np.testing.assert_allclose(int8, expected, atol=2e-2)
  assert not np.allclose(int8, expected, atol=1e-6)  # quantized indeed


def test_what_mediapipe_cannot_run_as_trained_is_refused_in_one_line(exported, tmp_path):
  model, paths, _ = exported
  path = str(tmp_path / "x.tflite")
  pairs = electra_tf2.TextClassifier(bert_config(), None, WORD_VOCAB, text_pairs=True)
  cased = electra_tf2.TextClassifier(bert_config(), None, WORD_VOCAB, do_lower_case=False)
  regression = electra_tf2.TextClassifier(bert_config(), None, WORD_VOCAB, num_classes=1)
  tagger = electra_tf2.TokenClassifier(bert_config(), None, WORD_VOCAB, num_classes=2)
  reader = electra_tf2.QuestionAnswerer(bert_config(), None, WORD_VOCAB)
  cases = [(pairs, {}, "takes text pairs"), (cased, {}, "is cased"),
           (regression, {}, "regression"), (tagger, {}, "is no text classifier"),
           (reader, {}, "a QuestionAnswerer is no text classifier"),
           (reader, {"target": "android"}, "target must be one of litert, mediapipe"),
           (model, {"quantize": "int8", "calibration_texts": TEXTS}, "does not take"),
           (model, {"target": "android"}, "target must be one of litert, mediapipe")]
  for which, options, words in cases:
    options = dict({"target": "mediapipe"}, **options)
    with pytest.raises(ElectraError, match=words) as e:
      which.export_litert(path, **options)
    assert "\n" not in str(e.value)
  for options, words in (({"sentencepiece": True}, "SentencePiece"),
                         ({"vocab": WORD_VOCAB[3:]}, r"lacks \[CLS\]"),
                         ({"labels": ["a", "b\nc"]}, "line break")):
    arguments = dict(vocab=WORD_VOCAB, labels=LABELS, do_lower_case=True, sentencepiece=False,
                     text_pairs=False, what="this model")
    with pytest.raises(ElectraError, match=words):
      mediapipe.check_model(**dict(arguments, **options))
  with pytest.raises(ElectraError, match="is for MediaPipe Tasks' TextClassifier"):
    LiteRTModel(paths["none"])


def test_mediapipe_s_text_classifier_runs_the_file(exported):
  """MediaPipe's TextClassifier tokenizes each text from the metadata: its scores are the
  model's, the category names the labels (float32), its labels the int8 file's."""
  try:
    from mediapipe.tasks import python as mp_python
    from mediapipe.tasks.python import text as mp_text
  except ImportError:
    pytest.skip("mediapipe is not installed (pip install 'electra-tf2[mediapipe]')")
  model, paths, expected = exported
  for quantize, want in (("none", expected),
                         ("dynamic-int8", run_interpreter(paths["dynamic-int8"], model, TEXTS))):
    options = mp_text.TextClassifierOptions(
        base_options=mp_python.BaseOptions(model_asset_path=paths[quantize]))
    classifier = mp_text.TextClassifier.create_from_options(options)
    try:
      for text, row in zip(TEXTS, want):
        categories = classifier.classify(text).classifications[0].categories
        scores = {c.category_name: c.score for c in categories}
        assert sorted(scores) == sorted(LABELS)
        np.testing.assert_allclose([scores[label] for label in LABELS], row, atol=1e-4)
        assert categories[0].category_name == LABELS[int(np.argmax(row))]
    finally:
      classifier.close()


def test_the_agreement_bench_splits_the_quantization_by_part(exported):
  """bench/serving/mediapipe_agreement.py: int8 rounding (hand-computed, one scale and one per
  column), and each part's moved labels counted against the labels given, with the
  model's weights restored after.

  The classifier's bias is first centred on TEXTS (each class's mean logit over them taken
  away), so that the labels differ from text to text and follow the small differences the
  rounding makes: rounding the word embeddings must then move some of them."""
  from bench.serving import mediapipe_agreement  # pylint: disable=g-import-not-at-top
  weights = np.array([[1.0, -0.5], [0.25, 0.003]])
  np.testing.assert_allclose(mediapipe_agreement.int8_rounded(weights, None),
                             [[1.0, -64 / 127], [32 / 127, 0.0]])
  np.testing.assert_allclose(mediapipe_agreement.int8_rounded(weights, 0),
                             [[1.0, -0.5], [32 / 127, 0.5 / 127]])
  model = exported[0]
  bias = model.get_layer("classifier").weights[-1]
  original_bias = bias.numpy()
  try:
    bias.assign(original_bias - model.predict(TEXTS, verbose=0).mean(0))
    before = [v.numpy() for v in model.weights]
    labels = model.predict(TEXTS, verbose=0).argmax(-1)
    assert len(set(labels.tolist())) > 1  # the centred labels differ between texts
    parts = mediapipe_agreement.quantization_parts(model, TEXTS, labels)
    assert list(parts) == ["word embeddings, int8 with one scale",
                           "word embeddings, int8 per row",
                           "dense kernels, int8 per output channel"]
    assert parts["word embeddings, int8 with one scale"] > 0
    assert parts["word embeddings, int8 per row"] > 0
    # Against each of the three shifted label sets every text is counted in exactly two:
    # the counts are of labels that differ, over every text.
    shifted = [mediapipe_agreement.quantization_parts(model, TEXTS, (labels + k) % 3)
               for k in range(3)]
    for part in parts:
      assert sum(counts[part] for counts in shifted) == 2 * len(TEXTS), part
      assert shifted[0][part] == parts[part]
    assert all(np.array_equal(a, v.numpy()) for a, v in zip(before, model.weights))
  finally:
    bias.assign(original_bias)