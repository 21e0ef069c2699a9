"""The pre-training driver end to end, on tiny TFRecords written by the tests.

Heavier checks run in subprocesses (logical CPU devices, signals, several
workers) with bounded time.
"""

import json
import os
import re
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from electra_tf2.utils import run_lock
from electra_tf2.data_io import input_pipeline, tfrecord
from electra_tf2.checkpoints.tf_checkpoint import ModelDirectoryError
from electra_tf2.config.pretraining import resolve_pretraining_config
from electra_tf2.config.hparams import ConfigError
from electra_tf2.training import options, tf_pretraining as pretraining
from electra_tf2.text.vocab import VocabError
from tests.conftest import REPO_ROOT
from tests.fixtures import write_pretraining_data

TINY = {"debug": True, "vocab_size": 512, "max_seq_length": 32, "train_batch_size": 8,
        "num_warmup_steps": 0, "learning_rate": 2e-3, "deterministic": True}
NO_DROPOUT = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}


def tiny_data(tmp_path, **kw):
  args = dict(num_examples=96, seq_len=32, vocab_size=512, bert_ids=False, num_word_types=24)
  args.update(kw)
  return write_pretraining_data(str(tmp_path / "data"), **args)


def env():
  return dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2",
              PYTHONPATH=REPO_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))


def run_script(script: str, timeout: int = 240) -> str:
  result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env(),
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout)
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
  return result.stdout


def checkpoint_weights(model_dir: str) -> dict:
  """Every variable of the latest checkpoint (model, optimizer slots, step), by key."""
  path = tf.train.latest_checkpoint(model_dir)
  reader = tf.train.load_checkpoint(path)
  return {name: reader.get_tensor(name) for name, _ in tf.train.list_variables(path)
          if not name.startswith(("iterator", "_CHECKPOINTABLE", "save_counter"))}


# ---------------------------------------------------------------------------
# Input pipeline
# ---------------------------------------------------------------------------


def test_input_fn_batches_and_worker_shards(tmp_path):
  data = tiny_data(tmp_path, num_files=4)
  config = resolve_pretraining_config("electra_small", data, TINY)
  batch = next(iter(input_pipeline.input_fn(config, True, 5)))
  assert set(batch) == {"input_ids", "input_mask", "segment_ids"}
  assert all(v.shape == (5, 32) and v.dtype == tf.int32 for v in batch.values())
  # Two input pipelines read disjoint files.
  seen = []
  for worker in range(2):
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=worker)
    ids = [tuple(r) for b in input_pipeline.input_fn(config, False, 4, context).take(12)
           for r in b["input_ids"].numpy()]
    seen.append(set(ids))
  assert seen[0] and seen[1] and not seen[0] & seen[1]


def batch_spread(data_dir: str, num_shards: int, num_batches: int = 40) -> float:
  """Builds a corpus of numbered documents into num_shards files with the data builder,
  reads it through the official pipeline and returns the mixing statistic: the mean
  standard deviation of the source positions within a batch, relative to that of
  positions drawn uniformly from the whole corpus (1: fully mixed, 0: in order)."""
  from electra_tf2.data_prep.builder import BuildConfig, build_pretraining_data
  n_docs = 3000
  os.makedirs(data_dir, exist_ok=True)
  words = [f"w{i}" for i in range(n_docs)]
  with open(os.path.join(data_dir, "vocab.txt"), "w") as f:
    f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words) + "\n")
  corpus = os.path.join(data_dir, "corpus.txt")
  with open(corpus, "w") as f:  # document i: one line of the word w<i>
    f.write("\n\n".join(" ".join([word] * 20) for word in words) + "\n")
  build_pretraining_data(BuildConfig(
      inputs=[corpus], vocab_file=os.path.join(data_dir, "vocab.txt"),
      output_dir=os.path.join(data_dir, "pretrain_tfrecords"), max_seq_length=32,
      num_shards=num_shards, seed=0, progress=False), log=lambda s: None)
  config = resolve_pretraining_config("electra_small", data_dir, dict(
      TINY, vocab_size=n_docs + 5))
  stds = [np.std(batch["input_ids"].numpy()[:, 1] - 5)
          for batch in input_pipeline.input_fn(config, True, 8).take(num_batches)]
  return float(np.mean(stds)) / (n_docs / np.sqrt(12.0))


