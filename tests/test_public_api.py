"""The package's public API: every name of `electra_tf2.__all__` resolves, and the runnable
example in each public class's docstring runs (doctest)."""

import doctest
import inspect

import pytest

import electra_tf2

CLASSES = [name for name in electra_tf2.__all__ if inspect.isclass(getattr(electra_tf2, name))]


def test_every_public_name_resolves_and_is_documented():
  for name in electra_tf2.__all__:
    value = getattr(electra_tf2, name)
    assert inspect.getdoc(value), name
  with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
    electra_tf2.Nothing  # noqa: B018


def test_import_loads_no_tensorflow():
  """`import electra_tf2` is light: the `electra` command starts without TensorFlow."""
  import subprocess
  import sys
  code = ("import sys, electra_tf2, electra_tf2.cli.commands; "
          "print('tensorflow' in sys.modules, electra_tf2.__file__)")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=True).stdout.split()
  assert out[0] == "False"


@pytest.mark.parametrize("name", CLASSES)
def test_class_docstring_example_runs(name):
  cls = getattr(electra_tf2, name)
  tests = doctest.DocTestFinder(recurse=False).find(cls, name, globs=vars(inspect.getmodule(cls)))
  examples = [test for test in tests if test.examples]
  assert examples, f"{name} has no runnable example in its docstring"
  runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
  for test in examples:
    runner.run(test)
  assert runner.failures == 0, f"{name}'s docstring example failed (see the output above)"
