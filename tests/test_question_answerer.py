"""`QuestionAnswerer` (electra_tf2/models/question_answerer.py) against run_finetuning.py.

Oracles: run_finetuning.py's predictions and null-odds files of the same fine-tuned
checkpoint (a tiny model trained here for a few steps on ../shared SQuAD data, with
small windows so that contexts need several), its loss on the same batch, the official
Python decoding (tasks/qa_decoding.py) on transformers' ElectraForQuestionAnswering
logits, and the model itself before a save.
"""

import dataclasses
import json
import os
import re
import subprocess
import sys
from typing import Optional

import keras
import numpy as np
import pytest
import tensorflow as tf

from hf_models import load_hf, save_hf_model  # noqa: E402  (USE_TF=0 first)
import torch  # noqa: E402
import electra_tf2  # noqa: E402
from electra_tf2.serving import export  # noqa: E402
from electra_tf2.training import finetuning as runner  # noqa: E402
from electra_tf2.models import finetuning as finetune_model  # noqa: E402
from electra_tf2.tasks import qa, qa_decoding  # noqa: E402
from electra_tf2.models import sources  # noqa: E402
from electra_tf2.models import keras_data, question_answerer  # noqa: E402
from electra_tf2.text.windows import split_context  # noqa: E402
from tests.conftest import REPO_ROOT, shared_data_path  # noqa: E402
from tests.fixtures import make_config, make_tasks  # noqa: E402

FILES = {"squadv1": ("train-v1.1.first1article.json", "dev-v1.1.json"),
         "squad": ("dev-v2.0.subset-Normans-Computational_complexity_theory.json",) * 2}
N_DEV = 40
SETTINGS = dict(max_seq_length=64, max_query_length=16, doc_stride=32, beam_size=8,
                train_batch_size=16, eval_batch_size=16, learning_rate=3e-3,
                num_train_epochs=1.0, iterations_per_loop=10, max_examples_per_split=N_DEV)


class Finetuned:
  """run_finetuning.py on a tiny model, its predictions and our model of its directory."""

  def __init__(self, root, name):
    data_dir = root / name
    (data_dir / "finetuning_data" / name).mkdir(parents=True)
    os.symlink(shared_data_path("vocab", "vocab.txt"), data_dir / "vocab.txt")
    for split, source in zip(("train", "dev"), FILES[name]):
      os.symlink(shared_data_path("squad", source),
                 data_dir / "finetuning_data" / name / f"{split}.json")
    keras.utils.set_random_seed(0)
    self.name = name
    self.config = make_config(str(data_dir), [name], vocab_size=30522,
                              model_dir=str(data_dir / "model"), **SETTINGS)
    runner.run_finetuning(self.config)
    self.model_dir = self.config.trial_model_dir(1)
    with open(self.config.qa_preds_path(name)) as f:
      self.preds = json.load(f)
    self.task, = make_tasks(self.config)
    self.examples = self.task.get_examples("dev")
    self.inputs = ([e.question_text for e in self.examples], [e.context for e in self.examples])
    self.threshold = self.config.qa_na_threshold
    if name == "squad":  # a threshold that leaves some questions answered, some not
      with open(self.config.qa_na_path(name)) as f:
        self.odds = json.load(f)
      self.threshold = float(np.median(list(self.odds.values())))
    self.model = electra_tf2.QuestionAnswerer.from_pretrained(self.model_dir,
                                                              qa_na_threshold=self.threshold)
    self.outputs = self.model.predict(self.inputs, batch_size=16, verbose=0)

  def expected(self, threshold: Optional[float] = None):
    """The runner's answers in question order ("" where the null odds exceed threshold)."""
    answers = [self.preds[e.example_id] for e in self.examples]
    if threshold is not None and self.name == "squad":
      answers = ["" if self.odds[e.example_id] > threshold else text
                 for e, text in zip(self.examples, answers)]
    return answers


_BUILT = {}


