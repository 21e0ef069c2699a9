"""The QuestionAnswerer's SavedModel on SQuAD dev questions: the server graph of question
answering (for the QA export), against ONNX Runtime float32 in one process.

    python -m bench.serving.qa_server [--models electra_small,electra_base] [--questions 40]
        [--throughput-questions 64] [--batch-size 8] [--rounds 3] [--max-seq-length 512]
        [--data-dir ../shared/data] [--work-dir /tmp/qa_server] [--output results.jsonl]
        [--parts] [--litert]

Model: a random `ElectraForQuestionAnswering` of the released shape (transformers'
initialisation), loaded by `QuestionAnswerer.from_pretrained` (its `qa_outputs` head, or
with --head official the official joint head, random) with the official SQuAD windows
(max_seq_length 512, the official default for QA tasks; doc_stride 128,
max_query_length 64). Questions: SQuAD 1.1 dev, in the file's order. Sides, timed
alternately (bench/serving/inference/timing.py: batch-1 p50 over every call of the rounds,
questions/s of the median round at --batch-size):
  savedmodel  `export_saved_model`'s `serving_default(question, context)`: windows, the
              encoder and head on the windows' real tokens alone (cut to the longest
              window, `qa_windows.cut_padding`, then the encoder's `skip_padding`), answer
              search and answer text, all in the graph;
  padded      the same model exported with the encoder on every padded row (as before
              skip_padding; every window is padded to max_seq_length);
  ort_fp32    the anchor: the same weights exported by torch.onnx and fused by onnxruntime's
              transformer optimizer, fed by transformers' fast tokenizer (windows of at most
              max_seq_length stepping by about doc_stride, padded to the longest window of
              the batch), start and end logits out: no answer search and no answer text,
              which ours includes.
With --litert, also the model's float32 `.tflite` through `LiteRTModel` (windows and
answer search around the file), on the cut windows and on windows padded to max_seq_length.
Prints a markdown row per model and side, the windows' padding share and how many of each
side's answers equal the padded SavedModel's; with --parts, where a batch-1 call's time goes (the
windows, the encoder, the head with the answer search and text, each timed apart).
"""

from __future__ import annotations

import json
import os
import shutil

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("USE_TF", "0")  # transformers: PyTorch classes only

import numpy as np  # noqa: E402

from bench.common import SHARED_DATA, append_json, log, script_parser  # noqa: E402

DOC_STRIDE, MAX_QUERY_LENGTH = 128, 64


def squad_questions(data_dir: str, n: int):
  """The first n (question, context) pairs of SQuAD 1.1 dev, as two columns."""
  with open(os.path.join(data_dir, "squad", "dev-v1.1.json"), encoding="utf-8") as f:
    articles = json.load(f)["data"]
  pairs = [(qa["question"], paragraph["context"]) for article in articles
           for paragraph in article["paragraphs"] for qa in paragraph["qas"]]
  if len(pairs) < n:
    raise SystemExit(f"{data_dir}/squad/dev-v1.1.json has {len(pairs)} questions, "
                     f"fewer than {n}: ask for fewer")
  return [[q for q, _ in pairs[:n]], [c for _, c in pairs[:n]]]


def random_answerer(shape: str, vocab_file: str, directory: str) -> str:
  """Saves a random `ElectraForQuestionAnswering` of `SHAPES[shape]` with its vocabulary."""
  if os.path.exists(os.path.join(directory, "model.safetensors")):
    return directory
  import torch
  import transformers
  from bench.serving.inference.models import SHAPES
  with open(vocab_file, encoding="utf-8") as f:
    vocab_size = sum(1 for _ in f)
  torch.manual_seed(0)
  config = transformers.ElectraConfig(vocab_size=vocab_size, pad_token_id=0,
                                      max_position_embeddings=512, **SHAPES[shape])
  tmp = directory + ".tmp"
  shutil.rmtree(tmp, ignore_errors=True)
  transformers.ElectraForQuestionAnswering(config).eval().save_pretrained(tmp)
  shutil.copy(vocab_file, os.path.join(tmp, "vocab.txt"))
  with open(os.path.join(tmp, "tokenizer_config.json"), "w", encoding="utf-8") as f:
    json.dump({"tokenizer_class": "ElectraTokenizer", "do_lower_case": True}, f)
  os.replace(tmp, directory)
  return directory


def saved_model_side(model, path: str, skip_padding: bool, name: str):
  """Our SavedModel (exported once to `path`); with skip_padding False, `serve` is patched
  during the export to run the padded windows."""
  import tensorflow as tf
  from electra_tf2 import QuestionAnswerer
  from bench.serving.inference.side import Side
  if not os.path.exists(os.path.join(path, "saved_model.pb")):
    original = QuestionAnswerer.serve

    def padded_serve(self, question, context):
      return self._answer(question, context)  # pylint: disable=protected-access
    if not skip_padding:
      QuestionAnswerer.serve = padded_serve
    try:
      model.export_saved_model(path)
    finally:
      QuestionAnswerer.serve = original
  serve = tf.saved_model.load(path).signatures["serving_default"]

  def predict(texts):
    return serve(question=tf.constant(texts[0]), context=tf.constant(texts[1]))
  return Side(name, predict)


