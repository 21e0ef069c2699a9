"""GLUE classification and regression (official
finetune/classification/classification_tasks.py).

Data: `finetuning_data/<task>/{train,dev,test}.tsv` in the GLUE layout, read
with `csv.reader(delimiter="\\t", quotechar=None)`; `eid` is the row index
after the header. Featurisation is BERT's: `[CLS] A [SEP]` (segment 0) and
`B [SEP]` (segment 1), the longer segment truncated one token at a time.

Heads (`task_specific/<task>/dense`): `[CLS]` -> dropout 0.1 (training only) ->
glorot `dense(num_labels)` with softmax cross-entropy, or `dense(1)` with the
squared error for STS, whose labels are normalised to `y / 5`.

Column checks (port): a file whose header (or first row) has fewer columns than
the task reads raises FinetuningDataError; a later row whose column count
differs from the header's is skipped with a warning naming file and line, as
the official code skips rows that fail. A bad label (not in the label list, or
not a number in range for STS) raises FinetuningDataError naming file and line.
"""

from __future__ import annotations

import abc
import csv
from typing import Any, Dict, List, Optional, Sequence

from electra_tf2.tasks import scorers
from electra_tf2.tasks.config import FinetuningConfig
from electra_tf2.tasks.task import (CachedTokenizer, Example, FeatureSpec,
                                       FinetuningDataError, Task, log_features)
from electra_tf2.text.packing import pack_tokens, padded_features, truncate_seq_pair

# GLUE's directory and submission-file names for our task names.
GLUE_NAMES = {"cola": "CoLA", "sst": "SST-2", "mrpc": "MRPC", "sts": "STS-B", "qqp": "QQP",
              "mnli": "MNLI", "qnli": "QNLI", "rte": "RTE", "wnli": "WNLI"}
SUBMISSION_FILES = {("cola", "test"): "CoLA", ("sst", "test"): "SST-2",
                    ("mrpc", "test"): "MRPC", ("sts", "test"): "STS-B",
                    ("qqp", "test"): "QQP", ("mnli", "test_matched"): "MNLI-m",
                    ("mnli", "test_mismatched"): "MNLI-mm", ("mnli", "diagnostic"): "AX",
                    ("qnli", "test"): "QNLI", ("rte", "test"): "RTE", ("wnli", "test"): "WNLI"}
MAX_WARNINGS = 5


class InputExample(Example):
  """One sentence (pair) with its label (a dummy one for test splits)."""

  def __init__(self, eid: int, task_name: str, text_a: str, text_b: Optional[str] = None,
               label: Any = None, source: str = ""):
    super().__init__(task_name, eid)
    self.text_a = text_a
    self.text_b = text_b
    self.label = label
    self.source = source  # "file:line" of the row, for error messages

  def describe(self) -> str:
    """Where the example came from: `file:line (task t, example n)`."""
    where = f"{self.source} " if self.source else ""
    return f"{where}(task {self.task_name}, example {self.eid})"


def read_tsv(path: str, max_lines: Optional[int] = None) -> List[List[str]]:
  """Rows of a TSV as the official `read_tsv` (no quoting); a clear error if unreadable."""
  try:
    with open(path, encoding="utf-8-sig", newline="") as f:
      rows = []
      for i, row in enumerate(csv.reader(f, delimiter="\t", quotechar=None)):
        if max_lines and i >= max_lines:
          break
        rows.append(row)
  except UnicodeDecodeError as e:
    raise FinetuningDataError(f"{path} is not UTF-8 text ({e.reason} at byte {e.start})"
                              ) from None
  return rows


# ---------------------------------------------------------------------------
# Tasks
# ---------------------------------------------------------------------------


