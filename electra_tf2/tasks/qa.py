"""Span question answering: SQuAD 1.1/2.0 and MRQA (official finetune/qa/qa_tasks.py).

Data:
- SQuAD: `finetuning_data/{squad,squadv1}/{split}.json` (`{split}-debug.json`
  in debug mode); `squad` is SQuAD 2.0 (`is_impossible` questions);
- MRQA: `finetuning_data/{newsqa,naturalqs,triviaqa,searchqa}/{split}.jsonl`,
  one paragraph per line after a header line; training uses the first
  detected answer's first char span; ids are `qid`.

Examples: the context is split on whitespace (U+202F included) with a
character-to-word map; training uses the first answer only, and answers
whose text cannot be found again in the words (lowercased) are skipped and
counted, as in the official code. Port: a SQuAD training answer whose
`answer_start` lies outside the context, or whose text differs from the
context at that offset, raises FinetuningDataError naming file and question.

Features: the question is cut to max_query_length wordpieces; the document is
tokenized word by word and covered by windows of `max_seq_length - |q| - 3`
tokens with stride `min(length, doc_stride)`; each window is
`[CLS] q [SEP]` (segment 0) `doc [SEP]` (segment 1) with `token_to_orig_map`
and `token_is_max_context` (score min(left, right) + 0.01 * length). Training
labels: the answer's wordpiece span (refined by `improve_answer_span`) offset
into the window, or 0/0 when it is outside the window or the question is
impossible. eid = 1000 * example eid + window index.

SentencePiece vocabularies (#42): every piece also gets its character span in the
context (`SentencePieceTokenizer.char_spans` of its word); the training span is the
pieces that overlap the answer's characters, and an answer is decoded as the context
between its first piece's start and its last piece's end (`<task>_token_char_spans`),
not through the WordPiece text rules of `get_final_text`.

Head: `layers/task_heads.py` (`QAHead`, task_specific/<task>/...).
"""

from __future__ import annotations

import abc
import dataclasses
import json
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from electra_tf2.tasks.config import FinetuningConfig
from electra_tf2.tasks.task import (CachedTokenizer, Example, FeatureSpec,
                                       FinetuningDataError, Task, log_features, read_lines)
from electra_tf2.text.packing import pack_tokens, padded_features
from electra_tf2.text.sentencepiece import SentencePieceTokenizer
from electra_tf2.text.windows import check_is_max_context, doc_spans_for, split_context


class _DocPieces(NamedTuple):
  """A QA document tokenized word by word (`QATask.featurize`)."""
  tokens: List[str]                # the pieces of all words, in order
  tok_to_orig_index: List[int]     # piece -> its word
  orig_to_tok_index: List[int]     # word -> its first piece
  char_spans: Optional[List[Tuple[int, int]]]  # SentencePiece: piece -> its characters


@dataclasses.dataclass(eq=False)
class QAExample(Example):
  """One question about a whitespace-tokenized context."""
  qas_id: Optional[str]
  qid: Optional[str]
  question_text: str
  doc_tokens: List[str]
  orig_answer_text: Optional[str] = None
  start_position: Optional[int] = None
  end_position: Optional[int] = None
  is_impossible: bool = False
  context: str = ""
  answer_start: Optional[int] = None  # training: the answer's first character in context

  @property
  def example_id(self) -> str:
    """The id predictions are keyed by: SQuAD's `id`, MRQA's `qid`."""
    return self.qas_id if self.qas_id is not None else self.qid


def improve_answer_span(doc_tokens: Sequence[str], input_start: int, input_end: int,
                        tokenizer: CachedTokenizer, orig_answer_text: str) -> Tuple[int, int]:
  """The tightest wordpiece sub-span whose text equals the tokenized answer, if any."""
  tok_answer_text = " ".join(tokenizer.tokenize(orig_answer_text))
  for new_start in range(input_start, input_end + 1):
    for new_end in range(input_end, new_start - 1, -1):
      if " ".join(doc_tokens[new_start:new_end + 1]) == tok_answer_text:
        return new_start, new_end
  return input_start, input_end


def word_starts(context: str) -> List[int]:
  """The first character of each word of `split_context(context)`."""
  _, char_to_word_offset = split_context(context)
  starts: List[int] = []
  for index, word in enumerate(char_to_word_offset):
    if word == len(starts):
      starts.append(index)
  return starts


