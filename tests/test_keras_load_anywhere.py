"""`.keras` files of our models load in a fresh process after `import electra_tf2` alone, on
every backend, without TensorFlow on JAX and PyTorch; no error message embeds a vocabulary.

Oracle: the outputs of the model that was saved (TensorFlow backend, this process), on the
same token ids; each fresh process does only `import electra_tf2, keras` and
`keras.models.load_model`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile

import keras
import numpy as np
import pytest

from fixtures import WORD_VOCAB
import electra_tf2
from electra_tf2.models import keras_classes

HERE = os.path.dirname(os.path.abspath(__file__))
TEXTS = ["the cat sat on the mat", "a dog runs"]
KINDS = {"TextClassifier": {"num_classes": 3}, "TokenClassifier": {"num_classes": 4},
         "Discriminator": {}}
# A fresh process: loads each file, prints its outputs on the features as JSON.
LOAD = """
import json, sys
import numpy as np
import electra_tf2, keras
out = {}
for kind, path in json.loads(sys.argv[1]).items():
  model = keras.models.load_model(path)
  features = {k: np.asarray(v) for k, v in np.load(path + ".npz").items()}
  result = model.predict(features, verbose=0)
  result = result["logits"] if isinstance(result, dict) else result
  out[kind] = [type(model).__name__, np.asarray(result).tolist()]
out["tensorflow imported"] = "tensorflow" in sys.modules
print("RESULT " + json.dumps(out))
"""


def tiny(kind):
  config = electra_tf2.BertConfig(len(WORD_VOCAB), hidden_size=16, num_hidden_layers=1,
                                  num_attention_heads=2, intermediate_size=32,
                                  max_position_embeddings=16)
  return getattr(electra_tf2, kind)(config, None, WORD_VOCAB, max_seq_length=16, **KINDS[kind])


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
  """`{kind: (path, outputs on its features)}`: files saved on TensorFlow."""
  root = tmp_path_factory.mktemp("keras_files")
  files = {}
  for kind in KINDS:
    model = tiny(kind)
    features = model.featurize(TEXTS)
    result = model.predict(features, verbose=0)
    path = str(root / f"{kind}.keras")
    model.save(path)
    np.savez(path + ".npz", **features)
    files[kind] = (path, np.asarray(result["logits"] if isinstance(result, dict) else result))
  return files


def test_every_registered_class_has_a_stand_in():
  """keras_classes.CLASSES names each class our modules register, at its module."""
  for module in sorted(set(keras_classes.CLASSES.values())):
    __import__(module)
  import pkgutil  # pylint: disable=g-import-not-at-top
  for info in pkgutil.walk_packages(electra_tf2.__path__, "electra_tf2."):
    if info.name.startswith(("electra_tf2.models", "electra_tf2.layers", "electra_tf2.networks")):
      __import__(info.name)
  registered = {name.split(">", 1)[1]: obj.__module__
                for name, obj in keras.saving.get_custom_objects().items()
                if name.startswith("electra_tf2>") and isinstance(obj, type)}
  assert registered == keras_classes.CLASSES


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_load_model_after_import_electra_tf2_alone(backend, saved):
  env = dict(os.environ, KERAS_BACKEND=backend)
  paths = json.dumps({kind: path for kind, (path, _) in saved.items()})
  result = subprocess.run([sys.executable, "-c", LOAD, paths], env=env, capture_output=True,
                          text=True, timeout=600, cwd=os.path.dirname(HERE))
  assert result.returncode == 0, result.stderr[-3000:]
  line = [l for l in result.stdout.splitlines() if l.startswith("RESULT ")][-1]
  out = json.loads(line[len("RESULT "):])
  assert out.pop("tensorflow imported") == (backend == "tensorflow")
  for kind, (_, expected) in saved.items():
    name, outputs = out[kind]
    assert name == kind
    np.testing.assert_allclose(np.array(outputs), expected, atol=1e-5)


def test_a_config_that_does_not_fit_is_one_short_line(saved, tmp_path):
  """A file whose config this version cannot build (Keras would wrap the TypeError with the
  whole config): the error names the class and the argument, not the vocabulary."""
  path, _ = saved["TextClassifier"]
  damaged = str(tmp_path / "damaged.keras")
  with zipfile.ZipFile(path) as source, zipfile.ZipFile(damaged, "w") as target:
    for item in source.infolist():
      data = source.read(item.filename)
      if item.filename == "config.json":
        config = json.loads(data)
        del config["config"]["embedding_size"]
        data = json.dumps(config).encode()
      target.writestr(item, data)
  with pytest.raises(electra_tf2.ElectraError) as raised:
    keras.models.load_model(damaged)
  message = str(raised.value)
  assert "TextClassifier" in message and "embedding_size" in message
  assert len(message) < 300 and "\n" not in message
  assert "smith" not in message


@pytest.mark.slow
def test_a_file_compiled_with_xla_loads_quietly_on_pytorch(tmp_path):
  """A `.keras` file compiled with jit_compile=True (another backend's XLA) compiles eagerly
  on PyTorch, Keras' torch default: torch.compile of these models recompiles on layer
  attributes, with pages of torch._dynamo warnings."""
  pytest.importorskip("torch")
  model = tiny("TextClassifier")
  model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", jit_compile=True)
  model.fit(model.featurize(TEXTS), np.array([0, 2]), epochs=1, verbose=0)
  path = str(tmp_path / "xla.keras")
  model.save(path)
  with zipfile.ZipFile(path) as f:
    assert json.loads(f.read("config.json"))["compile_config"]["jit_compile"] is True
  code = ("import electra_tf2, keras\n"
          f"model = keras.models.load_model({path!r})\n"
          "print('jit_compile', model.jit_compile)\n"
          f"model.predict({TEXTS!r}, verbose=0)\n")
  result = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, KERAS_BACKEND="torch"),
                          capture_output=True, text=True, timeout=600, cwd=os.path.dirname(HERE))
  assert result.returncode == 0, result.stderr[-3000:]
  assert "jit_compile False" in result.stdout.splitlines()
  assert "torch._dynamo" not in result.stderr and "recompile" not in result.stderr, result.stderr