class SingleOutputTask(Task):
  """A task with one prediction per example (official SingleOutputTask)."""

  unordered_pairs = False  # MRPC, STS: the sentence order carries no meaning
  text_pairs = True  # examples are (text_a, text_b); CoLA and SST: one sentence
  label_suffix = ""  # the label feature is <task><label_suffix>

  def __init__(self, config: FinetuningConfig, name: str, tokenizer: CachedTokenizer):
    super().__init__(config, name)
    self._tokenizer = tokenizer

  def data_hint(self) -> str:
    return (f"Put GLUE's {GLUE_NAMES.get(self.name, self.name)} files in "
            f"{self.config.task_data_dir(self.name)}/ as train.tsv, dev.tsv and test.tsv.")

  def split_file(self, split: str) -> str:
    return split

  def split_path(self, split: str) -> str:
    return self.data_path(self.split_file(split), ".tsv")

  def get_examples(self, split: str) -> List[InputExample]:
    """The split's examples; MRPC and STS training sets also get every pair swapped
    (double_unordered), with eids continuing after the originals' count (official)."""
    path = self.split_path(split)
    rows = read_tsv(path, max_lines=100 if self.config.debug else None)
    examples = self.limit(self._create_examples(rows, split, path))
    if self.unordered_pairs and self.config.double_unordered and split == "train":
      offset = len(examples)
      swapped = [InputExample(e.eid + offset, self.name, e.text_b, e.text_a, e.label, e.source)
                 for e in examples]
      examples += swapped
    return examples

  @abc.abstractmethod
  def _create_examples(self, rows: List[List[str]], split: str, path: str
                       ) -> List[InputExample]:
    """The task's examples of its TSV rows."""

  def _load_glue(self, rows: List[List[str]], split: str, path: str, text_a_loc: int,
                 text_b_loc: Optional[int], label_loc: Optional[int], skip_first_line: bool
                 ) -> List[InputExample]:
    """The official `_load_glue` (without its swap pass, see get_examples), with the column
    checks described in the module doc."""
    is_test = "test" in split or "diagnostic" in split
    locations = [text_a_loc] + [loc for loc in (text_b_loc, None if is_test else label_loc)
                                if loc is not None]
    needed = max(loc + 1 if loc >= 0 else -loc for loc in locations)
    if rows and len(rows[0]) < needed:
      raise FinetuningDataError(
          f"{path}:1: {len(rows[0])} tab-separated columns, but task {self.name} reads "
          f"column(s) {locations} ({needed} needed); is this the right file for {split}?")
    width = len(rows[0]) if rows else 0
    examples, skipped = [], 0
    for i, row in enumerate(rows):
      if i == 0 and skip_first_line:
        continue
      if len(row) != width:
        skipped += 1
        if skipped <= MAX_WARNINGS:
          print(f"warning: {path}:{i + 1}: {len(row)} columns instead of {width}; "
                "row skipped", flush=True)
        continue
      text_a = row[text_a_loc]
      text_b = None if text_b_loc is None else row[text_b_loc]
      label = self._get_dummy_label() if is_test else row[label_loc]
      examples.append(InputExample(i - (1 if skip_first_line else 0), self.name, text_a, text_b,
                                   label, source=f"{path}:{i + 1}"))
    if skipped > MAX_WARNINGS:
      print(f"warning: {path}: {skipped} rows skipped in all", flush=True)
    if rows and not examples:
      raise FinetuningDataError(f"{path}: no usable rows for task {self.name}")
    return examples

  def check_labels(self, examples: Sequence[InputExample]) -> None:
    for example in examples:
      self._label_value(example)

  def prepare(self, examples: Sequence[InputExample]) -> None:
    self._tokenizer.warm([t for e in examples for t in (e.text_a, e.text_b) if t])

  def release(self) -> None:
    self._tokenizer.clear()

  def featurize(self, example: InputExample, is_training: bool, log: bool = False
                ) -> List[Dict[str, Any]]:
    max_len = self.config.max_seq_length
    tokens_a = self._tokenizer.tokenize(example.text_a)
    tokens_b = self._tokenizer.tokenize(example.text_b) if example.text_b else None
    if tokens_b:
      truncate_seq_pair(tokens_a, tokens_b, max_len - 3)
    else:
      tokens_a = tokens_a[:max_len - 2]
    tokens, segment_ids = pack_tokens(tokens_a, tokens_b)
    input_ids = self._tokenizer.convert_tokens_to_ids(tokens)
    features = padded_features(input_ids, segment_ids, max_len)
    features.update({"task_id": self.task_id, self.name + "_eid": example.eid})
    features[self.name + self.label_suffix] = self._label_value(example)
    if log:
      log_features(self.name, features, tokens)
    return [features]

  @abc.abstractmethod
  def _get_dummy_label(self) -> Any:
    """The label of padding examples."""

  @abc.abstractmethod
  def _label_value(self, example: InputExample) -> Any:
    """The example's label as its feature stores it; FinetuningDataError if invalid."""


