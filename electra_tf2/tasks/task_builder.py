"""Task names -> Task instances (official finetune/task_builder.py), plus WNLI.

The built-in tasks are registered here (electra_tf2/tasks/registry.py), each with the
loader of its module, so that listing them imports no task module.
"""

from __future__ import annotations

import os
from typing import List

from electra_tf2.tasks.config import FinetuningConfig
from electra_tf2.tasks.registry import register_task, registered, task_names
from electra_tf2.tasks.task import CachedTokenizer, Task
from electra_tf2.text.vocab import load_vocab


def _classification():
  from electra_tf2.tasks import classification  # pylint: disable=g-import-not-at-top
  return classification


def _qa():
  from electra_tf2.tasks import qa  # pylint: disable=g-import-not-at-top
  return qa


def _tagging():
  from electra_tf2.tasks import tagging  # pylint: disable=g-import-not-at-top
  return tagging


register_task("cola", "classification", lambda: _classification().CoLA)
register_task("mrpc", "classification", lambda: _classification().MRPC)
register_task("mnli", "classification", lambda: _classification().MNLI)
register_task("sst", "classification", lambda: _classification().SST)
register_task("rte", "classification", lambda: _classification().RTE)
register_task("qnli", "classification", lambda: _classification().QNLI)
register_task("qqp", "classification", lambda: _classification().QQP)
register_task("sts", "regression", lambda: _classification().STS)
register_task("wnli", "classification", lambda: _classification().WNLI)
register_task("squad", "qa", lambda: _qa().squad)
register_task("squadv1", "qa", lambda: _qa().squadv1)
for _name in ("newsqa", "naturalqs", "triviaqa", "searchqa"):
  register_task(_name, "qa", lambda name=_name: _qa().mrqa(name))
register_task("chunk", "tagging", lambda: _tagging().Chunking)


def takes_pairs(name: str) -> bool:
  """Whether the classification or regression task `name` reads pairs of texts (its
  Task's `text_pairs`; False for QA, tagging and unknown names)."""
  if name not in task_names():
    return False
  return bool(getattr(registered(name).load(), "text_pairs", False))


def check_vocab(config: FinetuningConfig) -> None:
  """The vocab fits the encoder: as many tokens as its embedding rows, or fewer where it
  is the pre-trained model's own vocab (a padded table, as transformers allows).

  Raises:
    VocabError: in one line, naming the vocab file and the fix.
  """
  model_dir = config.pretrained_model_dir
  own = model_dir is not None and (os.path.dirname(os.path.abspath(config.vocab_file))
                                   == os.path.abspath(model_dir))
  load_vocab(config.vocab_file, **{"table_size" if own else "expected_size": config.vocab_size})


def make_tokenizer(config: FinetuningConfig, lower_case: bool) -> CachedTokenizer:
  """The vocabulary's tokenizer (by its kind): our tensorflow-text FullTokenizer (BERT's),
  with the config's strip_accents when its casing is the config's (else the official
  rule), or a SentencePieceTokenizer."""
  from electra_tf2.text.kinds import load_tokenizer  # pylint: disable=g-import-not-at-top
  check_vocab(config)
  strip = config.strip_accents if lower_case == config.do_lower_case else None
  return CachedTokenizer(load_tokenizer(config.vocab_file, do_lower_case=lower_case,
                                        strip_accents=strip))


def get_tasks(config: FinetuningConfig) -> List[Task]:
  """The tasks of config.task_names, sharing one tokenizer.

  Chunking always lowercases (official quirk), so it gets a lowercasing
  tokenizer even when do_lower_case is false.
  """
  tokenizer = make_tokenizer(config, config.do_lower_case)
  lower_tokenizer = tokenizer
  if "chunk" in config.task_names and not config.do_lower_case:
    lower_tokenizer = make_tokenizer(config, True)
  tasks = []
  for name in config.task_names:
    factory = registered(name).load()
    tasks.append(factory(config, lower_tokenizer if name == "chunk" else tokenizer))
  return tasks