def test_too_few_shards_read_the_corpus_in_order_and_training_warns(tmp_path):
  """The builder writes consecutive examples to the shards in turn; the official
  pipeline reads 4 files side by side and shuffles 100 records. With 4 shards a batch
  of 8 covers about (8 + 100) / 4 * 4 = 108 consecutive documents of 600; with 200
  shards it covers them all. The driver's warning says so and names a shard count."""
  few = batch_spread(str(tmp_path / "few"), 4)
  many = batch_spread(str(tmp_path / "many"), 200)
  assert few < 0.5 < 0.8 < many, (few, many)
  warning = input_pipeline.mixing_warning(tfrecord.tfrecord_files(
      str(tmp_path / "few" / "pretrain_tfrecords" / "pretrain_data.tfrecord*")), 8)
  # The example count is estimated from the file sizes (within a few percent).
  assert re.match(r"warning: 4 pre-training TFRecord files for about 3,[01]\d\d examples: a "
                  r"batch of 8 covers only about 108 consecutive examples", warning), warning
  assert re.search(r"--num-shards 11\d or more \(the official builder writes 1000\)", warning)
  assert input_pipeline.mixing_warning(tfrecord.tfrecord_files(
      str(tmp_path / "many" / "pretrain_tfrecords" / "pretrain_data.tfrecord*")), 8) is None


# ---------------------------------------------------------------------------
# Training in-process
# ---------------------------------------------------------------------------


def test_thirty_steps_lower_the_loss_and_eval_writes_every_metric(tmp_path):
  data = tiny_data(tmp_path)
  config = resolve_pretraining_config("electra_small", data, dict(
      TINY, num_train_steps=30, iterations_per_loop=5, save_checkpoints_steps=10))
  result = pretraining.run_pretraining(config)
  history = result["history"]
  assert [h["step"] for h in history] == [5, 10, 15, 20, 25, 30]
  first, last = history[0], history[-1]
  assert last["total_loss"] < 0.8 * first["total_loss"]
  assert last["mlm_loss"] < first["mlm_loss"] and last["disc_loss"] < first["disc_loss"]
  model_dir = config.model_dir
  summary = json.load(open(os.path.join(model_dir, "pretrain_summary.json")))
  assert summary["step"] == 30 and not summary["stopped_early"]
  assert tf.train.latest_checkpoint(model_dir).endswith("ckpt-30")
  tags = set()
  for event_file in tf.io.gfile.glob(os.path.join(model_dir, "train", "events*")):
    for event in tf.compat.v1.train.summary_iterator(event_file):
      tags |= {v.tag for v in event.summary.value}
  assert {"total_loss", "mlm_loss", "disc_loss", "learning_rate", "sequences_per_sec",
          "tokens_per_sec", "train_metrics/disc_auc", "train_metrics/masked_lm_accuracy",
          "train_metrics/sampled_masked_lm_accuracy", "train_metrics/disc_recall"} <= tags

  eval_config = resolve_pretraining_config("electra_small", data, dict(
      TINY, do_train=False, do_eval=True, num_eval_steps=3))
  # Evaluation reads: it runs while another process would hold the run lock.
  held = run_lock._acquire_local(run_lock.lock_path(model_dir))  # pylint: disable=protected-access
  try:
    results = pretraining.run_pretraining(eval_config)
  finally:
    os.close(held)
  for metric in ("masked_lm_accuracy", "masked_lm_loss", "sampled_masked_lm_accuracy",
                 "disc_loss", "disc_auc", "disc_accuracy", "disc_precision", "disc_recall"):
    assert np.isfinite(results[metric]), metric
  assert results["global_step"] == 30
  assert 0.5 < results["disc_auc"] <= 1.0
  written = json.load(open(os.path.join(model_dir, "results", "unsup_results.json")))
  assert written["disc_auc"] == results["disc_auc"]
  baselines = written["trivial_baselines"]
  assert baselines["disc_auc"] == 0.5 and 0.7 < baselines["disc_accuracy"] < 1.0
  assert 1 / 24 <= baselines["masked_lm_accuracy"] < 0.5  # 24 word types


def write_identical_rows(path: str, num_rows: int, seq_len: int = 32) -> None:
  """A TFRecord whose rows are all the same example."""
  ids = np.arange(10, 10 + seq_len)
  ids[0], ids[12], ids[-1] = 2, 3, 3
  feature = {name: tf.train.Feature(int64_list=tf.train.Int64List(value=list(map(int, v))))
             for name, v in (("input_ids", ids), ("input_mask", np.ones(seq_len)),
                             ("segment_ids", (np.arange(seq_len) > 12).astype(int)))}
  record = tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
  with tf.io.TFRecordWriter(path) as writer:
    for _ in range(num_rows):
      writer.write(record)