class RegressionTask(SingleOutputTask):
  """A real-valued score per example, normalised to (y - min) / max (official)."""

  label_suffix = "_targets"

  def __init__(self, config: FinetuningConfig, name: str, tokenizer: CachedTokenizer,
               min_value: float, max_value: float):
    super().__init__(config, name, tokenizer)
    self.min_value = min_value
    self.max_value = max_value

  def _get_dummy_label(self) -> float:
    return 0.0

  def get_feature_specs(self) -> List[FeatureSpec]:
    return [FeatureSpec(self.name + "_eid", []),
            FeatureSpec(self.name + self.label_suffix, [], is_int_feature=False)]

  def _label_value(self, example: InputExample) -> float:
    try:
      label = float(example.label)
    except ValueError:
      raise FinetuningDataError(f"{example.describe()}: the label {example.label!r} "
                                "is not a number") from None
    if not self.min_value <= label <= self.max_value:
      raise FinetuningDataError(f"{example.describe()}: the label {label} is outside "
                                f"[{self.min_value}, {self.max_value}]")
    return (label - self.min_value) / self.max_value

  def head_spec(self) -> Dict[str, Any]:
    return {"kind": "regression", "task": self.name, "min_value": self.min_value,
            "max_value": self.max_value}

  def get_scorer(self, split: str = "dev") -> scorers.Scorer:
    return scorers.RegressionScorer()


class ClassificationTask(SingleOutputTask):
  """One label out of `label_list` per example."""

  label_suffix = "_label_ids"

  def __init__(self, config: FinetuningConfig, name: str, tokenizer: CachedTokenizer,
               label_list: Sequence[str]):
    super().__init__(config, name, tokenizer)
    self.label_list = list(label_list)
    self._label_map = {label: i for i, label in enumerate(self.label_list)}

  def _get_dummy_label(self) -> str:
    return self.label_list[0]

  def get_feature_specs(self) -> List[FeatureSpec]:
    return [FeatureSpec(self.name + "_eid", []), FeatureSpec(self.name + self.label_suffix, [])]

  def _label_value(self, example: InputExample) -> int:
    if example.label not in self._label_map:
      raise FinetuningDataError(f"{example.describe()}: the label {example.label!r} is not "
                                f"one of {self.label_list}")
    return self._label_map[example.label]

  def head_spec(self) -> Dict[str, Any]:
    return {"kind": "classification", "task": self.name, "label_list": self.label_list}

  def get_scorer(self, split: str = "dev") -> scorers.Scorer:
    return scorers.AccuracyScorer()


class MNLI(ClassificationTask):
  """Multi-NLI: dev is dev_matched; test splits test_matched, test_mismatched, diagnostic."""

  def __init__(self, config: FinetuningConfig, tokenizer: CachedTokenizer):
    super().__init__(config, "mnli", tokenizer, ["contradiction", "entailment", "neutral"])

  def split_file(self, split: str) -> str:
    return "dev_matched" if split == "dev" else split

  def _create_examples(self, rows, split, path):
    if split == "diagnostic":
      return self._load_glue(rows, split, path, 1, 2, None, True)
    return self._load_glue(rows, split, path, 8, 9, -1, True)

  def get_test_splits(self) -> List[str]:
    return ["test_matched", "test_mismatched", "diagnostic"]


