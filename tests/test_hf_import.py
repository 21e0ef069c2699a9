"""Reading Hugging Face ELECTRA directories (electra_tf2/checkpoints/huggingface.py) and
converting them into model directories (electra_tf2/conversion/hf_import.py).

Oracles: our own exporter (hf_export then hf_import gives every array back bit
for bit) and transformers' `save_pretrained`, whose tensors must land in our
variables unchanged (dense weights transposed).
"""

import json
import os
import shutil
import sys

import numpy as np
import pytest

from hf_models import load_hf, save_hf_model  # noqa: E402  (sets USE_TF=0 first)
from fixtures import noisy_pretrainer, write_vocab  # noqa: E402
from electra_tf2.models import model_directory
from electra_tf2.networks import variable_names  # noqa: E402
from electra_tf2.conversion import convert, hf_export, hf_import  # noqa: E402
from electra_tf2.checkpoints import huggingface  # noqa: E402
from electra_tf2.checkpoints import report as report_lib  # noqa: E402


@pytest.fixture(scope="module")
def hf_dirs(tmp_path_factory):
  root = tmp_path_factory.mktemp("hf")
  return {arch: save_hf_model(str(root / arch), arch)
          for arch in huggingface.PRETRAINING_ARCHITECTURES}


def _restored_state(model_dir, generator):
  model = model_directory.restore_pretrainer(model_dir)
  return hf_export.hf_state_dict(model, generator)


@pytest.mark.parametrize("generator", [False, True])
def test_export_then_import_round_trips_bit_exactly(tmp_path, generator):
  vocab = str(tmp_path / "vocab.txt")
  write_vocab(vocab, 40)
  hparams = {"model_hparam_overrides": {"hidden_size": 32, "num_hidden_layers": 2},
             "embedding_size": 24, "vocab_size": 40,
             "electra_objective": not generator, "uniform_generator": not generator}
  model = noisy_pretrainer(hparams, seed=3, scale=0.1)
  exported = hf_export.hf_state_dict(model, generator)
  hf_dir = str(tmp_path / "hf")
  hf_export.export_hugging_face(model, hf_dir, generator, vocab, do_lower_case=False)
  out = str(tmp_path / "model")
  report = hf_import.convert_directory(hf_dir, out)
  assert report.ok and not report.ignored
  restored = _restored_state(out, generator)
  assert sorted(restored) == sorted(exported)
  for name, value in exported.items():
    assert restored[name].dtype == value.dtype and restored[name].tobytes() == value.tobytes(), name
  config = model_directory.load_pretraining_config(out)
  assert config.do_lower_case is False and config.vocab_file == os.path.join(out, "vocab.txt")
  # ... and exported again, the same file byte for byte.
  again = str(tmp_path / "again")
  hf_export.export_hugging_face(model_directory.restore_pretrainer(out), again, generator)
  for name in (hf_export.WEIGHTS_FILE, "config.json"):
    with open(os.path.join(hf_dir, name), "rb") as a, open(os.path.join(again, name), "rb") as b:
      assert a.read() == b.read(), name


@pytest.mark.parametrize("architecture", huggingface.PRETRAINING_ARCHITECTURES)
def test_transformers_tensors_land_in_our_variables(tmp_path, hf_dirs, architecture):
  hf_dir = hf_dirs[architecture]
  directory = huggingface.read_directory(hf_dir)
  assert directory.architecture == architecture
  assert directory.bert_config.hidden_size == 36 and directory.embedding_size == 20
  out = str(tmp_path / "model")
  strict = architecture != "ElectraModel"
  report = hf_import.convert_directory(hf_dir, out, strict=strict)
  if architecture == "ElectraModel":  # the encoder only: the head is named as not loaded
    assert report.missing and all(n.startswith("discriminator_predictions/")
                                  for n in report.missing)
    assert "discriminator_predictions/dense/kernel" in report_lib.notice(report)
  else:
    assert report.ok
  model = model_directory.restore_pretrainer(out)
  names = variable_names.pretrainer_variable_map(model)
  torch_model = load_hf(hf_dir, architecture)
  prefix = "electra." if architecture == "ElectraModel" else ""  # the base model has none
  state = {prefix + k: v.detach().numpy() for k, v in torch_model.state_dict().items()}
  for official in report.loaded:
    expected = state[hf_export.hf_parameter_name(official, "electra")]
    value = names[official].numpy()
    np.testing.assert_array_equal(value.T if official.endswith("/kernel") else value, expected)


