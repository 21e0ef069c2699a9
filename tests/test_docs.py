"""README.md and docs/*.md: every Python example runs, and what they name exists (#44).

A ```python block runs here, on tiny models built in a temporary working directory
(the paths the examples use: DATA/models/electra_small, export/electra_small_discriminator,
DIR/models/NAME/finetuning_models/sst_model_1), unless an HTML comment
`<!-- not run: reason -->` stands on the line before it. Paths of the repository, `electra`
subcommands, their flags and `electra_tf2.` names in the text must exist.
"""

import glob
import importlib
import os
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf2 import commands
from electra_tf2.serving import export
from electra_tf2.pretraining.config import resolve_pretraining_config
from electra_tf2.tasks import config as finetune_config
from electra_tf2.models import finetuning as finetune_model
from electra_tf2.model_directory import write_model_dir
from tests.conftest import REPO_ROOT
from tests.fixtures import WORD_VOCAB, noisy_pretrainer, write_vocab

DOCS = ["README.md"] + sorted(os.path.relpath(p, REPO_ROOT)
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


def test_quickstart_ends_saying_what_its_model_is():
  """Its last lines: a smoke test; the command of a real model, with its time on a CPU
  (measured, extrapolated) and on a GPU (docs/benchmarks.md#gpu); all of it exists."""
  closing = " ".join(re.findall(r'^echo "(.*)"$', read("scripts/quickstart.sh"), re.M))
  for phrase in ("smoke test of the pipeline", "--model-name electra_small", "s a step",
                 "for 1M steps (extrapolated)", "--backend jax", "7.98 h",
                 "docs/benchmarks.md#gpu"):
    assert phrase in closing, phrase
  assert re.search(r"^## GPU$", read("docs/benchmarks.md"), re.M)
  assert missing_names(closing.replace('\\"', '"')) == []


def missing_names(text):
  """The files, `electra` subcommands, flags and `electra_tf2.` names `text` names that
  do not exist."""
  missing = []
  for path in re.findall(r"`((?:electra_tf2|bench|scripts|tests|docs|data_prep|configs)/"
                         r"[^`\s:#]*)", text):
    if not any(c in path for c in "<{*[") and not os.path.exists(
        os.path.join(REPO_ROOT, path.rstrip(".,)"))):
      missing.append(f"file {path}")
  for name in re.findall(r"(?:^|[`\s(])electra ([a-z][a-z-]+)", text, re.M):
    if name not in commands.SUBCOMMANDS:
      missing.append(f"subcommand electra {name}")
  for name in set(re.findall(r"\b(electra_tf2(?:\.[A-Za-z_]\w*)+)", text)):
    if not resolves(name):
      missing.append(f"name {name}")
  flags = defined_flags()
  for line in text.split("\n"):
    if re.search(r"\belectra [a-z]|run_(pre|fine)tuning\.py|python -m electra_tf2", line):
      # Beam's own pipeline options (with underscores) pass through to Beam.
      missing += [f"flag {flag}" for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9_-]*)", line)
                  if "_" not in flag and flag not in flags]
  return missing