def ort_side(hf_dir: str, work_dir: str, config, max_seq_length: int):
  """ONNX Runtime float32 on the fused export of the same weights (module docstring)."""
  import onnxruntime
  import torch
  import transformers
  from onnxruntime.transformers import optimizer
  from bench.serving.inference.side import Side
  tokenizer = transformers.ElectraTokenizerFast.from_pretrained(hf_dir)
  names = ("input_ids", "attention_mask", "token_type_ids")

  def encode(texts, framework):
    return tokenizer(texts[0], texts[1], truncation="only_second", max_length=max_seq_length,
                     stride=max_seq_length - DOC_STRIDE - MAX_QUERY_LENGTH,
                     return_overflowing_tokens=True, padding="longest",
                     return_tensors=framework)
  fused = os.path.join(work_dir, "model_fused.onnx")
  if not os.path.exists(fused):
    model = transformers.ElectraForQuestionAnswering.from_pretrained(hf_dir).eval()
    example = encode([["who?"], ["john ate the cake"]], "pt")
    raw = os.path.join(work_dir, "model.onnx")
    axes = {name: {0: "windows", 1: "length"} for name in names}
    torch.onnx.export(model, tuple(example[k] for k in names), raw, input_names=list(names),
                      output_names=["start_logits", "end_logits"], dynamic_axes=axes,
                      opset_version=17, dynamo=False)
    optimized = optimizer.optimize_model(raw, model_type="bert",
                                         num_heads=config.num_attention_heads,
                                         hidden_size=config.hidden_size)
    optimized.save_model_to_file(fused + ".tmp")
    os.replace(fused + ".tmp", fused)
    os.remove(raw)
  session = onnxruntime.InferenceSession(fused, providers=["CPUExecutionProvider"])

  def predict(texts):
    features = encode(texts, "np")
    return session.run(None, {k: features[k] for k in names})
  return Side("ONNX Runtime float32 (logits only)", predict)


def litert_side(model, path: str, cut: bool, name: str):
  """`LiteRTModel` on the model's float32 `.tflite` (exported once to `path`); with cut
  False the file runs the windows padded to max_seq_length, as before the cut."""
  import electra_tf2
  from bench.serving.inference.side import Side
  if not os.path.exists(path):
    model.export_litert(path)
  lite = electra_tf2.LiteRTModel(path)
  if not cut:
    lite._answerer.min_length = model.max_seq_length  # pylint: disable=protected-access
  return Side(name, lambda texts: lite.predict(tuple(texts), batch_size=len(texts[0])))


def padding_share(model, texts, batch_size: int) -> float:
  """The share of pad rows in the windows of `texts` cut into batches."""
  import tensorflow as tf
  real = total = 0
  for i in range(0, len(texts[0]), batch_size):
    mask = model.windows(tf.constant(texts[0][i:i + batch_size]),
                         tf.constant(texts[1][i:i + batch_size])).features["input_mask"]
    real, total = real + int(tf.reduce_sum(mask)), total + int(tf.size(mask))
  return 1.0 - real / total


def run_model(shape: str, args):
  import electra_tf2
  from bench.serving.inference import timing
  hf_dir = random_answerer(shape, os.path.join(args.data_dir, "vocab", "vocab.txt"),
                           os.path.join(args.work_dir, "models", shape))
  work = os.path.join(args.work_dir, "sides", f"{shape}_{args.max_seq_length}_{args.head}")
  os.makedirs(work, exist_ok=True)
  model = electra_tf2.QuestionAnswerer.from_pretrained(
      hf_dir, max_seq_length=args.max_seq_length, max_query_length=MAX_QUERY_LENGTH,
      doc_stride=DOC_STRIDE, head=args.head)
  sides = {"ort_fp32": ort_side(hf_dir, work, model.bert_config, args.max_seq_length),
           "savedmodel": saved_model_side(model, os.path.join(work, "savedmodel"), True,
                                          "ours: SavedModel (skip_padding)"),
           "padded": saved_model_side(model, os.path.join(work, "savedmodel_padded"), False,
                                      "ours: SavedModel, padded windows")}
  if args.litert:
    tflite = os.path.join(work, "qa.tflite")
    sides["litert"] = litert_side(model, tflite, True, "ours: .tflite float32, LiteRTModel")
    sides["litert_padded"] = litert_side(model, tflite, False,
                                         "ours: .tflite float32, padded windows")
  latency = squad_questions(args.data_dir, args.questions)
  throughput = squad_questions(args.data_dir, args.throughput_questions)
  padding = {"batch 1": padding_share(model, latency, 1),
             f"batch {args.batch_size}": padding_share(model, throughput, args.batch_size)}
  log(f"{shape}: padding share of the windows' rows "
      + ", ".join(f"{k} {100 * v:.0f}%" for k, v in padding.items()), "qa")
  answers = {n: {k: np.asarray(v) for k, v in sides[n].predict(throughput).items()}
             for n in sides if n != "ort_fp32"}
  reference = answers["padded"]
  equal = {n: int(np.sum(a["answer_text"] == reference["answer_text"]))
           for n, a in answers.items()}
  score_diff = {n: float(np.max(np.abs(a["score"] - reference["score"])))
                for n, a in answers.items()}
  log(f"{shape}: answers equal to the padded SavedModel's " + ", ".join(
      f"{n} {equal[n]}/{len(throughput[0])} (score {score_diff[n]:.1e})" for n in answers), "qa")
  load = os.getloadavg()[0]
  timings = timing.alternate(sides, latency, throughput, args.batch_size, args.rounds,
                             log=lambda m: log(m, "qa"))
  parts = parts_ms(model, latency, args.rounds) if args.parts else None
  if parts:
    log(f"{shape}: batch-1 p50 ms by part " + ", ".join(f"{k} {v:.1f}" for k, v in parts.items()),
        "qa")
  return {"model": shape, "head": args.head, "max_seq_length": args.max_seq_length,
          "parts_ms": parts,
          "batch_size": args.batch_size, "padding_share": padding,
          "answers_equal": equal, "questions": len(throughput[0]), "max_score_diff": score_diff,
          "load": [load, os.getloadavg()[0]],
          "sides": {n: {"p50_ms": t.p(50), "p95_ms": t.p(95), "rate": t.rate}
                    for n, t in timings.items()}}