def test_each_eval_batch_draws_fresh_masks_reproducibly(tmp_path):
  """Official eval draws new masks and samples for every batch (tf.random in the graph);
  ours seeds batch i by i, so two batches of identical rows still differ, and a second
  evaluation repeats the first exactly."""
  data = tiny_data(tmp_path)
  config = resolve_pretraining_config("electra_small", data, dict(
      TINY, num_train_steps=2, iterations_per_loop=2, save_checkpoints_steps=2))
  pretraining.run_pretraining(config)
  same = str(tmp_path / "same.tfrecord")
  write_identical_rows(same, 64)

  def evaluate(num_eval_steps):
    eval_config = resolve_pretraining_config("electra_small", data, dict(
        TINY, do_train=False, do_eval=True, eval_batch_size=4, num_eval_steps=num_eval_steps,
        pretrain_tfrecords=same))
    return pretraining.run_pretraining(eval_config)

  one, two, two_again = evaluate(1), evaluate(2), evaluate(2)
  # Batch 2 alone has other masks and samples than batch 1, so the means move.
  assert one["masked_lm_loss"] != two["masked_lm_loss"]
  assert one["disc_loss"] != two["disc_loss"]
  assert two == two_again


@pytest.mark.parametrize("hparams,sparse", [({"uniform_generator": True}, True), ({}, False)])
def test_gradients_are_sparse_where_the_official_ones_are(tmp_path, hparams, sparse):
  """The official global norm counts a looked-up row once per lookup (tf.gradients gives
  IndexedSlices, clip_by_global_norm takes the slice values). The word embeddings'
  gradient is sparse when only lookups use them (uniform generator) and dense when the
  MLM head is tied to them; token types use a one-hot matmul, so theirs is dense."""
  data = tiny_data(tmp_path)
  config = resolve_pretraining_config("electra_small", data, dict(TINY, **hparams))
  run = pretraining.PretrainingRun(config)
  features = next(iter(input_pipeline.input_fn(config, True, 8)))
  from electra_tf2.pretraining import objectives
  grads, _ = run._compute_gradients(features, tf.constant([0, 0]),
                                    objectives.loss_denominators(config, features))
  names = {id(v): n for n, v in run.variable_names.items()}
  by_name = {names[id(v)]: g for v, g in zip(run.model.trainable_variables, grads)}
  word = by_name["electra/embeddings/word_embeddings"]
  assert isinstance(word, tf.IndexedSlices) == sparse
  if sparse:  # one slice per looked-up token: 8 rows x 32 tokens
    assert word.values.shape == (8 * 32, 128)
    dense_norm = float(tf.norm(tf.convert_to_tensor(word)))
    slice_norm = float(tf.norm(word.values))
    assert abs(dense_norm - slice_norm) > 1e-3 * slice_norm  # repeated ids: the norms differ
  assert all(not isinstance(g, tf.IndexedSlices)
             for name, g in by_name.items() if name != "electra/embeddings/word_embeddings")


@pytest.mark.parametrize("hparams,error,message", [
    ({"vocab_size": 600}, VocabError, "has 512 tokens but the model config says vocab_size=600"),
    ({"max_seq_length": 64}, input_pipeline.DataError, "has length 32 but max_seq_length is 64"),
    ({"pretrain_tfrecords": "/nonexistent/x*"}, input_pipeline.DataError,
     "no pre-training TFRecords match /nonexistent/x"),
])
def test_bad_inputs_fail_before_heavy_work(tmp_path, hparams, error, message):
  data = tiny_data(tmp_path)
  config = resolve_pretraining_config("electra_small", data, dict(TINY, **hparams))
  with pytest.raises(error, match=message):
    pretraining.validate_inputs(config)