def built(name: str, tmp_path_factory) -> Finetuned:
  """The fine-tuned `name` directory and its predictions, made once per session."""
  if name not in _BUILT:
    _BUILT[name] = Finetuned(tmp_path_factory.mktemp(name), name)
  return _BUILT[name]


@pytest.fixture(scope="module", params=["squadv1", "squad"])
def finetuned(request, tmp_path_factory):
  return built(request.param, tmp_path_factory)


@pytest.fixture(scope="module")
def squad_v1(tmp_path_factory):
  return built("squadv1", tmp_path_factory)


@pytest.fixture(scope="module")
def squad_v2(tmp_path_factory):
  return built("squad", tmp_path_factory)


def in_overlap(task, example, char: int) -> bool:
  """Whether the word at character `char` of the context lies in two windows."""
  _, char_to_word = split_context(example.context)
  features = task.featurize(example, False, for_eval=True)
  word = char_to_word[char]
  return sum(word in f[f"{task.name}_token_to_orig_map"].values() for f in features) >= 2


def test_predictions_equal_the_runners_predictions_file(finetuned):
  """The runner's files (its metrics by the official evaluation scripts, a prediction and,
  for SQuAD 2.0, a null score per question) and our model's answers: the runner's."""
  with open(finetuned.config.results_json, encoding="utf-8") as f:
    metrics = json.load(f)["trials"][0]["results"][finetuned.name]
  assert len(finetuned.preds) == N_DEV
  if finetuned.name == "squadv1":
    assert set(metrics) == {"exact_match", "f1"} and 0 <= metrics["exact_match"] <= metrics["f1"]
  else:
    assert metrics["total"] == N_DEV and len(finetuned.odds) == N_DEV
    assert {"exact", "f1", "HasAns_exact", "NoAns_exact", "best_exact",
            "best_f1_thresh"} <= set(metrics)
  out, expected = finetuned.outputs, finetuned.expected()
  spans = out["span_text" if finetuned.name == "squad" else "answer_text"]
  assert spans.tolist() == expected
  assert len(set(expected)) >= 8 and sum(" " in text for text in expected) >= 8
  contexts = finetuned.inputs[1]
  for text, start, end, context in zip(spans, out["answer_start"], out["answer_end"], contexts):
    assert " ".join(context[start:end].split()) == text
  finetuned.task.prepare(finetuned.examples)
  overlaps = sum(in_overlap(finetuned.task, e, start)
                 for e, start in zip(finetuned.examples, out["answer_start"]))
  print(f"\n{finetuned.name}: {len(expected)} answers equal, {overlaps} in a window overlap")
  assert overlaps >= 5
  if finetuned.name == "squad":
    np.testing.assert_allclose(out["null_score_diff"],
                               [finetuned.odds[e.example_id] for e in finetuned.examples],
                               atol=1e-5)
    assert out["answer_text"].tolist() == finetuned.expected(finetuned.threshold)
    assert 5 < out["is_impossible"].sum() < N_DEV - 5


