"""`python -m electra_tf2` is the `electra` command; importing the package runs nothing.

Internal module paths are not commands: `python -m electra_tf2.<module>` only imports the
module (Python's own behaviour), and no import of the package runs a command, even while
`python -m` is locating a module (sys.argv[0] is "-m" then).
"""

import os
import subprocess
import sys

from electra_tf2.cli import commands

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")


def python(*args):
  return subprocess.run([sys.executable, *args], env=ENV, capture_output=True, text=True,
                        timeout=300)


def test_python_m_electra_tf2_is_the_electra_command(capsys):
  result = python("-m", "electra_tf2", "flops", "electra_small", "electra_base")
  assert result.returncode == 0, result.stderr
  assert commands.main(["flops", "electra_small", "electra_base"]) == 0
  assert result.stdout == capsys.readouterr().out
  assert "electra_small" in result.stdout and "electra_base" in result.stdout
  listing = python("-m", "electra_tf2", "--help")
  assert listing.returncode == 0
  assert all(f"  {name} " in listing.stdout for name in commands.SUBCOMMANDS)


def test_a_full_command_line_fails_in_one_line_before_writing(tmp_path):
  missing = tmp_path / "no_model"
  result = python("-m", "electra_tf2", "convert", "to-official", "--model-dir", str(missing),
                  "--output-dir", str(tmp_path / "out"))
  assert result.returncode == 2, result.stderr
  assert result.stderr.strip().splitlines() == [
      f"error: {missing}/pretrain_config.json is missing: {missing} is not a pre-trained "
      "model directory (pre-train with run_pretraining.py or convert an official "
      "checkpoint with electra convert to-tf2)"]
  assert not (tmp_path / "out").exists()


def test_importing_the_package_runs_no_command():
  """`import electra_tf2` with the interpreter's argv of `python -m MODULE flops` (as
  while runpy locates MODULE) imports, and neither prints nor exits nor loads TensorFlow."""
  code = ("import sys; sys.argv[:] = ['-m', 'flops', 'electra_small']; "
          "sys.orig_argv[:] = [sys.executable, '-m', 'electra_tf2.pretraining.flops', 'x']; "
          "import electra_tf2; print('imported', 'tensorflow' in sys.modules)")
  result = python("-c", code)
  assert result.returncode == 0, result.stderr
  assert result.stdout == "imported False\n"
  module = python("-m", "electra_tf2.pretraining.flops", "electra_small")
  assert (module.returncode, module.stdout) == (0, "")  # imported, not run