def test_resuming_checks_the_architecture_and_the_checkpoint(tmp_path, capsys):
  data = tiny_data(tmp_path)
  config = resolve_pretraining_config("electra_small", data, dict(TINY, num_train_steps=1))
  pretraining.run_pretraining(config)
  model_dir = config.model_dir
  # Another shape: one line naming the derived differences, before any restore.
  other = resolve_pretraining_config("electra_small", data, dict(
      TINY, num_train_steps=3, generator_hidden_size=0.5))
  with pytest.raises(ConfigError, match=re.escape(
      f"{model_dir} holds a model of another shape (generator hidden_size 36 there, 72 now, "
      "generator intermediate_size 144 there, 288 now): pass the hparams")):
    pretraining.run_pretraining(other)
  # The same shape with other dropout, schedule and batch size resumes; the
  # saved input position fits only the old batch, so the stream starts afresh.
  more_hparams = dict(TINY, train_batch_size=16, model_hparam_overrides=NO_DROPOUT)
  more = resolve_pretraining_config("electra_small", data, dict(more_hparams, num_train_steps=2))
  capsys.readouterr()
  assert pretraining.run_pretraining(more)["step"] == 2
  out = capsys.readouterr().out
  assert "the input stream starts afresh (train_batch_size 8 -> 16)" in out
  assert f"resumed from {os.path.join(model_dir, 'ckpt-1')} at step 1" in out
  # Without the saved config (edited away, or another tool's directory) the
  # restore itself fails: one ConfigError, and nothing is written.
  os.remove(os.path.join(model_dir, "pretrain_config.json"))
  with pytest.raises(ModelDirectoryError, match=re.escape(
      f"{os.path.join(model_dir, 'ckpt-2')} does not fit this model (") + r".*\): pass the "
      "hparams it was written with"):
    pretraining.run_pretraining(other)
  assert not os.path.exists(os.path.join(model_dir, "pretrain_config.json"))
  # A damaged checkpoint is named as such.
  data_file, = [f for f in os.listdir(model_dir) if f.startswith("ckpt-2.data")]
  with open(os.path.join(model_dir, data_file), "r+b") as f:
    f.seek(100)
    f.write(b"\xff" * 64)
  with pytest.raises(ModelDirectoryError, match=re.escape(
      f"checkpoint {os.path.join(model_dir, 'ckpt-2')} is damaged or incomplete (")):
    pretraining.run_pretraining(resolve_pretraining_config(
        "electra_small", data, dict(more_hparams, num_train_steps=3)))
  # A directory whose run wrote its config but no checkpoint holds no model:
  # another shape may start there.
  fresh = resolve_pretraining_config("electra_small", data, dict(
      TINY, num_train_steps=1, model_dir=str(tmp_path / "fresh")))
  os.makedirs(fresh.model_dir)
  with open(os.path.join(fresh.model_dir, "pretrain_config.json"), "w") as f:
    json.dump(other.to_dict(), f)
  assert pretraining.run_pretraining(fresh)["step"] == 1


