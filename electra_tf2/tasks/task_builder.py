"""Task names -> Task instances (official finetune/task_builder.py), plus WNLI."""

from __future__ import annotations

import os
from typing import Callable, Dict, List

from electra_tf2.tasks import classification, qa, tagging
from electra_tf2.tasks.config import ConfigError, FinetuningConfig
from electra_tf2.tasks.task import CachedTokenizer, Task
from electra_tf2.text.vocab import load_vocab

TASKS: Dict[str, Callable[[FinetuningConfig, CachedTokenizer], Task]] = {
    "cola": classification.CoLA, "mrpc": classification.MRPC, "mnli": classification.MNLI,
    "sst": classification.SST, "rte": classification.RTE, "qnli": classification.QNLI,
    "qqp": classification.QQP, "sts": classification.STS, "wnli": classification.WNLI,
    "squad": qa.squad, "squadv1": qa.squadv1, "newsqa": qa.mrqa("newsqa"),
    "naturalqs": qa.mrqa("naturalqs"), "triviaqa": qa.mrqa("triviaqa"),
    "searchqa": qa.mrqa("searchqa"), "chunk": tagging.Chunking,
}


def takes_pairs(name: str) -> bool:
  """Whether the classification or regression task `name` reads pairs of texts (its
  Task's `text_pairs`; False for QA, tagging and unknown names)."""
  return bool(getattr(TASKS.get(name), "text_pairs", False))


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
    if name not in TASKS:
      raise ConfigError(f"unknown task {name!r}: use one of {', '.join(TASKS)}")
    tasks.append(TASKS[name](config, lower_tokenizer if name == "chunk" else tokenizer))
  return tasks
