"""Model directories travel: a run made with relative paths, moved, used from elsewhere.

One tiny run (pre-training for 2 steps, fine-tuning SST-shaped data for a few) is made
inside its own working directory with relative paths, as the quickstart does; the whole
run is then moved, and from another working directory `test_new_user_path` takes it
through what a new user does: pre-trained further, fine-tuned, read by `from_pretrained`,
exported (SavedModel and .tflite), predicted, scored, asked questions and converted.
"""

import json
import os
import shutil

import pytest

from electra_tf2.conversion import convert, hf_export
from electra_tf2.checkpoints import directories
from electra_tf2.config.pretraining import resolve_pretraining_config
from electra_tf2.training import finetuning as runner
from electra_tf2.tasks.config import resolve_finetuning_config
from electra_tf2.training import tf_pretraining as pretraining
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


def test_new_user_path(moved, tmp_path, capsys):
  """The whole new-user path in the moved run, from another working directory (#44):
  pre-train further, fine-tune, Keras from_pretrained, `electra export` (SavedModel and
  .tflite), `electra predict` on both, `electra score`, question answering, conversions.
  (`electra export` of a pre-trained directory: tests/test_export.py.)"""
  import numpy as np
  import electra_tf2
  from electra_tf2.cli import commands
  # pre-training resumes where the moved run stopped, its input position included
  summary = pretraining.run_pretraining(resolve_pretraining_config(
      "electra_small", moved["data"], dict(PRETRAIN, num_train_steps=3)))
  assert "resumed from" in capsys.readouterr().out
  assert summary["step"] == 3
  results = runner.run_finetuning(resolve_finetuning_config(
      "electra_small", moved["data"], FINETUNE, "sst"))
  # Keras on the fine-tuned directory: the oracle of the exports' logits and labels; it
  # scores the dev set as the run's own evaluation did
  texts = ["w1 w2 w3", "w7 w9", "w40 w3 w3 w12 w0"]
  classifier = electra_tf2.TextClassifier.from_pretrained(moved["trial"])
  logits = np.asarray(classifier.predict(texts, verbose=0))
  assert logits.shape == (3, 2)
  dev_texts, dev_labels = zip(*(line.split("\t") for line in sst_split(8, 100)[1:]))
  dev_logits = np.asarray(classifier.predict(list(dev_texts), verbose=0))
  assert 100 * np.mean(dev_logits.argmax(-1) == np.array(dev_labels, int)) == pytest.approx(
      results[0]["sst"]["accuracy"], abs=1e-4)
  labels = [classifier.label_list[i] for i in logits.argmax(-1)]
  # exports and electra predict, by the `electra` command
  savedmodel, lite = str(tmp_path / "sst"), str(tmp_path / "sst.tflite")
  assert commands.main(["export", "--model-dir", moved["trial"], "--output-dir",
                        savedmodel]) == 0
  assert commands.main(["export", "--model-dir", moved["trial"], "--format", "litert",
                        "--output", lite]) == 0
  write_lines(os.path.join(".", "texts.txt"), texts)  # relative to elsewhere/
  for model in (savedmodel, lite):
    assert commands.main(["predict", "--model", model, "--input", "texts.txt",
                          "--output", "predictions.jsonl"]) == 0
    rows = [json.loads(line) for line in open("predictions.jsonl", encoding="utf-8")]
    assert [row["label"] for row in rows] == labels, model
    np.testing.assert_allclose([row["logits"] for row in rows], logits, atol=1e-4)
  # replaced-token scores of the pre-trained directory: a score per word of each text
  assert commands.main(["score", "file", "--model-dir", moved["model"], "--input", "texts.txt",
                        "--output", "scores.jsonl", "--quiet"]) == 0
  rows = [json.loads(line) for line in open("scores.jsonl", encoding="utf-8")]
  assert [[w["word"] for w in row["words"]] for row in rows] == [t.split() for t in texts]
  # question answering on the pre-trained encoder (a fresh head): answers are context spans
  answerer = electra_tf2.QuestionAnswerer.from_pretrained(
      moved["model"], max_seq_length=32, max_query_length=8, doc_stride=8)
  contexts = ["w1 w2 w3 w4 w5 w6", "w9 w8 w7"]
  got = answerer.predict((["w2 w3", "w8"], contexts), verbose=0)
  spans = [c[s:e] for c, s, e in zip(contexts, got["answer_start"], got["answer_end"])]
  # (answer_text is "" for a question judged unanswerable; span_text is the span then)
  assert [str(a) for a in got.get("span_text", got["answer_text"])] == spans and all(spans)
  assert_conversions_keep_the_discriminator(moved["model"], tmp_path, texts)
  assert "resolved against the working directory" not in capsys.readouterr().err


def assert_conversions_keep_the_discriminator(model_dir, tmp_path, texts):
  """The official conversion of `model_dir` holds its word embeddings; the Hugging Face one,
  and that imported back, give the discriminator's outputs on `texts` (read by
  from_pretrained); transformers on the Hugging Face directory gives its logits too."""
  import numpy as np
  import electra_tf2
  from hf_models import load_hf  # pylint: disable=g-import-not-at-top
  import torch  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  discriminator = electra_tf2.Discriminator.from_pretrained(model_dir)
  want = discriminator.predict(texts)
  official, hf, imported = (str(tmp_path / name) for name in ("official", "hf", "imported"))
  assert convert.main(["to-official", "--model-dir", model_dir, "--output-dir", official]) == 0
  assert hf_export.main(["--model-dir", model_dir, "--output-dir", hf]) == 0
  assert convert.main(["from-hf", "--hf-dir", hf, "--output-dir", imported]) == 0
  assert saved(os.path.join(imported, "pretrain_config.json"))["vocab_file"] == "vocab.txt"
  table = next(v for v in discriminator.weights if "word_embeddings" in v.path).numpy()
  np.testing.assert_array_equal(tf.train.load_checkpoint(official).get_tensor(
      "electra/embeddings/word_embeddings"), table)
  for converted in (hf, imported):
    got = electra_tf2.Discriminator.from_pretrained(converted).predict(texts)
    assert got.keys() == want.keys(), converted
    for name in want:
      np.testing.assert_allclose(got[name], want[name], atol=1e-5, err_msg=f"{converted} {name}")
  features = electra_tf2.Discriminator.from_pretrained(hf).featurize(texts)
  with torch.no_grad():
    theirs = load_hf(hf, "ElectraForPreTraining")(
        input_ids=torch.tensor(np.asarray(features["input_ids"]), dtype=torch.long),
        attention_mask=torch.tensor(np.asarray(features["input_mask"]), dtype=torch.long),
        token_type_ids=torch.tensor(np.asarray(features["segment_ids"]),
                                    dtype=torch.long)).logits.numpy()
  mask = np.asarray(features["input_mask"]) == 1
  np.testing.assert_allclose(theirs[mask], np.asarray(want["logits"])[mask], atol=1e-4)


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
