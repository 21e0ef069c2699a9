"""Functions short enough to read at a glance: none in electra_tf2/ over MAX_LINES lines.

A function's length runs from its `def` line to its last line, its docstring left out
(decorators are not counted; a nested function counts in its own length and in the
enclosing one's).
"""

import ast
import pathlib
import textwrap

import electra_tf2

PACKAGE = pathlib.Path(electra_tf2.__file__).parent
MAX_LINES = 60


def function_lengths(source, filename="<source>"):
  """{qualified name: lines without the docstring} of every function in source."""
  lengths = {}

  def visit(node, prefix):
    for child in ast.iter_child_nodes(node):
      if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
        name = prefix + child.name
        length = child.end_lineno - child.lineno + 1
        first = child.body[0]
        if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
          length -= first.end_lineno - first.lineno + 1
        lengths[name] = max(length, lengths.get(name, 0))
        visit(child, name + ".")
      elif isinstance(child, ast.ClassDef):
        visit(child, prefix + child.name + ".")
      else:
        visit(child, prefix)

  visit(ast.parse(source, filename), "")
  return lengths


def package_function_lengths():
  """{"path name": length} of every function of the package."""
  found = {}
  for path in sorted(PACKAGE.rglob("*.py")):
    where = path.relative_to(PACKAGE).as_posix()
    for name, length in function_lengths(path.read_text(encoding="utf-8"), str(path)).items():
      found[f"{where} {name}"] = length
  return found


def test_the_measure_on_hand_counted_functions():
  source = textwrap.dedent('''
      import functools

      def five():
        """A docstring
        of three
        lines."""
        a = 1
        b = 2
        return a + b

      class Outer:
        @functools.lru_cache()
        async def method(self):
          def inner():
            return 1
          return inner()

      if True:
        def guarded(): return 0
      ''')
  assert function_lengths(source) == {"five": 4, "Outer.method": 4, "Outer.method.inner": 2,
                                      "guarded": 1}


def test_no_function_is_over_the_limit():
  lengths = package_function_lengths()
  assert len(lengths) > 500  # the whole package was read
  long = sorted(f"{name} ({n} lines)" for name, n in lengths.items()
                if n > MAX_LINES)
  assert not long, (f"over {MAX_LINES} lines without the docstring: {', '.join(long)}; split "
                    "them into helpers that each do one thing")

