"""Task readers and featurisation: GLUE column layouts, chunking quirks, bad input (finetune/classification, qa and tagging tasks)."""

import json
import os
import re

import numpy as np
import pytest

from electra_tf2.tasks import preprocessing
from electra_tf2.tasks.task import FinetuningDataError
from tests.fixtures import make_config, make_tasks, write_lines

# task -> split -> (lines, expected [(eid, text_a, text_b, label)])
GLUE = {
    "cola": {
        "train": (["gj04\t1\t\tthe cat sat .", "gj04\t0\t*\tcat the sat ."],
                  [(0, "the cat sat .", None, "1"), (1, "cat the sat .", None, "0")]),
        "test": (["index\tsentence", "0\tthe dog sat ."], [(0, "the dog sat .", None, "0")])},
    "sst": {
        "train": (["sentence\tlabel", "a big red house\t1"], [(0, "a big red house", None, "1")]),
        "test": (["index\tsentence", "0\tthe mat"], [(0, "the mat", None, "0")])},
    "mrpc": {
        "dev": (["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String", "1\t11\t12\tthe cat\tthe dog",
                 "0\t13\t14\tsee it\twe see"],
                [(0, "the cat", "the dog", "1"), (1, "see it", "we see", "0")]),
        "train": (["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String", "1\t11\t12\tthe cat\tthe dog",
                   "0\t13\t14\tsee it\twe see"],
                  [(0, "the cat", "the dog", "1"), (1, "see it", "we see", "0"),
                   (2, "the dog", "the cat", "1"), (3, "we see", "see it", "0")])},
    "qqp": {
        "train": (["id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate",
                   "7\t1\t2\twho is he ?\twho is she ?\t0"], [(0, "who is he ?", "who is she ?", "0")]),
        "test": (["id\tquestion1\tquestion2", "0\twhat year ?\twhere ?"],
                 [(0, "what year ?", "where ?", "0")])},
    "mnli": {
        "train": (["\t".join(["index", "promptID", "pairID", "genre", "s1b", "s2b", "s1p", "s2p",
                              "sentence1", "sentence2", "label1", "gold_label"]),
                   "\t".join(["0", "1", "1e", "g", "(", "(", "(", "(", "the cat sat", "a cat sat",
                              "neutral", "entailment"])],
                  [(0, "the cat sat", "a cat sat", "entailment")]),
        "dev": (["\t".join(["index"] + [f"c{i}" for i in range(14)] + ["gold_label"]),
                 "\t".join(["0"] + [f"x{i}" for i in range(7)] + ["the dog", "a dog"]
                           + ["neutral"] * 5 + ["contradiction"])],
                [(0, "the dog", "a dog", "contradiction")]),
        "diagnostic": (["index\tsentence1\tsentence2", "0\the runs\the runs fast"],
                       [(0, "he runs", "he runs fast", "contradiction")])},
    "rte": {"train": (["index\tsentence1\tsentence2\tlabel",
                       "0\tparis is big\tparis is a city\tnot_entailment"],
                      [(0, "paris is big", "paris is a city", "not_entailment")])},
    "qnli": {"train": (["index\tquestion\tsentence\tlabel", "0\twho ?\tjohn is\tentailment"],
                       [(0, "who ?", "john is", "entailment")])},
    "wnli": {"train": (["index\tsentence1\tsentence2\tlabel", "0\the sat\tjohn sat\t1"],
                       [(0, "he sat", "john sat", "1")]),
             "test": (["index\tsentence1\tsentence2", "0\tshe sat\tshe runs"],
                      [(0, "she sat", "she runs", "0")])},
    "sts": {
        "train": (["\t".join(["index", "genre", "filename", "year", "old_index", "source1",
                              "source2", "sentence1", "sentence2", "score"]),
                   "\t".join(["0", "g", "f", "y", "0", "s", "s", "a cat", "the cat", "3.2"])],
                  [(0, "a cat", "the cat", "3.2"), (1, "the cat", "a cat", "3.2")]),
        "test": (["\t".join(["index", "genre", "filename", "year", "old_index", "source1",
                             "source2", "sentence1", "sentence2"]),
                  "\t".join(["0", "g", "f", "y", "0", "s", "s", "a dog", "the dog"])],
                 [(0, "a dog", "the dog", 0.0)])},
}
FILES = {("mnli", "dev"): "dev_matched"}


