"""README.md and docs/*.md: every Python example runs, and what they name exists (#44).

A ```python block runs here, on tiny models built in a temporary working directory
(the paths the examples use: DATA/models/electra_small, export/electra_small_discriminator,
DIR/models/NAME/finetuning_models/sst_model_1), unless an HTML comment
`<!-- not run: reason -->` stands on the line before it. Paths of the repository, tests,
`electra` subcommands, their flags and `electra_tf2.` names in the text must exist; relative
links and `NAME.md#anchor` mentions (in the code too) must find their file and heading; a
command line (in a shell block or a `code span`) gives an `electra` subcommand, run_*.py,
data_prep/*.py, `python -m bench.GROUP.NAME` (or bench/GROUP/NAME.py) or scripts/*.sh only
flags that its parser accepts.
"""

import argparse
import ast
import collections
import functools
import glob
import importlib
import json
import os
import re
import shlex
import sys
import tomllib
import types
from typing import Dict, List, Optional, Set, Tuple
from unittest import mock

import keras
import numpy as np
import pytest
import tensorflow as tf

import electra_tf2
from electra_tf2.cli import commands
from electra_tf2.serving import export
from electra_tf2.config.pretraining import resolve_pretraining_config
from electra_tf2.tasks import config as finetune_config
from electra_tf2.models import finetuning as finetune_model
from electra_tf2.models.model_directory import write_model_dir
from electra_tf2.cli import training as cli
from tests.conftest import REPO_ROOT
from tests.fixtures import WORD_VOCAB, noisy_pretrainer, write_vocab

DOCS = ["README.md", "bench/README.md"] + sorted(os.path.relpath(p, REPO_ROOT)
                              for p in glob.glob(os.path.join(REPO_ROOT, "docs", "*.md")))
NOT_RUN = re.compile(r"<!-- not run: \S.*-->\s*$")
TINY = {"model_hparam_overrides": {"hidden_size": 32, "num_hidden_layers": 2,
                                   "num_attention_heads": 2, "intermediate_size": 64},
        "embedding_size": 16, "generator_hidden_size": 0.5, "max_seq_length": 32,
        "vocab_size": len(WORD_VOCAB)}


def read(doc):
  with open(os.path.join(REPO_ROOT, doc), encoding="utf-8") as f:
    return f.read()


def python_blocks():
  """(doc, line, code, reason it is not run or None) of every ```python block."""
  blocks = []
  for doc in DOCS:
    lines = read(doc).split("\n")
    for i, line in enumerate(lines):
      if line.strip() == "```python":
        end = lines.index("```", i + 1)
        marker = NOT_RUN.match(lines[i - 1].strip()) if i else None
        blocks.append((doc, i + 1, "\n".join(lines[i + 1:end]), marker and lines[i - 1]))
  return blocks


BLOCKS = python_blocks()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
  """The paths the examples name, with tiny random models, in a fresh working directory."""
  root = tmp_path_factory.mktemp("docs")
  cwd = os.getcwd()
  os.chdir(root)
  os.makedirs("DATA")
  vocab_file = os.path.join("DATA", "vocab.txt")
  write_vocab(vocab_file)
  config = resolve_pretraining_config("electra_small", "DATA", TINY)
  model = noisy_pretrainer(TINY, seed=3, scale=0.1)
  write_model_dir(model, config, os.path.join("DATA", "models", "electra_small"))
  assert export.main(["--model-dir", "DATA/models/electra_small", "--output-dir",
                      "export/electra_small_discriminator"]) == 0
  tuning = finetune_config.resolve_finetuning_config(
      "NAME", "DIR", {"init_checkpoint": None, "vocab_size": len(WORD_VOCAB),
                      "vocab_file": vocab_file, **{k: TINY[k] for k in (
                          "model_hparam_overrides", "embedding_size", "max_seq_length")}},
      "sst")
  keras.utils.set_random_seed(4)
  classifier = finetune_model.build_model(tuning, [
      {"kind": "classification", "task": "sst", "label_list": ["0", "1"]}])
  finetune_model.save_model_files(classifier, tuning, tuning.trial_model_dir(1))
  tf.train.CheckpointManager(tf.train.Checkpoint(model=classifier), tuning.trial_model_dir(1),
                             max_to_keep=None, checkpoint_name="ckpt").save(1)
  ids = np.array([[2, 17, 18, 3]], np.int32)  # [CLS] the a [SEP]
  yield {"path": "DATA/models/electra_small", "model": model, "vocab_file": vocab_file,
         "ids": ids, "mask": np.ones_like(ids), "segments": np.zeros_like(ids)}
  os.chdir(cwd)


