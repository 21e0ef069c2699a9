"""keras-hub ELECTRA presets both ways, against keras-hub itself on every backend.

Oracles: keras-hub's ElectraBackbone and ElectraTokenizer loading the presets (in a
subprocess per Keras backend, tests/keras_hub_backends.py), and transformers' ElectraModel
(gelu_new) on the `hf-export` of a directory converted from a preset. Models are tiny and
random, built here: nothing is downloaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

keras_hub = pytest.importorskip("keras_hub")

from fixtures import WORD_VOCAB, noisy_pretrainer  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
import electra_tf2  # noqa: E402
from electra_tf2.models import model_directory  # noqa: E402
from electra_tf2.conversion import convert, hf_export  # noqa: E402
from electra_tf2.serving import export  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TEXTS = ["the cat sat on the mat.", "John Smith was born in Paris, 1895!",
         "Café, 北京 and un-believable cats?", "we see it"]
SHAPE = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)


def write_model_dir(path, hidden_act, seed):
  vocab = os.path.join(os.path.dirname(path), f"vocab_{seed}.txt")
  with open(vocab, "w", encoding="utf-8") as f:
    f.write("".join(f"{token}\n" for token in WORD_VOCAB))
  hparams = {"model_hparam_overrides": dict(SHAPE, hidden_act=hidden_act), "embedding_size": 16,
             "vocab_size": len(WORD_VOCAB), "vocab_file": vocab, "max_seq_length": 32}
  model = noisy_pretrainer(hparams, seed=seed, scale=0.2)
  from electra_tf2.config.pretraining import resolve_pretraining_config  # noqa: E402
  model_directory.write_model_dir(model, resolve_pretraining_config("electra_small", None,
                                                                    hparams), path)
  return path


@pytest.fixture(scope="module")
def work(tmp_path_factory):
  """Model directories (gelu_tanh, exact gelu), their presets and the export's lines."""
  root = tmp_path_factory.mktemp("keras_hub")
  made = {}
  for name, act, seed in (("tanh", "gelu_tanh", 1), ("exact", "gelu", 2)):
    model_dir = write_model_dir(str(root / f"{name}_model"), act, seed)
    preset = str(root / f"{name}_preset")
    made[name] = (model_dir, preset)
  return root, made


def run_export(model_dir, preset, capsys):
  assert export.main(["--format", "keras-hub", "--model-dir", model_dir,
                      "--output-dir", preset]) == 0
  return capsys.readouterr().out.strip().splitlines()


def test_export_writes_a_preset_and_says_how_far_keras_hub_is(work, capsys):
  _, made = work
  lines = run_export(*made["tanh"], capsys)
  assert len(lines) == 2 and "within" in lines[0] and lines[1].startswith("wrote ")
  diff = float(lines[0].split("within ")[1].split()[0])
  assert diff <= 1e-5
  lines = run_export(*made["exact"], capsys)
  assert len(lines) == 2 and lines[0].startswith("note: ") and "tanh" in lines[0]
  assert 1e-6 < float(lines[0].split("up to ")[1].split()[0]) < 1e-1
  for _, preset in made.values():
    assert sorted(os.listdir(preset)) == ["assets", "config.json", "metadata.json",
                                          "model.weights.h5", "tokenizer.json"]
  pooler = keras_hub.models.ElectraBackbone.from_preset(made["tanh"][1]).get_layer(
      "pooled_dense").kernel.numpy()
  assert abs(pooler.std() - 0.02) < 0.004 and np.abs(pooler).max() <= 0.04  # truncated at 2 sd


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_keras_hub_loads_the_presets_with_our_ids_and_outputs(work, backend, capsys):
  root, made = work
  for model_dir, preset in made.values():
    if not os.path.exists(preset):
      run_export(model_dir, preset, capsys)
  ours = {}
  for name, (model_dir, _) in made.items():
    model = electra_tf2.TextClassifier.from_pretrained(model_dir, num_classes=2)
    features = model.featurize(TEXTS)
    ours[name] = np.asarray(model.encode(features))[features["input_mask"].astype(bool)]
  work_json = json.dumps({name: (preset, TEXTS) for name, (_, preset) in made.items()})
  result = subprocess.run([sys.executable, os.path.join(HERE, "keras_hub_backends.py"),
                           work_json], env=dict(os.environ, KERAS_BACKEND=backend),
                          capture_output=True, text=True, timeout=600, cwd=os.path.dirname(HERE))
  assert result.returncode == 0, result.stderr[-3000:]
  line = [l for l in result.stdout.splitlines() if l.startswith("RESULT ")][-1]
  out = json.loads(line[len("RESULT "):])
  assert out["backend"] == backend
  for name in made:
    assert out[name]["ids_equal"], name
    assert out[name]["from_pretrained_diff"] <= 1e-5  # a preset read directly: gelu_tanh
  assert np.abs(np.array(out["tanh"]["keras_hub"]) - ours["tanh"]).max() <= 1e-5
  assert np.abs(np.array(out["exact"]["keras_hub"]) - ours["exact"]).max() > 1e-6


