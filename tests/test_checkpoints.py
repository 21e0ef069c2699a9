"""What is at a path (checkpoints/describe.py), for every kind, and the commands that ask it.

One tiny model of each kind is built here: a Hugging Face directory (transformers),
our pre-trained directory converted from it, the official TF1 checkpoint written
from that, a fine-tuned directory and its official checkpoint, and a SavedModel.
The oracle is what each was built with.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from electra_tf2.conversion import convert, hf_import
from electra_tf2.serving import export
from electra_tf2.checkpoints import describe as describe_lib, portable
from electra_tf2.models import sources as source
from electra_tf2.checkpoints.describe import describe
from electra_tf2.utils.errors import ElectraError
from electra_tf2.models import finetuning as finetune_model

from fixtures import make_config
from hf_models import SHAPE, save_hf_model, vocab_tokens


HEADS = [{"kind": "classification", "task": "rte", "label_list": ["entailment", "not"]},
         {"kind": "tagging", "task": "chunk", "label_list": ["B-NP", "I-NP", "O"]}]


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
  root = tmp_path_factory.mktemp("kinds")
  found = {"huggingface": save_hf_model(str(root / "hf"), cased=True)}
  found["pretrained"] = str(root / "ours")
  hf_import.convert_directory(found["huggingface"], found["pretrained"])
  found["official"] = convert.export_official_checkpoint(found["pretrained"], str(root / "tf1"))
  config = make_config(str(root / "data"), ["rte", "chunk"], do_lower_case=False)
  model = finetune_model.build_model(config, HEADS)
  found["finetuned"] = str(root / "finetuned")
  finetune_model.save_model_files(model, config, found["finetuned"])
  tf.train.CheckpointManager(tf.train.Checkpoint(model=model), found["finetuned"], None,
                             checkpoint_name="ckpt").save(checkpoint_number=7)
  found["official_finetuned"] = convert.export_official_finetuned(found["finetuned"],
                                                                  str(root / "tf1_finetuned"))
  found["savedmodel"] = str(root / "saved")
  tf.saved_model.save(tf.Module(), found["savedmodel"])
  from electra_tf2.conversion import keras_hub  # pylint: disable=g-import-not-at-top
  found["keras_hub"] = str(root / "preset")
  keras_hub.export_preset(found["pretrained"], found["keras_hub"])
  found["config"] = config
  return found


def test_each_kind_is_told_apart_and_described(paths):
  for kind in describe_lib.KINDS:
    assert describe_lib.kind_of(paths[kind]) == kind, kind
  hf = describe(paths["huggingface"])
  assert (hf.bert_config.hidden_size, hf.embedding_size) == (SHAPE["hidden_size"],
                                                             SHAPE["embedding_size"])
  assert hf.architecture == "ElectraForPreTraining" and hf.checkpoint is None
  assert not hf.do_lower_case  # cased: tokenizer_config.json says do_lower_case false
  with open(hf.vocab_file) as f:
    assert f.read().split("\n")[:-1] == vocab_tokens(cased=True)

  ours = describe(paths["pretrained"])
  assert ours.model_dir == paths["pretrained"] and ours.checkpoint.endswith("ckpt-0")
  assert ours.bert_config.num_attention_heads == SHAPE["num_attention_heads"]
  assert ours.pretraining_config.model_name == "hf" and not ours.do_lower_case
  assert ours.vocab_file == os.path.join(paths["pretrained"], "vocab.txt")

  official = describe(paths["official"])
  assert official.checkpoint == paths["official"] and official.tasks == ()
  assert official.bert_config.hidden_size == 36 and official.embedding_size == 20
  assert official.bert_config.num_attention_heads == 1  # 36 // 64 rounded up to one head

  finetuned = describe(paths["finetuned"])
  assert finetuned.tasks == ("rte", "chunk") and finetuned.checkpoint.endswith("ckpt-7")
  assert finetuned.bert_config.hidden_size == 32 and finetuned.embedding_size == 16
  assert not finetuned.do_lower_case
  assert finetuned.vocab_file == os.path.join(paths["finetuned"], "vocab.txt")  # a copy
  with open(finetuned.vocab_file) as f, open(paths["config"].vocab_file) as g:
    assert f.read() == g.read()

  tf1_finetuned = describe(paths["official_finetuned"])
  assert tf1_finetuned.tasks == ("chunk", "rte")  # by name: the checkpoint has no order
  assert describe(paths["savedmodel"]).bert_config is None
  preset = describe(paths["keras_hub"])
  assert (preset.bert_config.hidden_size, preset.embedding_size) == (SHAPE["hidden_size"],
                                                                     SHAPE["embedding_size"])


def test_a_checkpoint_prefix_inside_our_directory_is_that_directory(paths):
  found = describe(os.path.join(paths["finetuned"], "ckpt-7"))
  assert found.kind == "finetuned" and found.model_dir == paths["finetuned"]


def test_chunking_always_lowercases(tmp_path):
  """Official quirk: the chunking task lowercases whatever do_lower_case says."""
  config = make_config(str(tmp_path / "data"), ["chunk"], do_lower_case=False)
  model = finetune_model.build_model(config, HEADS[1:])
  finetune_model.save_model_files(model, config, str(tmp_path / "m"))
  assert describe(str(tmp_path / "m")).do_lower_case


def test_what_is_not_a_checkpoint_is_one_line(tmp_path):
  with pytest.raises(describe_lib.UnknownCheckpointError, match="does not exist"):
    describe(str(tmp_path / "missing"))
  (tmp_path / "empty").mkdir()
  with pytest.raises(describe_lib.UnknownCheckpointError) as error:
    describe(str(tmp_path / "empty"))
  assert "is no ELECTRA checkpoint" in str(error.value) and "\n" not in str(error.value)


def test_every_consumer_names_what_it_was_given(paths):
  """Export, scoring, fine-tuning and continued pre-training each refuse the kinds they
  cannot read in one line naming the kind (describe's answer) and the fix."""
  from electra_tf2.scoring.scorer import TextScorer
  from electra_tf2.training import finetuning as runner
  cases = [
      (lambda: export._load(paths["huggingface"], None, None),
       "is a Hugging Face directory: export takes our model directories"),
      (lambda: TextScorer.load(paths["finetuned"]),
       "is a fine-tuned model directory: give a pre-trained model directory"),
      (lambda: runner.check_pretrained_model(paths["config"].replace(
          init_checkpoint=paths["official"])),
       "is an official pre-training checkpoint: fine-tuning starts from a pre-trained"),
      (lambda: convert.load_pretrainer_weights(None, None, paths["finetuned"]),
       "is a fine-tuned model directory: give a pre-trained model directory or an official"),
      (lambda: source.load_source(paths["savedmodel"]), "is a SavedModel: load it with"),
  ]
  for call, expected in cases:
    with pytest.raises(ElectraError) as error:
      call()
    assert expected in str(error.value) and "\n" not in str(error.value), str(error.value)


def test_portable_save_keeps_the_checkpoint_it_writes_and_the_newest_others(tmp_path):
  """`keep` counts the checkpoint just written, also when an older step is written into a
  directory holding newer ones (a model replaced by another run's)."""
  arrays = {"w": np.ones(2, np.float32)}
  for step in (4, 8, 12):
    portable.save(str(tmp_path), step, arrays, {}, keep=2)
  steps = lambda: [portable.step_of(p) for p in portable.all_checkpoints(str(tmp_path))]  # noqa: E731
  assert steps() == [8, 12]
  portable.save(str(tmp_path), 6, arrays, {}, keep=1)
  assert steps() == [6] and sorted(os.listdir(tmp_path)) == ["portable-6.json", "portable-6.npz"]