@pytest.mark.slow
def test_export_command_writes_a_saved_model_of_the_runners_answers(squad_v2, tmp_path):
  """`electra export` on run_finetuning.py's SQuAD 2.0 directory writes the QuestionAnswerer's
  signature; tensorflow and tensorflow-text alone serve it (a process without electra_tf2).
  SQuAD 1.1's SavedModel: test_keras_page_question_answering_example_runs."""
  finetuned = squad_v2
  path = str(tmp_path / "cli")
  assert export.main(["--model-dir", finetuned.model_dir, "--output-dir", path]) == 0
  with open(tmp_path / "inputs.json", "w") as f:
    json.dump(finetuned.inputs, f)
  script = ("import sys, json, tensorflow as tf, tensorflow_text\n"
            "assert not any(m.startswith('electra_tf2') for m in sys.modules)\n"
            "questions, contexts = json.load(open('inputs.json'))\n"
            f"saved = tf.saved_model.load({path!r})\n"
            "out = saved.signatures['serving_default'](question=tf.constant(questions), "
            "context=tf.constant(contexts))\n"
            "out = {k: [t.decode() if isinstance(t, bytes) else t.item() for t in v.numpy()]\n"
            "       for k, v in out.items()}\n"
            "out['raw'] = sorted(saved.signatures['token_ids'].structured_outputs)\n"
            "pair = saved.signatures['text_pair'](text=tf.constant(['who?']), "
            "text_b=tf.constant(['john']))\n"
            "out['pair'] = pair['input_ids'].numpy().tolist()\n"
            "print(json.dumps(out))\n")
  result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=""), cwd=str(tmp_path))
  assert result.returncode == 0, result.stderr[-2000:]
  out = json.loads(result.stdout.strip().splitlines()[-1])
  threshold = finetuned.config.qa_na_threshold  # the command's: the directory's config
  assert out["answer_text"] == finetuned.expected(threshold)
  assert out["span_text"] == finetuned.expected()
  for key in ("answer_start", "answer_end"):
    assert out[key] == finetuned.outputs[key].tolist()
  assert "squad_start_top_index" in out["raw"]
  # [CLS] who ? [SEP] john [SEP], padded to max_seq_length (the beam takes 8 positions)
  assert out["pair"] == [[101, 2040, 1029, 102, 2198, 102] + [0] * 58]
  # --format litert: the same answers through LiteRTModel (windows and decoding around it)
  lite = str(tmp_path / "squad.tflite")
  assert export.main(["--model-dir", finetuned.model_dir, "--format", "litert",
                      "--output", lite]) == 0
  got = electra_tf2.LiteRTModel(lite).predict(tuple(finetuned.inputs))
  assert [t.decode() for t in got["answer_text"]] == out["answer_text"]
  assert got["answer_start"].tolist() == out["answer_start"]
  # --window-stride is the QA windows' stride (doc_stride), not ignored
  model, _, vocab, lower, _, described, _ = export._load(finetuned.model_dir, None, None)
  assert export._question_answerer(described, model, vocab, lower, None, 7).doc_stride == 7


