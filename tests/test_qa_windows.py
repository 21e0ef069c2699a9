"""SQuAD windows in the graph (electra_tf2/text/qa_windows.py) against run_finetuning.py's
Python featurisation and get_final_text (electra_tf2/tasks/qa.py, qa_decoding.py).

Oracle: the QA task's `featurize` (windows, token_to_orig_map, token_is_max_context,
training labels) and `qa_decoding`'s candidate text, on real SQuAD questions (small
windows, so that contexts need several and answers fall in their overlaps) and on a
context made to stress the character mapping.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from electra_tf2.tasks import qa_decoding
from electra_tf2.text import qa_windows
from electra_tf2.text.windows import split_context
from electra_tf2.text.tokenizer import TokenizerModule
from tests.conftest import shared_data_path
from tests.fixtures import WORD_VOCAB, make_config, make_tasks
from tests.test_languages import spm_model  # noqa: F401  pylint: disable=unused-import

SMALL = dict(max_seq_length=48, max_query_length=12, doc_stride=16)
V1_TRAIN = "train-v1.1.first1article.json"
V2_DEV = "dev-v2.0.subset-Normans-Computational_complexity_theory.json"


def squad_task(tmp_path, name, split_files, vocab=None, **settings):
  """A squad/squadv1 task over files linked from ../shared (or written here)."""
  data_dir = tmp_path / name
  (data_dir / "finetuning_data" / name).mkdir(parents=True)
  if vocab is None:
    os.symlink(shared_data_path("vocab", "vocab.txt"), data_dir / "vocab.txt")
  for split, source in split_files.items():
    target = data_dir / "finetuning_data" / name / f"{split}.json"
    if isinstance(source, str):
      os.symlink(shared_data_path("squad", source), target)
    else:
      target.write_text(source)
  values = dict(SMALL, **settings)
  if vocab is None:
    values["vocab_size"] = 30522
  config = make_config(str(data_dir), [name], **values)
  task, = make_tasks(config)
  return config, task


def tokenizer_of(config):
  with open(config.vocab_file, encoding="utf-8") as f:
    vocab = [line.rstrip("\n") for line in f]
  return vocab, TokenizerModule(vocab, do_lower_case=config.do_lower_case)


def graph_windows(config, examples, tokenizer, vocab):
  question = tf.constant([e.question_text for e in examples])
  context = tf.constant([e.context for e in examples])
  windows = qa_windows.qa_windows(tokenizer, question, context, config.max_seq_length,
                                  config.max_query_length, config.doc_stride,
                                  vocab.index("[CLS]"), vocab.index("[SEP]"))
  return windows, context


def python_windows(task, examples, is_training):
  """Per example, the runner's windows (for_eval: with the decoding maps)."""
  task.prepare(examples)
  return [task.featurize(e, is_training, for_eval=True) for e in examples]


def assert_windows_equal(task, windows, expected, labels=None):
  """Graph windows == the runner's, window by window; returns how many there were."""
  name, length = task.name, task.config.max_seq_length
  example = windows.example.numpy()
  assert len(example) == sum(len(f) for f in expected)
  row = 0
  for i, features in enumerate(expected):
    for window, feature in enumerate(features):
      assert (example[row], windows.window.numpy()[row]) == (i, window)
      for key in ("input_ids", "input_mask", "segment_ids"):
        assert windows.features[key][row].numpy().tolist() == feature[key], (i, window, key)
      to_orig = feature[f"{name}_token_to_orig_map"]
      is_max = feature[f"{name}_token_is_max_context"]
      assert windows.token_word[row].numpy().tolist() == [to_orig.get(t, -1)
                                                         for t in range(length)]
      assert windows.max_context[row].numpy().tolist() == [is_max.get(t, False)
                                                          for t in range(length)]
      if labels is not None:
        got = tuple(int(labels[k][row]) for k in ("start_positions", "end_positions",
                                                  "is_impossible"))
        assert got == tuple(feature[f"{name}_{k}"] for k in ("start_positions", "end_positions",
                                                              "is_impossible")), (i, window)
      row += 1
  return row