@pytest.mark.parametrize("task_name", sorted(GLUE))
def test_glue_column_layouts(tmp_path, task_name):
  config = make_config(str(tmp_path), [task_name])
  for split, (lines, _) in GLUE[task_name].items():
    write_lines(os.path.join(config.task_data_dir(task_name),
                             FILES.get((task_name, split), split) + ".tsv"), lines)
  task, = make_tasks(config)
  for split, (_, expected) in GLUE[task_name].items():
    got = [(e.eid, e.text_a, e.text_b, e.label) for e in task.get_examples(split)]
    assert got == expected, split


def test_mnli_test_splits():
  from electra_tf2.tasks.classification import MNLI
  assert MNLI.get_test_splits(None) == ["test_matched", "test_mismatched", "diagnostic"]


def test_pair_featurisation_and_truncation(tmp_path):
  config = make_config(str(tmp_path), ["rte"], max_seq_length=9)
  write_lines(os.path.join(config.task_data_dir("rte"), "train.tsv"),
              ["index\tsentence1\tsentence2\tlabel",
               "0\tthe big red cat sat\tthe dog sat\tnot_entailment"])
  task, = make_tasks(config)
  example, = task.get_examples("train")
  task.prepare([example])
  features, = task.featurize(example, True)
  vocab = task._tokenizer.vocab
  # 5 + 3 tokens into 9 - 3 = 6: the longer segment loses its last token twice
  expected = ["[CLS]", "the", "big", "red", "[SEP]", "the", "dog", "sat", "[SEP]"]
  assert features["input_ids"] == [vocab[t] for t in expected]
  assert features["segment_ids"] == [0] * 5 + [1] * 4
  assert features["input_mask"] == [1] * 9
  assert (features["rte_label_ids"], features["rte_eid"], features["task_id"]) == (1, 0, 0)


def test_sts_labels_are_normalised(tmp_path):
  config = make_config(str(tmp_path), ["sts"])
  lines, _ = GLUE["sts"]["train"]
  write_lines(os.path.join(config.task_data_dir("sts"), "train.tsv"), lines)
  task, = make_tasks(config)
  examples = task.get_examples("train")
  task.prepare(examples)
  assert task.featurize(examples[0], True)[0]["sts_targets"] == pytest.approx(0.64)


def test_single_sentence_padding(tmp_path):
  config = make_config(str(tmp_path), ["sst"], max_seq_length=8)
  write_lines(os.path.join(config.task_data_dir("sst"), "train.tsv"),
              ["sentence\tlabel", "the cat sat on the big red mat\t1"])
  task, = make_tasks(config)
  example, = task.get_examples("train")
  task.prepare([example])
  features, = task.featurize(example, True)
  assert len(features["input_ids"]) == 8 and features["segment_ids"] == [0] * 8
  assert features["input_ids"][-1] == task._tokenizer.vocab["[SEP]"]


def test_missing_task_data_is_a_clear_error(tmp_path):
  config = make_config(str(tmp_path), ["sst"])
  task, = make_tasks(config)
  with pytest.raises(FinetuningDataError, match=r"task sst: the task directory .*finetuning_data"
                     r"/sst does not exist\. Put GLUE's SST-2 files"):
    task.get_examples("train")
  os.makedirs(config.task_data_dir("sst"))
  with pytest.raises(FinetuningDataError, match=r"sst/dev\.tsv is missing"):
    task.get_examples("dev")


