"""Mistakes a new user makes, each answered in one line that says what to do (#44)."""

import json
import os

import pytest

from electra_tf2.cli import commands
from electra_tf2.utils import errors
from electra_tf2.config.pretraining import resolve_pretraining_config
from electra_tf2.training import finetuning as runner
from electra_tf2.tasks.config import resolve_finetuning_config
from electra_tf2.config.hparams import ConfigError, config_path
from electra_tf2.text.vocab import VocabError, load_vocab
from tests.fixtures import WORD_VOCAB, write_vocab


@pytest.mark.parametrize("resolve,typo,meant,defaults", [
    (lambda h: resolve_pretraining_config("electra_small", None, h), "num_train_step",
     "num_train_steps", "pretraining_defaults"),
    (lambda h: resolve_finetuning_config("electra_small", "DATA", h, "sst"), "learning_rte",
     "learning_rate", "finetuning_defaults"),
])
def test_misspelt_hparams_get_did_you_mean_and_the_packaged_defaults(resolve, typo, meant,
                                                                     defaults):
  with pytest.raises(ConfigError) as error:
    resolve({typo: 1})
  assert str(error.value) == (
      f"--hparams: unknown hparam {typo!r} (did you mean {meant!r}?); `electra config show "
      f"{defaults}` lists every hparam (electra_tf2/config/presets/{defaults}.json)")


def test_an_hparam_like_no_other_gets_no_guess():
  with pytest.raises(ConfigError) as error:
    resolve_pretraining_config("electra_small", None, {"zzzzzz": 1})
  assert "did you mean" not in str(error.value)


def test_config_show_prints_the_packaged_files(capsys):
  assert commands.main(["config", "show", "finetuning_defaults"]) == 0
  with open(config_path("finetuning_defaults.json")) as f:
    assert json.loads(capsys.readouterr().out) == json.load(f)
  assert commands.main(["config", "show"]) == 0
  listing = capsys.readouterr().out.splitlines()
  assert [line.split() for line in listing if line.startswith("pretraining_defaults ")] == [
      ["pretraining_defaults", config_path("pretraining_defaults.json")]]
  assert any(line.startswith("electra_small ") for line in listing)
  assert commands.main(["config", "show", "electra_smal"]) == errors.EXIT_ERROR
  err = capsys.readouterr().err
  assert err.startswith("error: electra config show: no packaged config 'electra_smal'; use "
                        "one of ") and err.count("\n") == 1


def test_a_missing_vocab_names_the_command_that_builds_one(tmp_path):
  with pytest.raises(VocabError) as error:
    load_vocab(str(tmp_path / "vocab.txt"))
  assert "electra build-vocab" in str(error.value) and "data_prep" not in str(error.value)


def test_model_name_of_a_finetuned_directory_is_named_as_such(tmp_path):
  data = str(tmp_path / "DATA")
  trial = os.path.join(data, "models", "electra_small", "finetuning_models", "sst_model_1")
  os.makedirs(trial)
  with open(os.path.join(trial, "model_config.json"), "w") as f:
    f.write("{}")
  with open(os.path.join(data, "models", "electra_small", "pretrain_config.json"), "w") as f:
    f.write("{}")
  write_vocab(os.path.join(data, "vocab.txt"))
  config = resolve_finetuning_config("finetuning_models/sst_model_1", data, {}, "sst")
  with pytest.raises(errors.ElectraError) as error:
    runner.check_pretrained_model(config)
  assert str(error.value) == (
      "--model-name finetuning_models/sst_model_1 is a fine-tuned model directory: "
      f"--model-name names a pre-trained model in {data}/models (one of electra_small); a "
      "fine-tuned model is used with electra export, electra predict or "
      "TextClassifier.from_pretrained")
  config = resolve_finetuning_config("electra_base", data, {}, "sst")
  with pytest.raises(errors.ElectraError) as error:
    runner.check_pretrained_model(config)
  # the random-initialisation override that fits the data's vocabulary
  assert str(error.value).endswith(
      f"""--hparams '{{"init_checkpoint": null, "vocab_size": {len(WORD_VOCAB)}}}'""")
  assert "one of electra_small" in str(error.value)