def labelled_windows(config, task, examples, tokenizer, vocab):
  """The in-graph windows of `examples` with their training labels, and the runner's
  features of the same examples (the oracle)."""
  windows, context = graph_windows(config, examples, tokenizer, vocab)
  starts = [-1 if e.is_impossible else e.answer_start for e in examples]
  ends = [-1 if e.is_impossible else e.answer_start + len(e.orig_answer_text) for e in examples]
  labels = qa_windows.answer_labels(windows, tokenizer, context, tf.constant(starts),
                                    tf.constant(ends))
  return windows, labels, python_windows(task, examples, True)


@pytest.mark.parametrize("name,source", [("squadv1", V1_TRAIN), ("squad", V2_DEV)])
def test_windows_and_training_labels_equal_the_runners(tmp_path, name, source):
  config, task = squad_task(tmp_path, name, {"train": source})
  examples = task.read_examples(task.split_path("train"), "train")[:60]
  vocab, tokenizer = tokenizer_of(config)
  windows, labels, expected = labelled_windows(config, task, examples, tokenizer, vocab)
  n_windows = assert_windows_equal(task, windows, expected, labels)
  # Long contexts (several windows each) and answers labelled in two windows (overlaps).
  in_two = sum(sum(f[f"{name}_start_positions"] > 0 for f in features) >= 2
               for features in expected)
  print(f"\n{name}: {len(examples)} questions, {n_windows} windows, {in_two} answers in an "
        "overlap")
  assert n_windows > 4 * len(examples) and in_two > 10
  if name == "squad":
    assert 10 < sum(e.is_impossible for e in examples) < len(examples)


# A context for the character mapping: case, accents, punctuation inside words, runs of
# whitespace, U+202F (a word separator), a format character (removed by the tokenizer),
# characters the tokenizer splits off (CJK) and words it does not know ([UNK]).
TRICKY = ("The  Café (1895-1943).\nJohn\u202fSmith's  \u200bparis cafe\u0301s, "
          "unbelievable!  Leader \u5317\u4eac NEW-YORK\tcity ?? big-red  house.")


def test_span_text_equals_get_final_text_on_every_short_span(tmp_path):
  paragraph = {"context": TRICKY, "qas": [{"id": "q", "question": "Who was the leader?"}]}
  config, task = squad_task(tmp_path, "squadv1", {}, vocab=WORD_VOCAB, max_seq_length=24,
                            max_query_length=6, doc_stride=5)
  examples = []
  task._add_examples(examples, [0], paragraph, "dev", "mem")
  vocab, tokenizer = tokenizer_of(config)
  windows, _ = graph_windows(config, examples, tokenizer, vocab)
  features, = python_windows(task, examples, False)
  assert_windows_equal(task, windows, [features])
  rows, starts, ends, expected = [], [], [], []
  for row, feature in enumerate(features):
    doc = sorted(feature["squadv1_token_to_orig_map"])
    for start in doc:
      for end in doc:
        if 0 <= end - start < 8:
          rows.append(row)
          starts.append(start)
          ends.append(end)
          expected.append(qa_decoding._candidate_text(feature, "squadv1",
                                                       examples[0].doc_tokens, start, end, True))
  text, first, last = qa_windows.span_text(windows, tf.constant(vocab), tf.constant(rows),
                                           tf.constant(starts), tf.constant(ends), True, True)
  got = [t.decode("utf-8") for t in text.numpy()]
  assert got == expected
  # The offsets are the answer's characters: equal up to the whitespace between words.
  spans = [TRICKY[a:b] for a, b in zip(first.numpy(), last.numpy())]
  assert [" ".join(split_context(s)[0]) for s in spans] == expected
  # cut out of words where the characters align; the whole words where they do not (the
  # combining accent: "cafe\u0301s," is one character longer than its tokens "cafes ,").
  assert {"Café", "1895-1943", "Smith", "\u200bparis", "cafe\u0301s,"} <= set(expected)
  assert "cafe\u0301s" not in expected
  assert len(set(expected)) > 100


