"""Model directories travel: a run made with relative paths, moved, used from elsewhere.

One tiny run (pre-training for 2 steps, fine-tuning SST-shaped data for a few) is made
inside its own working directory with relative paths, as the quickstart does; the whole
run is then moved, and from another working directory it is pre-trained further,
fine-tuned, exported, scored, converted and read by `from_pretrained`.
"""

import json
import os
import shutil

import pytest

from electra_tf2 import convert, export, hf_export
from electra_tf2.checkpoints import directories
from electra_tf2.config import resolve_pretraining_config
from electra_tf2.finetune import runner
from electra_tf2.finetune.config import resolve_finetuning_config
from electra_tf2.training import pretraining
from tests.fixtures import write_lines, write_pretraining_data

TINY_ENCODER = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
                "intermediate_size": 64}
PRETRAIN = {"debug": True, "vocab_size": 64, "max_seq_length": 32, "train_batch_size": 8,
            "num_train_steps": 2, "embedding_size": 16, "model_hparam_overrides": TINY_ENCODER}
FINETUNE = {"max_seq_length": 32, "train_batch_size": 8, "eval_batch_size": 8,
            "num_train_epochs": 1.0, "iterations_per_loop": 2}


def sst_split(n, offset):
  return ["sentence\tlabel"] + [f"w{i % 50} w{(i * 7) % 50} w{(i * 3) % 50}\t{i % 2}"
                                for i in range(offset, offset + n)]


@pytest.fixture(scope="module")
def moved(tmp_path_factory):
  """`{"data": DIR, "model": DIR/models/electra_small, "trial": its sst_model_1}` of a run
  made in `made/` with relative paths and moved to `moved/`; the working directory is
  `elsewhere/` while the tests run."""
  root = tmp_path_factory.mktemp("travel")
  made = root / "made"
  made.mkdir()
  cwd = os.getcwd()
  os.chdir(made)
  try:
    write_pretraining_data("data", num_examples=32, seq_len=32, vocab_size=64, bert_ids=False)
    write_lines("data/finetuning_data/sst/train.tsv", sst_split(16, 0))
    write_lines("data/finetuning_data/sst/dev.tsv", sst_split(8, 100))
    pretraining.run_pretraining(resolve_pretraining_config("electra_small", "data", PRETRAIN))
    runner.run_finetuning(resolve_finetuning_config("electra_small", "data", FINETUNE, "sst"))
  finally:
    os.chdir(cwd)
  shutil.move(str(made), str(root / "moved"))
  elsewhere = root / "elsewhere"
  elsewhere.mkdir()
  os.chdir(elsewhere)
  data = str(root / "moved" / "data")
  model = os.path.join(data, "models", "electra_small")
  yield {"root": root, "data": data, "model": model,
         "trial": os.path.join(model, "finetuning_models", "sst_model_1")}
  os.chdir(cwd)


def saved(path):
  with open(path, encoding="utf-8") as f:
    return json.load(f)


def test_directories_hold_their_vocab_and_relative_paths(moved):
  pretrained = saved(os.path.join(moved["model"], "pretrain_config.json"))
  assert pretrained["vocab_file"] == "vocab.txt"
  assert pretrained["model_dir"] == "."
  assert pretrained["data_dir"] == os.path.join("..", "..")
  assert pretrained["pretrain_tfrecords"] == os.path.join(
      "..", "..", "pretrain_tfrecords", "pretrain_data.tfrecord*")
  finetuned = saved(os.path.join(moved["trial"], "finetuning_config.json"))
  assert finetuned["vocab_file"] == "vocab.txt"
  assert finetuned["init_checkpoint"] == os.path.join("..", "..")
  assert finetuned["raw_data_dir"] == os.path.join("..", "..", "..", "..", "finetuning_data",
                                                   "{task}")
  for directory in (moved["model"], moved["trial"]):
    with open(os.path.join(directory, "vocab.txt")) as f, \
        open(os.path.join(moved["data"], "vocab.txt")) as g:
      assert f.read() == g.read()


def test_pretrain_further_resumes_with_its_input_position(moved, capsys):
  config = resolve_pretraining_config("electra_small", moved["data"],
                                      dict(PRETRAIN, num_train_steps=3))
  summary = pretraining.run_pretraining(config)
  out = capsys.readouterr().out
  assert "resumed from" in out
  assert summary["step"] == 3


def test_finetune_score_and_from_pretrained(moved):
  import numpy as np
  import electra_tf2
  results = runner.run_finetuning(resolve_finetuning_config(
      "electra_small", moved["data"], FINETUNE, "sst"))
  assert "accuracy" in results[0]["sst"]
  scores = electra_tf2.TextScorer.load(moved["model"]).score(["w1 w2 w3"])
  assert len(scores[0].words) == 3
  classifier = electra_tf2.TextClassifier.from_pretrained(moved["trial"])
  assert np.asarray(classifier.predict(["w1 w2"], verbose=0)).shape == (1, 2)
  electra_tf2.Discriminator.from_pretrained(moved["model"])


@pytest.mark.slow
def test_export_and_convert(moved, tmp_path, capsys):
  out = str(tmp_path / "export")
  assert export.main(["--model-dir", moved["model"], "--output-dir", out + "_d"]) == 0
  assert export.main(["--model-dir", moved["trial"], "--output-dir", out + "_f"]) == 0
  official = str(tmp_path / "official")
  assert convert.main(["to-official", "--model-dir", moved["model"], "--output-dir",
                       official]) == 0
  assert os.path.isfile(os.path.join(official, "vocab.txt"))
  hf = str(tmp_path / "hf")
  assert hf_export.main(["--model-dir", moved["model"], "--output-dir", hf]) == 0
  imported = str(tmp_path / "imported")
  assert convert.main(["from-hf", "--hf-dir", hf, "--output-dir", imported]) == 0
  assert saved(os.path.join(imported, "pretrain_config.json"))["vocab_file"] == "vocab.txt"
  assert os.path.isfile(os.path.join(imported, "vocab.txt"))
  assert "resolved against the working directory" not in capsys.readouterr().err


def test_old_directories_resolve_against_the_working_directory_and_say_so(moved, tmp_path,
                                                                          capsys):
  """A directory written before (vocab_file relative to the run's working directory, no
  vocab.txt inside) loads from that working directory, with one line saying so."""
  old = tmp_path / "run" / "models" / "old"
  shutil.copytree(moved["model"], old)
  os.remove(old / "vocab.txt")
  values = saved(old / "pretrain_config.json")
  values["vocab_file"] = os.path.join("run", "vocab.txt")
  (old / "pretrain_config.json").write_text(json.dumps(values))
  shutil.copy(os.path.join(moved["data"], "vocab.txt"), tmp_path / "run" / "vocab.txt")
  config = directories.load_pretraining_config(str(old))
  assert directories.find_vocab(str(old), config) is None  # not from elsewhere/
  os.chdir(tmp_path)
  try:
    config = directories.load_pretraining_config(os.path.join("run", "models", "old"))
    assert config.vocab_file == os.path.join("run", "vocab.txt")
    err = capsys.readouterr().err
    assert f"vocab_file {os.path.join('run', 'vocab.txt')} is not under" in err
    assert f"resolved against the working directory {tmp_path}" in err
  finally:
    os.chdir(moved["root"] / "elsewhere")
