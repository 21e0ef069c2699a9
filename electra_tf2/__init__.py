"""ELECTRA in TensorFlow 2 / Keras 3."""

_KERAS_MODELS = {"Discriminator": "discriminator", "TextClassifier": "text_classifier",
                 "TokenClassifier": "token_classifier"}


def __getattr__(name):  # the Keras models import TensorFlow: only on first use
  if name in _KERAS_MODELS:
    import importlib
    return getattr(importlib.import_module(f"electra_tf2.models.{_KERAS_MODELS[name]}"), name)
  raise AttributeError(f"module 'electra_tf2' has no attribute {name!r}")