@pytest.mark.parametrize("doc,line,code,marker", BLOCKS,
                         ids=[f"{doc}:{line}" for doc, line, _, _ in BLOCKS])
def test_python_examples_run(world, doc, line, code, marker, capsys):
  if marker:
    pytest.skip(f"{doc}:{line} is marked {marker.strip()}")
  namespace = dict(world)
  exec(compile(code, f"{doc}:{line}", "exec"), namespace)  # pylint: disable=exec-used


def test_the_examples_that_are_not_run_say_why():
  assert len(BLOCKS) >= 13
  for doc, line, _, marker in BLOCKS:
    assert marker is None or len(marker.split(":", 1)[1]) > 15, f"{doc}:{line}"


def resolves(name):
  """Whether `electra_tf2.a.b.C` is a module, or an attribute of the longest module prefix."""
  parts = name.split(".")
  for i in range(len(parts), 0, -1):
    try:
      found = importlib.import_module(".".join(parts[:i]))
    except ImportError:
      continue
    for part in parts[i:]:
      if not hasattr(found, part):
        return False
      found = getattr(found, part)
    return True
  return False


def defined_flags():
  """Every flag the package defines (argparse and absl)."""
  source = "".join(read(p) for p in glob.glob(os.path.join(REPO_ROOT, "electra_tf2", "**",
                                                             "*.py"), recursive=True))
  return (set(re.findall(r"[\"'](--[a-z][a-z0-9-]*)[\"']", source))
          | {"--" + name for name in re.findall(r"DEFINE_\w+\(\s*\"([a-z][a-z0-9-]*)\"", source)}
          | {"--help", "--helpshort", "--helpfull"})


@pytest.mark.parametrize("doc", DOCS)
def test_docs_name_only_what_exists(doc):
  assert missing_names(read(doc)) == []


def test_readme_names_every_public_name_and_extra():
  """README's `electra_tf2.__all__` paragraph and its two lists of extras are the package's."""
  readme = read("README.md")
  public = readme.split("`electra_tf2.__all__`:")[1].split("\n\n")[0]
  assert set(re.findall(r"`(\w+)`", public)) == set(electra_tf2.__all__)
  with open(os.path.join(REPO_ROOT, "pyproject.toml"), "rb") as f:
    extras = set(tomllib.load(f)["project"]["optional-dependencies"])
  described = readme.split("Extras: ")[1].split("`constraints.txt`")[0]
  assert set(re.findall(r"`([a-z-]+)`", described)) == extras
  assert set(re.search(r"# extras: ([a-z, -]+)\n", readme).group(1).split(", ")) == extras - {
      "gpu"}  # the line below it installs gpu


def test_quickstart_ends_saying_what_its_model_is():
  """Its last lines: a smoke test; the command of a real model, with its time on a CPU
  (measured, extrapolated), and on a GPU the trainer's measured speed (not its step's) with
  the hours of 1M steps at it: the figure is the trainer's record in
  docs/gpu_results_h200_6.jsonl, the hours 1M x 128 over it; all of it exists."""
  closing = " ".join(re.findall(r'^echo "(.*)"$', read("scripts/quickstart.sh"), re.M))
  for phrase in ("smoke test of the pipeline", "--model-name electra_small", "s a step",
                 "for 1M steps (extrapolated)", "--backend jax", "the trainer ran",
                 "docs/benchmarks.md#gpu"):
    assert phrase in closing, phrase
  records = [json.loads(line) for line in read("docs/gpu_results_h200_6.jsonl").splitlines()]
  trainer = next(r["data"][0] for r in records if r["key"] == "trainer/small128")
  assert (trainer["seq_len"], trainer["batch"]) == (128, 128)
  assert f"at {trainer['trainer']:,.0f} seq/s" in closing
  assert f"about {1e6 * 128 / trainer['trainer'] / 3600:.1f} hours for 1M steps" in closing
  assert re.search(r"^## GPU$", read("docs/benchmarks.md"), re.M)
  assert missing_names(closing.replace('\\"', '"')) == []


