"""Chunking (CoNLL-2000) with the official tagging task (finetune/tagging/).

Data: `finetuning_data/chunk/{train,dev[,test]}.txt`, whitespace-separated
columns (word first, tag last), a blank line between sentences, `-DOCSTART-`
skipped. The README puts the CoNLL test set at dev.txt.

Labels: the tags are turned into spans and back into BIOES tags; the label
map is the sorted set of BIOES tags over every split present, saved as
`<preprocessed_data_dir>/[debug_]chunk_label_mapping.json` (the official
pickle, as JSON).

Features: `[CLS] words [SEP]`, every word tokenized on its own and tagged at
its first wordpiece (with SentencePiece, its first piece: the word's U+2581-led
piece, or a lone U+2581 before it). Official quirks kept: segment id 1 for every
real token (`[CLS]` included); WordPiece words are always lowercased and
accent-stripped, whatever do_lower_case says (a SentencePiece model normalizes by its
own rule); the truncation test `n_words + 2 + len(ids) + 1 >
max_seq_length` appends `[SEP]` and stops. Fixed: a sentence whose last word
alone overflows is cut at max_seq_length (the official code fails an assert),
and a file's last sentence counts without a trailing blank line.

Head (`task_specific/chunk/dense`): the first-wordpiece states -> glorot
`dense(n_labels)`, softmax cross-entropy times the label mask, summed over
words. Metric: span precision, recall and F1.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from electra_tf2.utils.atomic_io import write_json_atomic
from electra_tf2.tasks import scorers
from electra_tf2.tasks.config import FinetuningConfig
from electra_tf2.tasks.task import (CachedTokenizer, Example, FeatureSpec,
                                       FinetuningDataError, Task, log_features, read_lines)
from electra_tf2.text.packing import padded_features
from electra_tf2.text.tagging import tagging_ids

LABEL_ENCODING = "BIOES"
Sentence = Tuple[Tuple[str, ...], Tuple[str, ...]]


class TaggingExample(Example):
  """A sentence with one label id per word."""

  def __init__(self, eid: int, task_name: str, words: Sequence[str], labels: Sequence[int]):
    super().__init__(task_name, eid)
    self.words = list(words)
    self.labels = list(labels)


def read_conll(path: str, max_sentences: Optional[int] = None) -> List[Sentence]:
  """(words, tags) per sentence; tags must be O or B/I/E/S-<type>."""
  sentences: List[Sentence] = []
  sentence: List[Tuple[str, str]] = []
  for line_number, line in enumerate(read_lines(path), 1):
    parts = line.strip().split()
    if not parts:
      if sentence:
        sentences.append(tuple(zip(*sentence)))
        sentence = []
        if max_sentences and len(sentences) > max_sentences:
          return sentences
      continue
    if parts[0] == "-DOCSTART-":
      continue
    if len(parts) < 2:
      raise FinetuningDataError(f"{path}:{line_number}: expected 'word ... tag' columns, "
                                f"got {line.strip()!r}")
    tag = parts[-1]
    if tag != "O" and (len(tag) < 3 or tag[0] not in "BIES" or tag[1] != "-"):
      raise FinetuningDataError(f"{path}:{line_number}: tag {tag!r} is neither O nor "
                                "B-/I-/E-/S-<type>")
    sentence.append((parts[0], tag))
  if sentence:
    sentences.append(tuple(zip(*sentence)))
  return sentences


class Chunking(Task):
  """Text chunking (CoNLL-2000) as span tagging with BIOES labels."""

  def __init__(self, config: FinetuningConfig, tokenizer: CachedTokenizer,
               name: str = "chunk"):
    super().__init__(config, name)
    self._tokenizer = tokenizer
    self._label_mapping: Optional[Dict[str, int]] = None
    prefix = "debug_" if config.debug else ""
    self.label_mapping_path = os.path.join(config.preprocessed_data_dir,
                                           f"{prefix}{name}_label_mapping.json")

  def data_hint(self) -> str:
    return (f"Put the CoNLL-2000 train.txt and test.txt in {self.config.task_data_dir(self.name)}"
            "/ as train.txt and dev.txt.")

  def split_path(self, split: str) -> str:
    return self.data_path(split, ".txt")

  def _sentences(self, split: str) -> List[Sentence]:
    return read_conll(self.split_path(split), 100 if self.config.debug else None)

  def get_examples(self, split: str) -> List[TaggingExample]:
    sentences = self._sentences(split)
    mapping = self.label_mapping(split, sentences)
    examples = []
    for i, (words, tags) in enumerate(sentences):
      bioes = scorers.get_tags(scorers.get_span_labels(tags), len(words), LABEL_ENCODING)
      unknown = sorted(set(bioes) - set(mapping))
      if unknown:
        raise FinetuningDataError(
            f"{self.split_path(split)}: sentence {i + 1} has tag {unknown[0]!r}, which the "
            f"cached {self.label_mapping_path} lacks; delete that file to rebuild it")
      examples.append(TaggingExample(i, self.name, words, [mapping[t] for t in bioes]))
    return self.limit(examples)

  def label_mapping(self, provided_split: Optional[str] = None,
                    provided_sentences: Optional[List[Sentence]] = None) -> Dict[str, int]:
    """BIOES tag -> id over all splits present; cached in label_mapping_path."""
    if self._label_mapping is not None:
      return self._label_mapping
    if os.path.isfile(self.label_mapping_path):
      with open(self.label_mapping_path, encoding="utf-8") as f:
        self._label_mapping = json.load(f)
      return self._label_mapping
    tags = set()
    directory = self.config.task_data_dir(self.name)
    for split in ("train", "dev", "test"):
      if not os.path.isfile(os.path.join(directory, split + ".txt")):
        continue
      sentences = provided_sentences if split == provided_split else self._sentences(split)
      for _, sentence_tags in sentences:
        tags.update(scorers.get_tags(scorers.get_span_labels(sentence_tags),
                                     len(sentence_tags), LABEL_ENCODING))
    if not tags:
      self.split_path("train")  # raises the missing-data error
    self._label_mapping = {tag: i for i, tag in enumerate(sorted(tags))}
    write_json_atomic(self.label_mapping_path, self._label_mapping, indent=1)
    return self._label_mapping

  def prepare(self, examples: Sequence[TaggingExample]) -> None:
    self._tokenizer.warm([w for e in examples for w in e.words])

  def release(self) -> None:
    self._tokenizer.clear()

  def featurize(self, example: TaggingExample, is_training: bool, log: bool = False
                ) -> List[Dict[str, Any]]:
    max_len = self.config.max_seq_length
    special = self._tokenizer.special_ids
    word_ids = [self._tokenizer.convert_tokens_to_ids(self._tokenizer.tokenize(word))
                for word in example.words]
    input_ids, tagged_positions = tagging_ids(word_ids, special.cls, special.sep, max_len)

    def pad(values: List[Any]) -> List[Any]:
      return values + [0] * (max_len - len(values))
    # Official quirk: segment 1 for every token, [CLS] included.
    features = padded_features(input_ids, [1] * len(input_ids), max_len)
    features.update({"task_id": self.task_id,
                     self.name + "_eid": example.eid,
                     self.name + "_labels": pad(example.labels[:max_len]),
                     self.name + "_labels_mask": pad([1.0] * len(tagged_positions)),
                     self.name + "_labeled_positions": pad(tagged_positions)})
    if log:
      log_features(self.name, features)
    return [features]

  def get_feature_specs(self) -> List[FeatureSpec]:
    length = self.config.max_seq_length
    return [FeatureSpec(self.name + "_eid", []),
            FeatureSpec(self.name + "_labels", [length]),
            FeatureSpec(self.name + "_labels_mask", [length], is_int_feature=False),
            FeatureSpec(self.name + "_labeled_positions", [length])]

  def head_spec(self) -> Dict[str, Any]:
    mapping = self.label_mapping()
    return {"kind": "tagging", "task": self.name,
            "label_list": sorted(mapping, key=mapping.__getitem__)}

  def get_scorer(self, split: str = "dev") -> scorers.Scorer:
    return scorers.EntityLevelF1Scorer(self.label_mapping())