def test_corrupt_tfrecord_met_in_training_is_named(tmp_path):
  data = tiny_data(tmp_path)
  config = resolve_pretraining_config("electra_small", data, dict(TINY, num_train_steps=30))
  shard = tfrecord.tfrecord_files(config.pretrain_tfrecords)[-1]
  with open(shard, "r+b") as f:  # cut the last file inside a record (records are 175 bytes)
    f.truncate(os.path.getsize(shard) // 2 + 50)
  pretraining.validate_inputs(config)  # the first file is fine: this passes
  with pytest.raises(input_pipeline.DataError, match=re.escape(
      f"corrupt pre-training data: {shard} (")):
    pretraining.run_pretraining(config)


def test_missing_data_dir(tmp_path):
  config = resolve_pretraining_config("electra_small", str(tmp_path / "nope"), TINY)
  with pytest.raises(input_pipeline.DataError, match="does not exist"):
    pretraining.validate_inputs(config)


# ---------------------------------------------------------------------------
# The command line, resume and signals
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_cli_as_a_user_types_it(tmp_path):
  data = write_pretraining_data(str(tmp_path / "d"), num_examples=64, seq_len=128)
  cmd = [sys.executable, "run_pretraining.py", "--data-dir", data, "--model-name",
         "electra_small", "--hparams", '{"debug": true, "num_train_steps": 20}']
  result = subprocess.run(cmd, env=env(), cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=240)
  assert result.returncode == 0, result.stderr[-4000:]
  assert "step 20/20 (100.0%)" in result.stdout and "ETA" in result.stdout
  summary = json.load(open(os.path.join(data, "models", "electra_small",
                                        "pretrain_summary.json")))
  assert summary["step"] == 20


@pytest.mark.parametrize("args,message", [
    # The config's checks: each message is tested in-process (test_config.py,
    # test_bad_input.py); here the command's one line and exit code, once per stage.
    (["--model-name", "electra_small", "--hparams", '{"learning_rate": NaN}'],
     "--hparams: learning_rate must be a finite"),
    (["--model-name", "electra_small", "--distribution-strategy", "tpu"],
     "--distribution-strategy tpu: cannot reach a TPU (no --tpu was given"),
])
@pytest.mark.slow
def test_cli_errors_are_one_line(tmp_path, args, message):
  data = tiny_data(tmp_path)
  result = subprocess.run([sys.executable, "run_pretraining.py", "--data-dir", data] + args,
                          env=env(), cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
  assert result.returncode == 2
  last = result.stderr.strip().splitlines()[-1]  # (TensorFlow may log before it)
  assert last.startswith("error: ") and message in last and "Traceback" not in result.stderr


def test_signal_handler_only_sets_the_flag(capsys):
  """The handler must not print: a signal that lands inside the loop's own
  progress print would make that a reentrant stdout write, which raises."""
  with options.StopRequested() as stop:
    assert not stop.requested
    os.kill(os.getpid(), signal.SIGTERM)
    assert capsys.readouterr().out == ""
    assert stop.requested and stop.requested
    assert capsys.readouterr().out.count("received signal 15") == 1
    with pytest.raises(KeyboardInterrupt):  # a second signal stops at once
      os.kill(os.getpid(), signal.SIGTERM)
  assert signal.getsignal(signal.SIGTERM) != stop._handle  # the old handler is back


@pytest.mark.slow
def test_ctrl_c_outside_the_loop_is_one_line():
  """A KeyboardInterrupt that reaches the scripts' entry point (start-up, or a
  second Ctrl-C) exits 130 with one line, not a traceback."""
  script = ("from electra_tf2.cli import training as cli\n"
            "def main(argv):\n  raise KeyboardInterrupt\n"
            "cli.run(main, [], 'run_pretraining.py', 'usage')\n")
  result = subprocess.run([sys.executable, "-c", script], env=env(), cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120)
  assert result.returncode == 130
  assert result.stderr.strip().splitlines()[-1] == (
      "interrupted (checkpoints saved before now are kept)")
  assert "Traceback" not in result.stderr


@pytest.mark.parametrize("precision,jit", [("mixed_bfloat16", True), ("mixed_float16", False)])
def test_mixed_precision_and_xla_paths_train(tmp_path, precision, jit):
  import keras
  data = tiny_data(tmp_path)
  config = resolve_pretraining_config("electra_small", data, dict(
      TINY, num_train_steps=4, iterations_per_loop=2, deterministic=False))
  run = pretraining.PretrainingRun(
      config, options.RunOptions(mixed_precision=precision, jit_compile=jit))
  assert run.model.discriminator.compute_dtype == precision.split("_")[1]
  assert all(v.dtype == "float32" for v in run.model.trainable_variables)
  # The policy is the run's own: the global one is back to float32 once it is built.
  assert keras.mixed_precision.global_policy().name == "float32"
  result = run.train()
  assert result["step"] == 4
  assert all(np.isfinite(v) for v in result["final_losses"].values())
  if precision == "mixed_float16":
    assert isinstance(run.optimizer, keras.optimizers.LossScaleOptimizer)


@pytest.mark.slow
def test_importing_the_library_sets_no_environment_variable():
  """Library modules leave os.environ alone at import (the commands set their quiet
  logging default only when run as commands)."""
  out = run_script("""
      import os
      del os.environ["TF_CPP_MIN_LOG_LEVEL"]  # so a module that sets it would show
      import keras, tensorflow, tensorflow_text  # they set LD_LIBRARY_PATH themselves
      before = dict(os.environ)
      import electra_tf2.conversion.convert, electra_tf2.conversion.hf_export
      import electra_tf2.serving.export
      import electra_tf2.text.tokenizer, electra_tf2.training.tf_pretraining
      import electra_tf2.training.finetuning
      print("CHANGED", sorted(k for k in set(os.environ) | set(before)
                              if os.environ.get(k) != before.get(k)))
  """)
  assert "CHANGED []" in out


def test_op_determinism_is_scoped_to_the_run(tmp_path):
  from tensorflow.python.framework import config as tf_config
  data = tiny_data(tmp_path)
  config = resolve_pretraining_config("electra_small", data, dict(
      TINY, num_train_steps=1, iterations_per_loop=1, deterministic=True))
  assert not tf_config.is_op_determinism_enabled()
  pretraining.PretrainingRun(config).train()
  assert not tf_config.is_op_determinism_enabled()