def test_a_test_that_does_not_exist_is_found():
  assert missing_names("`tests/test_docs.py::test_python_examples_run`, `::test_no_such_test`; "
                       "`tests/test_atomic_io.py::test_docs_name_only_what_exists`") == [
      "test tests/test_docs.py::test_no_such_test",
      "test tests/test_atomic_io.py::test_docs_name_only_what_exists"]


def test_a_name_imported_from_the_package_must_exist():
  assert missing_names("from electra_tf2.scoring import TextScorer, render\n"
                       "from electra_tf2.models.finetuning import load_finetuned_models") == [
      "name electra_tf2.models.finetuning.load_finetuned_models"]


def missing_names(text):
  """The files, tests (`tests/a.py::test_b`), `electra` subcommands, flags and
  `electra_tf2.` names `text` names that do not exist."""
  missing = []
  for path in re.findall(r"`((?:electra_tf2|bench|scripts|tests|docs|data_prep|configs)/"
                         r"[^`\s:#]*)", text):
    if not any(c in path for c in "<{*[") and not os.path.exists(
        os.path.join(REPO_ROOT, path.rstrip(".,)"))):
      missing.append(f"file {path}")
  test_file = None
  for path, name in re.findall(r"(tests/\w+\.py)?::(test_\w+)", text):
    test_file = path or test_file  # `tests/a.py::test_b`, `::test_c`: test_c of tests/a.py
    if not (test_file and os.path.isfile(os.path.join(REPO_ROOT, test_file))
            and re.search(rf"^def {name}\(", read(test_file), re.M)):
      missing.append(f"test {test_file}::{name}")
  for name in re.findall(r"(?:^|[`\s(])electra ([a-z][a-z-]+)", text, re.M):
    if name not in commands.SUBCOMMANDS:
      missing.append(f"subcommand electra {name}")
  imported = {f"{module}.{name.strip()}" for module, names in re.findall(
      r"^\s*from (electra_tf2[\w.]*) import ([\w, ]+)$", text, re.M) for name in names.split(",")}
  for name in imported | set(re.findall(r"\b(electra_tf2(?:\.[A-Za-z_]\w*)+)", text)):
    if not resolves(name):
      missing.append(f"name {name}")
  flags = defined_flags()
  for line in text.split("\n"):
    if re.search(r"\belectra [a-z]|run_(pre|fine)tuning\.py|python -m electra_tf2", line):
      # Beam's own pipeline options (with underscores) pass through to Beam.
      missing += [f"flag {flag}" for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9_-]*)", line)
                  if "_" not in flag and flag not in flags]
  return missing


def outside_code(text):
  """`text`'s lines with those of fenced blocks blanked (line numbers kept)."""
  lines, fenced = [], False
  for line in text.split("\n"):
    if line.lstrip().startswith("```"):
      fenced = not fenced
    lines.append("" if fenced or line.lstrip().startswith("```") else line)
  return lines


@functools.lru_cache(maxsize=None)
def anchors(doc):
  """The #anchors of `doc`'s headings, spelled as GitHub spells them."""
  seen, found = collections.Counter(), set()
  for line in outside_code(read(doc)):
    heading = re.match(r"#{1,6}\s+(.*?)\s*$", line)
    if heading:
      slug = re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-")
      found.add(f"{slug}-{seen[slug]}" if seen[slug] else slug)
      seen[slug] += 1
  return found


def broken_references(doc, text, links=True):
  """The relative links `[x](path#anchor)` of `text` (in `doc`; unless not `links`), and
  its mentions of `NAME.md#anchor`, whose file or heading does not exist."""
  broken = []
  for number, line in enumerate(outside_code(text), 1):
    for target in re.findall(r"\]\(([^)\s]+)\)", line) if links else []:
      if re.match(r"[a-z]+:", target):
        continue  # https:, mailto:
      path, _, anchor = target.partition("#")
      linked = os.path.relpath(os.path.normpath(os.path.join(
          REPO_ROOT, os.path.dirname(doc), path)), REPO_ROOT) if path else doc
      if not os.path.exists(os.path.join(REPO_ROOT, linked)):
        broken.append(f"{doc}:{number} no file {target}")
      elif anchor and linked.endswith(".md") and anchor not in anchors(linked):
        broken.append(f"{doc}:{number} no heading #{anchor} in {linked}")
    for name, anchor in re.findall(r"(?<![\w/])(?<!\]\()(?:docs/)?(\w+\.md)#([\w-]+)", line):
      linked = name if name == "README.md" else f"docs/{name}"
      if not os.path.exists(os.path.join(REPO_ROOT, linked)):
        broken.append(f"{doc}:{number} no file {linked}")
      elif anchor not in anchors(linked):
        broken.append(f"{doc}:{number} no heading #{anchor} in {linked}")
  return broken