def test_from_keras_hub_writes_a_tanh_model_that_equals_keras_hub_and_transformers(
    work, tmp_path, capsys):
  """A preset keras-hub made itself (random weights) -> our model directory: our encoder
  equals keras-hub's on the same ids; hf-export of it equals keras-hub in transformers."""
  backbone = keras_hub.models.ElectraBackbone(
      vocab_size=len(WORD_VOCAB), num_layers=2, num_heads=2, hidden_dim=32, embedding_dim=16,
      intermediate_dim=64, max_sequence_length=64)
  rng = np.random.default_rng(3)
  for variable in backbone.weights:
    variable.assign(variable.numpy() + rng.normal(0, 0.2, variable.shape).astype(np.float32))
  preset = str(tmp_path / "preset")
  backbone.save_to_preset(preset)
  keras_hub.models.ElectraTokenizer(vocabulary=list(WORD_VOCAB), lowercase=True,
                                    strip_accents=True).save_to_preset(preset)
  out = str(tmp_path / "model")
  assert convert.main(["from-keras-hub", "--preset", preset, "--output-dir", out]) == 0
  printed = capsys.readouterr().out
  assert "discriminator_predictions/dense/kernel" in printed and f"wrote {out}" in printed
  model = electra_tf2.TextClassifier.from_pretrained(out, num_classes=2)
  assert model.bert_config.hidden_act == "gelu_tanh"
  features = model.featurize(TEXTS)
  mask = features["input_mask"].astype(bool)
  theirs = backbone({"token_ids": features["input_ids"], "segment_ids": features["segment_ids"],
                     "padding_mask": features["input_mask"]})["sequence_output"].numpy()
  assert np.abs(np.asarray(model.encode(features)) - theirs)[mask].max() <= 1e-5
  hf_dir = str(tmp_path / "hf")
  hf_export.export_hugging_face(model_directory.restore_pretrainer(out), hf_dir)
  hf_model = transformers.ElectraModel.from_pretrained(hf_dir).eval()
  assert hf_model.config.hidden_act == "gelu_new"
  with torch.no_grad():
    hidden = hf_model(input_ids=torch.tensor(features["input_ids"], dtype=torch.long),
                      attention_mask=torch.tensor(features["input_mask"]),
                      token_type_ids=torch.tensor(features["segment_ids"], dtype=torch.long)
                      ).last_hidden_state.numpy()
  assert np.abs(hidden - theirs)[mask].max() <= 1e-5


def test_keras_hub_missing_or_another_preset_is_one_line(tmp_path, capsys):
  path = tmp_path / "preset"
  path.mkdir()
  (path / "config.json").write_text(json.dumps({"module": "keras_hub.src.models.bert",
                                                "registered_name": "keras_hub>BertBackbone"}))
  assert convert.main(["from-keras-hub", "--preset", str(path), "--output-dir",
                       str(tmp_path / "out")]) == 2
  err = capsys.readouterr().err.strip()
  assert "\n" not in err and "BertBackbone" in err and "config.json" in err
  assert not os.path.exists(tmp_path / "out")
