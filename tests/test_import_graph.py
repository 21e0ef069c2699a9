"""The package's import graph, read from the source (AST): no circles, and the floors of
docs/design.md: every folder of the package on one floor, importing only folders on the
floors below it.

Every `import` counts, module-level or inside a function: a function-level import
that climbs back up the floors is a loop between folders too.
"""

import ast
import pathlib
import re

import electra_tf2

PACKAGE = pathlib.Path(electra_tf2.__file__).parent


def module_files():
  """{dotted module name: path} of every module of electra_tf2."""
  modules = {}
  for path in PACKAGE.rglob("*.py"):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
  return modules


def import_graph():
  """{module: set of electra_tf2 modules it imports}; `from pkg import name` counts as
  an import of pkg.name when that is a module, else of pkg."""
  modules = module_files()
  graph = {}
  for name, path in modules.items():
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    edges = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
      if isinstance(node, ast.Import):
        edges.update(alias.name for alias in node.names)
      elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
          parent = package.split(".")[:len(package.split(".")) - node.level + 1]
          base = ".".join(parent + ([base] if base else []))
        for alias in node.names:
          full = f"{base}.{alias.name}"
          edges.add(full if full in modules else base)
    graph[name] = {edge for edge in edges if edge in modules and edge != name}
  return graph


def cycles(graph):
  """Strongly connected components of more than one module (Tarjan)."""
  index, low, stack, on_stack, found = {}, {}, [], set(), []

  def visit(node):
    index[node] = low[node] = len(index)
    stack.append(node)
    on_stack.add(node)
    for child in sorted(graph[node]):
      if child not in index:
        visit(child)
        low[node] = min(low[node], low[child])
      elif child in on_stack:
        low[node] = min(low[node], index[child])
    if low[node] == index[node]:
      component = []
      while True:
        child = stack.pop()
        on_stack.discard(child)
        component.append(child)
        if child == node:
          break
      if len(component) > 1:
        found.append(sorted(component))

  for node in sorted(graph):
    if node not in index:
      visit(node)
  return found


def test_the_cycle_finder_finds_a_planted_circle():
  graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
  assert cycles(graph) == [["a", "b", "c"]]
  assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_package_has_no_import_circles():
  graph = import_graph()
  assert "electra_tf2.checkpoints.describe" in graph  # the walk read the package
  assert cycles(graph) == []


# docs/design.md's floors, bottom first: (label, the folders of electra_tf2 on it). A
# folder imports its own modules and the folders of the floors below, never a folder of
# its own floor or above.
FLOORS = [
    ("utils", ["utils"]),
    ("text", ["text"]),
    ("config", ["config"]),
    ("checkpoints", ["checkpoints"]),
    ("data, tasks", ["data_io", "data_prep", "tasks"]),
    ("layers, litert", ["layers", "litert"]),
    ("networks", ["networks"]),
    ("pretraining", ["pretraining"]),
    ("models", ["models"]),
    ("conversion", ["conversion"]),
    ("training", ["training"]),
    ("scoring", ["scoring"]),
    ("serving", ["serving"]),
    ("cli", ["cli"]),
]
# Imports that climb a floor on purpose, each with its reason (at most three).
LAZY_EXCEPTIONS = {}
# The package's face: the only modules at its root.
ROOT_MODULES = {"electra_tf2", "electra_tf2.__main__"}


def folder_of(module):
  """The package folder a module lives in ("" for the root's modules)."""
  parts = module.split(".")
  return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in FOLDERS) else ""


FOLDERS = {folder for _, folders in FLOORS for folder in folders}
FLOOR_OF = {folder: index for index, (_, folders) in enumerate(FLOORS) for folder in folders}


def test_the_root_holds_only_the_package_face_and_every_folder_has_its_floor():
  modules = set(module_files())
  assert {m for m in modules if not folder_of(m)} == ROOT_MODULES
  packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
  assert packages == FOLDERS
  assert not [p.name for p in PACKAGE.iterdir() if p.suffix == ".py"
              and p.stem not in ("__init__", "__main__")]


def upward_imports(graph):
  """[(module, imported module)] where a folder imports its own floor's other folders or
  a floor above (the root's modules, the package's face, may import anything)."""
  found = []
  for module, children in sorted(graph.items()):
    if not folder_of(module):
      continue
    here = FLOOR_OF[folder_of(module)]
    for child in sorted(children):
      there = folder_of(child)
      if there != folder_of(module) and (not there or FLOOR_OF[there] >= here):
        found.append((module, child))
  return found


def test_the_floor_check_finds_a_planted_upward_import():
  graph = {"electra_tf2.utils.errors": {"electra_tf2.cli.commands"},
           "electra_tf2.layers.heads": {"electra_tf2.litert.model"},
           "electra_tf2.cli.commands": {"electra_tf2.utils.errors"},
           "electra_tf2.text.vocab": {"electra_tf2.text.tokenizer"}}
  assert upward_imports(graph) == [("electra_tf2.layers.heads", "electra_tf2.litert.model"),
                                   ("electra_tf2.utils.errors", "electra_tf2.cli.commands")]


def test_every_folder_imports_only_folders_below_it():
  """Function-level imports included; the only exceptions are LAZY_EXCEPTIONS."""
  assert len(LAZY_EXCEPTIONS) <= 3 and all(LAZY_EXCEPTIONS.values())
  upward = [edge for edge in upward_imports(import_graph()) if edge not in LAZY_EXCEPTIONS]
  assert upward == []


def test_no_forwarding_modules():
  """No module is only a docstring and the import of another module's names."""
  forwarding = []
  for name, path in module_files().items():
    body = ast.parse(path.read_text()).body
    code = [n for n in body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    if code and all(isinstance(n, (ast.Import, ast.ImportFrom)) for n in code) and \
        path.name != "__init__.py":
      forwarding.append(name)
  assert forwarding == []


def design_chart():
  """docs/design.md's chart of the floors: [(floor label, its text)], bottom first."""
  text = (PACKAGE.parent / "docs" / "design.md").read_text()
  section = text[text.index("## Layers: which module may import which"):]
  chart = section[section.index("```\n") + 4:section.index("\n```", section.index("```\n"))]
  floors = []
  for block in chart.split("\n    ^\n"):
    lines = block.split("\n")
    label = " ".join(line[:14].strip() for line in lines if line[:14].strip() not in ("", "|"))
    floors.append((label, "\n".join(line[14:] for line in lines)))
  return floors[::-1]


def test_the_design_chart_shows_these_floors_and_their_folders():
  """docs/design.md draws FLOORS: the same floors in the same order, each naming its
  folders (as `folder/`) and no other floor's."""
  floors = design_chart()
  assert [label for label, _ in floors] == [name for name, _ in FLOORS]
  for (_, folders), (_, text) in zip(FLOORS, floors):
    named = set(re.findall(r"\b([a-z_]+)/", text)) & FOLDERS
    assert named == set(folders), (folders, named)
