"""The driver on tiny data with a tiny random-init model: trials, results, test outputs, reload."""

import json
import os
import re

import pytest
import tensorflow as tf

from electra_tf2.utils import run_lock
from electra_tf2.checkpoints.tf_checkpoint import ModelDirectoryError
from electra_tf2.config.pretraining import resolve_pretraining_config
from electra_tf2.training import finetuning as runner
from electra_tf2.models import finetuning as model_lib
from electra_tf2.tasks.task import FinetuningDataError
from electra_tf2.config.hparams import ConfigError
from electra_tf2.models.model_directory import PretrainedModelError
from electra_tf2.training import distribution
from tests.fixtures import make_config, make_tasks, write_lines

SST = ["sentence\tlabel"] + [f"{s}\t{i % 2}" for i, s in enumerate(
    ["the cat sat", "a big red dog", "we see it", "he runs fast", "she sat on the mat",
     "the new york city", "john smith was born", "paris is big", "the dog runs", "a red house"])]
SST_TEST = ["index\tsentence", "0\tthe cat", "1\ta dog runs", "2\twe sat"]
CONLL = ["John NNP B-NP", "Smith NNP I-NP", "runs VBZ B-VP", "", "the DT B-NP", "cat NN I-NP",
         "sat VBD B-VP", ""]


def write_data(config):
  write_lines(os.path.join(config.task_data_dir("sst"), "train.tsv"), SST)
  write_lines(os.path.join(config.task_data_dir("sst"), "dev.tsv"), SST[:6])
  write_lines(os.path.join(config.task_data_dir("sst"), "test.tsv"), SST_TEST)
  write_lines(os.path.join(config.task_data_dir("chunk"), "train.txt"), CONLL)
  write_lines(os.path.join(config.task_data_dir("chunk"), "dev.txt"), CONLL)


def test_trials_results_and_test_outputs(tmp_path, capsys):
  config = make_config(str(tmp_path), ["sst", "chunk"], num_trials=2, train_batch_size=4,
                       eval_batch_size=4, predict_batch_size=4, num_train_epochs=1.0,
                       write_test_outputs=True, n_writes_test=1, keep_all_models=False)
  write_data(config)
  results = runner.run_finetuning(config)
  assert len(results) == 2 and set(results[0]) == {"sst", "chunk"}
  assert set(results[0]["sst"]) == {"accuracy", "loss"}
  assert set(results[0]["chunk"]) == {"precision", "recall", "f1", "loss"}
  with open(config.results_txt) as f:
    lines = f.read().splitlines()
  assert lines[0].startswith("sst: accuracy: ") and lines[1].startswith("chunk: precision: ")
  assert len(lines) == 6 and lines[4].startswith("sst (2 trials): accuracy: median ")
  with open(config.results_json) as f:
    saved = json.load(f)
  assert [t["seed"] for t in saved["trials"]] == [0, 1]
  accuracies = [t["results"]["sst"]["accuracy"] for t in saved["trials"]]
  summary = saved["summary"]["sst"]["accuracy"]
  assert summary["median"] == pytest.approx(sum(accuracies) / 2)
  assert summary["std"] == pytest.approx(abs(accuracies[0] - accuracies[1]) / 2)
  # test outputs for trial 1 only; chunk has none
  with open(os.path.join(config.glue_submission_dir(1), "SST-2.tsv")) as f:
    rows = f.read().splitlines()
  assert rows[0] == "index\tprediction" and [r.split("\t")[0] for r in rows[1:]] == ["0", "1", "2"]
  assert all(r.split("\t")[1] in ("0", "1") for r in rows[1:])
  with open(config.test_predictions_path("sst", "test", 1) + ".json") as f:
    assert len(json.load(f)["2"]) == 2  # logits per example
  assert not os.path.exists(config.glue_submission_dir(2))
  out = capsys.readouterr().out
  assert "skipping task chunk" in out
  # the run ends with the model's path and its dev metrics (the last trial's)
  last = [line for line in out.splitlines() if line.startswith("fine-tuned model: ")]
  assert last == [f"fine-tuned model: {config.trial_model_dir(2)} (dev sst: accuracy "
                  f"{results[1]['sst']['accuracy']:.2f}, loss {results[1]['sst']['loss']:.2f}; "
                  f"chunk: precision {results[1]['chunk']['precision']:.2f}, recall "
                  f"{results[1]['chunk']['recall']:.2f}, f1 {results[1]['chunk']['f1']:.2f}, "
                  f"loss {results[1]['chunk']['loss']:.2f})"]
  # keep_all_models false: only the last trial's model stays; it can be rebuilt
  assert not os.path.exists(config.trial_model_dir(1))
  model, saved_config = model_lib.load_finetuned_model(config.trial_model_dir(2))
  assert saved_config.task_names == ["sst", "chunk"] and model.task_names == ["sst", "chunk"]
  assert model.head("chunk").label_list == ["B-NP", "E-NP", "S-VP"]