def pieces_of_answer(char_spans: Sequence[Tuple[int, int]], answer_start: int,
                     answer_length: int) -> Tuple[int, int]:
  """The first and last piece whose characters overlap `[answer_start, answer_start +
  answer_length)`, pieces that span nothing left out."""
  answer_end = answer_start + answer_length
  inside = [i for i, (start, end) in enumerate(char_spans)
            if start < end and start < answer_end and end > answer_start]
  return inside[0], inside[-1]


class QATask(Task):
  """A span-extraction QA task (official QATask)."""

  file_extension = ".json"

  def __init__(self, config: FinetuningConfig, name: str, tokenizer: CachedTokenizer,
               v2: bool = False):
    super().__init__(config, name)
    self._tokenizer = tokenizer
    self._examples: Dict[str, List[QAExample]] = {}
    self.v2 = v2

  def split_path(self, split: str) -> str:
    return self.data_path(split, self.file_extension)

  def get_examples(self, split: str) -> List[QAExample]:
    if split not in self._examples:
      self._examples[split] = self.limit(self.read_examples(self.split_path(split), split))
    return self._examples[split]

  def read_examples(self, path: str, split: str) -> List[QAExample]:
    """The examples of a data file (answers read for "train"), skipped ones counted."""
    examples: List[QAExample] = []
    failures = [0]
    for paragraph in self._paragraphs(path):
      self._add_examples(examples, failures, paragraph, split, path)
    if failures[0]:
      print(f"{self.name} {split}: {len(examples)} examples, {failures[0]} answers not "
            "found in their context (skipped)", flush=True)
    return examples

  @abc.abstractmethod
  def _paragraphs(self, path: str) -> List[Dict[str, Any]]:
    """The paragraphs (context and questions) of a data file."""

  def _add_examples(self, examples: List[QAExample], failures: List[int],
                    paragraph: Dict[str, Any], split: str, path: str) -> None:
    context = _field(paragraph, "context", str, f"{path}: a paragraph")
    doc_tokens, char_to_word_offset = split_context(context)
    for qa in _field(paragraph, "qas", list, f"{path}: a paragraph"):
      qas_id, qid = (qa.get("id"), qa.get("qid")) if isinstance(qa, dict) else (None, None)
      ident = str(qas_id if qas_id is not None else qid)
      where = f"{path}: question {repr(ident) if ident != ' '.join(ident.split()) else ident}"
      question = _field(qa, "question", str, where)
      start_position = end_position = orig_answer_text = answer_offset = None
      is_impossible = False
      if split == "train":
        if self.v2:
          if "is_impossible" not in qa:
            raise FinetuningDataError(f"{where} has no is_impossible field; task {self.name} "
                                      "expects SQuAD 2.0 data")
          is_impossible = bool(qa["is_impossible"])
        if is_impossible:
          start_position = end_position = -1
          orig_answer_text = ""
        else:
          answer_offset, orig_answer_text = self._first_answer(qa, context, where)
          if not orig_answer_text.strip():  # no span to learn: skipped and counted
            failures[0] += 1
            continue
          start_position = char_to_word_offset[answer_offset]
          end_char = answer_offset + len(orig_answer_text) - 1
          if end_char >= len(char_to_word_offset):
            failures[0] += 1
            continue
          end_position = char_to_word_offset[end_char]
          actual_text = " ".join(doc_tokens[start_position:end_position + 1]).lower()
          if actual_text.find(" ".join(orig_answer_text.split()).lower()) == -1:
            failures[0] += 1
            continue
      examples.append(QAExample(self.name, len(examples), qas_id, qid, question,
                                doc_tokens, orig_answer_text, start_position, end_position,
                                is_impossible, context, answer_offset))

  @abc.abstractmethod
  def _first_answer(self, qa: Dict[str, Any], context: str, where: str) -> Tuple[int, str]:
    """The character offset and text of a question's first answer."""

  def prepare(self, examples: Sequence[QAExample]) -> None:
    texts = []
    seen_docs = set()
    for example in examples:
      texts.append(example.question_text)
      if example.orig_answer_text:
        texts.append(example.orig_answer_text)
      if id(example.doc_tokens) not in seen_docs:
        seen_docs.add(id(example.doc_tokens))
        texts.extend(example.doc_tokens)
    self._tokenizer.warm(texts)

  def release(self) -> None:
    self._tokenizer.clear()

  def get_feature_specs(self) -> List[FeatureSpec]:
    return [FeatureSpec(self.name + "_eid", []),
            FeatureSpec(self.name + "_start_positions", []),
            FeatureSpec(self.name + "_end_positions", []),
            FeatureSpec(self.name + "_is_impossible", [])]

  def featurize(self, example: QAExample, is_training: bool, log: bool = False,
                for_eval: bool = False) -> List[Dict[str, Any]]:
    """One feature dict per window; with for_eval also the decoding maps of the window."""
    config = self.config
    query_tokens = self._tokenizer.tokenize(example.question_text)[:config.max_query_length]
    doc = self._doc_pieces(example)
    answer = self._answer_pieces(example, doc) if is_training else None
    max_tokens_for_doc = config.max_seq_length - len(query_tokens) - 3
    doc_spans = doc_spans_for(len(doc.tokens), max_tokens_for_doc, config.doc_stride)
    all_features = []
    for doc_span_index, doc_span in enumerate(doc_spans):
      window = range(doc_span.start, doc_span.start + doc_span.length)
      tokens, segment_ids = pack_tokens(query_tokens, [doc.tokens[i] for i in window])
      shift = len(query_tokens) + 2 - doc_span.start  # document token i is at i + shift
      input_ids = self._tokenizer.convert_tokens_to_ids(tokens)
      features: Dict[str, Any] = {
          "task_id": self.task_id,
          self.name + "_eid": 1000 * example.eid + doc_span_index,
          **padded_features(input_ids, segment_ids, config.max_seq_length),
      }
      if is_training:
        features.update(self._answer_labels(example, answer, window, shift))
      if log:
        log_features(self.name, features, tokens)
      if for_eval:
        features.update(self._decoding_maps(doc, doc_spans, doc_span_index, window, tokens, shift))
      all_features.append(features)
    return all_features

  def _doc_pieces(self, example: QAExample) -> "_DocPieces":
    """The document tokenized word by word, with the maps between words and pieces."""
    tok_to_orig_index: List[int] = []
    orig_to_tok_index: List[int] = []
    all_doc_tokens: List[str] = []
    for i, token in enumerate(example.doc_tokens):
      orig_to_tok_index.append(len(all_doc_tokens))
      for sub_token in self._tokenizer.tokenize(token):
        tok_to_orig_index.append(i)
        all_doc_tokens.append(sub_token)
    char_spans = self._char_spans(example)  # SentencePiece: each piece's characters
    return _DocPieces(all_doc_tokens, tok_to_orig_index, orig_to_tok_index, char_spans)

  def _answer_pieces(self, example: QAExample, doc: "_DocPieces") -> Optional[Tuple[int, int]]:
    """The first and last piece of a training answer in the document; None if impossible."""
    if example.is_impossible:
      return None
    if doc.char_spans is not None:
      return pieces_of_answer(doc.char_spans, example.answer_start, len(example.orig_answer_text))
    tok_start_position = doc.orig_to_tok_index[example.start_position]
    if example.end_position < len(example.doc_tokens) - 1:
      tok_end_position = doc.orig_to_tok_index[example.end_position + 1] - 1
    else:
      tok_end_position = len(doc.tokens) - 1
    return improve_answer_span(doc.tokens, tok_start_position, tok_end_position, self._tokenizer,
                               example.orig_answer_text)

  def _answer_labels(self, example: QAExample, answer: Optional[Tuple[int, int]],
                     window: range, shift: int) -> Dict[str, Any]:
    """A window's training labels: the answer's pieces in the packed window, or 0/0
    when the window does not hold all of it or the question is impossible."""
    start_position = end_position = 0
    if answer is not None and answer[0] >= window.start and answer[1] < window.stop:
      start_position, end_position = answer[0] + shift, answer[1] + shift
    return {self.name + "_start_positions": start_position,
            self.name + "_end_positions": end_position,
            self.name + "_is_impossible": int(example.is_impossible)}

  def _decoding_maps(self, doc: "_DocPieces", doc_spans, doc_span_index: int, window: range,
                     tokens: List[str], shift: int) -> Dict[str, Any]:
    """What decoding needs of a window: its tokens, the word and the max-context flag of
    each document token in it, and (SentencePiece) each one's characters."""
    maps = {self.name + "_doc_span_index": doc_span_index,
            self.name + "_tokens": tokens,
            self.name + "_token_to_orig_map": {i + shift: doc.tok_to_orig_index[i] for i in window},
            self.name + "_token_is_max_context": {
                i + shift: check_is_max_context(doc_spans, doc_span_index, i) for i in window}}
    if doc.char_spans is not None:
      maps[self.name + "_token_char_spans"] = {i + shift: doc.char_spans[i] for i in window}
    return maps

  def _char_spans(self, example: QAExample) -> Optional[List[Tuple[int, int]]]:
    """With a SentencePiece vocabulary, the `(start, end)` characters in the context of
    every piece of the document (the words' pieces in order); None for WordPiece."""
    tokenizer = self._tokenizer.tokenizer
    if not isinstance(tokenizer, SentencePieceTokenizer):
      return None
    spans = []
    for start, word in zip(word_starts(example.context), example.doc_tokens):
      spans.extend((start + a, start + b) for a, b in tokenizer.char_spans(word))
    return spans

  def head_spec(self) -> Dict[str, Any]:
    config = self.config
    return {"kind": "qa", "task": self.name, "beam_size": config.beam_size,
            "joint_prediction": config.joint_prediction,
            "answerable_classifier": config.answerable_classifier,
            "answerable_uses_start_logits": config.answerable_uses_start_logits,
            "answerable_weight": config.answerable_weight}

  def get_scorer(self, split: str = "dev"):
    from electra_tf2.tasks.qa_decoding import SpanBasedQAScorer  # decoding imports this module
    return SpanBasedQAScorer(self.config, self, split, self.v2)