def test_wrong_number_of_columns(tmp_path, capsys):
  config = make_config(str(tmp_path), ["mrpc"])
  path = write_lines(os.path.join(config.task_data_dir("mrpc"), "train.tsv"),
                     ["Quality\tString", "1\tthe cat"])
  task, = make_tasks(config)
  with pytest.raises(FinetuningDataError, match=rf"{path}:1: 2 tab-separated columns, but task "
                     r"mrpc reads column\(s\) \[3, 4, 0\]"):
    task.get_examples("train")
  write_lines(path, ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String", "1\t1\t2\tthe cat\tthe dog",
                     "1\t1\tthe cat", "0\t3\t4\tsee it\twe see"])
  examples = task.get_examples("train")
  # the bad row (line 3) is skipped; the swapped copies start at eid len(examples) (official)
  assert [(e.eid, e.text_a) for e in examples] == [(0, "the cat"), (2, "see it"),
                                                   (2, "the dog"), (4, "we see")]
  assert f"{path}:3: 3 columns instead of 5; row skipped" in capsys.readouterr().out


def test_bad_labels_name_file_and_line(tmp_path):
  config = make_config(str(tmp_path), ["rte", "sts"])
  rte_path = os.path.join(config.task_data_dir("rte"), "train.tsv")
  write_lines(rte_path, ["index\tsentence1\tsentence2\tlabel", "0\ta\tb\tentailment",
                         "1\ta\tb\tmaybe"])
  sts_path = os.path.join(config.task_data_dir("sts"), "train.tsv")
  sts_header = "\t".join(["c%d" % i for i in range(7)] + ["s1", "s2", "score"])
  write_lines(sts_path, [sts_header] + ["\t".join(["x"] * 7 + ["a", "b", score])
                                        for score in ("3.5", "high", "7")])
  rte, sts = make_tasks(config)
  examples = rte.get_examples("train")
  rte.prepare(examples)
  rte.featurize(examples[0], True)
  with pytest.raises(FinetuningDataError, match=re.escape(
      f"{rte_path}:3 (task rte, example 1): the label 'maybe' is not one of "
      "['entailment', 'not_entailment']")):
    rte.featurize(examples[1], True)
  examples = sts.get_examples("train")
  assert len(examples) == 6  # double_unordered: the swapped copies keep their source line
  sts.prepare(examples)
  assert sts.featurize(examples[0], True)[0]["sts_targets"] == pytest.approx(0.7)
  with pytest.raises(FinetuningDataError, match=re.escape(
      f"{sts_path}:3 (task sts, example 1): the label 'high' is not a number")):
    sts.featurize(examples[1], True)
  with pytest.raises(FinetuningDataError, match=re.escape(
      f"{sts_path}:4 (task sts, example 5): the label 7.0 is outside [0.0, 5.0]")):
    sts.featurize(examples[5], True)


# ---------------------------------------------------------------------------
# Chunking
# ---------------------------------------------------------------------------


CONLL = ["-DOCSTART- -X- O", "", "John NNP B-NP", "Smith NNP I-NP", "runs VBZ B-VP", ". . O",
         "", "Unbelievable JJ B-NP", "cats NNS I-NP", "sat VBD B-VP"]  # no final blank line


def chunk_task(tmp_path, **hparams):
  config = make_config(str(tmp_path), ["chunk"], **hparams)
  write_lines(os.path.join(config.task_data_dir("chunk"), "train.txt"), CONLL)
  write_lines(os.path.join(config.task_data_dir("chunk"), "dev.txt"), CONLL[2:6])
  task, = make_tasks(config)
  return config, task