@pytest.mark.parametrize("doc", DOCS)
def test_links_and_anchors_resolve(doc):
  assert broken_references(doc, read(doc)) == []


def test_the_code_names_only_existing_doc_headings():
  sources = [os.path.relpath(p, REPO_ROOT) for pattern in (
      "electra_tf2/**/*.py", "bench/**/*.py", "scripts/*.sh", "*.py", "configs/**/*")
             for p in glob.glob(os.path.join(REPO_ROOT, pattern), recursive=True)]
  assert len(sources) > 100
  assert [b for path in sources if os.path.isfile(os.path.join(REPO_ROOT, path))
          for b in broken_references(path, read(path), links=False)] == []


def test_a_broken_link_or_anchor_is_found():
  text = ("[a](docs/design.md#layers) [b](docs/nothing.md) [c](docs/design.md#the-optimizer)\n"
          "```\n[d](docs/nothing.md)\n```\nsee `docs/keras.md#no-such-heading` (design.md#layers), "
          "[e](https://example.com/x.md#y)")
  assert broken_references("README.md", text) == [
      "README.md:1 no heading #layers in docs/design.md", "README.md:1 no file docs/nothing.md",
      "README.md:5 no heading #no-such-heading in docs/keras.md",
      "README.md:5 no heading #layers in docs/design.md"]


class _Parser(BaseException):
  """Raised instead of parsing: carries the parser that a command built."""

  def __init__(self, parser):
    super().__init__()
    self.parser = parser


def argparse_flags(parser: argparse.ArgumentParser) -> Dict[Optional[str], Set[str]]:
  """{None: every flag of `parser` and its subcommands, ACTION: those ACTION accepts}."""
  own = {s for a in parser._actions for s in a.option_strings}  # pylint: disable=protected-access
  accepted: Dict[Optional[str], Set[str]] = {None: set(own)}
  for action in parser._actions:  # pylint: disable=protected-access
    if isinstance(action, argparse._SubParsersAction):  # pylint: disable=protected-access
      for name, sub in action.choices.items():
        accepted[name] = own | argparse_flags(sub)[None]
        accepted[None] |= accepted[name]
  return accepted


def absl_flags(command) -> Set[str]:
  """The flags that `cli.pretrain` or `cli.finetune` defines (recorded, not defined)."""
  names = {"--help", "--helpshort", "--helpfull"}

  def define(kind):
    def record(name, *unused_args, **unused_kwargs):
      names.add(f"--{name}")
      if kind == "bool":
        names.add(f"--no{name}")
    return record
  recorder = types.SimpleNamespace(**{f"DEFINE_{kind}": define(kind) for kind in (
      "string", "enum", "bool", "integer", "float", "list", "multi_string")})
  with mock.patch.object(cli, "flags", recorder), mock.patch.object(cli, "run"):
    command([], "electra")
  return names


def script_flags(script: str) -> Set[str]:
  """The flags a bench/ or scripts/ script parses: a Python script's `add_argument` options,
  with those added by the functions it calls (transitively) from the bench modules it
  imports (a shared `add_step_flags(parser)`); a shell script's `case` patterns (`--a|--b)`,
  `--c=*)`), with the flags of the bench script it hands its arguments ("$@") on to."""
  text = read(script)
  if script.endswith(".sh"):
    flags = set()
    for pattern in re.findall(r"(?:^|[\s(])((?:--[a-z][a-z0-9-]*(?:=\*)?\|)*"
                              r"--[a-z][a-z0-9-]*(?:=\*)?)\)", text, re.M):
      flags.update(flag.split("=")[0] for flag in pattern.split("|"))
    for name in re.findall(r'(?:-m bench\.|bench/)([\w./]+?)(?:\.py)?\s[^\n]*"\$@"',
                           text.replace("\\\n", " ")):
      flags |= script_flags(f"bench/{name.replace('.', '/')}.py")
    return flags
  functions = {}  # the imported bench modules' functions, by name
  for module in script_sources(script)[1:]:
    for node in ast.walk(ast.parse(read(module))):
      if isinstance(node, ast.FunctionDef):
        functions.setdefault(node.name, []).append(node)
  flags, pending, seen = set(), [ast.parse(text)], set()
  while pending:  # the script, then the functions it calls, and those they call
    tree = pending.pop()
    flags |= parser_flags(tree)
    for node in ast.walk(tree):
      name = getattr(getattr(node, "func", None), "attr", None) or getattr(
          getattr(node, "func", None), "id", None)
      if isinstance(node, ast.Call) and name in functions and name not in seen:
        seen.add(name)
        pending += functions[name]
  return flags