def test_empty_contexts_and_invalid_utf8_have_no_windows_or_fit():
  vocab = WORD_VOCAB
  tokenizer = TokenizerModule(vocab)
  context = qa_windows.valid_utf8(tf.constant([b"", b"the cat \xff sat", b"   "]))
  windows = qa_windows.qa_windows(tokenizer, tf.constant(["who", "who", "who"]), context,
                                  16, 4, 4, vocab.index("[CLS]"), vocab.index("[SEP]"))
  assert windows.example.numpy().tolist() == [1]  # empty and blank contexts: no window
  words = windows.words.text.to_list()
  assert words[1] == [b"the", b"cat", "\ufffd".encode(), b"sat"]
  assert windows.words.starts.to_list()[1] == [0, 4, 8, 10]
  # [CLS] who [SEP] the cat sat [SEP]: U+FFFD is a word without WordPieces
  assert windows.features["input_ids"].numpy()[0, :7].tolist() == [
      vocab.index(t) for t in ("[CLS]", "who", "[SEP]", "the", "cat", "sat", "[SEP]")]
  labels = qa_windows.answer_labels(windows, tokenizer, context, tf.constant([-1, 4, -1]),
                                    tf.constant([-1, 7, -1]))  # "cat"
  assert [int(labels[k][0]) for k in ("start_positions", "end_positions")] == [4, 4]


# -- SentencePiece (#42): the runner's SentencePiece path (tasks/qa.py char spans) ---------

# Full-width letters the model's nmt_nfkc rule rewrites, words the 60-piece model splits
# into single letters ("über": ▁ ü b e r) or [UNK], a lone U+2581 before "ü", words with
# whitespace that is no word separator inside (a U+2581 piece then starts after it) and a
# format character the model drops; a long context (several windows).
SP_CONTEXT = "Привет  ＡＢＣ мир学校, über schön.\nStraße 老师 a\u00a0b ＡＢＣ\u3000мир \u200b学"
SP_LONG = " ".join(["город книга Привет über"] * 5) + " schön мир."
SP_ANSWERS = {SP_CONTEXT: ["über", "be", "学", "ＡＢＣ мир学校", "Straße 老师", None],
              SP_LONG: ["schön", "книга Привет", "ü", None]}


def sentencepiece_squad(tmp_path, spm_model, name, **settings):
  """A squad/squadv1 task with spm.model and SP_ANSWERS (None: unanswerable) as train and
  dev, and the in-graph SentencePiece tokenizer with its char spans."""
  import shutil
  from electra_tf2.text.sentencepiece import SentencePieceModule, read_model
  from electra_tf2.text.vocab import load_vocab
  paragraphs = [{"context": context, "qas": [
      {"id": f"{k}-{i}", "question": "Привет мир?", "is_impossible": answer is None,
       "answers": [] if answer is None else [{"text": answer,
                                              "answer_start": context.index(answer)}]}
      for i, answer in enumerate(answers) if answer is not None or name == "squad"]}
                for k, (context, answers) in enumerate(SP_ANSWERS.items())]
  directory = tmp_path / "finetuning_data" / name
  directory.mkdir(parents=True)
  for split in ("train", "dev"):
    (directory / f"{split}.json").write_text(json.dumps({"data": [{"paragraphs": paragraphs}]}))
  shutil.copy(spm_model, tmp_path / "spm.model")
  config = make_config(str(tmp_path), [name], vocab_file=str(tmp_path / "spm.model"),
                       vocab_size=60, **settings)
  task, = make_tasks(config)
  module = SentencePieceModule(read_model(spm_model))
  module.enable_char_spans()
  return config, task, module, list(load_vocab(spm_model))


@pytest.mark.parametrize("name", ["squadv1", "squad"])
def test_sentencepiece_windows_labels_and_char_spans_equal_the_runners(tmp_path, spm_model,
                                                                        name):
  config, task, module, vocab = sentencepiece_squad(tmp_path, spm_model, name,
                                                    max_seq_length=24, max_query_length=6,
                                                    doc_stride=4)
  examples = task.read_examples(task.split_path("train"), "train")
  assert len(examples) == sum(len(a) if name == "squad" else len([x for x in a if x])
                              for a in SP_ANSWERS.values())  # none skipped
  windows, labels, expected = labelled_windows(config, task, examples, module, vocab)
  assert_windows_equal(task, windows, expected, labels)
  char_starts, char_ends = (t.numpy() for t in qa_windows.token_chars(windows))
  row, found = 0, set()
  for example, features in zip(examples, expected):
    for feature in features:
      spans = feature[f"{name}_token_char_spans"]
      assert [(char_starts[row, t], char_ends[row, t]) for t in range(24)] == [
          spans.get(t, (0, 0)) for t in range(24)]
      start, end = int(labels["start_positions"][row]), int(labels["end_positions"][row])
      if start:  # the labelled pieces are the answer's characters
        assert example.context[char_starts[row, start]:char_ends[row, end]] == (
            example.orig_answer_text)
        found.add(example.orig_answer_text)
      row += 1
  assert found == {a for a in sum(SP_ANSWERS.values(), []) if a}
  long = [len(f) for e, f in zip(examples, expected) if e.context == SP_LONG]
  assert min(long) > 3  # the long context: several windows