class MRPC(ClassificationTask):
  """Paraphrase pairs; the training set also gets every pair swapped (double_unordered)."""

  unordered_pairs = True

  def __init__(self, config: FinetuningConfig, tokenizer: CachedTokenizer):
    super().__init__(config, "mrpc", tokenizer, ["0", "1"])

  def _create_examples(self, rows, split, path):
    return self._load_glue(rows, split, path, 3, 4, 0, True)


class CoLA(ClassificationTask):
  """Acceptability; train/dev have no header, test has one; scored by MCC."""

  text_pairs = False

  def __init__(self, config: FinetuningConfig, tokenizer: CachedTokenizer):
    super().__init__(config, "cola", tokenizer, ["0", "1"])

  def _create_examples(self, rows, split, path):
    return self._load_glue(rows, split, path, 1 if split == "test" else 3, None, 1,
                           split == "test")

  def get_scorer(self, split: str = "dev") -> scorers.Scorer:
    return scorers.MCCScorer()


class SST(ClassificationTask):
  """Sentiment (SST-2)."""

  text_pairs = False

  def __init__(self, config: FinetuningConfig, tokenizer: CachedTokenizer):
    super().__init__(config, "sst", tokenizer, ["0", "1"])

  def _create_examples(self, rows, split, path):
    if "test" in split:
      return self._load_glue(rows, split, path, 1, None, None, True)
    return self._load_glue(rows, split, path, 0, None, 1, True)


class QQP(ClassificationTask):
  """Quora question pairs (accuracy only, as the official code)."""

  def __init__(self, config: FinetuningConfig, tokenizer: CachedTokenizer):
    super().__init__(config, "qqp", tokenizer, ["0", "1"])

  def _create_examples(self, rows, split, path):
    return self._load_glue(rows, split, path, 1 if split == "test" else 3,
                           2 if split == "test" else 4, 5, True)


class RTE(ClassificationTask):
  def __init__(self, config: FinetuningConfig, tokenizer: CachedTokenizer):
    super().__init__(config, "rte", tokenizer, ["entailment", "not_entailment"])

  def _create_examples(self, rows, split, path):
    return self._load_glue(rows, split, path, 1, 2, 3, True)


class QNLI(ClassificationTask):
  def __init__(self, config: FinetuningConfig, tokenizer: CachedTokenizer):
    super().__init__(config, "qnli", tokenizer, ["entailment", "not_entailment"])

  def _create_examples(self, rows, split, path):
    return self._load_glue(rows, split, path, 1, 2, 3, True)


class WNLI(ClassificationTask):
  """Winograd NLI (not in the official code; GLUE layout index, sentence1, sentence2, label)."""

  def __init__(self, config: FinetuningConfig, tokenizer: CachedTokenizer):
    super().__init__(config, "wnli", tokenizer, ["0", "1"])

  def _create_examples(self, rows, split, path):
    return self._load_glue(rows, split, path, 1, 2, 3, True)


class STS(RegressionTask):
  """Semantic similarity 0-5 (regression); the training set also gets swapped pairs."""

  unordered_pairs = True

  def __init__(self, config: FinetuningConfig, tokenizer: CachedTokenizer):
    super().__init__(config, "sts", tokenizer, 0.0, 5.0)

  def _create_examples(self, rows, split, path):
    if split == "test":
      return self._load_glue(rows, split, path, -2, -1, None, True)
    return self._load_glue(rows, split, path, -3, -2, -1, True)


# ---------------------------------------------------------------------------
# GLUE server files
# ---------------------------------------------------------------------------


def submission_label(head_spec: Dict[str, Any], prediction: Any) -> str:
  """A prediction as GLUE's server expects it: a label string, or the 0-5 score for STS."""
  if head_spec["kind"] == "regression":
    score = float(prediction) * head_spec["max_value"] + head_spec["min_value"]
    return f"{min(max(score, head_spec['min_value']), head_spec['max_value']):.3f}"
  return head_spec["label_list"][int(prediction)]


def submission_file_name(task: str, split: str) -> Optional[str]:
  """GLUE server file name (without .tsv) of a test split, or None if GLUE has none."""
  return SUBMISSION_FILES.get((task, split))