def test_sharded_safetensors_and_torch_bin_read_the_same(tmp_path):
  plain = huggingface.read_directory(save_hf_model(str(tmp_path / "a"), seed=4))
  bin_dir = save_hf_model(str(tmp_path / "b"), seed=4, safe=False)
  assert os.path.exists(os.path.join(bin_dir, huggingface.TORCH_FILE))
  from_bin = huggingface.read_directory(bin_dir)
  sharded = str(tmp_path / "c")
  load_hf(plain.path, "ElectraForPreTraining").save_pretrained(sharded, max_shard_size="20KB")
  assert os.path.exists(os.path.join(sharded, "model.safetensors.index.json"))
  from_shards = huggingface.read_directory(sharded)
  for other in (from_bin, from_shards):
    assert set(other.tensors) - {"electra.embeddings.position_ids"} == set(plain.tensors)
    for name, value in plain.tensors.items():
      np.testing.assert_array_equal(other.tensors[name], value)


def test_safetensors_reader_widens_half_precision(tmp_path):
  from safetensors.numpy import save_file
  values = np.array([[1.5, -2.25], [3.0, 1e-3]], np.float32)
  save_file({"h": values.astype(np.float16)}, str(tmp_path / "x.safetensors"))
  read = huggingface.read_safetensors(str(tmp_path / "x.safetensors"))
  assert read["h"].dtype == np.float32
  np.testing.assert_array_equal(read["h"], values.astype(np.float16).astype(np.float32))


def _bad_inputs(tmp_path, good):
  """(name, directory, words the one-line error must contain) per bad input."""
  cases = []

  def copy(name):
    path = str(tmp_path / name)
    shutil.copytree(good, path)
    return path

  no_weights = copy("no_weights")
  os.remove(os.path.join(no_weights, "model.safetensors"))
  cases.append((no_weights, ["no weights", "model.safetensors"]))
  bert = copy("bert")
  with open(os.path.join(bert, "config.json")) as f:
    config = json.load(f)
  with open(os.path.join(bert, "config.json"), "w") as f:
    json.dump(dict(config, model_type="bert"), f)
  cases.append((bert, ["config.json", "model_type", "'bert'"]))
  for name, edit in (("shape", lambda t: t.update(
      {"electra.embeddings_project.weight": t["electra.embeddings_project.weight"][:, :5]})),
                     ("missing", lambda t: t.pop("electra.encoder.layer.1.output.dense.bias"))):
    path = copy(name)
    tensors = huggingface.read_safetensors(os.path.join(path, "model.safetensors"))
    edit(tensors)
    hf_export.write_safetensors(os.path.join(path, "model.safetensors"), tensors)
    cases.append((path, ["model.safetensors", "embeddings_project/kernel: [5, 36] instead of "
                         "[20, 36]" if name == "shape" else "electra/encoder/layer_1/output/"
                         "dense/bias"]))
  vocab = copy("vocab")
  with open(os.path.join(vocab, "vocab.txt"), "a") as f:
    f.write("extra\n")
  cases.append((vocab, ["vocab.txt", "embeddings"]))
  return cases


def test_bad_input_is_one_line_and_writes_nothing(tmp_path, hf_dirs, capsys):
  for hf_dir, words in _bad_inputs(tmp_path, hf_dirs["ElectraForPreTraining"]):
    out = str(tmp_path / "out")
    assert convert.main(["from-hf", "--hf-dir", hf_dir, "--output-dir", out]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: ") and "\n" not in error, error
    for word in words:
      assert word in error, (word, error)
    assert not os.path.exists(out)


def test_torch_file_without_torch_says_what_to_do(tmp_path, monkeypatch):
  bin_dir = save_hf_model(str(tmp_path / "bin"), safe=False)
  monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
  with pytest.raises(huggingface.HuggingFaceImportError, match="pytorch_model.bin needs torch"):
    huggingface.read_directory(bin_dir)
  assert not os.path.exists(str(tmp_path / "out"))


def test_cli_writes_a_model_directory_with_its_report(tmp_path, hf_dirs, capsys):
  out = str(tmp_path / "model")
  assert convert.main(["from-hf", "--hf-dir", hf_dirs["ElectraModel"], "--output-dir", out]) == 2
  assert "discriminator_predictions" in capsys.readouterr().err
  assert not os.path.exists(out)
  assert convert.main(["from-hf", "--hf-dir", hf_dirs["ElectraModel"], "--output-dir", out,
                       "--no-strict"]) == 0
  printed = capsys.readouterr().out
  assert "notice:" in printed and "not loaded" in printed
  with open(os.path.join(out, convert.REPORT_FILE)) as f:
    assert json.load(f)["missing"]
