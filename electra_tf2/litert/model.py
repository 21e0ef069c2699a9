"""`LiteRTModel`: a `.tflite` written by `export_litert` (or `electra export --format
litert`) run on raw texts, with ai-edge-litert if installed, else `tf.lite`.

The interpreter gets tensorflow-text's TFLite kernels
(`tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS`); texts go through
`prepare_texts` (electra_tf2/text/litert_tokenizer.py) before it.
"""

from __future__ import annotations

import json
import os
from typing import Dict, List, Optional, Sequence, Union

import numpy as np

from electra_tf2.utils import output_names, predictions
from electra_tf2.utils.errors import ElectraError

Texts = Union[Sequence[str], Sequence[bytes]]
METADATA_NAME = "electra_tf2"  # the .tflite metadata entry of our settings (JSON)
# Interpreter threads unless told: one per core up to 2. On an idle 2-core host two threads
# were 1.7-1.9x one at batch 32 (dynamic-int8; CoLA, SST-2, MRPC) and faster at batch 1 on
# CoLA and SST-2, slower on MRPC's long pairs (bench/serving/litert_threads_vs_ort.py,
# docs/benchmarks.md#litert-tflite); under load one thread was ahead. More than 2 was not
# measured: pass num_threads.
MAX_DEFAULT_THREADS = 2


def default_threads() -> int:
  """The interpreter threads of a LiteRTModel not told otherwise: min(cores, 2)."""
  return min(os.cpu_count() or 1, MAX_DEFAULT_THREADS)


class LiteRTModelError(ElectraError, ValueError):
  """A `.tflite` file or input that LiteRTModel cannot use."""


def make_interpreter(model_path: Optional[str] = None, model_content: Optional[bytes] = None,
                     num_threads: Optional[int] = None):
  """An interpreter with the TF Text kernels: ai-edge-litert's, else tf.lite's."""
  import tensorflow_text as tft  # pylint: disable=g-import-not-at-top
  try:
    from ai_edge_litert.interpreter import InterpreterWithCustomOps
  except ImportError:
    from tensorflow.lite.python.interpreter import InterpreterWithCustomOps
  return InterpreterWithCustomOps(custom_op_registerers=tft.tflite_registrar.SELECT_TFTEXT_OPS,
                                  model_path=model_path, model_content=model_content,
                                  num_threads=num_threads)


def read_metadata(model: bytes) -> Dict[str, object]:
  """The settings `with_metadata` stored in `model`; {} if there are none."""
  from tensorflow.lite.python import schema_py_generated as schema
  root = schema.Model.GetRootAsModel(model, 0)
  for i in range(root.MetadataLength()):
    if root.Metadata(i).Name() == METADATA_NAME.encode("utf-8"):
      return json.loads(root.Buffers(root.Metadata(i).Buffer()).DataAsNumpy().tobytes())
  return {}


