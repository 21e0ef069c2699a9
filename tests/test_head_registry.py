"""A head and a task added from outside the package: one layer, one task, one registration
each (docs/design.md, "Where to add things"), then fine-tuned, exported and run.

The toy task asks whether a text is longer than three words; its head is a layer of its
own (one logit on [CLS], binary cross-entropy), not one of the package's. The oracles:
the metric the runner reports is the accuracy computed here from the model's predictions
and labels counted here, and the exported SavedModel's outputs are the in-process model's.
"""

import dataclasses
import os

import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from electra_tf2.layers.task_heads import TaskHead
from electra_tf2.models import finetuning as model_lib
from electra_tf2.models import heads
from electra_tf2.serving import export
from electra_tf2.tasks import registry, scorers
from electra_tf2.tasks.task import Example, FeatureSpec, Task, read_lines
from electra_tf2.text.packing import pack_tokens, padded_features
from electra_tf2.training import finetuning as runner
from tests.fixtures import make_config, make_tasks, write_lines

WORDS = 3
TRAIN = ["the cat", "a big red dog runs fast", "we see it", "she sat on the mat and the cat",
         "paris", "the dog runs on the mat", "he runs", "john smith was born in paris",
         "a red house", "we see the big red house"]
DEV = ["the cat sat", "a dog runs on the mat", "she runs", "the new york city is big",
       "john", "we see a red house"]


class LongerThanHead(TaskHead):
  """[CLS] -> `dense(1)`: the logit that the text has more than `words` words."""

  reads_first_token_only = True

  def __init__(self, task, words, **kwargs):
    super().__init__(task, **kwargs)
    self.words = words
    self.dense = self.make_dense(1, "dense")

  def build(self, input_shape):
    self.dense.build((None, input_shape[-1]))
    super().build(input_shape)

  @property
  def official_layers(self):
    return [self.dense]

  def call(self, hidden, features, training=False):
    logit = self._squeezed(self.dense(hidden[:, 0]))
    return {"logit": logit, "predictions": ops.cast(logit > 0, "int32")}

  def loss(self, outputs, features):
    return ops.binary_crossentropy(ops.cast(features[self.task + "_longer"], "float32"),
                                   outputs["logit"], from_logits=True)

  def serving_outputs(self, outputs, label_names):
    return {"probability": ops.sigmoid(outputs["logit"]), "longer": outputs["predictions"]}

  def get_config(self):
    config = super().get_config()
    config.update(words=self.words)
    return config


@dataclasses.dataclass(eq=False)
class TextExample(Example):
  text: str = ""


class AccuracyScorer(scorers.Scorer):
  def __init__(self):
    super().__init__()
    self.right = []

  def update(self, outputs):
    super().update(outputs)
    self.right += list(np.asarray(outputs["predictions"]) == np.asarray(outputs["longer"]))

  def get_results(self):
    return {"accuracy": 100.0 * np.mean(self.right), "loss": self.get_loss()}


class LongerTask(Task):
  """One text per line of `{split}.txt`; label: more than WORDS words."""

  def __init__(self, config, tokenizer):
    super().__init__(config, "longer")
    self.tokenizer = tokenizer

  def split_path(self, split):
    return self.data_path(split, ".txt")

  def get_examples(self, split):
    lines = [line.strip() for line in read_lines(self.split_path(split))]
    return self.limit([TextExample(self.name, i, line) for i, line in enumerate(lines) if line])

  def get_feature_specs(self):
    return [FeatureSpec(self.name + "_longer", [])]

  def featurize(self, example, is_training, log=False):
    tokens, segment_ids = pack_tokens(
        self.tokenizer.tokenize(example.text)[:self.config.max_seq_length - 2])
    features = padded_features(self.tokenizer.convert_tokens_to_ids(tokens), segment_ids,
                               self.config.max_seq_length)
    features.update({"task_id": self.task_id,
                     self.name + "_longer": int(len(example.text.split()) > WORDS)})
    return [features]

  def head_spec(self):
    return {"kind": "longer_than", "task": self.name, "words": WORDS}

  def get_scorer(self, split="dev"):
    return AccuracyScorer()


heads.register_head("longer_than", LongerThanHead)
registry.register_task("longer", "longer_than", lambda: LongerTask)


def test_a_head_registered_outside_the_package_fine_tunes_exports_and_predicts(tmp_path):
  config = make_config(str(tmp_path), ["longer"], train_batch_size=4, eval_batch_size=4,
                       num_train_epochs=2.0, learning_rate=1e-3)
  write_lines(os.path.join(config.task_data_dir("longer"), "train.txt"), TRAIN)
  write_lines(os.path.join(config.task_data_dir("longer"), "dev.txt"), DEV)
  [results] = runner.run_finetuning(config)

  model, _ = model_lib.load_finetuned_model(config.trial_model_dir(1))
  assert isinstance(model.head("longer"), LongerThanHead) and model.reads_first_token_only()
  [task] = make_tasks(config)
  rows = [task.featurize(e, False)[0] for e in task.get_examples("dev")]
  features = {k: tf.constant([r[k] for r in rows], tf.int32)
              for k in ("input_ids", "input_mask", "segment_ids")}
  ours = {k: np.asarray(v) for k, v in model(features)["longer"].items()}
  labels = np.array([len(text.split()) > WORDS for text in DEV])
  assert results["longer"]["accuracy"] == pytest.approx(
      100.0 * np.mean(ours["predictions"] == labels))

  out = str(tmp_path / "saved")
  assert export.main(["--model-dir", config.trial_model_dir(1), "--output-dir", out,
                      "--vocab-file", config.vocab_file]) == 0
  served = tf.saved_model.load(out).signatures["text"](text=tf.constant(DEV))
  length = served["input_ids"].shape[1]
  np.testing.assert_array_equal(served["input_ids"].numpy(),
                                features["input_ids"].numpy()[:, :length])
  np.testing.assert_array_equal(served["longer"].numpy(), ours["predictions"])
  np.testing.assert_allclose(served["probability"].numpy(), 1 / (1 + np.exp(-ours["logit"])),
                             rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(served["longer_logit"].numpy(), ours["logit"], rtol=1e-5,
                             atol=1e-6)


def test_a_kind_or_task_is_registered_once_and_unknown_names_are_refused():
  with pytest.raises(ValueError, match="head kind 'longer_than' is registered already"):
    heads.register_head("longer_than", LongerThanHead)
  with pytest.raises(ValueError, match="task 'longer' is registered already"):
    registry.register_task("longer", "longer_than", lambda: LongerTask)
  with pytest.raises(ValueError, match="unknown head kind 'ner'; known: classification, "):
    heads.build_head({"kind": "ner", "task": "x"})
  with pytest.raises(ValueError, match=r"unknown task 'longest': use one of cola, .*, longer"):
    registry.registered("longest")


def test_each_built_in_task_builds_the_head_kind_it_is_registered_with(tmp_path):
  names = [name for name in registry.task_names() if name != "longer"]
  config = make_config(str(tmp_path), names, max_seq_length=128)
  write_lines(os.path.join(config.task_data_dir("chunk"), "train.txt"),
              ["John NNP B-NP", "runs VBZ B-VP", ""])  # chunking's labels are its data's
  for task in make_tasks(config):
    kind = task.head_spec()["kind"]
    assert kind == registry.registered(task.name).head
    assert isinstance(heads.build_head(task.head_spec()), heads.head_kind(kind).layer)