def test_eval_only_and_missing_model(tmp_path):
  config = make_config(str(tmp_path), ["sst"], train_batch_size=4, eval_batch_size=2,
                       num_train_epochs=1.0)
  write_data(config)
  trained = runner.run_finetuning(config)
  # While another run holds the model's lock, evaluation (a reader) runs; training is refused.
  held = run_lock._acquire_local(  # pylint: disable=protected-access
      run_lock.lock_path(config.model_dir))
  try:
    again = runner.run_finetuning(config.replace(do_train=False))
    with pytest.raises(run_lock.RunLockError, match=f"{config.model_dir}: another run writes"):
      runner.run_finetuning(config)
  finally:
    os.close(held)
  assert again[0]["sst"]["accuracy"] == trained[0]["sst"]["accuracy"]
  with pytest.raises(FinetuningDataError, match="holds no fine-tuned checkpoint"):
    runner.run_finetuning(config.replace(do_train=False, model_dir=str(tmp_path / "nothing")))
  # another task's fine-tuned checkpoint does not silently evaluate an untrained head
  write_lines(os.path.join(config.task_data_dir("cola"), "dev.tsv"),
              ["src\t1\t\tthe cat sat", "src\t0\t\tsat cat the"])
  with pytest.raises(ModelDirectoryError, match=r"sst_model_1/ckpt-\d+ does not fit this model "
                     r"\(.*\): it was fine-tuned with other tasks or model hparams"):
    runner.run_finetuning(config.replace(do_train=False, task_names=["cola"],
                                         model_dir=config.model_dir))
  # a wrong data dir is reported as such, not as the missing vocab inside it
  missing = str(tmp_path / "no_such_dir")
  with pytest.raises(FinetuningDataError, match=f"--data-dir {missing} does not exist"):
    runner.run_finetuning(config.replace(data_dir=missing,
                                         vocab_file=os.path.join(missing, "vocab.txt")))
  # a dev file that cannot be read, or has a bad label, fails before the
  # training, not after it
  dev = os.path.join(config.task_data_dir("sst"), "dev.tsv")
  fresh = config.replace(model_dir=str(tmp_path / "fresh"))
  write_lines(dev, ["sentence"])
  with pytest.raises(FinetuningDataError, match=r"sst/dev\.tsv:1: 1 tab-separated columns"):
    runner.run_finetuning(fresh)
  write_lines(dev, SST[:3] + ["the end\tpositive"])
  with pytest.raises(FinetuningDataError, match=re.escape(
      f"{dev}:4 (task sst, example 2): the label 'positive' is not one of ['0', '1']")):
    runner.run_finetuning(fresh)
  assert not os.path.exists(fresh.trial_model_dir(1))
  # a pre-trained model that fails to load leaves the previous fine-tuned model in place
  write_lines(dev, SST[:6])
  bad_model = tmp_path / "models" / "broken"
  bad_model.mkdir(parents=True)
  pretrain_values = resolve_pretraining_config("electra_small", None, {"debug": True}).to_dict()
  (bad_model / "pretrain_config.json").write_text(json.dumps(pretrain_values))
  tf.train.Checkpoint(v=tf.Variable(1.0)).write(str(bad_model / "ckpt-1"))
  (bad_model / "checkpoint").write_text('model_checkpoint_path: "ckpt-1"\n')
  with pytest.raises(ModelDirectoryError, match="ckpt-1 does not fit this model"):
    runner.run_finetuning(config.replace(init_checkpoint=str(bad_model)))
  assert tf.train.latest_checkpoint(config.trial_model_dir(1)) is not None
  # a missing pre-trained model is reported before a vocab that does not fit the
  # (default) config: the model, not the vocab, is what the user has to fix
  no_model = str(tmp_path / "models" / "electra_base")
  with pytest.raises(PretrainedModelError, match=f"no pre-trained model at {no_model}"):
    runner.run_finetuning(config.replace(init_checkpoint=no_model, vocab_size=30522))


