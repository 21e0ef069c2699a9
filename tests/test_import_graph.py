"""The package's import graph, read from the source (AST): no circles, and the layers
of docs/design.md (text, checkpoints, data and tasks, models, task models and conversion,
training, serving).

Every `import` counts, module-level or inside a function: a function-level import
that climbs back up the import order is a circle too. Import paths kept as aliases
of moved modules must still give the same objects.
"""

import ast
import importlib
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


# docs/design.md's layers, bottom first: (name, modules by dotted prefix under electra_tf2).
# A module may import from its own layer and the ones below. The first matching prefix
# of the longest length decides a module's layer.
LAYERS = [
    ("base", ["errors", "atomic_io", "hparams", "vocab", "pretraining.config", "encoder_config",
              "checkpoint_files", "run_lock", "layers.activations", "batching", "precision",
              "predictions", "output_names", "inputs", "stateless_random", "backend_ops",
              "pretraining"]),  # the package itself; its modules by their own entries
    ("text", ["text"]),
    ("checkpoints", ["checkpoints"]),
    ("data, tasks", ["data_prep", "data_io", "pretraining.input_pipeline", "tasks"]),
    ("models", ["layers", "networks", "models.pretrainer", "models.finetuning",
                "variable_names", "model_directory", "pretraining.helpers",
                "pretraining.objectives", "pretraining.state", "optimization", "param_counts",
                "flops", "litert", "models.qa_spans"]),
    ("task models, conversion", ["models", "conversion"]),
    ("training", ["training", "finetune.runner", "jax_training"]),
    ("serving", ["serving", "scoring", "commands", "__main__", "config_show"]),
    ("aliases", ["tokenization", "checkpoints.source", "finetune", "config", "pretrain_helpers",
                 "objectives", "pretraining_state", "input_pipeline", "convert", "hf_export",
                 "hf_import", "export", "predict"]),  # of moved modules
]


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


def test_the_design_chart_shows_these_floors_and_every_folder():
  """docs/design.md draws LAYERS: the same floors in the same order, and every folder of
  the package on its floor."""
  floors = design_chart()
  assert [label for label, _ in floors] == [name for name, _ in LAYERS]
  for (name, prefixes), (_, text) in zip(LAYERS, floors):
    folders = {p.split(".")[0] for p in prefixes if (PACKAGE / p.split(".")[0]).is_dir()}
    missing = [f for f in folders if f + "/" not in text and name != "aliases"]
    assert not missing, (name, missing)
  packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
  assert len(packages) > 10 and packages <= set(re.findall(r"([a-z_]+)/", "\n".join(
      text for _, text in floors)))


def layer_of(module):
  """The index in LAYERS of a module (packages' own __init__ count as the lowest layer)."""
  name = module[len("electra_tf2."):] if module != "electra_tf2" else ""
  best = (-1, 0)
  for index, (_, prefixes) in enumerate(LAYERS):
    for prefix in prefixes:
      if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best[1]:
        best = (index, len(prefix))
  return best[0]


def test_every_import_goes_down_the_layers():
  """The package root is left out: it runs `python -m` through commands (serving)."""
  graph = {m: children for m, children in import_graph().items() if m != "electra_tf2"}
  assert [m for m in graph if layer_of(m) < 0] == []  # every module has its layer
  upward = [(m, LAYERS[layer_of(m)][0], child, LAYERS[layer_of(child)][0])
            for m, children in graph.items() for child in children
            if layer_of(child) > layer_of(m)]
  assert upward == []
  assert layer_of("electra_tf2.models.finetuning") > layer_of("electra_tf2.tasks.qa")
  assert layer_of("electra_tf2.finetune.runner") == layer_of("electra_tf2.training.driver")
  assert layer_of("electra_tf2.checkpoints.describe") < layer_of("electra_tf2.models.sources")


# Moved modules: (old import path, new home). Each old path is an alias of the new module
# with all its public names (the earlier aliases: with the names the module had then).
EARLIER_ALIASES = [("electra_tf2.tokenization", "electra_tf2.text.tokenizer"),
                   ("electra_tf2.finetune.model", "electra_tf2.models.finetuning"),
                   ("electra_tf2.finetune.heads", "electra_tf2.layers.task_heads")]
MOVED = [("electra_tf2.checkpoints.source", "electra_tf2.models.sources"),
         *[(f"electra_tf2.finetune.{name}", f"electra_tf2.tasks.{name}")
           for name in ("task", "task_builder", "classification", "qa", "qa_decoding",
                        "qa_eval", "tagging", "preprocessing", "scorers", "config")],
         ("electra_tf2.pretrain_helpers", "electra_tf2.pretraining.helpers"),
         ("electra_tf2.objectives", "electra_tf2.pretraining.objectives"),
         ("electra_tf2.pretraining_state", "electra_tf2.pretraining.state"),
         ("electra_tf2.input_pipeline", "electra_tf2.pretraining.input_pipeline"),
         ("electra_tf2.config", "electra_tf2.pretraining.config"),
         ("electra_tf2.convert", "electra_tf2.conversion.convert"),
         ("electra_tf2.hf_export", "electra_tf2.conversion.hf_export"),
         ("electra_tf2.hf_import", "electra_tf2.conversion.hf_import"),
         ("electra_tf2.export", "electra_tf2.serving.export"),
         ("electra_tf2.predict", "electra_tf2.serving.predict")]