def test_chunk_labels_are_bioes_over_all_splits(tmp_path):
  config, task = chunk_task(tmp_path)
  examples = task.get_examples("train")
  assert [e.words for e in examples] == [["John", "Smith", "runs", "."],
                                         ["Unbelievable", "cats", "sat"]]
  mapping = task.label_mapping()
  assert mapping == {"B-NP": 0, "E-NP": 1, "O": 2, "S-VP": 3}
  assert examples[0].labels == [0, 1, 3, 2]
  with open(task.label_mapping_path) as f:
    assert json.load(f) == mapping
  assert task.head_spec() == {"kind": "tagging", "task": "chunk",
                              "label_list": ["B-NP", "E-NP", "O", "S-VP"]}
  # new data with a tag the cached mapping lacks: an error naming the cache, not a KeyError
  write_lines(os.path.join(config.task_data_dir("chunk"), "train.txt"), ["Runs VBZ B-VP",
                                                                          "fast RB I-VP"])
  with pytest.raises(FinetuningDataError, match=rf"train\.txt: sentence 1 has tag 'B-VP', which "
                     rf"the cached {task.label_mapping_path} lacks; delete that file"):
    make_tasks(config)[0].get_examples("train")


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_chunk_features_keep_the_official_quirks(tmp_path, do_lower_case):
  config, task = chunk_task(tmp_path, do_lower_case=do_lower_case)
  examples = task.get_examples("train")
  task.prepare(examples)
  features, = task.featurize(examples[1], True)
  vocab = task._tokenizer.vocab
  # always lowercased; tagged at the first wordpiece; segment id 1 everywhere, [CLS] included
  tokens = ["[CLS]", "un", "##believ", "##able", "cat", "##s", "sat", "[SEP]"]
  assert features["input_ids"][:8] == [vocab[t] for t in tokens]
  assert features["chunk_labeled_positions"][:4] == [1, 4, 6, 0]
  assert features["chunk_labels_mask"][:4] == [1.0, 1.0, 1.0, 0.0]
  assert features["segment_ids"][:9] == [1] * 8 + [0]
  assert features["input_mask"][:9] == [1] * 8 + [0]
  assert features["chunk_labels"][:3] == examples[1].labels


def test_chunk_truncation_rule(tmp_path):
  config, task = chunk_task(tmp_path, max_seq_length=9)
  examples = task.get_examples("train")
  task.prepare(examples)
  features, = task.featurize(examples[1], True)
  vocab = task._tokenizer.vocab
  # words_to_tokens has 5 entries; a word is added while 5 + len(ids) + 1 <= 9
  ids = ["[CLS]", "un", "##believ", "##able", "[SEP]"]
  assert features["input_ids"][:6] == [vocab[t] for t in ids] + [0]
  assert features["chunk_labels_mask"][:2] == [1.0, 0.0]


def test_conll_errors_name_file_and_line(tmp_path):
  config = make_config(str(tmp_path), ["chunk"])
  path = write_lines(os.path.join(config.task_data_dir("chunk"), "train.txt"),
                     ["John NNP B-NP", "Smith"])
  task, = make_tasks(config)
  with pytest.raises(FinetuningDataError, match=rf"{path}:2: expected 'word \.\.\. tag'"):
    task.get_examples("train")
  write_lines(path, ["John NNP NP"])
  with pytest.raises(FinetuningDataError, match=rf"{path}:1: tag 'NP' is neither O nor"):
    task.get_examples("train")


# ---------------------------------------------------------------------------
# SQuAD / MRQA input checks
# ---------------------------------------------------------------------------


def squad_file(path, context, qas, version="1.1"):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w") as f:
    json.dump({"version": version, "data": [{"title": "t", "paragraphs": [
        {"context": context, "qas": qas}]}]}, f)
  return path


def test_squad_answer_offsets_must_match(tmp_path):
  config = make_config(str(tmp_path), ["squadv1"], max_seq_length=64, max_query_length=16)
  path = squad_file(os.path.join(config.task_data_dir("squadv1"), "train.json"),
                    "john smith was born in paris .",
                    [{"id": "q1", "question": "who ?",
                      "answers": [{"text": "paris", "answer_start": 23}]},
                     {"id": "q2", "question": "who ?",
                      "answers": [{"text": "paris", "answer_start": 3}]}])
  task, = make_tasks(config)
  with pytest.raises(FinetuningDataError, match=rf"{path}: question q2: the answer 'paris' does "
                     r"not match the context at answer_start 3 \('n smi'\)"):
    task.get_examples("train")
  squad_file(path, "john smith", [{"id": "q3", "question": "who ?",
                                   "answers": [{"text": "john", "answer_start": 40}]}])
  with pytest.raises(FinetuningDataError, match="question q3: answer_start 40 is outside"):
    make_tasks(config)[0].get_examples("train")