def test_summed_loss_is_batch_size_times_the_mean(tmp_path):
  def first_step_loss(reduction):
    # 10 examples padded to 16: int(16 // 8 * 0.5) = 1 step
    config = make_config(str(tmp_path / reduction), ["sst"], train_batch_size=8,
                         num_train_epochs=0.5, loss_reduction=reduction)
    write_data(config)
    trial = runner.ModelRunner(config, make_tasks(config), 1,
                               distribution.get_strategy("one_device"))
    summary = trial.train()
    assert summary["num_train_steps"] == 1
    return summary["final_loss"]
  assert first_step_loss("sum") == pytest.approx(8 * first_step_loss("mean"), rel=1e-5)


def test_num_train_steps_replaces_the_epochs(tmp_path):
  """10 examples padded to 16 at batch 8: 0.5 epochs is 1 step (official count);
  num_train_steps 5 trains 5, the training set repeating."""
  config = make_config(str(tmp_path), ["sst"], train_batch_size=8, num_train_epochs=0.5,
                       num_train_steps=5, iterations_per_loop=5)
  write_data(config)
  trial = runner.ModelRunner(config, make_tasks(config), 1,
                             distribution.get_strategy("one_device"))
  summary = trial.train()
  assert summary["num_train_steps"] == 5 and summary["step"] == 5
  with pytest.raises(ConfigError, match="num_train_steps must be >= 1 or null"):
    make_config(str(tmp_path), ["sst"], num_train_steps=0)


def test_squad_v2_test_predictions(tmp_path):
  config = make_config(str(tmp_path), ["squad"], max_seq_length=32, max_query_length=8,
                       doc_stride=8, beam_size=4, train_batch_size=4, eval_batch_size=4,
                       predict_batch_size=4, num_train_epochs=1.0, write_test_outputs=True)
  paragraph = {"context": "john smith was born in paris in 1895 .", "qas": [
      {"id": "a", "question": "who was born ?", "is_impossible": False,
       "answers": [{"text": "john smith", "answer_start": 0}]},
      {"id": "b", "question": "what year ?", "is_impossible": True, "answers": []}]}
  for split in ("train", "dev", "test"):
    path = os.path.join(config.task_data_dir("squad"), split + ".json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
      json.dump({"version": "v2.0", "data": [{"title": "t", "paragraphs": [paragraph]}]}, f)
  results = runner.run_finetuning(config)
  assert {"exact", "f1", "HasAns_exact", "NoAns_exact", "best_f1_thresh"} <= set(results[0]["squad"])
  with open(config.qa_na_path("squad")) as f:
    odds = json.load(f)
  with open(config.test_predictions_path("squad", "test", 1) + ".json") as f:
    answers = json.load(f)
  with open(config.qa_preds_path("squad")) as f:
    preds = json.load(f)
  assert set(answers) == set(odds) == set(preds) == {"a", "b"}
  for qid in answers:
    assert answers[qid] == ("" if odds[qid] > -2.75 else preds[qid])
