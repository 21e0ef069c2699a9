"""The package's import graph, read from the source (AST): no circles, and the layers
of docs/design.md (text, checkpoints, models, conversion, training, serving).

Every `import` counts, module-level or inside a function: a function-level import
that climbs back up the import order is a circle too. Import paths kept as aliases
of moved modules must still give the same objects.
"""

import ast
import importlib
import pathlib

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
    ("base", ["errors", "atomic_io", "hparams", "vocab", "config", "encoder_config",
              "checkpoint_files", "run_lock", "layers.activations", "batching", "precision",
              "predictions", "output_names", "inputs", "stateless_random",
              "backend_ops"]),
    ("text", ["text"]),
    ("checkpoints", ["checkpoints"]),
    ("data and tasks", ["data_prep", "data_io", "input_pipeline", "finetune"]),
    ("models", ["layers", "networks", "models.pretrainer", "models.finetuning",
                "variable_names", "model_directory", "pretrain_helpers", "objectives",
                "pretraining_state",
                "optimization", "param_counts", "flops", "litert", "models.qa_spans"]),
    ("conversion", ["checkpoints.source", "convert", "hf_import", "models"]),
    ("training", ["training", "finetune.runner", "jax_training"]),
    ("serving", ["export", "scoring", "hf_export", "commands", "__main__", "predict",
                 "config_show"]),
    ("aliases of moved modules", ["tokenization", "models.sources", "finetune.heads",
                                  "finetune.model"]),
]


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
  assert layer_of("electra_tf2.models.finetuning") > layer_of("electra_tf2.finetune.qa")


def test_moved_modules_keep_their_import_paths():
  pairs = [("electra_tf2.tokenization", "electra_tf2.text.tokenizer",
            ["FullTokenizer", "TokenizerModule", "BasicTokenizer", "MAX_CHARS_PER_WORD"]),
           ("electra_tf2.models.sources", "electra_tf2.checkpoints.source",
            ["load_source", "Source", "SourceError", "PRETRAINING_ONLY"]),
           ("electra_tf2.hf_import", "electra_tf2.checkpoints.huggingface",
            ["read_directory", "read_safetensors", "HuggingFaceDirectory",
             "HuggingFaceImportError"]),
           ("electra_tf2.hf_import", "electra_tf2.checkpoints.report", ["notice"]),
           ("electra_tf2.convert", "electra_tf2.checkpoints.report",
            ["ConversionReport", "match_shapes", "DEFAULT_IGNORE", "REPORT_FILE"]),
           ("electra_tf2.convert", "electra_tf2.checkpoints.official",
            ["ConversionError", "assign_from_checkpoint", "resolve_checkpoint_path",
             "write_official_checkpoint", "read_global_step", "checkpoint_shapes"]),
           ("electra_tf2.model_directory", "electra_tf2.checkpoints.directories",
            ["locate", "PRETRAIN_CONFIG_FILE", "load_pretraining_config", "find_vocab",
             "PretrainedModelError"]),
           ("electra_tf2.hf_export", "electra_tf2.checkpoints.huggingface",
            ["hf_parameter_name"]),
           ("electra_tf2.finetune.model", "electra_tf2.models.finetuning",
            ["FinetuningModel", "build_model", "build_head", "load_finetuned_model",
             "MODEL_CONFIG_FILE", "FINETUNING_CONFIG_FILE",
             "load_pretrained_encoder", "save_model_files", "HEADS"])]
  for old, new, names in pairs:
    old_module, new_module = importlib.import_module(old), importlib.import_module(new)
    for name in names:
      assert getattr(old_module, name) is getattr(new_module, name), (old, name)
