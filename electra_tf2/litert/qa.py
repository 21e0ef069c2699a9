"""Question answering with a `.tflite` on token ids: the encoder and head in LiteRT, the
windows and the answer search in TensorFlow, with the code the SavedModel runs.

A QuestionAnswerer's `.tflite` (`QuestionAnswerer.export_litert`, `electra export
--format litert` of a SQuAD or MRQA model) cannot hold the windows over long contexts
or the answer text: they need ops without LiteRT kernels (UnicodeDecodeWithOffsets,
RegexSplitWithOffsets, UnsortedSegmentJoin, ...). So the file holds the encoder and the
official QA head on windows of token ids:

  serving_default  inputs `input_ids`, `input_mask`, `segment_ids`: int32
                   `[windows, max_seq_length]`; outputs the head's per-window outputs
                   (`start_top_log_probs`, `start_top_index`, ..., `answerable_logit`
                   with the joint head; `start_logits`, `end_logits` without).

and its metadata the vocabulary (with a SentencePiece model, its bytes in base64) and
the decoding settings (`qa_settings`).
`WindowAnswerer` builds the windows (electra_tf2/text/qa_windows.py), runs the file on
them and finds each question's answer (models/qa_spans.py `answers`: the official
decoding of finetune/qa/qa_metrics.py), so `LiteRTModel.predict((questions, contexts))`
gives the SavedModel's outputs whenever the head gives the same logits.
"""

from __future__ import annotations

import base64
from typing import Any, Callable, Dict, Mapping, Optional, Sequence

import numpy as np
import tensorflow as tf

from electra_tf2.text import qa_spans
from electra_tf2.text import qa_windows
from electra_tf2.text.packing import TextFeaturizer

QA_KEY = "question_answering"  # the metadata entry of a QA .tflite's settings
WINDOW_SETTINGS = ("max_query_length", "doc_stride")
QA_INPUTS = ("question", "context")


def qa_settings(decoding: qa_spans.Decoding, max_query_length: int, doc_stride: int,
                vocab: Sequence[str], sentencepiece_model: Optional[str] = None
                ) -> Dict[str, Any]:
  """The metadata entry QA_KEY: decoding and window settings and the vocabulary (and the
  SentencePiece model of `vocab`, base64, when it is one)."""
  settings = dict(decoding._asdict(), max_query_length=max_query_length,
                  doc_stride=doc_stride, vocab=list(vocab))
  if sentencepiece_model:
    settings["sentencepiece_model"] = sentencepiece_model
  return settings


class WindowAnswerer:
  """Questions and contexts -> windows -> a `.tflite` runner -> the answers.

  Every window is padded to max_seq_length; the file runs them cut to the longest one's
  real tokens (`qa_windows.cut_padding`; at least the head's beam, whose top-k needs that
  many positions), as the SavedModel does: the answer search never picks the padding (it
  takes the n_best_size best of the positions there are).

  Args:
    settings: the file's metadata (do_lower_case, strip_accents, max_seq_length, QA_KEY).
    output_details: the file's serving_default outputs ({name: {"shape_signature", ...}}).
  """

  def __init__(self, settings: Mapping[str, Any], output_details: Mapping[str, Any]):
    beam = output_details.get("start_top_index", {}).get("shape_signature", [0, 1])[-1]
    self.min_length = int(beam)
    qa = settings[QA_KEY]
    sentencepiece = qa.get("sentencepiece_model")
    self.featurizer = TextFeaturizer(qa["vocab"], bool(settings.get("do_lower_case", True)),
                                     int(settings["max_seq_length"]), sentencepiece_model=(
                                         sentencepiece and base64.b64decode(sentencepiece)),
                                     strip_accents=settings.get("strip_accents"))
    if sentencepiece:  # each piece's characters: the answers' text
      self.featurizer.tokenizer.enable_char_spans()
    self.vocab = tf.constant(qa["vocab"])
    self.decoding = qa_spans.Decoding(**{k: qa[k] for k in qa_spans.Decoding._fields})
    self.max_query_length, self.doc_stride = (int(qa[k]) for k in WINDOW_SETTINGS)
    texts = [tf.TensorSpec([None], tf.string)] * 2
    self._windows = tf.function(self.windows, input_signature=texts)
    self._answers = tf.function(self.answers, reduce_retracing=True)

  def windows(self, question: tf.Tensor, context: tf.Tensor) -> qa_windows.Windows:
    """The official windows of questions and contexts `[batch]` (invalid UTF-8 replaced,
    as QuestionAnswerer.call)."""
    tokenizer = self.featurizer.tokenizer
    return qa_windows.qa_windows(tokenizer, qa_windows.valid_utf8(question),
                                 qa_windows.valid_utf8(context),
                                 self.featurizer.max_seq_length, self.max_query_length,
                                 self.doc_stride, self.featurizer.cls_id,
                                 self.featurizer.sep_id)

  def answers(self, windows: qa_windows.Windows, outputs: Dict[str, tf.Tensor],
              n_questions: tf.Tensor) -> Dict[str, tf.Tensor]:
    tokenizer = self.featurizer.tokenizer
    return qa_spans.answers(windows, outputs, n_questions, self.vocab,
                            tokenizer.do_lower_case, tokenizer.strip_accents, self.decoding)

  def run(self, runner: Callable[..., Dict[str, np.ndarray]], questions: Sequence,
          contexts: Sequence) -> Dict[str, np.ndarray]:
    """The answers (QuestionAnswerer's outputs, numpy) of one batch of questions."""
    question = tf.constant(list(questions), tf.string)
    windows = self._windows(question, tf.constant(list(contexts), tf.string))
    features = {k: v.numpy() for k, v in
                qa_windows.cut_padding(windows.features, self.min_length).items()}
    n_windows = len(features["input_ids"])
    if not n_windows:  # TFLite kernels refuse empty tensors: one blank window, dropped
      features = {k: np.zeros([1, self.min_length], np.int32) for k in features}
    outputs = {k: v[:n_windows] for k, v in runner(**features).items()}
    answers = self._answers(windows, {k: tf.constant(v) for k, v in outputs.items()},
                            tf.size(question))
    return {k: v.numpy() for k, v in answers.items()}
