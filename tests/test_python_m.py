"""`python -m` on every module of the package: a command runs, anything else refuses.

Before the `electra` command, `python -m electra_tf2.convert ...` (and export, hf_export,
flops, param_counts, the data builders) were how these stages ran; they stay aliases of
their subcommands, at their old paths and at their new homes (conversion/, serving/).
Every other module exits 2 with one line naming the command to use, instead of exiting 0
having done nothing.
"""

import os
import pathlib
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

import electra_tf2
from electra_tf2 import commands

PACKAGE = pathlib.Path(electra_tf2.__file__).parent
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")


def all_modules():
  """Every module and package of electra_tf2, by dotted name, from the source tree."""
  names = []
  for path in sorted(PACKAGE.rglob("*.py")):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
  return names


def python_m(module, *args):
  return subprocess.run([sys.executable, "-m", module, *args], env=ENV, capture_output=True,
                        text=True, timeout=300)


def is_command(module):
  return module in commands.MODULE_COMMANDS or module in commands.RUNNABLE_PACKAGES


def test_every_other_module_refuses_in_one_line():
  """A real `python -m MODULE --help` of each; the refusal comes before TensorFlow loads."""
  modules = [module for module in all_modules() if not is_command(module)]
  assert len(modules) > 50  # the walk found the package
  with ThreadPoolExecutor(2) as pool:
    results = dict(zip(modules, pool.map(lambda m: python_m(m, "--help"), modules)))
  for module, result in results.items():
    assert result.returncode == 2, (module, result.returncode, result.stdout[:200])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: python -m {module}: "), \
        (module, result.stderr)
    assert "use electra" in lines[0]
  for module in ("electra_tf2.hf_import", "electra_tf2.conversion.hf_import"):
    assert "use electra convert from-hf" in results[module].stderr


@pytest.mark.parametrize("module", sorted(commands.MODULE_COMMANDS))
def test_command_modules_are_their_subcommands(module, capsys, monkeypatch):
  """What the `python -m` hook runs for a command module: its subcommand, under that name
  (in this process: each real run would load TensorFlow again; two real runs are below)."""
  monkeypatch.setattr(sys, "argv", list(sys.argv))
  with pytest.raises(SystemExit) as exit_info:
    commands.run_module_as_main(module, ["--help"])
  assert exit_info.value.code in (0, None)
  name = commands.MODULE_COMMANDS[module]
  assert capsys.readouterr().out.startswith(f"usage: electra {name}".rstrip())


def test_a_full_command_line_does_the_work_or_fails_in_one_line(tmp_path, capsys):
  result = python_m("electra_tf2.flops", "electra_small", "electra_base")
  assert result.returncode == 0, result.stderr
  assert commands.main(["flops", "electra_small", "electra_base"]) == 0
  assert result.stdout == capsys.readouterr().out
  missing = tmp_path / "no_model"
  for module in ("electra_tf2.convert", "electra_tf2.conversion.convert"):  # old path, new
    result = python_m(module, "to-official", "--model-dir", str(missing),
                      "--output-dir", str(tmp_path / "out"))
    assert result.returncode == 2, (module, result.stderr)
    assert result.stderr.strip().splitlines() == [
        f"error: {missing}/pretrain_config.json is missing: {missing} is not a pre-trained "
        "model directory (pre-train with run_pretraining.py or convert an official "
        "checkpoint with electra convert to-tf2)"]
    assert not (tmp_path / "out").exists()


def test_moved_command_modules_run_their_subcommand_at_both_paths():
  """The console script's table names the new homes; the old paths run the same
  subcommand (the `--help` of each, under its name, is checked above)."""
  moved = {"electra_tf2.convert": "electra_tf2.conversion.convert",
           "electra_tf2.export": "electra_tf2.serving.export",
           "electra_tf2.predict": "electra_tf2.serving.predict",
           "electra_tf2.hf_export": "electra_tf2.conversion.hf_export"}
  table = {name: module for name, (module, _) in commands.SUBCOMMANDS.items()}
  assert {table[n] for n in ("convert", "export", "predict", "hf-export")} == set(
      moved.values())
  for old, new in moved.items():
    assert commands.MODULE_COMMANDS[old] == commands.MODULE_COMMANDS[new]
    assert commands.SUBCOMMANDS[commands.MODULE_COMMANDS[old]][0] == new


def test_other_programs_and_unknown_modules_are_left_to_python():
  assert commands.module_being_run(["python", "-m", "pytest", "-q"]) == "pytest"
  assert commands.module_being_run(["python", "-W", "error", "-mpkg.mod"]) == "pkg.mod"
  assert commands.module_being_run(["python", "-c", "import electra_tf2"]) is None
  commands.run_module_as_main("pytest", ["-q"])  # returns: not ours
  commands.run_module_as_main("electra_tf2.no_such_module", [])  # runpy reports it
  result = python_m("electra_tf2.no_such_module")
  assert result.returncode == 1 and "No module named electra_tf2.no_such_module" in result.stderr
