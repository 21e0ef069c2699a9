"""`QuestionAnswerer`: (question, context) strings -> the answer, as characters of the context.

The official span QA of run_finetuning.py's `squad`, `squadv1` and MRQA tasks
(finetune/qa/qa_tasks.py, qa_metrics.py; electra_tf2/tasks/qa.py and
qa_decoding.py) as one Keras model whose graph holds all of it: the windows
over long contexts (electra_tf2/text/qa_windows.py), the encoder, the official
head (`QAHead`, electra_tf2/layers/task_heads.py), the answer search
(models/qa_spans.py) and the mapping back to characters (`get_final_text`).
`predict`, the SavedModel and `predict_file` give, per question:

- `answer_text`: the answer, "" when unanswerable (SQuAD 2.0) or when no span
  is valid (port: the official code predicts the nonce "empty" then);
- `answer_start`, `answer_end`: its characters [start, end) in the context
  (answer_text is context[start:end] with every whitespace run inside it made
  one space, as the official answers);
- `score`: its start plus end log-probability (logits without joint_prediction);
- with squad_v2 (SQuAD 2.0): `null_score_diff` (the official null odds),
  `is_impossible` (null_score_diff > qa_na_threshold) and `span_text` (the best
  span even when unanswered: run_finetuning.py's predictions file).

`fit` takes `((questions, contexts), (answer_starts, answer_ends))`, character
spans with -1 for unanswerable questions (`squad_dataset(path)` reads them from
a SQuAD JSON file); its loss is the official one, on every window of every
question: (start CE + end CE) / 2 + answerable_weight * answerability BCE,
the end teacher-forced on the gold start (qa_tasks.py:419-533). compile()
takes the optimizer only. Keras averages over the windows of a batch where the
official code sums (run_finetuning.py:71-73).

  model = QuestionAnswerer.from_pretrained("finetuning_models/squad_model_1")
  model.predict((["Who ate?"], ["John ate the cake."]))["answer_text"]  # ["John"]

With a SentencePiece vocabulary (#42) the windows, labels and answers are those of
run_finetuning.py's SentencePiece path (tasks/qa.py): every piece has its characters
in the context, the training span is the pieces that overlap the answer and the answer
is the context from its first piece's start to its last piece's end (answer_text is
exactly context[answer_start:answer_end]).

TensorFlow backend only: the windows, the answer search and the answer text are
string and ragged ops in the graph. On another backend importing this module is one
line saying so.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional, Tuple

import keras
import numpy as np

from electra_tf2.models.text_model import require_tensorflow

require_tensorflow("QuestionAnswerer (and squad_dataset)",
                   "run it with KERAS_BACKEND=tensorflow (the other task models run here)")

import tensorflow as tf  # noqa: E402  pylint: disable=g-import-not-at-top,wrong-import-position

from electra_tf2.utils import predictions
from electra_tf2.utils.errors import ElectraError
from electra_tf2.tasks import qa as qa_task
from electra_tf2.layers.task_heads import QAHead
from electra_tf2.models import heads, keras_data, sources
from electra_tf2.text import qa_spans
from electra_tf2.models.text_model import TextModel, VariableMap
from electra_tf2.text import qa_windows

HEADS = ("official", "hf")
HF_ARCHITECTURE = "ElectraForQuestionAnswering"
# Decoding settings a fine-tuned directory's config gives (finetuning_defaults.json).
SETTINGS = ("max_seq_length", "max_query_length", "doc_stride", "n_best_size",
            "max_answer_length", "qa_na_threshold")
HEAD_SETTINGS = ("beam_size", "joint_prediction", "answerable_classifier",
                 "answerable_uses_start_logits", "answerable_weight")


class QuestionAnswererError(ElectraError, ValueError):
  """A question-answering input or option that cannot be used; one line naming it."""


@keras.saving.register_keras_serializable(package="electra_tf2")
class QuestionAnswerer(TextModel):
  """(questions `[batch]`, contexts `[batch]`) -> the answer of each (module docstring).

  Args (besides TextModel's; defaults are the official ones):
    squad_v2: questions may have no answer (SQuAD 2.0): null odds and is_impossible.
    head: "official" (the `QAHead` of run_finetuning.py) or "hf" (Hugging Face's
      `qa_outputs`: one dense for start and end logits, no answerability classifier).
    task: the head's name (its variables: task_specific/<task>/...).
    max_query_length, doc_stride: the question's WordPieces kept, the window stride.
    n_best_size, max_answer_length: candidates per window without joint_prediction,
      the longest answer in WordPieces.
    qa_na_threshold: SQuAD 2.0: unanswerable when the null odds exceed it.
    beam_size, joint_prediction, answerable_classifier, answerable_uses_start_logits,
      answerable_weight: the official head's options.

  Load one with `QuestionAnswerer.from_pretrained(path)`; a random one:

  >>> from electra_tf2 import BertConfig, QuestionAnswerer
  >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "ate", "the", "cake", "?",
  ...          "john", "."]
  >>> bert = BertConfig(len(vocab), hidden_size=16, num_hidden_layers=1,
  ...                   num_attention_heads=2, intermediate_size=32)
  >>> model = QuestionAnswerer(bert, None, vocab, max_seq_length=24, max_query_length=8,
  ...                          beam_size=4)
  >>> context = "John  ate the cake."
  >>> out = model.predict((["Who ate the cake?"], [context]), verbose=0)
  >>> sorted(out)
  ['answer_end', 'answer_start', 'answer_text', 'is_impossible', 'null_score_diff', 'score',
   'span_text']
  >>> start, end = out["answer_start"][0], out["answer_end"][0]
  >>> " ".join(context[start:end].split()) == out["span_text"][0]
  True
  """

  def __init__(self, bert_config, embedding_size, vocab, do_lower_case: bool = True,
               max_seq_length: int = 128, squad_v2: bool = True, head: str = "official",
               task: str = "squad", max_query_length: int = 64, doc_stride: int = 128,
               n_best_size: int = 20, max_answer_length: int = 30,
               qa_na_threshold: float = -2.75, beam_size: int = 20,
               joint_prediction: bool = True, answerable_classifier: bool = True,
               answerable_uses_start_logits: bool = True, answerable_weight: float = 0.5,
               **kwargs):
    kwargs.setdefault("name", "question_answerer")
    super().__init__(bert_config, embedding_size, vocab, do_lower_case, max_seq_length,
                     **kwargs)
    if self.text_inputs.sentencepiece_model:  # each piece's characters: the answers' text
      self.text_inputs.featurizer.tokenizer.enable_char_spans()
    if head not in HEADS:
      raise ValueError(f"head must be one of {', '.join(HEADS)}, got {head!r}")
    if self.bert_config.type_vocab_size < 2:
      raise QuestionAnswererError(
          f"question answering puts the context in segment 1, and this encoder's "
          f"type_vocab_size is {self.bert_config.type_vocab_size}: it has no token type for it")
    if max_seq_length - max_query_length - 3 < 1:
      raise QuestionAnswererError(
          f"max_seq_length {max_seq_length} leaves no room for the context after "
          f"max_query_length {max_query_length} and [CLS], [SEP], [SEP]: pass max_query_length "
          f"<= {max_seq_length - 4} (or a larger max_seq_length, at most "
          f"max_position_embeddings {self.bert_config.max_position_embeddings})")
    if head == "hf":  # qa_outputs: independent start and end logits, no classifier
      joint_prediction = answerable_classifier = False
    if joint_prediction and beam_size > max_seq_length:
      raise QuestionAnswererError(f"beam_size {beam_size} exceeds max_seq_length "
                                  f"{max_seq_length}: pass beam_size <= {max_seq_length}")
    self.squad_v2, self.head_kind = bool(squad_v2), head
    self.max_query_length, self.doc_stride = max_query_length, doc_stride
    self.n_best_size, self.max_answer_length = n_best_size, max_answer_length
    self.qa_na_threshold = float(qa_na_threshold)
    self.head = QAHead(task, beam_size, joint_prediction, answerable_classifier,
                       answerable_uses_start_logits, answerable_weight, dtype=self.dtype_policy)
    self.build()

  # -- the graph -----------------------------------------------------------------

  def windows(self, question: tf.Tensor, context: tf.Tensor) -> qa_windows.Windows:
    """The official windows of valid UTF-8 questions and contexts `[batch]`."""
    inputs = self.text_inputs.featurizer
    return qa_windows.qa_windows(inputs.tokenizer, question, context, self.max_seq_length,
                                 self.max_query_length, self.doc_stride, inputs.cls_id,
                                 inputs.sep_id)

  def call(self, inputs, training: bool = False) -> Dict[str, tf.Tensor]:
    """(question, context) tf.string `[batch]` -> the answers (module docstring). Not
    training, on the windows' real tokens alone (`_answer`'s skip_padding)."""
    return self._answer(*inputs, training=training, skip_padding=not training)

  def _answer(self, question, context, training: bool = False, skip_padding: bool = False):
    """The answers; skip_padding: on the windows' real tokens alone. Every window is padded
    to max_seq_length; they are cut to the longest one (`qa_windows.cut_padding`) and the
    encoder skips the shorter ones' padding (`Encoder.call`'s skip_padding). The padding
    is masked and the answer search never picks it, so the answers are the padded
    windows' (docs/benchmarks.md, the QuestionAnswerer's SavedModel)."""
    question, context = (qa_windows.valid_utf8(tf.reshape(t, [-1])) for t in (question, context))
    windows = self.windows(question, context)
    features = self._cut_windows(windows.features) if skip_padding else windows.features
    hidden = self.encode(features, training, skip_padding)
    return self.answers(windows, self.head(hidden, features), tf.size(question))

  def _cut_windows(self, features):
    """The windows' features cut to the longest one's real tokens (`qa_windows.cut_padding`),
    keeping at least the beam_size positions the joint head's top-k takes."""
    return qa_windows.cut_padding(features,
                                  self.head.beam_size if self.head.joint_prediction else 1)

  def decoding(self) -> qa_spans.Decoding:
    """The answer search's settings."""
    return qa_spans.Decoding(self.head.joint_prediction, self.n_best_size,
                             self.max_answer_length, self.squad_v2,
                             self.head.answerable_classifier, self.qa_na_threshold)

  def answers(self, windows: qa_windows.Windows, outputs: Dict[str, tf.Tensor],
              n_questions: tf.Tensor) -> Dict[str, tf.Tensor]:
    """The head's outputs on the windows -> the answer of each of the n questions."""
    inputs = self.text_inputs
    return qa_spans.answers(windows, outputs, n_questions, tf.constant(inputs.vocab),
                            inputs.do_lower_case, inputs.featurizer.tokenizer.strip_accents,
                            self.decoding())

  def labelled_windows(self, x, y, training: bool):
    """The windows of a batch of questions with answers `y` and their losses `[windows]`."""
    question, context = (qa_windows.valid_utf8(tf.reshape(t, [-1])) for t in x)
    answer_start, answer_end = (tf.reshape(t, [-1]) for t in y)
    windows = self.windows(question, context)
    labels = qa_windows.answer_labels(windows, self.text_inputs.featurizer.tokenizer, context,
                                      answer_start, answer_end)
    task = self.head.task
    features = dict(windows.features, **{f"{task}_{k}": v for k, v in labels.items()})
    # The head teacher-forces the end on the gold start ("training"); dropout is the encoder's.
    outputs = self.head(self.encode(features, training), features, training=True)
    return windows, self.head.loss(outputs, features)

  def window_loss(self, data, training: bool) -> tf.Tensor:
    """The official loss averaged over the batch's windows (each weighted by its
    question's sample weight)."""
    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
    if y is None:
      raise QuestionAnswererError("fit and evaluate need y = (answer_starts, answer_ends)")
    windows, losses = self.labelled_windows(x, y, training)
    if sample_weight is not None:
      losses *= tf.gather(tf.cast(tf.reshape(sample_weight, [-1]), losses.dtype),
                          windows.example)
    return tf.reduce_sum(losses) / tf.cast(tf.maximum(tf.size(losses), 1), losses.dtype)

  def train_step(self, data):
    with tf.GradientTape() as tape:
      loss = self.window_loss(data, training=True)
      scaled = self.optimizer.scale_loss(loss)
    gradients = tape.gradient(scaled, self.trainable_variables)
    self.optimizer.apply(gradients, self.trainable_variables)
    return self._track(data, loss)

  def test_step(self, data):
    return self._track(data, self.window_loss(data, training=False))

  def _track(self, data, loss) -> Dict[str, tf.Tensor]:
    x, _, _ = keras.utils.unpack_x_y_sample_weight(data)
    self._loss_tracker.update_state(loss, sample_weight=tf.size(x[0]))
    return {"loss": self._loss_tracker.result()}

  def compile(self, optimizer="rmsprop", loss=None, **kwargs):
    """Keras' compile, with the optimizer only: the loss is the official one."""
    if loss is not None or kwargs.get("metrics") or kwargs.get("weighted_metrics"):
      raise QuestionAnswererError("QuestionAnswerer trains with the official SQuAD loss: "
                                  "compile(optimizer=...) without loss or metrics")
    super().compile(optimizer=optimizer, **kwargs)

  # -- inputs and predictions ----------------------------------------------------

  def text_columns(self) -> Tuple[int, ...]:
    return (2,)

  def prepare_labels(self, y, name: str, x):
    """(answer_starts, answer_ends): two lists or arrays of character offsets, [start, end)
    a span of the context or start -1 (unanswerable); checked against x's contexts."""
    if not isinstance(y, (tuple, list)) or len(y) != 2:
      if isinstance(y, (tuple, list, np.ndarray)):
        raise QuestionAnswererError(f"{name}: expected (answer_starts, answer_ends), two lists "
                                    "of character offsets")
      return y
    starts, ends = (keras_data.numbers(v, f"{name}[{i}]", np.int64) for i, v in enumerate(y))
    if isinstance(starts, np.ndarray) and isinstance(ends, np.ndarray):
      if starts.shape != ends.shape:
        raise QuestionAnswererError(f"{name}: {len(starts)} answer starts but {len(ends)} ends")
      contexts = x[1] if isinstance(x, tuple) and tf.executing_eagerly() else None
      if isinstance(contexts, tf.Tensor) and contexts.shape == starts.shape:
        _check_spans(starts, ends, contexts.numpy(), name)
    return starts, ends

  def predict(self, *args, **kwargs):
    """Keras' predict on (questions, contexts); answer_text and span_text as str."""
    outputs = super().predict(*args, **kwargs)
    for key in ("answer_text", "span_text"):
      if key in outputs:
        outputs[key] = np.array([t.decode("utf-8") for t in outputs[key]], dtype=object)
    return outputs

  def serving_inputs(self) -> Tuple[str, ...]:
    return ("question", "context")

  def serve(self, question, context):
    """The SavedModel's answers: `call`'s, on the windows' real tokens alone. The
    `token_ids` and `text_pair` signatures keep the padded graph."""
    return self((question, context), training=False)

  def export_litert(self, path: str, quantize: str = "none",
                    calibration_texts: Optional[List[str]] = None,
                    target: str = "litert") -> str:
    """Writes a `.tflite` (LiteRT) file of the encoder and head on windows of token ids;
    returns `path`. `LiteRTModel(path).predict((questions, contexts))` builds the windows
    and finds the answers around it with the SavedModel's TensorFlow code, so its outputs
    are `predict`'s (electra_tf2/litert/qa.py; docs/deploy.md): the windows and the answer
    text need ops LiteRT has no kernels for.

    quantize: "none", "float16" or "dynamic-int8" ("int8" calibrates on texts, which a
    file on token ids does not take). target: "litert" only (MediaPipe's TextClassifier
    is for text classifiers; it is refused in one line).
    """
    from electra_tf2.litert import convert, qa  # pylint: disable=g-import-not-at-top
    if target != "litert":
      from electra_tf2.litert import mediapipe  # pylint: disable=g-import-not-at-top
      mediapipe.refuse_non_classifier(target, type(self).__name__)

    def serve(input_ids, input_mask, segment_ids):
      features = {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}
      return self.head(self.encode(features), features)
    inputs = self.text_inputs
    settings = {"do_lower_case": inputs.do_lower_case, "strip_accents": inputs.strip_accents,
                "max_seq_length": self.max_seq_length,
                qa.QA_KEY: qa.qa_settings(self.decoding(), self.max_query_length,
                                          self.doc_stride, inputs.vocab,
                                          inputs.sentencepiece_model)}
    return convert.write_tflite(path, serve, list(convert.TOKEN_IDS),
                                [v.value for v in self.variables], settings, quantize,
                                calibration_texts)

  def extra_signatures(self) -> Dict[str, tf.types.experimental.GenericFunction]:
    """`token_ids` and `text_pair`: the head's raw outputs `<task>_<name>` on token ids, or
    on one `[CLS] question [SEP] context [SEP]` (BERT's pair truncation, no windows) with
    the features it built: what `electra export --kind finetuned` gave a QA model before."""
    def raw(features):
      outputs = self.head(self.encode(features), features)
      return {f"{self.head.task}_{k}": v for k, v in outputs.items()}

    def token_ids(input_ids, input_mask, segment_ids):
      return raw({"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids})

    def text_pair(text, text_b):
      features = {k: tf.pad(v, [[0, 0], [0, self.max_seq_length - tf.shape(v)[1]]])
                  for k, v in self.text_inputs(text, text_b).items()}  # the beam's length
      return dict(raw(features), **features)
    ids, texts = tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None], tf.string)
    return {"token_ids": tf.function(token_ids, input_signature=[ids] * 3),
            "text_pair": tf.function(text_pair, input_signature=[texts] * 2)}

  def read_rows(self, path: str) -> predictions.Rows:
    """JSON lines {"id", "question", "context"} -> rows and their ids
    (`predictions.read_rows`)."""
    return predictions.read_rows(path, self.serving_inputs(), jsonl=True, flag="path",
                                 error=QuestionAnswererError)

  # -- loading and saving -------------------------------------------------------

  @classmethod
  def from_source(cls, source: sources.Source, **options) -> "QuestionAnswerer":
    """The head and its settings default to the source's: a fine-tuned QA task's head and
    config, or Hugging Face's `qa_outputs` (head="hf")."""
    if options.get("head") is None:
      options["head"] = "hf" if source.architecture == HF_ARCHITECTURE else "official"
    task = _source_task(source, options.get("task"))
    if options["head"] == "official" and task is not None:
      options.setdefault("task", task)
      options.setdefault("squad_v2", task == "squad")
      for key in HEAD_SETTINGS:
        options.setdefault(key, source.head_specs[task][key])
      for key in SETTINGS:
        options.setdefault(key, source.settings[key])
    return super().from_source(source, **options)

  def load_source(self, source: sources.Source, strict: bool = True):
    if self.head_kind == "hf" and "qa_outputs/kernel" in source.tensors:
      source = _split_qa_outputs(source)
    return super().load_source(source, strict)

  def source_head(self, source: sources.Source) -> Tuple[VariableMap, Dict[str, str]]:
    """Our head's variables and their names in `source` (all present, same shapes) or none."""
    ours = self.head_variable_map()
    prefix = f"task_specific/{self.head.task}/"
    if self.head_kind == "hf":
      rename = {prefix + "dense/" + v: f"qa_outputs/start/{v}" for v in ("kernel", "bias")}
      rename.update({prefix + "dense_1/" + v: f"qa_outputs/end/{v}" for v in ("kernel", "bias")})
    else:
      task = _source_task(source, self.head.task) or self.head.task
      rename = {name: f"task_specific/{task}/" + name[len(prefix):] for name in ours}
    if all(rename[k] in source.tensors and tuple(ours[k].shape) == source.tensors[rename[k]].shape
           for k in ours):
      return ours, rename
    return {}, {}

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    head = self.head
    config.update(squad_v2=self.squad_v2, head=self.head_kind, task=head.task,
                  max_query_length=self.max_query_length, doc_stride=self.doc_stride,
                  n_best_size=self.n_best_size, max_answer_length=self.max_answer_length,
                  qa_na_threshold=self.qa_na_threshold,
                  **{key: getattr(head, key) for key in HEAD_SETTINGS})
    return config


