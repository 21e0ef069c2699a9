""".tflite files of the Keras text models (export_litert) run by LiteRTModel: the
SavedModel's outputs, quantized variants that agree with them, bad input, one-line errors.

Oracle: the models' own `serve` (what `export_saved_model` writes, tests/
test_keras_models.py) on the same texts. Every model is tiny and random.
"""

import os

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")

from fixtures import WORD_VOCAB  # noqa: E402

import electra_tf2  # noqa: E402
from electra_tf2 import BertConfig, LiteRTModel  # noqa: E402
from electra_tf2.litert import convert  # noqa: E402
from electra_tf2.litert.model import LiteRTModelError  # noqa: E402

MAX_SEQ_LENGTH = 16
TEXTS = ["the cat sat on the mat .", "John Smith was born in 1895 !", "", "Cafe  in New York",
         "the dog runs fast " * 10, "what is the capital of france ?", "\u00e9t\u00e9 \u00a0x"]
TEXTS_B = ["a big red house", "", "paris", "we see it", "he runs", "the capital " * 9, "x"]
# Bytes that are not UTF-8: decoded as the official convert_to_unicode does ("ignore").
BAD_BYTES = [b"the c\xffat", b"\xc3", b"sat \xe2\x82 on"]


def bert_config():
  return BertConfig(len(WORD_VOCAB), hidden_size=36, num_hidden_layers=2,
                    num_attention_heads=3, intermediate_size=72)


def served(model, *columns):
  return {k: v.numpy() for k, v in model.serve(*map(tf.constant, columns)).items()}


def assert_same_outputs(got, expected, atol=1e-5):
  assert sorted(got) == sorted(expected)
  for name, value in expected.items():
    if value.dtype.kind in "fc":
      np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=atol, err_msg=name)
    else:
      np.testing.assert_array_equal(got[name], value, err_msg=name)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
  return tmp_path_factory.mktemp("litert")


@pytest.fixture(scope="module")
def discriminator(root):
  model = electra_tf2.Discriminator(bert_config(), None, WORD_VOCAB,
                                    max_seq_length=MAX_SEQ_LENGTH)
  return model, LiteRTModel(model.export_litert(str(root / "discriminator.tflite")))