class LiteRTModel:
  """A `.tflite` text model: `predict(texts)` -> {output name: numpy array}.

  Args:
    path: a `.tflite` file written by `export_litert` / `electra export --format litert`.
    num_threads: the interpreter's threads (None: `default_threads()`, one per core up
        to 2).

  >>> import os, tempfile
  >>> from electra_tf2 import BertConfig, TextClassifier, LiteRTModel
  >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "fine", "film", "."]
  >>> bert = BertConfig(len(vocab), hidden_size=16, num_hidden_layers=1,
  ...                   num_attention_heads=2, intermediate_size=32)
  >>> path = os.path.join(tempfile.mkdtemp(), "classifier.tflite")
  >>> _ = TextClassifier(bert, None, vocab, num_classes=3).export_litert(path)
  >>> out = LiteRTModel(path).predict(["a fine film", "film ."])
  >>> out["logits"].shape, out["label"].dtype
  ((2, 3), dtype('O'))
  """

  def __init__(self, path: str, num_threads: Optional[int] = None):
    if not os.path.isfile(path):
      raise LiteRTModelError(f"{path} is not a file: give a .tflite written by export_litert "
                             "or `electra export --format litert`")
    try:
      self._interpreter = make_interpreter(model_path=path,
                                           num_threads=num_threads or default_threads())
      signatures = self._interpreter.get_signature_list()
    except (ValueError, RuntimeError) as e:
      raise LiteRTModelError(f"{path} is not a .tflite model LiteRT can load: "
                             f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    if "serving_default" not in signatures:
      raise LiteRTModelError(f"{path} has no serving_default signature: give a .tflite written "
                             "by export_litert or `electra export --format litert`")
    self.path = path
    runner = self._interpreter.get_signature_runner("serving_default")
    inputs = runner.get_input_details()
    self._output_details = runner.get_output_details()
    self._input_index = {k: d["index"] for k, d in inputs.items()}
    self._output_index = {k: d["index"] for k, d in self._output_details.items()}
    # The signature runner allocates every tensor again on each call (its string inputs
    # are dynamic tensors); `_invoke` does so only when the input shapes change. Only the
    # main graph's tensors can be set that way (Interpreter.set_tensor: the signature's
    # inputs are its inputs, same index and name), and the runner must not be kept then:
    # Interpreter.invoke refuses while it holds the interpreter.
    main = {(d["index"], d["name"]) for d in self._interpreter.get_input_details()}
    self._call = (self._invoke if {(d["index"], d["name"]) for d in inputs.values()} == main
                  else runner)
    self._shapes: Dict[str, tuple] = {}
    with open(path, "rb") as f:
      self.settings = read_metadata(f.read())
    if self.settings.get("target") == "mediapipe":
      raise LiteRTModelError(f"{path} is for MediaPipe Tasks' TextClassifier (token ids in): "
                             "run it there (docs/deploy.md), or export with target litert "
                             "for LiteRTModel")
    self._answerer = None
    from electra_tf2.litert import qa  # pylint: disable=g-import-not-at-top
    if qa.QA_KEY in self.settings:  # windows and answers around the file
      self._answerer = qa.WindowAnswerer(self.settings, self._output_details)
      self.input_names: List[str] = list(qa.QA_INPUTS)
    else:
      # The documented order (question, context; text, text_b), as predict's tuple takes.
      self.input_names = predictions.column_order(signatures["serving_default"]["inputs"])
    names = signatures["serving_default"]["outputs"]
    # A file written before the output naming rule also answers to the rule's names.
    self._aliases = output_names.rule_aliases(names)
    self.output_names: List[str] = sorted([*names, *self._aliases])

  @property
  def do_lower_case(self) -> bool:
    return bool(self.settings.get("do_lower_case", True))

  def predict(self, texts: Union[Texts, tuple], batch_size: int = 32,
              progress: bool = False) -> Dict[str, np.ndarray]:
    """Outputs for texts: a list of str (or bytes), or for pairs a tuple of two lists.

    Texts run in batches of similar length (electra_tf2/utils/batching.py); outputs are in
    input order, per-token ones padded with zeros to the longest, as
    `TextModel.predict_file`.
    """
    if batch_size < 1:
      raise LiteRTModelError(f"batch_size must be >= 1, got {batch_size}")
    columns = list(texts) if isinstance(texts, tuple) else [texts]
    if len(columns) != len(self.input_names):
      raise LiteRTModelError(f"{self.path} takes {len(self.input_names)} text column(s) "
                             f"({', '.join(self.input_names)}), got {len(columns)}")
    if len({len(c) for c in columns}) > 1:
      raise LiteRTModelError(f"the text columns have different lengths: "
                             f"{', '.join(str(len(c)) for c in columns)}")
    rows = list(zip(*columns))
    if not rows:
      return self.empty_outputs()
    return predictions.predict_rows(self.run_batch, rows, batch_size, progress)

  def empty_outputs(self) -> Dict[str, np.ndarray]:
    """The outputs of an empty batch, shaped as the SavedModel's (a token axis of 2,
    [CLS] [SEP]), without running the interpreter: TFLite kernels refuse empty tensors."""
    if self._answerer is not None:
      return self.run_batch([], [])
    return self._with_aliases({
        name: np.zeros([0] + [2 if d < 0 else d for d in detail["shape_signature"][1:]],
                       object if detail["dtype"] in (np.bytes_, np.object_, np.str_)
                       else detail["dtype"])
        for name, detail in self._output_details.items()})

  def _with_aliases(self, outputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """`outputs` and, for a file written before the naming rule, the same arrays under
    the rule's names (electra_tf2/utils/output_names.py)."""
    outputs.update({name: outputs[old] for name, old in self._aliases.items()})
    return outputs

  def _invoke(self, **inputs: np.ndarray) -> Dict[str, np.ndarray]:
    """The serving_default signature on `inputs` {name: array}, as the signature runner
    runs it, the tensors allocated again only when an input's shape changed."""
    shapes = {name: value.shape for name, value in inputs.items()}
    if shapes != self._shapes:
      for name, shape in shapes.items():
        self._interpreter.resize_tensor_input(self._input_index[name], shape)
      self._interpreter.allocate_tensors()
      self._shapes = shapes
    for name, value in inputs.items():
      self._interpreter.set_tensor(self._input_index[name], value)
    self._interpreter.invoke()
    return {name: self._interpreter.get_tensor(i) for name, i in self._output_index.items()}

  def run_batch(self, *columns: Texts) -> Dict[str, np.ndarray]:
    """One interpreter call on one batch (a list of texts per input); a question
    answerer's: its windows, one call on them, the answers (electra_tf2/litert/qa.py)."""
    if self._answerer is not None:
      return self._answerer.run(self._call, *columns)
    from electra_tf2.text.litert_tokenizer import prepare_texts
    sentencepiece = self.settings.get("tokenizer") == "sentencepiece"
    inputs = {name: np.array(prepare_texts(texts, self.do_lower_case, sentencepiece),
                             dtype=object)
              for name, texts in zip(self.input_names, columns)}
    return self._with_aliases(dict(self._call(**inputs)))
