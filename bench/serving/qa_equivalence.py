r"""QuestionAnswerer vs run_finetuning.py on whole SQuAD dev sets: equal answer strings?

  PYTHONPATH=$PWD python -m bench.serving.qa_equivalence --shared ../shared/data --work-dir /tmp/qa_eq

For SQuAD 1.1 (`squadv1`: trained on the first train article, evaluated on all of
dev-v1.1.json) and SQuAD 2.0 (`squad`: the 626-question dev subset for both), a
tiny random-init model is fine-tuned by run_finetuning.py for a few steps with
small windows (64 WordPieces, stride 32: most contexts need several); then
QuestionAnswerer.from_pretrained(its directory) predicts every dev question, in
Keras and through its SavedModel, and the answers are compared with the
runner's predictions file (SQuAD 2.0: the best span, `span_text`, and the null
odds). Prints one markdown row per task (docs/keras.md). With --litert, the model's
`.tflite` files (float32 and dynamic-int8, `export_litert`) answer the same questions
through `LiteRTModel`: exact agreement with the SavedModel's answers and the EM/F1 of
both (docs/deploy.md).
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
import tensorflow as tf

import electra_tf2
from electra_tf2.training import finetuning as runner
from electra_tf2.tasks import qa
from electra_tf2.tasks.config import resolve_finetuning_config
from bench.common import script_parser

FILES = {"squadv1": ("squad/train-v1.1.first1article.json", "squad/dev-v1.1.json"),
         "squad": ("squad/dev-v2.0.subset-Normans-Computational_complexity_theory.json",) * 2}
TINY = {"init_checkpoint": None, "vocab_size": 30522, "embedding_size": 16,
        "model_hparam_overrides": {"hidden_size": 32, "num_hidden_layers": 2,
                                   "num_attention_heads": 2, "intermediate_size": 64},
        "max_seq_length": 64, "max_query_length": 16, "doc_stride": 32, "beam_size": 8,
        "train_batch_size": 16, "eval_batch_size": 64, "learning_rate": 3e-3,
        "num_train_epochs": 1.0, "iterations_per_loop": 10, "max_examples_per_split": None}


def run(task: str, shared: str, work_dir: str, max_questions: int, litert: bool = False,
        litert_rows=None, hparams=None, train_file=None):
  data_dir = os.path.join(work_dir, task)
  os.makedirs(os.path.join(data_dir, "finetuning_data", task), exist_ok=True)
  links = {os.path.join(data_dir, "vocab.txt"): os.path.join(shared, "vocab", "vocab.txt")}
  sources = (train_file or FILES[task][0], FILES[task][1])
  for split, source in zip(("train", "dev"), sources):
    links[os.path.join(data_dir, "finetuning_data", task, f"{split}.json")] = \
        os.path.join(shared, source)
  for link, target in links.items():
    if not os.path.exists(link):
      os.symlink(os.path.abspath(target), link)
  values = dict(TINY, **(hparams or {}), max_examples_per_split=max_questions or None,
                model_dir=os.path.join(data_dir, "model"))
  config = resolve_finetuning_config("tiny", data_dir, values, task)
  start = time.time()
  runner.run_finetuning(config)
  runner_seconds = time.time() - start
  with open(config.qa_preds_path(task)) as f:
    preds = json.load(f)
  examples = qa.read_squad(os.path.join(data_dir, "finetuning_data", task, "dev.json"),
                           split="dev")[:len(preds)]
  inputs = ([e.question_text for e in examples], [e.context for e in examples])
  start = time.time()
  model = electra_tf2.QuestionAnswerer.from_pretrained(config.trial_model_dir(1))
  out = model.predict(inputs, batch_size=64, verbose=0)
  keras_seconds = time.time() - start
  key = "span_text" if task == "squad" else "answer_text"
  expected = [preds[e.example_id] for e in examples]
  equal = sum(a == b for a, b in zip(out[key], expected))
  path = model.export_saved_model(os.path.join(data_dir, "savedmodel"))
  import tensorflow_text  # noqa: F401  pylint: disable=unused-import,import-outside-toplevel
  serve = tf.saved_model.load(path).signatures["serving_default"]
  served = []
  for i in range(0, len(examples), 64):
    batch = serve(question=tf.constant(inputs[0][i:i + 64]),
                  context=tf.constant(inputs[1][i:i + 64]))
    served += [t.decode("utf-8") for t in batch[key].numpy()]
  saved_equal = sum(a == b for a, b in zip(served, expected))
  odds = "-"
  if task == "squad":
    with open(config.qa_na_path(task)) as f:
      na = json.load(f)
    odds = f"{np.max(np.abs(out['null_score_diff'] - [na[e.example_id] for e in examples])):.1e}"
  windows = sum(len(task_windows) for task_windows in _windows(config, task, examples))
  print(f"{task}: runner {runner_seconds:.0f}s, Keras predict {keras_seconds:.0f}s, "
        f"{windows} windows, {len(set(expected))} distinct answers", flush=True)
  row = (f"| {os.path.basename(FILES[task][1])} ({task}) | {len(examples)} ({windows} windows) "
         f"| predict {equal}/{len(examples)}, SavedModel {saved_equal}/{len(examples)} "
         f"| {odds} |")
  if litert and task == "squadv1":
    litert_rows.extend(_litert_rows(task, model, examples, inputs, served, key,
                                    os.path.join(data_dir, "finetuning_data", task, "dev.json"),
                                    data_dir))
  return row


def _litert_rows(task, model, examples, inputs, served, key, dev_path, work_dir):
  """Per quantization: the `.tflite` answers (LiteRTModel) against the SavedModel's, exact
  string agreement, and SQuAD 1.1's EM/F1 of both (tasks/qa_eval.py)."""
  from electra_tf2.tasks import qa_eval  # pylint: disable=import-outside-toplevel
  with open(dev_path, encoding="utf-8") as f:
    dataset = json.load(f)["data"]
  ids = [e.example_id for e in examples]
  score = lambda answers: qa_eval.squad_v1_evaluate(dataset, dict(zip(ids, answers)), set(ids))
  base = score(served)
  rows = []
  for quantize in ("none", "dynamic-int8"):
    path = model.export_litert(os.path.join(work_dir, f"qa_{quantize}.tflite"), quantize)
    start = time.time()
    out = electra_tf2.LiteRTModel(path).predict(inputs, batch_size=64)
    seconds = time.time() - start
    answers = [t.decode("utf-8") for t in out[key]]
    same = sum(a == b for a, b in zip(answers, served))
    ours = score(answers)
    rows.append(f"| {task} | {quantize} | {os.path.getsize(path) / 2**20:.1f} MiB | "
                f"{same}/{len(served)} ({100 * same / len(served):.2f}%) | "
                f"{ours['exact_match']:.2f} / {ours['f1']:.2f} | "
                f"{base['exact_match']:.2f} / {base['f1']:.2f} | {seconds:.0f} s |")
  return rows


