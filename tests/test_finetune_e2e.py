"""End to end on ../shared/data with a debug-size pre-trained model (few steps, capped data).

Each test builds DIR in the official layout (finetuning_data/<task>/ symlinked to the
shared GLUE, SQuAD and CoNLL files, models/dbg linking to a debug model pre-trained here
for two steps), fine-tunes briefly and checks that the metrics are written (SQuAD 1.1 and
2.0's runs, from random weights: tests/test_question_answerer.py's fixtures, which check
their files and answers).
"""

import json
import os
import subprocess
import sys

import pytest

from electra_tf2.config import pretraining as pretraining_config
from electra_tf2.training import finetuning as runner
from electra_tf2.tasks.config import resolve_finetuning_config
from electra_tf2.training import tf_pretraining as pretraining
from tests.conftest import REPO_ROOT, shared_data_path
from tests.fixtures import write_pretraining_data

QUICK = {"num_train_epochs": 1.0, "train_batch_size": 16, "eval_batch_size": 16,
         "iterations_per_loop": 4}


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
  shared_data_path("vocab", "vocab.txt")
  root = tmp_path_factory.mktemp("pretrained")
  write_pretraining_data(str(root / "data"), num_examples=32, seq_len=32)
  config = pretraining_config.resolve_pretraining_config(
      "electra_small", str(root / "data"),
      {"debug": True, "num_train_steps": 2, "max_seq_length": 32,
       "model_dir": str(root / "dbg")})
  pretraining.run_pretraining(config)
  return str(root / "dbg")


def make_data_dir(tmp_path, pretrained, links):
  """DIR with vocab.txt, models/dbg and finetuning_data/<path> -> shared file links."""
  root = tmp_path / "DIR"
  model_dir = root / "models" / "dbg"
  model_dir.mkdir(parents=True)
  for name in os.listdir(pretrained):
    if name in ("pretrain_config.json", "checkpoint") or name.startswith("ckpt-"):
      os.symlink(os.path.join(pretrained, name), model_dir / name)
  os.symlink(shared_data_path("vocab", "vocab.txt"), root / "vocab.txt")
  for target, source in links.items():
    path = root / "finetuning_data" / target
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(source, tuple):
      path.write_text(json.dumps(source[0]))
    else:
      os.symlink(shared_data_path(*source.split("/")), path)
  return str(root)


def finetune(data_dir, task, **hparams):
  config = resolve_finetuning_config("dbg", data_dir, dict(QUICK, **hparams), task)
  results = runner.run_finetuning(config)
  with open(config.results_json) as f:
    saved = json.load(f)
  assert saved["trials"][0]["results"] == results[0]
  assert os.path.isfile(config.results_txt)
  print(task, results[0][task])
  return config, results[0][task]


def test_sst(tmp_path, pretrained):
  d = make_data_dir(tmp_path, pretrained, {"sst/train.tsv": "glue/SST-2/train.tsv",
                                           "sst/dev.tsv": "glue/SST-2/dev.tsv"})
  _, metrics = finetune(d, "sst", max_examples_per_split=256, max_seq_length=64)
  assert 0 <= metrics["accuracy"] <= 100 and metrics["loss"] > 0


def test_mrpc(tmp_path, pretrained):
  d = make_data_dir(tmp_path, pretrained, {"mrpc/train.tsv": "glue/MRPC/train.tsv",
                                           "mrpc/dev.tsv": "glue/MRPC/dev.tsv"})
  _, metrics = finetune(d, "mrpc", max_examples_per_split=128, max_seq_length=96)
  assert 0 <= metrics["accuracy"] <= 100


def test_chunk(tmp_path, pretrained):
  d = make_data_dir(tmp_path, pretrained, {"chunk/train.txt": "conll2000/train.txt",
                                           "chunk/dev.txt": "conll2000/test.txt"})
  _, metrics = finetune(d, "chunk", max_examples_per_split=128, max_seq_length=64,
                        learning_rate=1e-3)
  assert set(metrics) == {"precision", "recall", "f1", "loss"}
  assert metrics["f1"] > 0  # even a few steps find some chunks


def squad_head(n_paragraphs):
  with open(shared_data_path("squad",
                             "dev-v2.0.subset-Normans-Computational_complexity_theory.json")) as f:
    data = json.load(f)
  article = data["data"][0]
  return {"version": data["version"],
          "data": [dict(article, paragraphs=article["paragraphs"][:n_paragraphs])]}


def run_cli(*args):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
  return subprocess.run([sys.executable, "run_finetuning.py", *args], cwd=REPO_ROOT, env=env,
                        capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_command_as_typed(tmp_path, pretrained):
  """`run_finetuning.py --data-dir DIR --model-name NAME --task squad` with every default
  (512 tokens, 2 epochs, batch 32, beam 20) on two SQuAD 2.0 paragraphs."""
  head = squad_head(2)
  d = make_data_dir(tmp_path, pretrained, {"squad/train.json": (head,),
                                           "squad/dev.json": (head,)})
  proc = run_cli("--data-dir", d, "--model-name", "dbg", "--task", "squad")
  assert proc.returncode == 0, proc.stderr[-3000:]
  results = os.path.join(d, "models", "dbg", "results")
  with open(os.path.join(results, "squad_results.txt")) as f:
    assert f.read().startswith("squad: HasAns_exact: ")
  for name in ("squad_preds.json", "squad_null_odds.json", "squad_eval.json",
               "squad_nbest.json"):
    assert os.path.isfile(os.path.join(results, "squad_qa", name))
  assert os.path.isfile(os.path.join(d, "models", "dbg", "finetuning_models", "squad_model_1",
                                     "model_config.json"))


@pytest.mark.slow
def test_cli_errors_are_one_line(tmp_path, pretrained):
  d = make_data_dir(tmp_path, pretrained, {})
  proc = run_cli("--data-dir", d, "--model-name", "dbg", "--task", "sst")
  assert proc.returncode == 2
  assert "Traceback" not in proc.stderr
  last = proc.stderr.strip().splitlines()[-1]
  assert last.startswith("error: task sst: the task directory ") and "SST-2" in last