def parts_ms(model, texts, rounds: int) -> dict:
  """Batch-1 p50 ms of the SavedModel's parts, each its own tf.function of the same model:
  the windows (tokenizer included), the encoder on the real tokens, and the whole call;
  the head with the answer search and answer text is the difference."""
  import time
  import tensorflow as tf
  strings = tf.TensorSpec([None], tf.string)
  windows = tf.function(lambda q, c: model._cut_windows(model.windows(q, c).features),  # pylint: disable=protected-access
                        input_signature=[strings, strings])
  encode = tf.function(lambda features: model.encode(features, skip_padding=True))
  whole = tf.function(model.serve, input_signature=[strings, strings])
  times = {"windows": [], "encoder": [], "whole": []}
  for _ in range(rounds + 1):  # the first round traces
    for question, context in zip(*texts):
      q, c = tf.constant([question]), tf.constant([context])
      start = time.perf_counter()
      features = windows(q, c)
      times["windows"].append(time.perf_counter() - start)
      start = time.perf_counter()
      encode(features).numpy()
      times["encoder"].append(time.perf_counter() - start)
      start = time.perf_counter()
      whole(q, c)
      times["whole"].append(time.perf_counter() - start)
  n = len(texts[0])
  p50 = {k: 1e3 * float(np.median(v[n:])) for k, v in times.items()}
  p50["head, answer search, text"] = p50["whole"] - p50["windows"] - p50["encoder"]
  return p50


def table(records) -> str:
  lines = ["| model | head | side | batch-1 p50 ms | vs ORT | vs padded | questions/s @batch | "
           "vs ORT | vs padded | load |", "|---" * 10 + "|"]
  for r in records:
    ort, padded = r["sides"]["ort_fp32"], r["sides"]["padded"]
    for name, s in r["sides"].items():
      lines.append(
          f"| {r['model']} | {r['head']} | {name} | {s['p50_ms']:.1f} | {ort['p50_ms'] / s['p50_ms']:.2f}x | "
          f"{padded['p50_ms'] / s['p50_ms']:.2f}x | {s['rate']:.1f} | "
          f"{s['rate'] / ort['rate']:.2f}x | {s['rate'] / padded['rate']:.2f}x | "
          f"{r['load'][0]:.1f}-{r['load'][1]:.1f} |")
  return "\n".join(lines)


def main(argv=None) -> None:
  parser = script_parser(__doc__)
  parser.add_argument("--models", default="electra_small,electra_base")
  parser.add_argument("--questions", type=int, default=40, help="batch-1 calls per round")
  parser.add_argument("--throughput-questions", type=int, default=64)
  parser.add_argument("--batch-size", type=int, default=8)
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--max-seq-length", type=int, default=512)
  parser.add_argument("--head", default="hf", choices=("hf", "official"),
                      help="ours: the checkpoint's `qa_outputs` (as the anchor's), or the "
                           "official joint head (beam 20, answerability; random weights)")
  parser.add_argument("--data-dir", default=SHARED_DATA)
  parser.add_argument("--work-dir", default="/tmp/qa_server")
  parser.add_argument("--output", default=None, help="JSON lines of the results")
  parser.add_argument("--litert", action="store_true",
                      help="also the float32 .tflite through LiteRTModel, cut and padded")
  parser.add_argument("--parts", action="store_true",
                      help="also time the windows, the encoder and the rest apart (batch 1)")
  args = parser.parse_args(argv)
  if not os.path.exists(os.path.join(args.data_dir, "squad", "dev-v1.1.json")):
    raise SystemExit(f"--data-dir {args.data_dir}: no squad/dev-v1.1.json there; pass the "
                     "shared data directory")
  records = []
  for shape in args.models.split(","):
    records.append(run_model(shape, args))
    append_json(args.output, records[-1])
  print(table(records))


if __name__ == "__main__":
  main()