def public_names(module):
  """The module's public top-level definitions, read from its source: classes, functions,
  assigned names without a leading underscore."""
  path = module_files()[module]
  names = set()
  for node in ast.parse(path.read_text(), str(path)).body:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
      names.add(node.name)
    elif isinstance(node, (ast.Assign, ast.AnnAssign)):
      for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
        names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
  return sorted(name for name in names if not name.startswith("_"))


def test_public_names_reads_the_definitions():
  names = public_names("electra_tf2.serving.predict")
  assert {"main", "PredictError", "INPUT_FORMATS"} <= set(names)
  assert not [name for name in names if name.startswith("_")]


def test_moved_modules_keep_their_import_paths():
  """Every public name of a moved module is the same object at its old path, and so are
  the names other modules imported through the old path."""
  for old, new in MOVED:
    old_module, new_module = importlib.import_module(old), importlib.import_module(new)
    names = public_names(new)
    assert names, new
    for name in names:
      assert getattr(old_module, name) is getattr(new_module, name), (old, name)
  pairs = [("electra_tf2.tokenization", "electra_tf2.text.tokenizer",
            ["FullTokenizer", "TokenizerModule", "BasicTokenizer", "MAX_CHARS_PER_WORD"]),
           ("electra_tf2.hf_import", "electra_tf2.checkpoints.huggingface",
            ["read_directory", "read_safetensors", "HuggingFaceDirectory",
             "HuggingFaceImportError", "CONFIG_FILE"]),
           ("electra_tf2.hf_import", "electra_tf2.checkpoints.report",
            ["notice", "ConversionReport", "write_report"]),
           ("electra_tf2.convert", "electra_tf2.checkpoints.report",
            ["ConversionReport", "match_shapes", "DEFAULT_IGNORE", "REPORT_FILE", "is_ignored",
             "notice", "write_report"]),
           ("electra_tf2.convert", "electra_tf2.checkpoints.official",
            ["ConversionError", "assign_from_checkpoint", "resolve_checkpoint_path",
             "write_official_checkpoint", "read_global_step", "checkpoint_shapes",
             "GLOBAL_STEP", "OUR_GLOBAL_STEP_KEY", "checkpoint_architecture",
             "checkpoint_layout", "match_variables", "official_tensors"]),
           ("electra_tf2.convert", "electra_tf2.checkpoints.directories",
            ["PRETRAIN_CONFIG_FILE", "VOCAB_FILE", "is_finetuned_model_dir"]),
           ("electra_tf2.model_directory", "electra_tf2.checkpoints.directories",
            ["locate", "PRETRAIN_CONFIG_FILE", "load_pretraining_config", "find_vocab",
             "PretrainedModelError"]),
           ("electra_tf2.hf_export", "electra_tf2.checkpoints.huggingface",
            ["hf_parameter_name"]),
           ("electra_tf2.finetune.model", "electra_tf2.models.finetuning",
            ["FinetuningModel", "build_model", "build_head", "load_finetuned_model",
             "MODEL_CONFIG_FILE", "FINETUNING_CONFIG_FILE",
             "load_pretrained_encoder", "save_model_files", "HEADS"]),
           ("electra_tf2.finetune.heads", "electra_tf2.layers.task_heads",
            ["ClassificationHead", "DenseHead", "QAHead", "RegressionHead", "TaggingHead",
             "TaskHead"]),
           ("electra_tf2.config", "electra_tf2.hparams", ["ConfigError"]),
           ("electra_tf2.finetune.config", "electra_tf2.hparams", ["ConfigError"]),
           ("electra_tf2.input_pipeline", "electra_tf2.data_io.tfrecord", ["DataError"]),
           ("electra_tf2.input_pipeline", "electra_tf2.inputs",
            ["Inputs", "features_to_inputs", "get_updated_inputs"])]
  for old, new, names in pairs:
    old_module, new_module = importlib.import_module(old), importlib.import_module(new)
    for name in names:
      assert getattr(old_module, name) is getattr(new_module, name), (old, name)


def test_moved_modules_are_aliases_in_the_top_layer():
  """An old path holds no code of its own (only its docstring and the import of its new
  home), and sits in the aliases' layer, so nothing in the package imports it."""
  files = module_files()
  for old, new in EARLIER_ALIASES + MOVED:
    body = ast.parse(files[old].read_text()).body
    assert isinstance(body[0], ast.Expr) and new in body[0].value.value, old
    assert [(type(n), getattr(n, "module", None)) for n in body[1:]] == [
        (ast.ImportFrom, new)], old
    assert layer_of(old) == len(LAYERS) - 1, old
