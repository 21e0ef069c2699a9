"""Our Keras classes, findable by `keras.models.load_model` once `electra_tf2` is imported.

A `.keras` file names each class by its registered name (`electra_tf2>TextClassifier`);
Keras finds a class by that name only in its registry, which the class's module fills when
it is imported (`keras.saving.register_keras_serializable`). The package imports its
modules on first use, so `import electra_tf2` alone registers nothing. `install()`
(run by `import electra_tf2`) puts a stand-in under every name instead, as soon as Keras
is imported (or at once if it is): a `LazyClass` whose `from_config` imports the
class's module and builds the real class. Nothing is imported before a file asks for it,
so TensorFlow stays out of a JAX or PyTorch process. Importing the module replaces the
stand-in with the class itself.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from typing import Any, Dict

PACKAGE = "electra_tf2"
# Registered class name -> the module that defines it (tests/test_keras_load_anywhere.py
# checks that this is every class our modules register).
CLASSES = {
    "Encoder": "electra_tf2.networks.encoder",
    "WarmupPolynomialDecay": "electra_tf2.models.optimization",
    "AdamWeightDecay": "electra_tf2.models.optimization",
    "TextInputs": "electra_tf2.layers.text_inputs",
    "EmbeddingBlock": "electra_tf2.layers.embeddings",
    "ClassificationHead": "electra_tf2.layers.task_heads",
    "RegressionHead": "electra_tf2.layers.task_heads",
    "TaggingHead": "electra_tf2.layers.task_heads",
    "QAHead": "electra_tf2.layers.task_heads",
    "MaskedLMHead": "electra_tf2.layers.heads",
    "DiscriminatorHead": "electra_tf2.layers.heads",
    "TransformerLayer": "electra_tf2.layers.transformer",
    "LayerNorm": "electra_tf2.layers.layer_norm",
    "QuestionAnswerer": "electra_tf2.models.question_answerer",
    "TokenClassifier": "electra_tf2.models.token_classifier",
    "FinetuningModel": "electra_tf2.models.finetuning",
    "HuggingFaceClassificationHead": "electra_tf2.models.text_classifier",
    "TextClassifier": "electra_tf2.models.text_classifier",
    "ElectraPretrainer": "electra_tf2.models.pretrainer",
    "Discriminator": "electra_tf2.models.discriminator",
}


class LazyClass:
  """Stands for the class `name` of `module` in Keras' registry until it is imported."""

  def __init__(self, module: str, name: str):
    self.module, self.name = module, name

  def load(self) -> type:
    return getattr(importlib.import_module(self.module), self.name)

  def from_config(self, config: Dict[str, Any], custom_objects=None) -> Any:
    del custom_objects  # Keras' scope holds them while this runs
    return self.load().from_config(config)

  def __repr__(self) -> str:
    return f"<{PACKAGE}>{self.name}, imported from {self.module} when first loaded>"


def register() -> None:
  """Puts a `LazyClass` under every registered name that holds no class yet."""
  import keras  # pylint: disable=g-import-not-at-top
  registry = keras.saving.get_custom_objects()
  for name, module in CLASSES.items():
    registry.setdefault(f"{PACKAGE}>{name}", LazyClass(module, name))


class _AfterKerasImport(importlib.abc.MetaPathFinder):
  """Finds `keras` with the other finders and makes its import end with `register()`."""

  def find_spec(self, fullname, path=None, target=None):
    del path, target
    if fullname != "keras":
      return None
    sys.meta_path.remove(self)
    spec = importlib.util.find_spec("keras")
    if spec is None or spec.loader is None:
      return spec
    execute = spec.loader.exec_module

    def exec_module(module):
      execute(module)
      register()

    spec.loader.exec_module = exec_module
    return spec


def install() -> None:
  """Registers the stand-ins now if Keras is imported, else when it is."""
  if sys.modules.get("keras") is not None:
    register()
  elif not any(isinstance(finder, _AfterKerasImport) for finder in sys.meta_path):
    sys.meta_path.insert(0, _AfterKerasImport())
