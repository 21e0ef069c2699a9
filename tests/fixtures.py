"""Tiny data, vocabularies, configs and models made by the tests themselves (no ../shared)."""

import os
from typing import Any, Dict, List, Optional

import keras
import numpy as np
import tensorflow as tf

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
# The fine-tuning tests' WordPiece vocabulary: specials, punctuation, then these words.
WORDS = ["the", "a", "cat", "sat", "on", "mat", "dog", "john", "smith", "was", "born", "in",
         "1895", "1943", "steve", "s", "what", "year", "who", "where", "is", "capital", "of",
         "france", "paris", "leader", "un", "##believ", "##able", "##s", "##ing", "big", "red",
         "house", "see", "we", "it", "and", "he", "she", "runs", "fast", "cafe", "new", "york",
         "city", "np", "vp"]
PUNCTUATION = [".", ",", "!", "?", "'", "(", ")", "-", ":", ";", "\""]
WORD_VOCAB = SPECIALS + PUNCTUATION + WORDS


def write_vocab(path: str, size: Optional[int] = None) -> List[str]:
  """A vocab with the special tokens first: then `size` minus 5 filler words "w<i>", or
  (size None) WORD_VOCAB's punctuation and words. Returns the tokens in id order."""
  tokens = WORD_VOCAB if size is None else SPECIALS + [f"w{i}" for i in range(size - 5)]
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(tokens) + "\n")
  return tokens


def write_lines(path: str, lines: List[str]) -> str:
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(lines) + "\n")
  return path


def make_config(data_dir: str, task_names: List[str], **hparams):
  """A fine-tuning config over data_dir with WORD_VOCAB, random init and a tiny encoder."""
  from electra_tf2.tasks.config import resolve_finetuning_config
  os.makedirs(data_dir, exist_ok=True)
  vocab = os.path.join(data_dir, "vocab.txt")
  if not os.path.exists(vocab):
    write_vocab(vocab)
  values = {"task_names": task_names, "init_checkpoint": None, "vocab_size": len(WORD_VOCAB),
            "model_hparam_overrides": {"hidden_size": 32, "num_hidden_layers": 2,
                                       "num_attention_heads": 2, "intermediate_size": 64},
            "embedding_size": 16, "max_seq_length": 32}
  values.update(hparams)
  return resolve_finetuning_config("tiny", data_dir, values)


def make_tasks(config):
  from electra_tf2.tasks import task_builder
  return task_builder.get_tasks(config)


def write_pretraining_data(data_dir: str, num_examples: int = 64, seq_len: int = 32,
                           vocab_size: int = 30522, num_files: int = 2, seed: int = 0,
                           bert_ids: bool = True, num_word_types: int = 0) -> str:
  """Writes vocab.txt and pretrain_tfrecords/ like the data builder's output.

  Examples are [CLS] A [SEP] B [SEP] + padding, of random lengths. With
  bert_ids the special ids are BERT's (vocab_size must be 30522); otherwise
  the vocab written here (specials at 0..4) is used. num_word_types > 0 draws
  words from that many ids only, so a model can learn something quickly.
  """
  rng = np.random.default_rng(seed)
  os.makedirs(os.path.join(data_dir, "pretrain_tfrecords"), exist_ok=True)
  if bert_ids:
    cls, sep = 101, 102
    tokens = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]",
                                                               "[MASK]"]
    tokens += [f"w{i}" for i in range(vocab_size - len(tokens))]
    with open(os.path.join(data_dir, "vocab.txt"), "w", encoding="utf-8") as f:
      f.write("\n".join(tokens) + "\n")
    low = 1000
  else:
    write_vocab(os.path.join(data_dir, "vocab.txt"), vocab_size)
    cls, sep, low = 2, 3, 5
  writers = [tf.io.TFRecordWriter(os.path.join(
      data_dir, "pretrain_tfrecords", f"pretrain_data.tfrecord-{i}-of-{num_files}"))
      for i in range(num_files)]
  for n in range(num_examples):
    length = int(rng.integers(seq_len // 2, seq_len + 1))
    split = int(rng.integers(2, length - 1))
    high = low + num_word_types if num_word_types else vocab_size
    ids = rng.integers(low, high, seq_len)
    ids[0], ids[split], ids[length - 1] = cls, sep, sep
    ids[length:] = 0
    mask = (np.arange(seq_len) < length).astype(np.int64)
    segments = ((np.arange(seq_len) > split) & (mask == 1)).astype(np.int64)
    feature = {name: tf.train.Feature(int64_list=tf.train.Int64List(value=list(map(int, v))))
               for name, v in (("input_ids", ids), ("input_mask", mask),
                               ("segment_ids", segments))}
    writers[n % num_files].write(
        tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
  for w in writers:
    w.close()
  return data_dir


def noisy_pretrainer(hparams: Dict[str, Any], seed: int, scale: float):
  """An `electra_small` ElectraPretrainer with `hparams` (make it tiny): its initial
  weights plus N(0, scale) noise, both drawn from `seed`, so no output is near zero."""
  from electra_tf2.config.pretraining import resolve_pretraining_config
  from electra_tf2.models.pretrainer import ElectraPretrainer
  keras.utils.set_random_seed(seed)
  model = ElectraPretrainer.from_pretraining_config(
      resolve_pretraining_config("electra_small", None, hparams))
  rng = np.random.default_rng(seed)
  for variable in model.trainable_variables:
    variable.assign(variable.numpy() + rng.normal(0, scale, variable.shape).astype(np.float32))
  return model


# A pre-training run of a tiny encoder: its hparams, and its model directory in both formats.
TINY_PRETRAINING = {"vocab_size": 64, "max_seq_length": 32, "train_batch_size": 8,
                    "num_train_steps": 2, "embedding_size": 16,
                    "model_hparam_overrides": {"hidden_size": 32, "num_hidden_layers": 1,
                                               "num_attention_heads": 2, "intermediate_size": 64}}


def write_trained_model_dirs(root: str) -> Dict[str, str]:
  """A 2-step TensorFlow run of TINY_PRETRAINING on tiny data, and the same directory with
  only its portable checkpoint (as a JAX run leaves it): {"data", "tensorflow", "portable"}."""
  import shutil  # pylint: disable=g-import-not-at-top
  from electra_tf2.config.pretraining import resolve_pretraining_config
  from electra_tf2.conversion import convert
  from electra_tf2.training import tf_pretraining
  data = write_pretraining_data(os.path.join(root, "data"), num_examples=16, vocab_size=64,
                                bert_ids=False)
  dirs = {"data": data, "tensorflow": os.path.join(root, "tensorflow"),
          "portable": os.path.join(root, "portable")}
  tf_pretraining.run_pretraining(resolve_pretraining_config(
      "electra_small", data, dict(TINY_PRETRAINING, model_dir=dirs["tensorflow"])))
  shutil.copytree(dirs["tensorflow"], dirs["portable"])
  convert.write_portable_checkpoint(dirs["portable"])
  for name in os.listdir(dirs["portable"]):
    if name == "checkpoint" or name.startswith("ckpt-"):
      os.remove(os.path.join(dirs["portable"], name))
  return dirs
