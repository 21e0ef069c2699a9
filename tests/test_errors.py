"""One error base and one exit-code rule (electra_tf2/utils/errors.py) for every command."""

import pytest

from electra_tf2.utils import errors


def test_every_user_error_is_an_electra_error():
  from electra_tf2.checkpoints.tf_checkpoint import ModelDirectoryError
  from electra_tf2.config.hparams import ConfigError
  from electra_tf2.conversion.convert import ConversionError
  from electra_tf2.serving.export import ExportError
  from electra_tf2.tasks.task import FinetuningDataError
  from electra_tf2.conversion.hf_export import HuggingFaceExportError
  from electra_tf2.data_io.input_pipeline import DataError
  from electra_tf2.models.model_directory import PretrainedModelError
  from electra_tf2.training.distribution import DistributionError
  from electra_tf2.text.vocab import VocabError
  for cls in (ModelDirectoryError, ConfigError, ConversionError, ExportError,
              FinetuningDataError, HuggingFaceExportError, DataError, PretrainedModelError,
              DistributionError, VocabError):
    assert issubclass(cls, errors.ElectraError), cls
    assert issubclass(cls, ValueError), cls  # callers that catch ValueError still do


@pytest.mark.parametrize("raised,code,line", [
    (errors.ElectraError("config file x.json is not valid JSON"), 2,
     "error: config file x.json is not valid JSON"),
    (FileNotFoundError(2, "No such file or directory", "x.txt"), 2,
     "error: [Errno 2] No such file or directory: 'x.txt'"),
    (FloatingPointError("total_loss became nan at step 7"), 2,
     "error: total_loss became nan at step 7"),
    (KeyboardInterrupt(), 130, "interrupted (what was written before now is kept)"),
])
def test_exit_code_rule(capsys, raised, code, line):
  def main(argv):
    raise raised
  assert errors.run_command(main, []) == code
  assert capsys.readouterr().err.splitlines() == [line]


def test_success_and_bugs():
  assert errors.run_command(lambda argv: None, []) == 0
  assert errors.run_command(lambda argv: 0, []) == 0

  def buggy(argv):
    raise KeyError("a bug")
  with pytest.raises(KeyError):  # a bug keeps its traceback (exit 1)
    errors.run_command(buggy, [])