def _field(record: Any, key: str, kind: type, where: str) -> Any:
  """record[key], which must be a `kind`; else an error naming `where` and the field."""
  value = record.get(key) if isinstance(record, dict) else None
  if not isinstance(value, kind):
    raise FinetuningDataError(f"{where}: field {key!r} is missing or not a {kind.__name__}")
  return value


def _is_offset(value: Any) -> bool:
  """A character offset: an int (JSON true/false are not)."""
  return isinstance(value, int) and not isinstance(value, bool)


def _answer_text(text: Any, where: str) -> str:
  if not isinstance(text, str):
    raise FinetuningDataError(f"{where}: the answer text is missing or not a string")
  return text


def _load_json(path: str) -> Any:
  try:
    with open(path, encoding="utf-8") as f:
      return json.load(f)
  except json.JSONDecodeError as e:
    raise FinetuningDataError(f"{path}:{e.lineno}: not valid JSON ({e.msg} column {e.colno}); "
                              "is the file complete?") from None
  except UnicodeDecodeError as e:
    raise FinetuningDataError(f"{path} is not UTF-8 text ({e.reason} at byte {e.start})"
                              ) from None


class SQuADTask(QATask):
  """SQuAD 2.0 (v2) or 1.1 JSON."""

  def data_hint(self) -> str:
    version = "2.0" if self.v2 else "1.1"
    hint = (f"Put the SQuAD {version} train-v{version}.json and dev-v{version}.json in "
            f"{self.config.task_data_dir(self.name)}/ as train.json and dev.json.")
    if self.config.debug:  # official: debug mode reads small copies
      hint += (" With \"debug\": true the task reads train-debug.json and dev-debug.json "
               "instead (small copies, as in the official code).")
    return hint

  def split_path(self, split: str) -> str:
    return self.data_path(split + ("-debug" if self.config.debug else ""), ".json")

  def _paragraphs(self, path: str) -> List[Dict[str, Any]]:
    articles = _field(_load_json(path), "data", list, f"{path} (not a SQuAD file?)")
    return [paragraph for i, article in enumerate(articles)
            for paragraph in _field(article, "paragraphs", list, f"{path}: data[{i}]")]

  def _first_answer(self, qa: Dict[str, Any], context: str, where: str) -> Tuple[int, str]:
    answers = qa.get("answers")
    if not answers:
      raise FinetuningDataError(f"{where} has no answers but is not marked is_impossible")
    if not isinstance(answers, list):
      raise FinetuningDataError(f"{where}: field 'answers' is not a list")
    answer = answers[0]
    if not isinstance(answer, dict):
      raise FinetuningDataError(f"{where}: answers[0] is not an object")
    start, text = answer.get("answer_start"), _answer_text(answer.get("text"), where)
    if not _is_offset(start) or not 0 <= start < len(context):
      raise FinetuningDataError(f"{where}: answer_start {start!r} is outside the context "
                                f"({len(context)} characters)")
    if context[start:start + len(text)] != text:
      raise FinetuningDataError(
          f"{where}: the answer {text!r} does not match the context at answer_start {start} "
          f"({context[start:start + len(text)]!r}); fix the offset or the text")
    return start, text

  def dataset(self, split: str) -> List[Dict[str, Any]]:
    """The raw `data` articles of a split (what the official eval scripts read)."""
    return _load_json(self.split_path(split))["data"]