def test_squad_v2_needs_is_impossible_and_json_errors_name_the_line(tmp_path):
  config = make_config(str(tmp_path), ["squad"], max_seq_length=64, max_query_length=16)
  path = squad_file(os.path.join(config.task_data_dir("squad"), "train.json"), "john smith",
                    [{"id": "q1", "question": "who ?",
                      "answers": [{"text": "john", "answer_start": 0}]}], "v2.0")
  with pytest.raises(FinetuningDataError, match="question q1 has no is_impossible field"):
    make_tasks(config)[0].get_examples("train")
  with open(path, "w") as f:
    f.write('{"data": [\n{"paragraphs": [}\n]}')
  with pytest.raises(FinetuningDataError, match=re.escape(
      f"{path}:2: not valid JSON (Expecting value column 17); is the file complete?")):
    make_tasks(config)[0].get_examples("train")


def test_squad_debug_mode_names_the_debug_files(tmp_path):
  config = make_config(str(tmp_path), ["squadv1"], debug=True, max_seq_length=64,
                       max_query_length=16)
  squad_file(os.path.join(config.task_data_dir("squadv1"), "train.json"), "john smith",
             [{"id": "q1", "question": "who ?", "answers": [{"text": "john", "answer_start": 0}]}])
  with pytest.raises(FinetuningDataError, match=re.escape(
      "squadv1/train-debug.json is missing. Put the SQuAD 1.1 train-v1.1.json") + ".*" +
      re.escape('With "debug": true the task reads train-debug.json and dev-debug.json')):
    make_tasks(config)[0].get_examples("train")


def test_squad_structure_errors_name_the_file_and_question(tmp_path):
  config = make_config(str(tmp_path), ["squadv1"], max_seq_length=64, max_query_length=16)
  path = os.path.join(config.task_data_dir("squadv1"), "train.json")

  def examples():
    return make_tasks(config)[0].get_examples("train")

  squad_file(path, "john smith", [{"id": "q1", "answers": [{"text": "john",
                                                             "answer_start": 0}]}])
  with pytest.raises(FinetuningDataError, match=rf"{path}: question q1: field 'question' is "
                     "missing or not a str"):
    examples()
  for text in (None, 3):
    squad_file(path, "john smith", [{"id": "q2", "question": "who ?",
                                     "answers": [{"text": text, "answer_start": 0}]}])
    with pytest.raises(FinetuningDataError, match="question q2: the answer text is missing or "
                       "not a string"):
      examples()
  with open(path, "w") as f:
    json.dump({"data": [{"title": "t"}]}, f)
  with pytest.raises(FinetuningDataError, match=rf"{path}: data\[0\]: field 'paragraphs' is "
                     "missing or not a list"):
    examples()
  with open(path, "w") as f:
    json.dump({"data": [{"paragraphs": [{"qas": []}]}]}, f)
  with pytest.raises(FinetuningDataError, match="a paragraph: field 'context' is missing"):
    examples()
  with open(path, "w") as f:
    json.dump([1, 2], f)
  with pytest.raises(FinetuningDataError, match=r"\(not a SQuAD file\?\): field 'data'"):
    examples()


def test_squad_unrecoverable_answers_are_skipped_and_counted(tmp_path, capsys):
  config = make_config(str(tmp_path), ["squadv1"], max_seq_length=64, max_query_length=16)
  # U+2009 does not split words for the context splitter but does for str.split(), so the
  # official check (is "b c" in the words "ab\u2009cd"?) fails: skipped and counted
  squad_file(os.path.join(config.task_data_dir("squadv1"), "train.json"), "xy ab\u2009cd ef",
             [{"id": "q1", "question": "who ?", "answers": [{"text": "b\u2009c",
                                                              "answer_start": 4}]},
              {"id": "q2", "question": "who ?", "answers": [{"text": "ef",
                                                              "answer_start": 9}]}])
  examples = make_tasks(config)[0].get_examples("train")
  assert [e.qas_id for e in examples] == ["q2"]
  assert "1 examples, 1 answers not found in their context (skipped)" in capsys.readouterr().out
  # an empty answer gives no span to learn: skipped and counted the same way
  squad_file(os.path.join(config.task_data_dir("squadv1"), "train.json"), "xy ab",
             [{"id": "q1", "question": "who ?", "answers": [{"text": " ", "answer_start": 2}]},
              {"id": "q2", "question": "who ?", "answers": [{"text": "ab",
                                                              "answer_start": 3}]}])
  assert [e.qas_id for e in make_tasks(config)[0].get_examples("train")] == ["q2"]
  assert "1 examples, 1 answers not found" in capsys.readouterr().out
  # U+00A0 does not split words either: the answer covers words 0 ("ab\u00a0cd") and 1
  squad_file(os.path.join(config.task_data_dir("squadv1"), "train.json"), "ab\u00a0cd ef",
             [{"id": "q1", "question": "who ?", "answers": [{"text": "cd ef",
                                                              "answer_start": 3}]}])
  example, = make_tasks(config)[0].get_examples("train")
  assert (example.start_position, example.end_position) == (0, 1)


