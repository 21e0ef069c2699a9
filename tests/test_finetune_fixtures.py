"""Helpers of the fine-tuning tests: a tiny WordPiece vocab and configs (no tests here)."""

import os
from typing import List

from electra_tf2.finetune import task_builder
from electra_tf2.finetune.config import FinetuningConfig, resolve_finetuning_config

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "a", "cat", "sat", "on", "mat", "dog", "john", "smith", "was", "born", "in",
         "1895", "1943", "steve", "s", "what", "year", "who", "where", "is", "capital", "of",
         "france", "paris", "leader", "un", "##believ", "##able", "##s", "##ing", "big", "red",
         "house", "see", "we", "it", "and", "he", "she", "runs", "fast", "cafe", "new", "york",
         "city", "np", "vp"]
PUNCTUATION = [".", ",", "!", "?", "'", "(", ")", "-", ":", ";", "\""]


def write_vocab(path: str) -> List[str]:
  """Specials, punctuation, then WORDS; returns the tokens in id order."""
  tokens = SPECIALS + PUNCTUATION + WORDS
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(tokens) + "\n")
  return tokens


def make_config(data_dir: str, task_names: List[str], **hparams) -> FinetuningConfig:
  """A config over data_dir with the tiny vocab, random init and a tiny encoder."""
  os.makedirs(data_dir, exist_ok=True)
  vocab = os.path.join(data_dir, "vocab.txt")
  if not os.path.exists(vocab):
    write_vocab(vocab)
  values = {"task_names": task_names, "init_checkpoint": None,
            "vocab_size": len(SPECIALS + PUNCTUATION + WORDS),
            "model_hparam_overrides": {"hidden_size": 32, "num_hidden_layers": 2,
                                       "num_attention_heads": 2, "intermediate_size": 64},
            "embedding_size": 16, "max_seq_length": 32}
  values.update(hparams)
  return resolve_finetuning_config("tiny", data_dir, values)


def make_tasks(config: FinetuningConfig):
  return task_builder.get_tasks(config)


def write_lines(path: str, lines: List[str]) -> str:
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(lines) + "\n")
  return path