class MRQATask(QATask):
  """An MRQA 2019 shared-task dataset (jsonl)."""

  file_extension = ".jsonl"

  def data_hint(self) -> str:
    return (f"Put the MRQA jsonl files in {self.config.task_data_dir(self.name)}/ as "
            "train.jsonl and dev.jsonl.")

  def _paragraphs(self, path: str) -> List[Dict[str, Any]]:
    paragraphs = []
    for i, line in enumerate(read_lines(path)):
      if self.config.debug and i > 10:
        break
      try:
        paragraph = json.loads(line.strip())
      except json.JSONDecodeError as e:
        raise FinetuningDataError(f"{path}:{i + 1}: not valid JSON ({e.msg} column {e.colno})"
                                  ) from None
      if not isinstance(paragraph, dict):
        raise FinetuningDataError(f"{path}:{i + 1}: not a JSON object")
      if "header" not in paragraph:
        paragraphs.append(paragraph)
    return paragraphs

  def _first_answer(self, qa: Dict[str, Any], context: str, where: str) -> Tuple[int, str]:
    try:
      answer = qa["detected_answers"][0]
      start = answer["char_spans"][0][0]
      text = answer["text"]
    except (KeyError, IndexError, TypeError):
      raise FinetuningDataError(f"{where} has no detected_answers[0] with char_spans "
                                "and text") from None
    text = _answer_text(text, where)
    if not _is_offset(start) or not 0 <= start < len(context):
      raise FinetuningDataError(f"{where}: char span start {start!r} is outside the context "
                                f"({len(context)} characters)")
    return start, text

  def gold_answers(self, split: str) -> Dict[str, List[str]]:
    """qid -> answers of a split (official mrqa read_answers)."""
    path = self.split_path(split)
    gold = {}
    for paragraph in self._paragraphs(path):
      for qa in _field(paragraph, "qas", list, f"{path}: a paragraph"):
        qid = _field(qa, "qid", str, f"{path}: a question")
        gold[qid] = _field(qa, "answers", list, f"{path}: question {qid}")
    return gold