def test_keras_page_question_answering_example_runs(squad_v1, tmp_path, monkeypatch):
  """docs/keras.md's QA example on run_finetuning.py's SQuAD 1.1 directory: its SavedModel
  gives the runner's answers; its fit trains on a SQuAD file."""
  finetuned = squad_v1
  with open(os.path.join(REPO_ROOT, "docs", "keras.md"), encoding="utf-8") as f:
    example, = [block for block in re.findall(r"```python\n(.*?)```", f.read(), re.S)
                if "QuestionAnswerer" in block]
  monkeypatch.chdir(tmp_path)
  os.symlink(finetuned.model_dir, "squad_model")
  with open(shared_data_path("squad", FILES["squadv1"][0]), encoding="utf-8") as f:
    data = json.load(f)
  paragraphs = data["data"][0]["paragraphs"][:1]
  with open("train.json", "w", encoding="utf-8") as f:
    json.dump({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}, f)
  namespace = {}
  exec(compile(example, "docs/keras.md", "exec"), namespace)  # pylint: disable=exec-used
  serve, answerer = namespace["serve"], namespace["answerer"]
  out = serve(question=tf.constant(finetuned.inputs[0]), context=tf.constant(finetuned.inputs[1]))
  assert [t.decode("utf-8") for t in out["answer_text"].numpy()] == finetuned.expected()
  np.testing.assert_array_equal(out["answer_start"], finetuned.outputs["answer_start"])
  steps = 2 * -(-len(paragraphs[0]["qas"]) // 32)
  assert int(answerer.optimizer.iterations) == steps


def test_one_fit_step_equals_the_runners_loss_on_the_same_batch(squad_v2):
  """The official loss of one batch of questions (all their windows), and the step; SQuAD 2.0
  covers the answerability loss and unanswerable questions too."""
  finetuned = squad_v2
  examples = finetuned.task.read_examples(finetuned.task.split_path("train"), "train")[:6]
  assert any(e.is_impossible for e in examples)
  source = sources.load_source(finetuned.model_dir)
  still = source.bert_config.replace(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  source = dataclasses.replace(source, bert_config=still)
  ours = electra_tf2.QuestionAnswerer.from_source(source)
  ours.load_source(source)
  theirs = finetune_model.FinetuningModel(still, source.embedding_size,
                                          [source.head_specs["squad"]])
  for name, variable in theirs.variable_map().items():
    variable.assign(source.tensors[name])

  finetuned.task.prepare(examples)
  windows = [f for e in examples for f in finetuned.task.featurize(e, True)]
  batch = {k: tf.constant([f.get(k, 0) for f in windows]) for k in windows[0]}
  with tf.GradientTape() as tape:
    loss = tf.reduce_mean(theirs.losses_per_example(batch, theirs(batch, training=True)))
  gradients = dict(zip([v.path for v in theirs.trainable_variables],
                       tape.gradient(loss, theirs.trainable_variables)))
  expected = {name: (v - 0.5 * tf.convert_to_tensor(gradients[v.path])).numpy()
              for name, v in theirs.variable_map().items()}

  ours.compile(optimizer=keras.optimizers.SGD(0.5))
  x = ([e.question_text for e in examples], [e.context for e in examples])
  y = ([-1 if e.is_impossible else e.answer_start for e in examples],
       [-1 if e.is_impossible else e.answer_start + len(e.orig_answer_text) for e in examples])
  history = ours.fit(x, y, batch_size=len(examples), shuffle=False, verbose=0).history
  print(f"\nloss on {len(windows)} windows: runner {float(loss):.6f}, fit "
        f"{history['loss'][0]:.6f}")
  np.testing.assert_allclose(history["loss"][0], float(loss), rtol=1e-5)
  for name, variable in ours.variable_map().items():
    np.testing.assert_allclose(variable.numpy(), expected[name], atol=2e-6, err_msg=name)


# ---------------------------------------------------------------------------
# Hugging Face's head, a fresh head, files, round trips, bad input
# ---------------------------------------------------------------------------

CONTEXTS = ["John Smith was born in Paris in 1895. He was the leader of the UN and she was "
            "born in New York city in 1943.", "the cat sat on the mat", "paris"]
QUESTIONS = ["where was john smith born?", "who sat on the mat?", "what is the capital?"]


@pytest.fixture(scope="module")
def hf_answerer(tmp_path_factory):
  """A random ElectraForQuestionAnswering directory and our model of it (SQuAD 2.0
  decoding, small windows), with its predictions on QUESTIONS and CONTEXTS."""
  path = save_hf_model(str(tmp_path_factory.mktemp("hf") / "qa"), "ElectraForQuestionAnswering")
  model = electra_tf2.QuestionAnswerer.from_pretrained(path, max_seq_length=24,
                                                       max_query_length=8, doc_stride=6)
  return path, model, model.predict((QUESTIONS, CONTEXTS), verbose=0)


def test_hugging_face_head_equals_transformers_and_decodes_officially(tmp_path, hf_answerer):
  path, model, out = hf_answerer
  assert model.head_kind == "hf" and model.loading_report.ok
  windows = model.windows(tf.constant(QUESTIONS), tf.constant(CONTEXTS))
  features = windows.features
  outputs = model.head(model.encode(features), features)
  with torch.no_grad():
    theirs = load_hf(path, "ElectraForQuestionAnswering")(
        **{name: torch.tensor(features[key].numpy(), dtype=torch.long)
           for name, key in (("input_ids", "input_ids"), ("attention_mask", "input_mask"),
                             ("token_type_ids", "segment_ids"))})
  mask = (features["input_mask"] * features["segment_ids"]).numpy().astype(bool)
  mask[:, 0] = True  # the official answer mask: document, final [SEP] and [CLS]
  for key in ("start_logits", "end_logits"):
    np.testing.assert_allclose(outputs[key].numpy()[mask], getattr(theirs, key).numpy()[mask],
                               atol=1e-5)
  # The official Python decoding of these logits (no joint prediction, no classifier).
  config = make_config(str(tmp_path), ["squad"], max_seq_length=24, max_query_length=8,
                       doc_stride=6, joint_prediction=False, answerable_classifier=False)
  task, = make_tasks(config)
  example_rows = windows.example.numpy()
  assert len(example_rows) > len(QUESTIONS)  # the first context needs several windows
  for i, (question, context) in enumerate(zip(QUESTIONS, CONTEXTS)):
    examples = []
    task._add_examples(examples, [0], {"context": context, "qas": [{"id": str(i),
                                                                    "question": question}]},
                       "dev", "mem")
    task.prepare(examples)
    eval_features = task.featurize(examples[0], False, for_eval=True)
    results = {f["squad_eid"]: {k: v.numpy()[r] for k, v in outputs.items()}
               for f, r in zip(eval_features, np.where(example_rows == i)[0])}
    nbest, null = qa_decoding.decode_example(examples[0], eval_features, results, "squad",
                                             config, v2=True)
    text, odds = qa_decoding.best_prediction(nbest, null, answerable_classifier=False)
    assert out["span_text"][i] == text
    np.testing.assert_allclose(out["null_score_diff"][i], odds, rtol=1e-5, atol=1e-5)


def test_fresh_head_trains_on_lists_and_round_trips(tmp_path):
  path = save_hf_model(str(tmp_path / "pt"), "ElectraForPreTraining")
  keras.utils.set_random_seed(0)
  model = electra_tf2.QuestionAnswerer.from_pretrained(
      path, max_seq_length=32, max_query_length=8, doc_stride=8, beam_size=5)
  assert not model.loading_report.missing  # the encoder; the head is fresh
  starts = [CONTEXTS[0].index("Paris"), CONTEXTS[1].index("cat"), -1]
  ends = [starts[0] + 5, starts[1] + 3, -1]
  model.compile(optimizer=model.official_optimizer(3e-3, 8))
  losses = model.fit((QUESTIONS, CONTEXTS), (starts, ends), batch_size=3, epochs=8,
                     verbose=0).history["loss"]
  assert losses[-1] < 0.7 * losses[0]
  inputs = (tf.constant(QUESTIONS), tf.constant(CONTEXTS))
  expected = model(inputs)  # eager calls: no graphs to trace
  model.save(str(tmp_path / "qa.keras"))
  again = keras.models.load_model(str(tmp_path / "qa.keras"))(inputs)
  for key in expected:
    np.testing.assert_array_equal(again[key], expected[key])


def _as_str(values) -> np.ndarray:
  """Outputs as numpy, strings as str (the SavedModel gives bytes, predict str)."""
  values = np.asarray(values)
  if values.dtype != object:
    return values
  return np.array([t.decode() if isinstance(t, bytes) else t for t in values], dtype=object)


def test_answers_skip_the_windows_padding_and_equal_the_padded_windows_answers(tmp_path):
  """`call` (predict) and the SavedModel run the encoder on the windows' real tokens alone
  (every window is padded to max_seq_length: cut to the longest window, the shorter ones'
  padding skipped); their answers equal those of the padded windows (the model's own
  windows, encoder, head and answer search composed), for a batch of windows of mixed
  lengths, one question alone, and no question. The official joint head with a beam
  wider than the short contexts, so that the beam holds padding positions, whose states
  differ between the two graphs."""
  vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(
      set(" ".join(QUESTIONS + CONTEXTS).replace("?", " ? ").replace(".", " . ").split()))
  bert = electra_tf2.BertConfig(len(vocab), hidden_size=16, num_hidden_layers=2,
                                num_attention_heads=2, intermediate_size=32)
  keras.utils.set_random_seed(3)
  model = electra_tf2.QuestionAnswerer(bert, None, vocab, max_seq_length=48,
                                       max_query_length=8, doc_stride=16, beam_size=40)
  inputs = (tf.constant(QUESTIONS), tf.constant(CONTEXTS))
  windows = model.windows(*inputs)
  padded = model.encode(windows.features)
  mask = windows.features["input_mask"].numpy().astype(bool)
  assert (~mask).sum() > mask.sum() / 2  # mostly padding
  skipped = model.encode(windows.features, skip_padding=True).numpy()
  assert np.abs(padded.numpy()[~mask]).min() > 0 and not skipped[~mask].any()
  np.testing.assert_allclose(skipped[mask], padded.numpy()[mask], atol=1e-5)

  path = model.export_saved_model(str(tmp_path / "qa"))
  saved = tf.saved_model.load(path)
  for batch in (inputs, (inputs[0][2:], inputs[1][2:]), (inputs[0][:0], inputs[1][:0])):
    found = model.windows(*batch)
    expected = model.answers(found, model.head(model.encode(found.features), found.features),
                             tf.size(batch[0]))
    served = saved.signatures["serving_default"](question=batch[0], context=batch[1])
    outputs = [served, model(batch)]
    if len(batch[0]):
      outputs.append(model.predict(batch, verbose=0))
    else:  # predict refuses no texts, as it does an empty list
      with pytest.raises(keras_data.InputDataError, match=r"^x is empty: give at least one"):
        model.predict(batch, verbose=0)
    for got in outputs:
      for key, value in expected.items():
        want, have = _as_str(value), _as_str(got[key])
        if want.dtype.kind == "f":
          np.testing.assert_allclose(have, want, atol=1e-5, err_msg=key)
        else:
          np.testing.assert_array_equal(have, want, err_msg=key)
  # Both graphs skip the padding's rows: the encoder scatters the real tokens' keys and
  # values back into the padded layout (the cond's branch, a library function).
  strings = tf.TensorSpec([None], tf.string)
  called = tf.function(lambda q, c: model((q, c))).get_concrete_function(strings, strings)
  for graph in (saved.signatures["serving_default"].graph, called.graph):
    assert any(node.op == "ScatterNd" and "/layer_0" in node.name
               for f in graph.as_graph_def().library.function for node in f.node_def)
  # token_ids keeps the padded graph: the head's raw logits everywhere, the padding's too.
  raw = saved.signatures["token_ids"](**{k: tf.cast(v, tf.int32) for k, v in
                                          windows.features.items()
                                          if k in ("input_ids", "input_mask", "segment_ids")})
  np.testing.assert_allclose(raw["squad_start_logits"],
                             model.head(padded, windows.features)["start_logits"], atol=1e-5)


def test_predict_file_reads_json_lines_and_writes_answers(tmp_path, hf_answerer, capsys):
  _, model, expected = hf_answerer
  path = tmp_path / "questions.jsonl"
  path.write_text("".join(json.dumps({"id": f"q{i}", "question": q, "context": c}) + "\n"
                          for i, (q, c) in enumerate(zip(QUESTIONS * 2, CONTEXTS * 2))))
  model.predict_file(str(path), str(tmp_path / "answers.jsonl"), batch_size=4)
  assert "6/6" in capsys.readouterr().out
  with open(tmp_path / "answers.jsonl") as f:
    rows = [json.loads(line) for line in f]
  assert [r["id"] for r in rows] == [f"q{i}" for i in range(6)]
  assert [r["answer_text"] for r in rows] == expected["answer_text"].tolist() * 2
  assert [r["answer_start"] for r in rows[:3]] == expected["answer_start"].tolist()
  path.write_text('{"id": 1, "question": "who?"}\n')
  with pytest.raises(question_answerer.QuestionAnswererError, match=r"questions.jsonl:1: needs"):
    model.predict_file(str(path))


def test_predict_command_reads_question_then_context(tmp_path, hf_answerer, capsys):
  """`electra predict` on a QuestionAnswerer SavedModel reads question<TAB>context (the
  signature's documented order, as `predict((questions, contexts))`) or JSON lines with
  those fields, names the columns first, and refuses a line with one column."""
  from electra_tf2.serving import predict
  _, model, expected = hf_answerer
  saved = model.export_saved_model(str(tmp_path / "qa"))
  tsv, jsonl = tmp_path / "questions.tsv", tmp_path / "questions.jsonl"
  tsv.write_text("".join(f"{q}\t{c}\n" for q, c in zip(QUESTIONS, CONTEXTS)), encoding="utf-8")
  jsonl.write_text("".join(json.dumps({"context": c, "question": q}) + "\n"
                           for q, c in zip(QUESTIONS, CONTEXTS)), encoding="utf-8")
  for path in (tsv, jsonl):
    out = tmp_path / f"{path.name}.out"
    assert predict.main(["--model", saved, "--input", str(path), "--output", str(out)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"{saved} takes question, context: reading {path} as ")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["answer_text"] for r in rows] == expected["answer_text"].tolist()
    assert [r["answer_start"] for r in rows] == expected["answer_start"].tolist()
  assert [r["id"] for r in rows] == [1, 2, 3]  # JSON lines without "id": the line number
  tsv.write_text(f"{QUESTIONS[0]}\t{CONTEXTS[0]}\n{QUESTIONS[1]}\n", encoding="utf-8")
  assert predict.main(["--model", saved, "--input", str(tsv), "--output", str(out)]) == 2
  err = capsys.readouterr().err
  assert err == (f"error: {tsv}:2: 1 tab-separated column(s), expected 2: "
                 "question<TAB>context\n")


def test_squad_dataset_gives_the_runners_training_questions():
  path = shared_data_path("squad", FILES["squad"][0])
  examples = qa.read_squad(path)
  rows = list(question_answerer.squad_dataset(path).as_numpy_iterator())
  assert len(rows) == len(examples) > 600
  for ((question, context), (start, end)), e in zip(rows, examples):
    assert question.decode() == e.question_text and context.decode() == e.context
    answer = "" if e.is_impossible else e.orig_answer_text
    assert (start < 0) == e.is_impossible and context.decode()[start:end] == answer


def test_bad_input_is_one_line(hf_answerer):
  _, model, _ = hf_answerer
  cases = [(lambda: model.compile(optimizer="sgd", loss="mse"), "without loss"),
           (lambda: model.fit(QUESTIONS, ([0], [1])), "pair of lists"),
           (lambda: model.fit((QUESTIONS, CONTEXTS), ([0, 0, 0], [4, 3, 99])),
            "answer 2 [0, 99) is not a span"),
           (lambda: model.fit((QUESTIONS, CONTEXTS[:2]), ([0] * 3, [1] * 3)), "2 rows"),
           (lambda: model.fit((QUESTIONS, CONTEXTS), [0, 1, 2]), "answer_starts, answer_ends"),
           (lambda: model.predict((QUESTIONS, [None, "a", "b"])), "x[1][0] is NoneType")]
  model.compile(optimizer="sgd")
  for call, words in cases:
    with pytest.raises(electra_tf2.ElectraError) as error:
      call()
    assert "\n" not in str(error.value) and words in str(error.value)


def test_contexts_without_words_have_no_answer(hf_answerer):
  """No window, no span: "" (the official code would write its nonce "empty"); invalid
  UTF-8 is read as U+FFFD, whose offsets the answer's count in."""
  _, model, _ = hf_answerer
  out = model((tf.constant(["who?", "who?", "who?"]),
               tf.constant([b"", b" \n\t", b"\xff\xfe paris"])))  # eager: no graph to trace
  assert [t.decode() for t in out["span_text"].numpy()] == ["", "", "paris"]
  assert out["is_impossible"].numpy()[:2].all() and out["score"].numpy()[:2].tolist() == [0, 0]
  assert out["answer_start"].numpy()[2] == 3 and out["answer_end"].numpy()[2] == 8
