"""bench/studies/pretraining_study.py at its smallest budget, on tiny data written here, and resuming.

Slow (about a minute): it runs run_pretraining.py and run_finetuning.py as a user would.
"""

import json
import os
import random

import pytest

from bench.studies import pretraining_study
from bench.studies.pretraining.pretrain import plan
from bench.studies.pretraining.report import table_cell

pytestmark = pytest.mark.slow
WORDS = "the a cat dog film movie good bad great awful plot actor sat ran on in was is".split()


def fake_shared_data(root):
  """corpus/ (two text files of documents) and glue/SST-2/{train,dev}.tsv."""
  rng = random.Random(0)
  os.makedirs(os.path.join(root, "corpus", "books"))
  for name in ("a.txt", os.path.join("books", "b.txt")):
    with open(os.path.join(root, "corpus", name), "w") as f:
      for _ in range(60):
        f.write("\n".join(" ".join(rng.choices(WORDS, k=12)) for _ in range(4)) + "\n\n")
  os.makedirs(os.path.join(root, "glue", "SST-2"))
  for split, n in (("train", 60), ("dev", 24)):
    with open(os.path.join(root, "glue", "SST-2", f"{split}.tsv"), "w") as f:
      f.write("sentence\tlabel\n")
      for i in range(n):
        label = i % 2
        words = rng.choices(WORDS[:6], k=5) + [("great" if label else "awful")]
        f.write(f"{' '.join(words)}\t{label}\n")
  return root


def test_smallest_budget_then_resume(tmp_path, capsys):
  shared = fake_shared_data(str(tmp_path / "shared"))
  argv = ["--work-dir", str(tmp_path / "study"), "--shared-data", shared,
          "--objectives", "electra_0.5", "--tasks", "sst", "--seeds", "0",
          "--checkpoints", "0.5,1", "--vocab-size", "120", "--max-seq-length", "32",
          "--num-shards", "10", "--train-examples", "40",
          "--pretrain-hparams", json.dumps({
              "debug": False, "embedding_size": 16, "train_batch_size": 8,
              "iterations_per_loop": 5, "model_hparam_overrides": {
                  "hidden_size": 32, "num_hidden_layers": 1}}),
          "--finetune-hparams", json.dumps({"num_train_epochs": 1.0, "train_batch_size": 8,
                                            "eval_batch_size": 8})]
  pretraining_study.main(argv + ["--stages", "data"])
  args = pretraining_study.parse_args(argv)
  per_step = plan(args)["electra_0.5"]["flops_per_step"]
  argv += ["--budget", str(10 * per_step)]  # ten steps: checkpoints at steps 5 and 10
  # A report before any fine-tuning says what it lacks instead of "complete".
  assert pretraining_study.main(argv + ["--stages", "report"]) == 0
  report_only = capsys.readouterr().out
  assert "report written without 3 fine-tuning result(s) (random/sst, ...)" in report_only
  assert "the study is complete" not in report_only
  # A time limit stops the run (exit status 3); the same command then goes on.
  assert pretraining_study.main(argv + ["--time-limit", "0.02"]) == 3
  assert "the --time-limit of 0.02 minutes is reached" in capsys.readouterr().out
  assert pretraining_study.main(argv) == 0
  first = capsys.readouterr().out
  assert first.count("+ ") == 4  # one pre-training, three fine-tunings (random, step 5, 10)
  assert "the study is complete" in first

  result = json.load(open(tmp_path / "study" / "study.json"))
  points = {p["name"]: p for p in result["points"]}
  budget = f"{10 * per_step:.2g}"
  assert sorted(points) == sorted(["random", f"electra_0.5_{budget}_step5",
                                   f"electra_0.5_{budget}_step10"])
  for point in points.values():
    accuracy = point["scores"]["sst"]
    assert 0.0 <= accuracy["median"] <= 100.0 and len(accuracy["trials"]) == 1
    assert point["scores"]["average"] == accuracy["median"]
  step10 = points[f"electra_0.5_{budget}_step10"]
  assert step10["flops"] == pytest.approx(10 * per_step)
  assert result["plans"]["electra_0.5"]["steps"] == 10
  # Checkpoints only at the fine-tuned fractions (steps are whole compiled loops of 5).
  model_dir = result["plans"]["electra_0.5"]["model_dir"]
  assert sorted(int(f[5:-6]) for f in os.listdir(model_dir)
                if f.startswith("ckpt-") and f.endswith(".index")) == [5, 10]
  assert {"mlm_loss", "disc_loss", "train_metrics/disc_auc"} <= set(
      result["curves"]["electra_0.5"])
  table = (tmp_path / "study" / "study.md").read_text().splitlines()
  assert table[0] == "| model | pre-training FLOPs | sst | average |"
  assert len(table) == 5
  for png in ("glue_vs_flops.png", "pretraining_curves.png"):
    assert (tmp_path / "study" / png).read_bytes()[:4] == b"\x89PNG"

  # Rerunning skips everything that is done: no new run, the same scores.
  assert pretraining_study.main(argv) == 0
  assert "+ " not in capsys.readouterr().out
  again = json.load(open(tmp_path / "study" / "study.json"))
  assert [p["scores"] for p in again["points"]] == [p["scores"] for p in result["points"]]


def test_bad_arguments_are_one_line(tmp_path, capsys):
  with pytest.raises(SystemExit):
    pretraining_study.parse_args(["--objectives", "electra_2"])
  assert "objectives are mlm or electra_<generator fraction>" in capsys.readouterr().err
  with pytest.raises(SystemExit):
    pretraining_study.main(["--shared-data", str(tmp_path)])
  assert f"--shared-data {tmp_path} has no corpus/ directory" in capsys.readouterr().err


def test_table_marks_medians_of_fewer_seeds_than_asked():
  assert table_cell({"median": 61.5, "trials": [60.0, 61.5, 70.0]}, 3) == "61.50"
  assert table_cell({"median": 61.5, "trials": [61.5]}, 3) == "61.50 (1 of 3 seeds)"
  assert table_cell(None, 3) == ""


def test_pretrained_vs_random_is_a_mode_of_the_study_command(capsys):
  with pytest.raises(SystemExit):
    pretraining_study.main(["pretrained-vs-random", "--reinit", "encoder/(layer_"])
  err = capsys.readouterr().err
  assert err.startswith("usage: python -m bench.studies.pretraining_study pretrained-vs-random")
  assert "'encoder/(layer_' is not a regular expression" in err
