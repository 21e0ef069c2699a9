"""The `electra` command: subcommands, --help, the exit-code rule, and `python -m electra_tf2`."""

import os
import subprocess
import sys

import pytest

from electra_tf2.cli import commands

ARGPARSE_SUBCOMMANDS = [name for name in commands.SUBCOMMANDS
                        if name not in ("pretrain", "finetune")]


def test_help_lists_every_stage(capsys):
  assert commands.main(["--help"]) == 0
  out = capsys.readouterr().out
  for name in ("build-vocab", "build-data", "pretrain", "finetune", "convert", "export",
               "hf-export", "score", "params", "flops"):
    assert f"\n  {name} " in out, name


@pytest.mark.parametrize("name", ARGPARSE_SUBCOMMANDS)
def test_each_subcommand_has_help_under_its_name(name, capsys, monkeypatch):
  monkeypatch.setattr(sys, "argv", list(sys.argv))  # the command renames argv[0]
  with pytest.raises(SystemExit) as exit_info:
    commands.main([name, "--help"])
  assert exit_info.value.code == 0
  assert f"usage: electra {name}" in capsys.readouterr().out


def test_unknown_subcommand_and_bad_flags_are_one_line(capsys, monkeypatch):
  monkeypatch.setattr(sys, "argv", list(sys.argv))
  assert commands.main(["pretrian"]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1 and "unknown subcommand 'pretrian'" in err[0]
  with pytest.raises(SystemExit) as exit_info:  # argparse's usage error: exit 2
    commands.main(["flops", "--no-such-flag"])
  assert exit_info.value.code == 2
  assert commands.main(["flops", "no_such_model"]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert err[-1].startswith("error: unknown model name 'no_such_model'")


def test_build_data_with_a_runner_is_the_beam_builder(monkeypatch):
  monkeypatch.setattr(sys, "argv", list(sys.argv))
  called = []
  from electra_tf2.data_prep import beam_pretraining, build_pretraining_dataset
  monkeypatch.setattr(beam_pretraining, "main", lambda argv: called.append(("beam", argv)) or 0)
  monkeypatch.setattr(build_pretraining_dataset, "main",
                      lambda argv: called.append(("local", argv)) or 0)
  assert commands.main(["build-data", "--runner", "DirectRunner", "--x"]) == 0
  assert commands.main(["build-data", "--x"]) == 0
  assert called == [("beam", ["--runner", "DirectRunner", "--x"]), ("local", ["--x"])]


@pytest.mark.slow
def test_python_m_is_the_same_command():
  """`python -m electra_tf2` runs the absl pretrain command; its usage error is one line.
  (The absl commands' --help, from the installed `electra`: scripts/check_install.sh.)"""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
  result = subprocess.run([sys.executable, "-m", "electra_tf2", "pretrain", "--model-name",
                           "electra_small"], env=env, capture_output=True, text=True,
                          timeout=300)
  assert result.returncode == 2
  assert result.stderr.strip().splitlines() == ["error: --data-dir is required (--help lists the flags)"]