def _windows(config, task, examples):
  from electra_tf2.tasks.task_builder import get_tasks  # pylint: disable=import-outside-toplevel
  qa_task, = get_tasks(config)
  qa_task.prepare(examples)
  return [qa_task.featurize(e, False) for e in examples]


def main():
  parser = script_parser(__doc__)
  parser.add_argument("--shared", default="../shared/data", help="the shared data directory")
  parser.add_argument("--work-dir", required=True)
  parser.add_argument("--tasks", default="squadv1,squad")
  parser.add_argument("--max-questions", type=int, default=0, help="0: every dev question")
  parser.add_argument("--litert", action="store_true",
                      help="also the .tflite (float32, dynamic-int8) answers against the "
                           "SavedModel's, with SQuAD 1.1 EM/F1 (squadv1)")
  parser.add_argument("--hparams", default="{}",
                      help="JSON over the tiny model's settings (TINY), e.g. a larger model")
  parser.add_argument("--train-file", default=None,
                      help="the training set, relative to --shared (default: FILES' first)")
  args = parser.parse_args()
  litert_rows = []
  rows = [run(task, args.shared, args.work_dir, args.max_questions, args.litert, litert_rows,
              json.loads(args.hparams), args.train_file)
          for task in args.tasks.split(",")]
  print("\n".join(rows))
  if litert_rows:
    print("\n| task | quantize | file | answers equal to the SavedModel's | EM / F1 | "
          "SavedModel EM / F1 | LiteRTModel.predict |\n|---|---|---|---|---|---|---|")
    print("\n".join(litert_rows))


if __name__ == "__main__":
  main()