@pytest.fixture(scope="module")
def classifier(root):
  """A pair classifier fitted to label TEXTS/TEXTS_B (decisive logits, margins near 9),
  and its .tflite variants."""
  tf.keras.utils.set_random_seed(4)
  model = electra_tf2.TextClassifier(bert_config(), None, WORD_VOCAB, num_classes=3,
                                     max_seq_length=MAX_SEQ_LENGTH, text_pairs=True,
                                     label_list=["neg", "neutral", "pos"])
  model.compile(optimizer=tf.keras.optimizers.Adam(3e-3),
                loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  model.fit((tf.constant(TEXTS), tf.constant(TEXTS_B)), np.arange(len(TEXTS)) % 3,
            batch_size=len(TEXTS), epochs=40, verbose=0)
  pairs = [f"{a}\t{b}" for a, b in zip(TEXTS, TEXTS_B)]
  paths = {q: model.export_litert(str(root / f"classifier_{q}.tflite"), quantize=q,
                                  calibration_texts=pairs if q == "int8" else None)
           for q in convert.QUANTIZE}
  return model, paths


def test_discriminator_outputs_are_the_savedmodel_s(discriminator):
  """Long texts cut to max_seq_length, empty texts, per-token outputs padded across
  batches as predict_file pads them."""
  model, lite = discriminator
  assert lite.input_names == ["text"] and lite.settings["max_seq_length"] == MAX_SEQ_LENGTH
  assert_same_outputs(lite.predict(TEXTS), served(model, TEXTS))
  by_two = lite.predict(TEXTS, batch_size=2)
  widths = [served(model, TEXTS[i:i + 2])["input_ids"].shape[1] for i in range(0, 7, 2)]
  assert by_two["logits"].shape == (len(TEXTS), max(widths))


def test_bad_input_behaves_as_the_savedmodel(discriminator):
  model, lite = discriminator
  assert_same_outputs(lite.predict(BAD_BYTES), served(model, BAD_BYTES))
  assert_same_outputs(lite.predict([]), served(model, tf.constant([], tf.string)))
  assert lite.predict([])["logits"].shape == (0, 2)


def test_calls_of_changing_shapes_are_the_savedmodel_s(discriminator):
  """LiteRTModel allocates the interpreter's tensors again only when a batch's shape
  changes: batches of 1, 3, 1, 2 and 2 texts of other lengths, one after the other."""
  model, lite = discriminator
  for begin, end in [(0, 1), (1, 2), (2, 5), (4, 5), (0, 1), (5, 7), (3, 5)]:
    assert_same_outputs(lite.run_batch(TEXTS[begin:end]), served(model, TEXTS[begin:end]))


def test_one_text_at_a_time_is_the_savedmodel_s(discriminator):
  """predict([text]) (one interpreter call, the outputs as it returns them) and a batch
  already in length order give the SavedModel's outputs for those texts."""
  model, lite = discriminator
  for text in TEXTS + BAD_BYTES:
    assert_same_outputs(lite.predict([text]), served(model, [text]))
  ordered = sorted(TEXTS[:4], key=len)
  assert_same_outputs(lite.predict(ordered), served(model, ordered))


def test_serving_default_beside_another_signature_runs(tmp_path):
  """A file whose serving_default is not its main graph (another signature's is) runs
  serving_default: its tensors cannot be set through the main graph's."""
  from electra_tf2.litert.model import make_interpreter

  class Two(tf.Module):  # the converter orders the graphs by function name: a, then b
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def a(self, text):
      return {"y": tf.fill(tf.shape(text), 2)}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def b(self, text):
      return {"z": tf.fill(tf.shape(text), 7)}
  two = Two()
  tf.saved_model.save(two, str(tmp_path / "two"), signatures={
      "other": two.a.get_concrete_function(), "serving_default": two.b.get_concrete_function()})
  path = str(tmp_path / "two.tflite")
  with open(path, "wb") as f:
    f.write(tf.lite.TFLiteConverter.from_saved_model(
        str(tmp_path / "two"), signature_keys=["other", "serving_default"]).convert())
  assert make_interpreter(model_path=path).get_input_details()[0]["name"] == "other_text:0"
  lite = LiteRTModel(path)
  for texts in (["a", "bb", "c"], ["d"]):
    got = lite.predict(texts)
    assert list(got) == ["z"]
    np.testing.assert_array_equal(got["z"], [7] * len(texts))


def test_pair_classifier_outputs_are_the_savedmodel_s(classifier):
  model, paths = classifier
  lite = LiteRTModel(paths["none"])
  assert lite.input_names == ["text", "text_b"]
  expected = served(model, TEXTS, TEXTS_B)
  assert_same_outputs(lite.predict((TEXTS, TEXTS_B), batch_size=3), expected)
  with pytest.raises(LiteRTModelError, match="takes 2 text column"):
    lite.predict(TEXTS)
  assert_same_outputs(lite.predict(([], [])), served(model, tf.constant([], tf.string),
                                                     tf.constant([], tf.string)))


@pytest.mark.parametrize("quantize,saved,error", [("float16", 0.4, 0.01),
                                                  ("dynamic-int8", 0.25, 0.05),
                                                  ("int8", 0.2, 0.2)])
def test_quantized_variants_agree_with_float32(classifier, quantize, saved, error):
  """Smaller files (by a share of the float32 weights' bytes), logits within `error` of
  the float32 logits' spread, and the same labels."""
  model, paths = classifier
  expected = served(model, TEXTS, TEXTS_B)
  lite = LiteRTModel(paths[quantize])
  got = lite.predict((TEXTS, TEXTS_B))
  assert lite.settings["quantize"] == quantize
  weight_bytes = 4 * sum(int(np.prod(v.shape)) for v in model.variables)
  assert os.path.getsize(paths["none"]) - os.path.getsize(paths[quantize]) > saved * weight_bytes
  np.testing.assert_allclose(got["logits"], expected["logits"],
                             atol=error * np.ptp(expected["logits"]))
  np.testing.assert_array_equal(got["label"], expected["label"])
  assert len(set(expected["label"])) == 3


def test_token_and_regression_models_are_the_savedmodel_s(root):
  tagger = electra_tf2.TokenClassifier(bert_config(), None, WORD_VOCAB, num_classes=4,
                                       max_seq_length=MAX_SEQ_LENGTH, label_list=list("BIOX"))
  lite = LiteRTModel(tagger.export_litert(str(root / "tagger.tflite")))
  texts = TEXTS + BAD_BYTES
  assert_same_outputs(lite.predict(texts, batch_size=4), served(tagger, texts))
  regression = electra_tf2.TextClassifier(bert_config(), None, WORD_VOCAB, num_classes=1,
                                          max_seq_length=MAX_SEQ_LENGTH)
  lite = LiteRTModel(regression.export_litert(str(root / "regression.tflite")))
  assert_same_outputs(lite.predict(TEXTS), served(regression, TEXTS))


def test_options_and_files_that_cannot_be_used_are_one_line_errors(root, discriminator):
  model, _ = discriminator
  cases = [(lambda: model.export_litert(str(root / "x.tflite"), quantize="int4"),
            "quantize must be one of none, float16, dynamic-int8, int8"),
           (lambda: model.export_litert(str(root / "x.tflite"), quantize="int8"),
            "pass calibration_texts"),
           (lambda: model.export_litert(str(root / "x.tflite"), calibration_texts=["a"]),
            "only apply to quantize int8"),
           (lambda: convert.check_size([tf.TensorSpec([2 ** 29, 2])], "none"),
            "holds at most 2 GiB"),
           (lambda: LiteRTModel(str(root / "missing.tflite")), "is not a file")]
  (root / "garbage.tflite").write_bytes(b"not a flatbuffer" * 10)
  cases.append((lambda: LiteRTModel(str(root / "garbage.tflite")), "LiteRT can load"))
  for call, words in cases:
    with pytest.raises(electra_tf2.ElectraError) as error:
      call()
    assert words in str(error.value) and "\n" not in str(error.value)
  assert not (root / "x.tflite").exists()


QUESTIONS = ["where was john born ?", "who sat on the mat ?", "", "what ?", "the cat"]
CONTEXTS = ["john smith was born in paris in 1895 . he was the leader and she was born in new "
            "york city .", "the cat sat on the mat", "paris", "", "the dog runs fast " * 6]


def test_question_answerer_on_litert_gives_the_savedmodel_s_answers(root, capsys):
  """export_litert of a QuestionAnswerer: the encoder and head on windows of token ids;
  LiteRTModel builds the windows and decodes around the file: float32 answers equal the
  model's `serve` (the SavedModel's), dynamic-int8 runs; `electra predict` reads
  question<TAB>context lines; int8 (calibrated on texts) is refused in one line."""
  import json
  from electra_tf2.serving import predict
  tf.keras.utils.set_random_seed(3)
  model = electra_tf2.QuestionAnswerer(bert_config(), None, WORD_VOCAB, max_seq_length=24,
                                       max_query_length=8, doc_stride=6, beam_size=4)
  expected = served(model, QUESTIONS, CONTEXTS)
  windows = model.windows(tf.constant(QUESTIONS), tf.constant(CONTEXTS))
  assert len(windows.example) > len(QUESTIONS)  # long contexts take several windows
  lite = LiteRTModel(model.export_litert(str(root / "qa.tflite")))
  assert lite.input_names == ["question", "context"]
  got = lite.predict((QUESTIONS, CONTEXTS), batch_size=2)
  assert_same_outputs(got, expected)
  # The file runs the windows cut to their longest real length ([CLS] what ? [SEP] paris
  # [SEP]: 6 of 24), not less than the beam (4: [CLS] ? [SEP] [SEP] is 4 too).
  one = lite.predict((["what ?"], ["paris"]))
  assert lite._shapes["input_ids"] == (1, 6)  # pylint: disable=protected-access
  assert_same_outputs(one, served(model, ["what ?"], ["paris"]))
  lite.predict((["?"], [""]))
  assert lite._shapes["input_ids"] == (1, 4)  # pylint: disable=protected-access
  # Without the joint head the answer search takes the n_best_size (20) best starts and
  # ends of the positions the file returns: fewer than 20 on cut windows.
  plain = electra_tf2.QuestionAnswerer(bert_config(), None, WORD_VOCAB, max_seq_length=24,
                                       max_query_length=8, doc_stride=6,
                                       joint_prediction=False, answerable_classifier=False)
  assert_same_outputs(LiteRTModel(plain.export_litert(str(root / "qa_plain.tflite"))).predict(
      (QUESTIONS, CONTEXTS), batch_size=2), served(plain, QUESTIONS, CONTEXTS))
  assert {k: v.shape for k, v in lite.predict(([], [])).items()} == {k: (0,) for k in expected}
  small = LiteRTModel(model.export_litert(str(root / "qa_int8.tflite"), "dynamic-int8"))
  assert sorted(small.predict((QUESTIONS, CONTEXTS))) == sorted(expected)
  with pytest.raises(convert.LiteRTError, match=r"^quantize int8 calibrates on texts, which "
                                                r"a .tflite on token ids does not take"):
    model.export_litert(str(root / "qa_x.tflite"), "int8", calibration_texts=["a\tb"])
  lines = root / "qa_questions.tsv"
  lines.write_text("".join(f"{q}\t{c}\n" for q, c in zip(QUESTIONS, CONTEXTS)))
  assert predict.main(["--model", lite.path, "--input", str(lines), "--output",
                       str(root / "qa.jsonl")]) == 0
  rows = [json.loads(line) for line in (root / "qa.jsonl").read_text().splitlines()]
  assert [r["span_text"] for r in rows] == [t.decode() for t in expected["span_text"]]
  assert capsys.readouterr().out.startswith(f"{lite.path} takes question, context")


def test_an_op_without_a_kernel_is_named_in_one_line(root):
  """tf.strings.lower has no TFLite kernel: the converter lets it through as a custom op
  and the check run names it."""
  with pytest.raises(convert.LiteRTError, match=r"no kernel for StringLower: .*SavedModel"):
    convert.write_tflite(str(root / "lower.tflite"),
                         lambda text: {"lower": tf.strings.lower(text)}, ["text"], [], {})
  assert not (root / "lower.tflite").exists()


def test_without_ai_edge_litert_tf_lite_runs_the_file(discriminator, monkeypatch):
  """The `litert` extra is optional: tf.lite's interpreter (with the TF Text kernels) runs
  the same file to the same outputs."""
  import sys
  from tensorflow.lite.python import interpreter as tf_lite
  from electra_tf2.litert.model import make_interpreter
  model, lite = discriminator
  monkeypatch.setitem(sys.modules, "ai_edge_litert.interpreter", None)  # import fails
  assert isinstance(make_interpreter(model_path=lite.path), tf_lite.InterpreterWithCustomOps)
  assert_same_outputs(LiteRTModel(lite.path).predict(TEXTS), served(model, TEXTS))


def test_the_bench_extra_installs_the_litert_interpreter(discriminator):
  """The bench's LiteRT rows (bench/inference/litert.py: `LiteRTModel`) time ai-edge-litert's
  interpreter, not tf.lite's fallback: the bench extra requires the litert extra, the
  installed ai-edge-litert is a version it allows, and `LiteRTModel` runs its interpreter."""
  import importlib.metadata
  import tomllib
  from ai_edge_litert import interpreter as litert  # pylint: disable=g-import-not-at-top
  from packaging.requirements import Requirement  # pylint: disable=g-import-not-at-top
  from conftest import REPO_ROOT
  with open(os.path.join(REPO_ROOT, "pyproject.toml"), "rb") as f:
    extras = tomllib.load(f)["project"]["optional-dependencies"]
  assert "electra-tf2[litert]" in extras["bench"]
  (requirement,) = [Requirement(r) for r in extras["litert"] if r.startswith("ai-edge-litert")]
  assert importlib.metadata.version("ai-edge-litert") in requirement.specifier
  _, lite = discriminator
  interpreter = LiteRTModel(lite.path)._interpreter  # pylint: disable=protected-access
  assert type(interpreter).__module__.startswith("ai_edge_litert")
  assert isinstance(interpreter, litert.InterpreterWithCustomOps)


@pytest.mark.parametrize("cores,threads", [(1, 1), (2, 2), (16, 2), (None, 1)])
def test_interpreter_threads_default_to_one_per_core_up_to_two(discriminator, monkeypatch,
                                                               cores, threads):
  """The rule measured on an idle 2-core host (docs/benchmarks.md#litert-tflite); an explicit
  num_threads wins; the outputs do not depend on the threads."""
  from electra_tf2.litert import model as model_lib
  _, lite = discriminator
  made = []
  original = model_lib.make_interpreter

  def recording(**kwargs):
    made.append(kwargs["num_threads"])
    return original(**kwargs)
  monkeypatch.setattr(model_lib, "make_interpreter", recording)
  monkeypatch.setattr(model_lib.os, "cpu_count", lambda: cores)
  default, three = LiteRTModel(lite.path), LiteRTModel(lite.path, num_threads=3)
  assert made == [threads, 3]
  assert_same_outputs(default.predict(TEXTS), three.predict(TEXTS))