def test_mrqa_reader(tmp_path):
  config = make_config(str(tmp_path), ["newsqa"], max_seq_length=64, max_query_length=16)
  path = os.path.join(config.task_data_dir("newsqa"), "train.jsonl")
  lines = [json.dumps({"header": {"dataset": "NewsQA"}}),
           json.dumps({"context": "john smith was born in paris", "qas": [
               {"qid": "n1", "question": "where ?", "answers": ["paris"],
                "detected_answers": [{"text": "paris", "char_spans": [[23, 27]]}]}]})]
  write_lines(path, lines)
  task, = make_tasks(config)
  example, = task.get_examples("train")
  assert (example.qid, example.example_id, example.start_position, example.end_position) == (
      "n1", "n1", 5, 5)
  write_lines(path, lines[:1] + ["{not json"])
  with pytest.raises(FinetuningDataError, match=rf"{path}:2: not valid JSON"):
    make_tasks(config)[0].get_examples("train")
  write_lines(path, lines[:1] + ["[1, 2]"])
  with pytest.raises(FinetuningDataError, match=rf"{path}:2: not a JSON object"):
    make_tasks(config)[0].get_examples("train")
  write_lines(path, [json.dumps({"context": "john", "qas": [
      {"qid": "n2", "question": "who ?", "answers": ["john"],
       "detected_answers": [{"text": 7, "char_spans": [[0, 3]]}]}]})])
  with pytest.raises(FinetuningDataError, match="question n2: the answer text is missing"):
    make_tasks(config)[0].get_examples("train")


# ---------------------------------------------------------------------------
# TFRecords
# ---------------------------------------------------------------------------


def test_tfrecords_are_padded_cached_and_rebuilt_on_change(tmp_path, capsys):
  config = make_config(str(tmp_path), ["sst"], train_batch_size=4, num_train_epochs=2.0)
  lines = ["sentence\tlabel"] + [f"the cat sat {i}\t{i % 2}" for i in range(5)]
  write_lines(os.path.join(config.task_data_dir("sst"), "train.tsv"), lines)
  tasks = make_tasks(config)
  path, steps = preprocessing.Preprocessor(config, tasks).prepare_train()
  assert steps == 4  # 5 examples padded to 8, // 4 * 2 epochs
  records = [r for r in __import__("tensorflow").data.TFRecordDataset(path)]
  assert len(records) == 8
  p = preprocessing.Preprocessor(config, tasks)
  batch = next(iter(p.dataset(path, False, 8)))
  assert sorted(batch["task_id"].numpy().tolist()) == [0] * 5 + [1] * 3  # padding: n_tasks
  assert batch["input_ids"].dtype.name == "int32"
  preprocessing.Preprocessor(config, tasks).prepare_train()
  assert "using the cached" in capsys.readouterr().out
  changed = make_config(str(tmp_path), ["sst"], train_batch_size=4, max_seq_length=16)
  preprocessing.Preprocessor(changed, make_tasks(changed)).prepare_train()
  assert "using the cached" not in capsys.readouterr().out
  batch = next(iter(preprocessing.Preprocessor(changed, tasks).dataset(path, False, 8)))
  assert batch["input_ids"].shape == (8, 16)
  assert np.all(batch["input_mask"].numpy().sum(1)[batch["task_id"].numpy() == 1] == 0)