def _check_spans(starts: np.ndarray, ends: np.ndarray, contexts: np.ndarray, name: str):
  """One line on the first answer that is no span [start, end) of its context (UTF-8)."""
  for i, (start, end, context) in enumerate(zip(starts, ends, contexts)):
    if start < 0:
      continue
    length = len(context.decode("utf-8", "replace"))
    if not start < end <= length:
      raise QuestionAnswererError(f"{name}: answer {i} [{start}, {end}) is not a span of its "
                                  f"context ({length} characters); start -1 means no answer")


def _source_task(source: sources.Source, task: Optional[str]) -> Optional[str]:
  """The source's QA head: that of `task`, else the only one, else None."""
  tasks = [t for t in source.task_names()
           if source.head_kinds.get(t) in heads.kinds_of(HF_ARCHITECTURE)]
  tasks = [task] if task in tasks else tasks
  return tasks[0] if len(tasks) == 1 else None


def _split_qa_outputs(source: sources.Source) -> sources.Source:
  """The source with `qa_outputs` `[H, 2]` as start and end denses `[H, 1]` each."""
  tensors = dict(source.tensors)
  kernel, bias = tensors.pop("qa_outputs/kernel"), tensors.pop("qa_outputs/bias")
  for column, name in enumerate(("start", "end")):
    tensors[f"qa_outputs/{name}/kernel"] = kernel[:, column:column + 1]
    tensors[f"qa_outputs/{name}/bias"] = bias[column:column + 1]
  return dataclasses.replace(source, tensors=tensors)


def squad_dataset(path: str, v2: Optional[bool] = None) -> tf.data.Dataset:
  """A SQuAD JSON file's training questions as `((question, context), (answer_start,
  answer_end))` (characters; -1 for unanswerable), as run_finetuning.py reads them:
  the first answer, answers not found in their words skipped (tasks/qa.py).
  v2: SQuAD 2.0 (None: whether the file has is_impossible fields)."""
  examples = qa_task.read_squad(path, v2)
  if not examples:
    raise QuestionAnswererError(f"{path} has no training questions")
  starts = [-1 if e.is_impossible else e.answer_start for e in examples]
  ends = [-1 if e.is_impossible else e.answer_start + len(e.orig_answer_text) for e in examples]
  columns = ([e.question_text for e in examples], [e.context for e in examples])
  return tf.data.Dataset.from_tensor_slices((columns, (starts, ends)))
