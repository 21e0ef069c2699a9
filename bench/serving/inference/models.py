"""The bench's models: random ELECTRA classifiers of the released shapes, built by
transformers, saved once under the work directory; every side loads these weights.

A `ModelFixture` is one model and the texts it is timed on. Its Hugging Face
directory holds an `ElectraForSequenceClassification` (config.json,
model.safetensors, vocab.txt, tokenizer_config.json); the PyTorch model and the
fast tokenizer are loaded once and shared by the sides that need them.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
from typing import Any, Dict

os.environ.setdefault("USE_TF", "0")  # transformers: PyTorch classes only

from bench.serving.inference.texts import TextSet  # noqa: E402

# The released discriminators' shapes (official configure_pretraining.py:118-128,
# model sizes "small" and "base"; the small model's embedding size is 128).
SHAPES: Dict[str, Dict[str, int]] = {
    "electra_small": dict(hidden_size=256, num_hidden_layers=12, num_attention_heads=4,
                          intermediate_size=1024, embedding_size=128),
    "electra_base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                         intermediate_size=3072, embedding_size=768),
}
MAX_SEQ_LENGTH = 128
NUM_LABELS = 2


@dataclasses.dataclass
class ModelFixture:
  """A model (its Hugging Face directory) and the texts to time it on.

  name: "electra_small", "electra_base" or a fine-tuned model's name.
  work_dir: where the sides keep what they build (SavedModels, ONNX files), per model.
  """
  name: str
  hf_dir: str
  texts: TextSet
  work_dir: str
  max_seq_length: int = MAX_SEQ_LENGTH
  judge_accuracy: bool = False  # a trained model: report dev accuracy and agreement

  @functools.cached_property
  def config(self) -> Dict[str, Any]:
    with open(os.path.join(self.hf_dir, "config.json"), encoding="utf-8") as f:
      return json.load(f)

  @functools.cached_property
  def torch_model(self):
    """The `ElectraForSequenceClassification`, in eval mode."""
    import transformers
    return transformers.ElectraForSequenceClassification.from_pretrained(self.hf_dir).eval()

  @functools.cached_property
  def tokenizer(self):
    """transformers' `ElectraTokenizerFast` of the directory's vocabulary."""
    import transformers
    return transformers.ElectraTokenizerFast.from_pretrained(self.hf_dir)

  def encode(self, texts, framework: str) -> Dict[str, Any]:
    """The fast tokenizer's `input_ids`, `attention_mask`, `token_type_ids`: pairs truncated
    longest first to max_seq_length, padded to the longest row ("pt" or "np" arrays)."""
    return self.tokenizer(*texts, padding=True, truncation=True,
                          max_length=self.max_seq_length, return_tensors=framework)

  def path(self, name: str) -> str:
    """`work_dir/name`, its directory created."""
    os.makedirs(self.work_dir, exist_ok=True)
    return os.path.join(self.work_dir, name)


def random_classifier(shape: str, vocab_file: str, directory: str, seed: int = 0) -> str:
  """Saves a random `ElectraForSequenceClassification` of `SHAPES[shape]` (transformers'
  initialisation) with its vocabulary to `directory`, unless there; returns it."""
  if os.path.exists(os.path.join(directory, "model.safetensors")):
    return directory
  import torch
  import transformers
  with open(vocab_file, encoding="utf-8") as f:
    vocab_size = sum(1 for _ in f)
  torch.manual_seed(seed)
  config = transformers.ElectraConfig(vocab_size=vocab_size, num_labels=NUM_LABELS,
                                      pad_token_id=0, **SHAPES[shape])
  model = transformers.ElectraForSequenceClassification(config).eval()
  tmp = directory + ".tmp"
  shutil.rmtree(tmp, ignore_errors=True)
  model.save_pretrained(tmp)
  shutil.copy(vocab_file, os.path.join(tmp, "vocab.txt"))
  with open(os.path.join(tmp, "tokenizer_config.json"), "w", encoding="utf-8") as f:
    json.dump({"tokenizer_class": "ElectraTokenizer", "do_lower_case": True}, f)
  os.replace(tmp, directory)
  return directory


def random_fixtures(shapes, texts, work_dir: str):
  """A `ModelFixture` per shape and text set (random weights, one directory per shape)."""
  fixtures = []
  for shape in shapes:
    hf_dir = random_classifier(shape, texts[0].vocab_file,
                               os.path.join(work_dir, "models", shape))
    fixtures += [ModelFixture(shape, hf_dir, t, os.path.join(work_dir, "sides", shape))
                 for t in texts]
  return fixtures