@pytest.mark.parametrize("name", ["squadv1", "squad"])
def test_sentencepiece_answers_equal_the_runners_decoding_of_the_same_logits(tmp_path,
                                                                              spm_model, name):
  import numpy as np
  from electra_tf2.text import qa_spans
  config, task, module, vocab = sentencepiece_squad(
      tmp_path, spm_model, name, max_seq_length=24, max_query_length=6, doc_stride=4,
      joint_prediction=False, answerable_classifier=False, n_best_size=5,
      max_answer_length=6)
  examples = task.read_examples(task.split_path("dev"), "dev")
  windows, _ = graph_windows(config, examples, module, vocab)
  expected = python_windows(task, examples, False)
  v2 = name == "squad"
  decoding = qa_spans.Decoding(False, 5, 6, v2, False, 0.0)
  lone = [(r, t) for r, feature in enumerate(f for fs in expected for f in fs)
          for t, (a, b) in feature[f"{name}_token_char_spans"].items()
          if a == b and feature[f"{name}_token_is_max_context"][t]]
  rng = np.random.default_rng(0)
  empty = no_span = 0
  for trial in range(6):
    logits = rng.normal(size=(2,) + windows.features["input_ids"].shape).astype(np.float32)
    if trial < len(lone):  # the best span: one lone U+2581 piece, whose text is empty
      logits[(slice(None),) + lone[trial]] = 10.0
    got = qa_spans.answers(windows, {"start_logits": tf.constant(logits[0]),
                                     "end_logits": tf.constant(logits[1])},
                           tf.constant(len(examples)), tf.constant(vocab), False, False,
                           decoding)
    texts = [t.decode("utf-8") for t in got["span_text" if v2 else "answer_text"].numpy()]
    row = 0
    for i, (example, features) in enumerate(zip(examples, expected)):
      results = {}
      for feature in features:
        results[feature[f"{name}_eid"]] = {"start_logits": logits[0, row],
                                           "end_logits": logits[1, row]}
        row += 1
      nbest, score_null = qa_decoding.decode_example(example, features, results, name,
                                                     config, v2)
      text, odds = qa_decoding.best_prediction(nbest, score_null, False)
      if [(p.text, p.score) for p in nbest] == [("empty", 0.0)]:  # no valid span: the nonce
        text, no_span = "", no_span + 1  # "empty" of the official code is "" here
      assert texts[i] == text, (trial, i)
      start, end = got["answer_start"][i], got["answer_end"][i]
      assert example.context[start:end] == text
      empty += nbest[0].text == ""
      if v2:
        assert float(got["null_score_diff"][i]) == pytest.approx(odds, abs=1e-4)
  assert empty >= 2  # the lone pieces were the best spans: v1 answers "", v2 the next best
  print(f"\n{name}: {empty} best spans with empty text, {no_span} questions without a span")


def test_cut_padding_keeps_the_longest_windows_real_tokens():
  """Hand-computed: windows of 3 and 1 real tokens in 6 positions cut to 3, or to
  min_length when that is more (at most 6); no windows: min_length."""
  mask = tf.constant([[1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0]], tf.int32)
  features = {"input_ids": mask * 7, "input_mask": mask, "segment_ids": mask * 0,
              "token_word": mask}
  for min_length, length in ((1, 3), (3, 3), (4, 4), (9, 6)):
    cut = qa_windows.cut_padding(features, min_length)
    assert sorted(cut) == ["input_ids", "input_mask", "segment_ids"]
    np.testing.assert_array_equal(cut["input_mask"], mask[:, :length])
    np.testing.assert_array_equal(cut["input_ids"], 7 * mask[:, :length])
  empty = {k: v[:0] for k, v in features.items()}
  assert qa_windows.cut_padding(empty, 4)["input_ids"].shape == (0, 4)