def read_squad(path: str, v2: Optional[bool] = None, split: str = "train"
               ) -> List[QAExample]:
  """The questions of a SQuAD JSON file as the `squad` (v2) or `squadv1` task reads them,
  with no config: for "train" the first answer, unanswerable questions for v2 and the
  official skipping of answers not found in their words. v2 None: from the file
  ("is_impossible" fields)."""
  if v2 is None:
    paragraphs = SQuADTask(None, "squad", None)._paragraphs(path)
    v2 = any(isinstance(qa, dict) and "is_impossible" in qa for paragraph in paragraphs
             if isinstance(paragraph, dict) for qa in paragraph.get("qas") or [])
  task = SQuADTask(None, "squad" if v2 else "squadv1", None, v2)
  return task.read_examples(path, split)


def squad(config: FinetuningConfig, tokenizer: CachedTokenizer) -> SQuADTask:
  return SQuADTask(config, "squad", tokenizer, v2=True)


def squadv1(config: FinetuningConfig, tokenizer: CachedTokenizer) -> SQuADTask:
  return SQuADTask(config, "squadv1", tokenizer)


def mrqa(name: str):
  """Factory of an MRQA task (newsqa, naturalqs, triviaqa, searchqa)."""
  def build(config: FinetuningConfig, tokenizer: CachedTokenizer) -> MRQATask:
    return MRQATask(config, name, tokenizer)
  return build