def parser_flags(tree: ast.AST) -> Set[str]:
  """The options of the `add_argument(...)` calls in `tree` (`--no-X` too for a
  BooleanOptionalAction)."""
  flags = set()
  for node in ast.walk(tree):
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and node.func.attr == "add_argument"):
      names = [a.value for a in node.args if isinstance(a, ast.Constant)
               and isinstance(a.value, str) and a.value.startswith("--")]
      flags.update(names)
      if "BooleanOptionalAction" in ast.unparse(node):
        flags.update(f"--no-{name[2:]}" for name in names)
  return flags


def script_sources(script: str) -> List[str]:
  """`script` and the bench/ modules and packages that it imports, transitively."""
  sources, pending = [], [script]
  while pending:
    source = pending.pop()
    if source in sources:
      continue
    sources.append(source)
    if source.startswith("bench/") and source.endswith(".py"):
      for node in ast.walk(ast.parse(read(source))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bench"):
          base = os.path.join(*node.module.split("."))
          for path in [base] + [os.path.join(base, alias.name) for alias in node.names]:
            if os.path.isfile(os.path.join(REPO_ROOT, path + ".py")):
              pending.append(path + ".py")
            elif path != base:  # a package imported by name: all of its modules
              pending += sorted(os.path.relpath(p, REPO_ROOT) for p in glob.glob(
                  os.path.join(REPO_ROOT, path, "*.py")))
  return sources


@functools.lru_cache(maxsize=None)
def accepted_flags(program: str) -> Dict[Optional[str], Set[str]]:
  """The flags that `program` accepts: `electra SUB` (its parser, built by its own main
  and not run), `electra build-data --runner` (the Beam builder's and Beam's pipeline
  options), bench/GROUP/X.py and scripts/X.sh (`script_flags`)."""
  if program.startswith(("bench/", "scripts/")):
    return {None: {"--help"} | script_flags(program)}
  if program in ("electra pretrain", "electra finetune"):
    return {None: absl_flags(getattr(cli, program.split()[1]))}
  name, *argv = program.split()[1:]
  if argv == ["--runner"]:
    pytest.importorskip("apache_beam")

  def capture(parser, *unused_args, **unused_kwargs):
    raise _Parser(parser)
  with mock.patch.object(argparse.ArgumentParser, "parse_known_args", capture), \
      mock.patch.object(sys, "argv", list(sys.argv)):
    try:
      commands.subcommand_main(name, argv)()
    except _Parser as parsed:
      accepted = argparse_flags(parsed.parser)
    else:
      raise AssertionError(f"{program} ran without parsing its arguments")
  if argv == ["--runner"]:  # every other flag goes to Beam's pipeline options
    from apache_beam.options import pipeline_options  # pylint: disable=g-import-not-at-top
    accepted[None] |= {f"--{option}" for option in
                       pipeline_options.PipelineOptions([]).get_all_options()}
  return accepted


def shell_commands(text) -> List[str]:
  """The command lines of `text`: those of its bash/sh/console blocks (continuation lines
  joined) and its `code spans` outside them."""
  found, block = [], None
  for line in text.split("\n"):
    if line.lstrip().startswith("```"):
      shell = line.strip()[3:] in ("bash", "sh", "shell", "console", "")
      block = shell if block is None else None
      continue
    if block:
      if found and found[-1].endswith("\\"):
        found[-1] = found[-1][:-1] + " " + line.strip()
      else:
        found.append(line.strip())
    elif block is None:
      found += re.findall(r"`([^`]+)`", line)
  return found




def script_program(script: str) -> Optional[str]:
  """The subcommand that data_prep/`script`.py runs (the Beam builder: with --runner)."""
  module = f"electra_tf2.data_prep.{script}"
  if module == commands.BEAM_MODULE:
    return "electra build-data --runner"
  names = [name for name, (m, _) in commands.SUBCOMMANDS.items() if m == module]
  return f"electra {names[0]}" if names else None


def program_of(words: List[str], index: int) -> Tuple[Optional[str], int]:
  """The program that words[index] starts (with the subcommand), if it is one checked, and
  the number of words that name it."""
  word = words[index]
  following = words[index + 1:index + 3] + ["", ""]
  if word == "electra" and following[0] in commands.SUBCOMMANDS:
    return f"electra {following[0]}", 2
  if word == "-m" and following[0] == "electra_tf2" and following[1] in commands.SUBCOMMANDS:
    return f"electra {following[1]}", 3
  if word == "-m" and following[0].startswith("bench."):
    return os.path.join(*following[0].split(".")) + ".py", 2
  if word.endswith(("run_pretraining.py", "run_finetuning.py")):
    return "electra " + ("pretrain" if "pretraining" in word else "finetune"), 1
  path = word[2:] if word.startswith("./") else word
  script = re.fullmatch(r"data_prep/(\w+)\.py", path)  # the official scripts: subcommands
  if script:
    return script_program(script.group(1)), 1
  return (path if re.fullmatch(r"(bench/[\w/]+\.py|scripts/\w+\.sh)", path) else None), 1


def unknown_flags(text) -> List[str]:
  """`PROGRAM --flag` for each flag given in `text`'s command lines to an `electra`
  subcommand, run_*.py, bench/ script or scripts/ script that does not accept it."""
  unknown = []
  for line in shell_commands(text):
    try:
      words = shlex.split(line, comments=True)
    except ValueError:
      words = line.split()
    words = [word.lstrip("[(") for word in words]  # [--optional FLAG]
    program, action, named_until = None, None, 0
    for index, word in enumerate(words):
      found, length = program_of(words, index)
      if index < named_until:
        continue  # the words that name the program
      if word in ("||", "&&", ";") or word.endswith(";"):  # not |: [--a X | --b Y] in usages
        program = None
      elif found:
        program, action, named_until = found, None, index + length
        if program == "electra build-data" and "--runner" in words[index:]:  # Beam's
          program = "electra build-data --runner"
        if "/" in program and not os.path.isfile(os.path.join(REPO_ROOT, program)):
          unknown.append(f"{program}: no such file")
          program = None
      elif program and word.startswith("--") and len(word) > 2:
        flag = re.split(r"[=\]]", word)[0]
        accepted = accepted_flags(program)
        if flag not in accepted.get(action, accepted[None]):
          unknown.append(" ".join(w for w in (program.split(" --")[0], action, flag) if w))
      elif program and action is None and word in accepted_flags(program):
        action = word
  return unknown


@pytest.mark.parametrize("doc", DOCS)
def test_command_lines_give_only_flags_their_command_accepts(doc):
  assert unknown_flags(read(doc)) == []


def test_a_flag_the_command_does_not_accept_is_found():
  text = ("```bash\nelectra export --model-dir M --kind discriminator \\\n"
          "    --output-dir O --no-such-flag\nelectra convert to-tf2 --checkpoint C "
          "--hf-dir H  # from-hf's\n```\n"
          "`electra pretrain --data-dir D [--task sst]` and "
          "`python run_finetuning.py --backend jax` and `electra finetune --task sst`, "
          "`electra score score --model-dir M --input I --output O --by mean_log_odds`, "
          "`bench/gpu/jax_pretrain_step.py --batch-sizes 8 --no-such-flag`, "
          "`python -m bench.profiles.trace_summary T --hlo H --no-such-flag`, "
          "`python -m bench.no_such.script --x 1`, "
          "`bench/gpu/jax_pretrain_step.py --backend jax` (a word of its text, not a flag), "
          "`bash scripts/gpu_run.sh --dry --backend jax --minutes 5 --format csv`, "
          "`python data_prep/build_vocab.py --output-dir V`, "
          "`electra build-data --runner DataflowRunner --temp_location T --no_such_option 1`")
  assert unknown_flags(text) == [
      "electra export --no-such-flag", "electra convert to-tf2 --hf-dir",
      "electra pretrain --task", "electra finetune --backend", "electra score score --by",
      "bench/gpu/jax_pretrain_step.py --no-such-flag",
      "bench/profiles/trace_summary.py --no-such-flag", "bench/no_such/script.py: no such file",
      "bench/gpu/jax_pretrain_step.py --backend", "scripts/gpu_run.sh --format",
      "electra build-vocab --output-dir", "electra build-data --no_such_option"]
