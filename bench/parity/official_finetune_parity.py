"""Fine-tuning parity with the official run_finetuning.py, on the same pre-trained weights.

  python -m bench.parity.official_finetune_parity --official-dir ELECTRA_TREE \\
      --pretrained DIR/models/electra_small --work-dir /tmp/ftparity \\
      [--stages setup,equivalence,outcomes,report] [--seeds 0,1,2,3,4] [--tasks rte,mrpc]

DIR/models/electra_small is one of our pre-trained model directories (run_pretraining.py);
`setup` converts it with `electra_tf2.conversion.convert to-official` for the official side. The
official code runs unmodified under TF 2.20 in a `tf.compat.v1` graph and session, in a
subprocess (parity.shims.official_env: the official tree first on its PYTHONPATH), with
the shims of bench/parity/curves/shims.py plus stand-ins for the `tf.estimator` names that
`model_fn_builder` touches
(`ModeKeys`, `tpu.TPUEstimatorSpec`): its `model_fn` builds `FinetuningModel`, loads the
pre-trained weights (`init_from_checkpoint`) and builds the optimizer (`create_optimizer`)
itself.

Stages (each skips work that is done, so a rerun resumes):
  setup        <work-dir>/data: finetuning_data/ links to ../shared (GLUE, SQuAD 1.1, CoNLL-2000),
               models/ours (a link to --pretrained), models/official (to-official + vocab).
  equivalence  per task type (MRPC with layer-wise decay, STS-B, SQuAD 1.1 with the answerable
               classifier, chunking): our initial model (pre-trained encoder + our head init)
               and 8 of our training batches, dropout off, fed to both codes: losses, the
               learning rate of every layer group and the weights after 8 steps. Ours also runs
               with fix_layerwise_lr_off_by_one (rates compared with the official ones times
               1/decay below the heads).
  outcomes     --tasks fine-tuned with both codes, --seeds each, full training sets, the
               official hparams of the pre-trained size; dev metric of every run.
  report       <work-dir>/finetune_parity.json, finetune_parity.png, tables printed (markdown).

Not part of CI; results and command in docs/parity.md.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import types
from typing import Any, Dict

from bench.common import REPO, add_stages_flag, bench_command, log
from bench.parity.curves.official import (_capture_learning_rate, official_parser,
                                          parse_official_args)
from bench.parity.curves.report import effect, spread
from bench.parity.curves.shims import install_official_shims, official_env

NO_DROPOUT = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
GLUE = {"mrpc": "MRPC", "rte": "RTE", "sts": "STS-B", "cola": "CoLA", "sst": "SST-2"}
SQUAD = {"train.json": "train-v1.1.first1article.json", "dev.json": "dev-v1.1.json"}
# Equivalence cases: task -> hparams (both codes). Short sequences keep it fast.
EQUIVALENCE = {"mrpc": {"max_seq_length": 64}, "sts": {"max_seq_length": 64},
               "squadv1": {"max_seq_length": 128, "doc_stride": 64, "max_query_length": 32},
               "chunk": {"max_seq_length": 64}}
EQ_BATCH, EQ_STEPS, EQ_SCHEDULE = 8, 8, 80  # batch, steps run, num_train_steps of the schedule
# The official scorers (finetune/classification/classification_tasks.py:237-375).
METRIC = {"rte": "accuracy", "mrpc": "accuracy", "sst": "accuracy", "cola": "mcc", "sts": "pearson"}


# ---------------------------------------------------------------------------
# The official side (a subprocess)
# ---------------------------------------------------------------------------


class _Overlay:
  """A module with some attributes replaced (`nn.dropout` for the heads' fixed dropout)."""

  def __init__(self, base, **replaced):
    self._base = base
    self.__dict__.update(replaced)

  def __getattr__(self, name):
    return getattr(self._base, name)


def _estimator_stand_ins(tf1) -> None:
  """The `tf.estimator` names model_fn_builder touches; the spec is a plain namespace."""
  tf1.estimator.ModeKeys = types.SimpleNamespace(TRAIN="train", PREDICT="infer")
  tf1.estimator.tpu = types.SimpleNamespace(
      TPUEstimatorSpec=lambda **kwargs: types.SimpleNamespace(**kwargs))


def official_worker(spec: Dict[str, Any]) -> None:
  """Runs in a subprocess: "steps" (equivalence) or "train_eval" (outcomes)."""
  tf1 = install_official_shims(spec["official_dir"])
  _estimator_stand_ins(tf1)
  import configure_finetuning  # pylint: disable=import-error
  import run_finetuning  # pylint: disable=import-error
  from finetune import task_builder  # pylint: disable=import-error
  from finetune.classification import classification_tasks  # pylint: disable=import-error
  from model import optimization  # pylint: disable=import-error
  config = configure_finetuning.FinetuningConfig("official", spec["data_dir"], **spec["hparams"])
  tasks = task_builder.get_tasks(config)
  if spec["mode"] == "steps":
    classification_tasks.tf = _Overlay(tf1, nn=_Overlay(tf1.nn, dropout=lambda x, **_: x))
    _official_steps(tf1, spec, config, tasks, run_finetuning, optimization)
  else:
    _official_train_eval(tf1, spec, config, tasks, run_finetuning)


def _official_steps(tf1, spec, config, tasks, run_finetuning, optimization) -> None:
  import numpy as np
  batches = dict(np.load(spec["batches"]))
  initial = dict(np.load(spec["initial"]))
  graph = tf1.Graph()
  with graph.as_default():
    features = {k: tf1.placeholder(tf1.as_dtype(v.dtype), v.shape[1:], k)
                for k, v in batches.items()}
    learning_rate = _capture_learning_rate(optimization)
    model_fn = run_finetuning.model_fn_builder(config, tasks, spec["num_train_steps"])
    output = model_fn(features, None, "train", {})
    variables = {v.op.name: v for v in tf1.trainable_variables()}
    heads = {n: v for n, v in variables.items() if n.startswith("task_specific/")}
    with tf1.Session(graph=graph) as sess:
      sess.run(tf1.global_variables_initializer())
      for name, variable in heads.items():
        variable.load(initial[f"start/{name}"], sess)
      start = sess.run(variables)
      losses, rates = [], []
      for step in range(spec["steps"]):
        feed = {features[k]: v[step] for k, v in batches.items()}
        # The rate fetched in the step's own run is the one its update applies: lr(k + 1),
        # as the global_step increment runs first (docs/parity.md, the pre-training bench).
        rate, loss, _ = sess.run([learning_rate["tensor"], output.loss, output.train_op], feed)
        rates.append({k: float(v) for k, v in rate.items()} if isinstance(rate, dict)
                     else {"": float(rate)})
        losses.append(float(loss))
      final = sess.run(variables)
  np.savez(spec["out"] + ".npz", **{f"start/{k}": v for k, v in start.items()},
           **{f"final/{k}": v for k, v in final.items()})
  with open(spec["out"] + ".json", "w", encoding="utf-8") as f:
    json.dump({"losses": losses, "rates": rates}, f)


def _official_train_eval(tf1, spec, config, tasks, run_finetuning) -> None:
  """Trains as ModelRunner.train (model_fn + the official input_fn), then evaluates dev as
  ModelRunner.evaluate_task (predict model_fn, the task's scorer)."""
  import random
  from finetune import preprocessing  # pylint: disable=import-error
  from util import utils  # pylint: disable=import-error
  random.seed(spec["seed"])  # the official example shuffle uses the global `random`
  preprocessor = preprocessing.Preprocessor(config, tasks)
  train_input_fn, steps = preprocessor.prepare_train()
  checkpoint = os.path.join(spec["model_dir"], "model.ckpt")
  if not os.path.exists(f"{checkpoint}-{steps}.index"):
    with tf1.Graph().as_default() as graph:
      tf1.set_random_seed(spec["seed"])
      features = tf1.data.make_one_shot_iterator(
          train_input_fn({"batch_size": config.train_batch_size})).get_next()
      output = run_finetuning.model_fn_builder(config, tasks, steps)(features, None, "train", {})
      saver = tf1.train.Saver()
      with tf1.Session(graph=graph) as sess:
        sess.run(tf1.global_variables_initializer())
        for step in range(steps):
          loss, _ = sess.run([output.loss, output.train_op])
          if (step + 1) % 100 == 0:
            log(f"official {spec['task']} seed {spec['seed']}: step {step + 1}/{steps} "
                f"loss {loss:.4f}")
        saver.save(sess, checkpoint, global_step=steps)
  config.init_checkpoint = f"{checkpoint}-{steps}"
  results = {}
  for task in tasks:
    predict_input_fn, _ = preprocessor.prepare_predict([task], "dev")
    with tf1.Graph().as_default() as graph:
      features = tf1.data.make_one_shot_iterator(
          predict_input_fn({"batch_size": config.eval_batch_size})).get_next()
      output = run_finetuning.model_fn_builder(config, tasks, steps)(features, None, "infer", {})
      scorer = task.get_scorer()
      with tf1.Session(graph=graph) as sess:
        sess.run(tf1.global_variables_initializer())
        while True:
          try:
            batch = sess.run(output.predictions)
          except tf1.errors.OutOfRangeError:
            break
          for i in range(len(batch["task_id"])):
            row = {k: v[i] for k, v in batch.items()}
            if row["task_id"] != len(tasks):
              scorer.update(utils.nest_dict(row, config.task_names)[task.name])
      results[task.name] = {k: float(v) for k, v in scorer.get_results()}
  with open(spec["out"], "w", encoding="utf-8") as f:
    json.dump({"steps": steps, "results": results}, f)


def run_official(args, spec: Dict[str, Any]) -> None:
  """`official_worker(spec)` in a fresh process: legacy Keras, the official tree importable."""
  spec = dict(spec, official_dir=os.path.abspath(args.official_dir))
  subprocess.run(bench_command(__spec__.name, "--official-worker", json.dumps(spec)),
                 check=True, env=official_env(args.official_dir), cwd=REPO)


# ---------------------------------------------------------------------------
# Setup
# ---------------------------------------------------------------------------


def _link(target: str, link: str) -> None:
  if not os.path.lexists(link):
    os.makedirs(os.path.dirname(link), exist_ok=True)
    os.symlink(os.path.abspath(target), link)


def stage_setup(args) -> None:
  from electra_tf2.conversion import convert
  from electra_tf2.utils.atomic_io import copy_file_atomic
  data, shared = args.data_dir, args.shared_data
  for task, folder in GLUE.items():
    _link(os.path.join(shared, "glue", folder), os.path.join(data, "finetuning_data", task))
  for name, source in SQUAD.items():
    _link(os.path.join(shared, "squad", source),
          os.path.join(data, "finetuning_data", "squadv1", name))
  for split, source in (("train", "train"), ("dev", "test"), ("test", "test")):
    _link(os.path.join(shared, "conll2000", f"{source}.txt"),
          os.path.join(data, "finetuning_data", "chunk", f"{split}.txt"))
  _link(args.pretrained, os.path.join(data, "models", "ours"))
  vocab = os.path.join(args.pretrained, "vocab.txt")
  if not os.path.exists(vocab):
    vocab = os.path.join(shared, "vocab", "vocab.txt")
  official = os.path.join(data, "models", "official")
  if not os.path.exists(os.path.join(official, "checkpoint")):
    convert.export_official_checkpoint(args.pretrained, official)
  for directory in (official, data):
    if not os.path.exists(os.path.join(directory, "vocab.txt")):
      copy_file_atomic(vocab, os.path.join(directory, "vocab.txt"))


def pretrained_shape(args) -> Dict[str, Any]:
  """The official hparams giving the encoder of --pretrained (model_size small + overrides)."""
  from electra_tf2.models.model_directory import load_pretraining_config
  config = load_pretraining_config(args.pretrained)
  bert = config.bert_config
  return {"model_size": "small", "embedding_size": config.resolved_embedding_size,
          "vocab_size": config.vocab_size,
          "model_hparam_overrides": {"hidden_size": bert.hidden_size,
                                     "num_hidden_layers": bert.num_hidden_layers,
                                     "num_attention_heads": bert.num_attention_heads,
                                     "intermediate_size": bert.intermediate_size}}


# ---------------------------------------------------------------------------
# Equivalence
# ---------------------------------------------------------------------------


def _our_steps(args, task: str, hparams: Dict[str, Any], fix: bool, out: str) -> None:
  """Our runner's model, optimizer and train loop on the first EQ_STEPS batches."""
  import numpy as np
  import tensorflow as tf
  from electra_tf2.tasks.config import resolve_finetuning_config
  from electra_tf2.training.finetuning import ModelRunner
  from electra_tf2.tasks.task_builder import get_tasks
  values = dict(hparams, task_names=[task], model_hparam_overrides=NO_DROPOUT,
                train_batch_size=EQ_BATCH, fix_layerwise_lr_off_by_one=fix,
                max_examples_per_split=200, model_dir=os.path.join(args.work_dir, "eq_models",
                                                                   task))
  config = resolve_finetuning_config("ours", args.data_dir, values)
  runner = ModelRunner(config, get_tasks(config), 1, tf.distribute.get_strategy())
  runner.load_pretrained()
  for head in runner.model.heads:
    if getattr(head, "dropout", None) is not None:
      head.dropout = None  # the official head's fixed 0.1 is routed to identity too
  path, _ = runner.preprocessor.prepare_train()
  batches = list(runner.preprocessor.dataset(path, False, EQ_BATCH).take(EQ_STEPS))
  stacked = {k: np.stack([b[k].numpy() for b in batches]) for k in batches[0]}
  names = runner.model.variable_map()
  start = {n: v.numpy() for n, v in names.items()}
  optimizer, base = runner._make_optimizer(EQ_SCHEDULE)  # pylint: disable=protected-access
  base.iterations.assign(1)  # the official update of step k applies lr(k + 1): see above
  step = tf.Variable(0, dtype=tf.int64)
  loop = runner._build_train_loop(optimizer, EQ_BATCH, step)  # pylint: disable=protected-access
  iterator = iter(tf.data.Dataset.from_tensor_slices(stacked))
  by_path = {v.path: n for n, v in names.items()}
  official_names = [by_path[v.path] for v in runner.model.trainable_variables]
  losses, rates = [], []
  for _ in range(EQ_STEPS):
    rate = float(base.learning_rate)
    multipliers = base._lr_multipliers  # pylint: disable=protected-access
    rates.append({n: rate * m for n, m in zip(official_names, multipliers)})
    losses.append(float(loop(iterator, tf.constant(1))["loss"]))
  np.savez(out + ".npz", **{f"start/{k}": v for k, v in start.items()},
           **{f"final/{k}": v.numpy() for k, v in names.items()})
  np.savez(out + "_batches.npz", **stacked)
  with open(out + ".json", "w", encoding="utf-8") as f:
    json.dump({"losses": losses, "rates": rates, "layerwise_lr_decay": config.layerwise_lr_decay,
               "learning_rate": config.learning_rate}, f)


def _group_rates(ours: Dict[str, float], official: Dict[str, float], decay: float,
                 fix: bool) -> Dict[str, float]:
  """The largest relative difference of our rate from the official one, per official group."""
  worst: Dict[str, float] = {}
  for name, rate in ours.items():
    keys = [k for k in official if k in name] or [""]
    expected = official[keys[0]]
    if fix and keys[0] and keys[0] != "task_specific/":
      expected /= decay  # the fix: one power of decay fewer below the heads
    worst[keys[0]] = max(worst.get(keys[0], 0.0), abs(rate - expected) / max(expected, 1e-30))
  return worst


def compare_steps(ours: str, official: str, fix: bool) -> Dict[str, Any]:
  import numpy as np
  a, b = json.load(open(ours + ".json")), json.load(open(official + ".json"))
  decay = a["layerwise_lr_decay"]
  rate_errors = [_group_rates(r, s, decay, fix) for r, s in zip(a["rates"], b["rates"])]
  result = {"groups": sorted(rate_errors[0]),
            "max_rate_rel_diff": max(max(e.values()) for e in rate_errors)}
  if fix:
    return result
  wa, wb = np.load(ours + ".npz"), np.load(official + ".npz")
  names = sorted(k[len("final/"):] for k in wa.files if k.startswith("final/"))
  start = max(float(np.max(np.abs(wa[f"start/{n}"] - wb[f"start/{n}"]))) for n in names)
  update_diff = max(float(np.max(np.abs((wa[f"final/{n}"] - wa[f"start/{n}"])
                                        - (wb[f"final/{n}"] - wb[f"start/{n}"])))) for n in names)
  update_size = max(float(np.max(np.abs(wb[f"final/{n}"] - wb[f"start/{n}"]))) for n in names)
  losses = np.array(a["losses"]), np.array(b["losses"])
  result.update(losses_ours=a["losses"], losses_official=b["losses"],
                max_loss_rel_diff=float(np.max(np.abs(losses[0] - losses[1]) / np.abs(losses[1]))),
                max_start_diff=start, max_update_diff=update_diff, max_update=update_size,
                n_variables=len(names))
  return result


def stage_equivalence(args) -> Dict[str, Any]:
  out_dir = os.path.join(args.work_dir, "equivalence")
  os.makedirs(out_dir, exist_ok=True)
  results = {}
  for task, hparams in EQUIVALENCE.items():
    ours, fixed, official = (os.path.join(out_dir, f"{task}_{side}")
                             for side in ("ours", "ours_fix", "official"))
    for path, fix in ((ours, False), (fixed, True)):
      if not os.path.exists(path + ".json"):
        _our_steps(args, task, hparams, fix, path)
    if not os.path.exists(official + ".json"):
      values = dict(pretrained_shape(args), **hparams, task_names=[task],
                    init_checkpoint=os.path.join(args.data_dir, "models", "official"))
      values["model_hparam_overrides"] = dict(values["model_hparam_overrides"], **NO_DROPOUT)
      run_official(args, {"mode": "steps", "data_dir": args.data_dir, "hparams": values,
                          "batches": ours + "_batches.npz", "initial": ours + ".npz",
                          "num_train_steps": EQ_SCHEDULE, "steps": EQ_STEPS, "out": official})
    results[task] = {"official_layerwise": compare_steps(ours, official, False),
                     "fix_layerwise_lr_off_by_one": compare_steps(fixed, official, True)}
    log(f"{task}: {json.dumps(results[task]['official_layerwise'])[:400]}")
  return results


# ---------------------------------------------------------------------------
# Outcomes
# ---------------------------------------------------------------------------


def outcome_hparams(args, task: str) -> Dict[str, Any]:
  return dict(json.loads(args.hparams), task_names=[task])


def stage_outcomes(args) -> Dict[str, Any]:
  out_dir = os.path.join(args.work_dir, "outcomes")
  os.makedirs(out_dir, exist_ok=True)
  results: Dict[str, Any] = {}
  for seed in args.seeds:  # seeds outermost: a cut-short study has whole seeds of each task
    for task in args.tasks:
      for side in args.sides:
        out = os.path.join(out_dir, f"{task}_{side}_seed{seed}.json")
        if not os.path.exists(out):
          log(f"outcomes: {task} {side} seed {seed}")
          (_train_ours if side == "ours" else _train_official)(args, task, seed, out)
  for task in args.tasks:  # what every process has finished, also the other side's
    for side in ("ours", "official"):
      for seed in args.seeds:
        out = os.path.join(out_dir, f"{task}_{side}_seed{seed}.json")
        if os.path.exists(out):
          results.setdefault(task, {}).setdefault(side, []).append(
              json.load(open(out))["results"][task])
  return results


def _train_ours(args, task: str, seed: int, out: str) -> None:
  model_dir = os.path.join(args.work_dir, "ft_models", f"{task}_ours_seed{seed}")
  results_json = model_dir + "_results.json"
  hparams = dict(outcome_hparams(args, task), seed=seed, model_dir=model_dir,
                 results_json=results_json, results_txt=model_dir + "_results.txt")
  subprocess.run([sys.executable, "run_finetuning.py", "--data-dir", args.data_dir,
                  "--model-name", "ours", "--hparams", json.dumps(hparams)], check=True,
                 cwd=REPO)
  trials = json.load(open(results_json))["trials"]
  from electra_tf2.utils.atomic_io import write_json_atomic
  write_json_atomic(out, {"results": trials[-1]["results"]})


def _train_official(args, task: str, seed: int, out: str) -> None:
  values = dict(pretrained_shape(args), **outcome_hparams(args, task),
                init_checkpoint=os.path.join(args.data_dir, "models", "official"))
  run_official(args, {"mode": "train_eval", "data_dir": args.data_dir, "hparams": values,
                      "task": task, "seed": seed, "out": out,
                      "model_dir": os.path.join(args.work_dir, "ft_models",
                                                f"{task}_official_seed{seed}")})


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------


def report(args, equivalence: Dict[str, Any], outcomes: Dict[str, Any]) -> None:
  from electra_tf2.utils.atomic_io import write_json_atomic
  log("| task | steps | max loss rel. diff | max update diff / max update | LR groups | "
      "max LR rel. diff (official off-by-one) | (fix) |")
  log("|---|---|---|---|---|---|---|")
  for task, r in equivalence.items():
    o, f = r["official_layerwise"], r["fix_layerwise_lr_off_by_one"]
    log(f"| {task} | {EQ_STEPS} | {o['max_loss_rel_diff']:.1e} | {o['max_update_diff']:.1e} / "
        f"{o['max_update']:.1e} | {len(o['groups'])} | {o['max_rate_rel_diff']:.1e} | "
        f"{f['max_rate_rel_diff']:.1e} |")
  summary = {}
  log("| dev metric | official mean [min, max] | ours mean [min, max] | "
      "(mean ours - mean official) / official SD | ours in the official range |")
  log("|---|---|---|---|---|")
  for task, sides in outcomes.items():
    for metric in (METRIC[task], "loss"):  # the dev loss too: it moves where the metric is flat
      ours = [r[metric] for r in sides.get("ours", [])]
      official = [r[metric] for r in sides.get("official", [])]
      if len(official) < 2 or not ours:
        continue
      low, high = min(official), max(official)
      key = f"{task} dev {metric}"
      summary[key] = {"ours": ours, "official": official,
                      "effect_in_official_sd": effect(ours, official),
                      "ours_in_official_range": sum(low <= v <= high for v in ours)}
      log(f"| {key} | {spread(official)} | {spread(ours)} | "
          f"{summary[key]['effect_in_official_sd']:+.2f} | "
          f"{summary[key]['ours_in_official_range']}/{len(ours)} |")
  write_json_atomic(os.path.join(args.work_dir, "finetune_parity.json"),
                    {"equivalence": equivalence, "outcomes": summary, "hparams": args.hparams})
  if summary:
    plot(args, summary)


def plot(args, summary: Dict[str, Any]) -> None:
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  fig, axes = plt.subplots(1, len(summary), figsize=(3.2 * len(summary), 3.3), squeeze=False)
  for ax, (task, s) in zip(axes[0], summary.items()):
    for x, (side, values) in enumerate((("official", s["official"]), ("ours", s["ours"]))):
      ax.scatter([x] * len(values), values, alpha=0.7, label=side)
      ax.hlines(statistics.mean(values), x - 0.2, x + 0.2, color="black")
    ax.set_xticks([0, 1], ["official", "ours"])
    ax.set_xlim(-0.6, 1.6)
    ax.set_title(f"{task} ({len(s['official'])} / {len(s['ours'])} seeds)", fontsize=10)
  fig.tight_layout()
  fig.savefig(os.path.join(args.work_dir, "finetune_parity.png"), dpi=110)


def main(argv=None) -> int:
  parser = official_parser(__doc__, work_dir="/tmp/electra_finetune_parity", seeds="0,1,2,3,4")
  parser.add_argument("--pretrained", help="our pre-trained model directory")
  parser.add_argument("--tasks", default="rte,mrpc")
  parser.add_argument("--sides", default="ours,official",
                      help="the sides the outcomes stage trains (two processes can share a study)")
  parser.add_argument("--hparams", default="{}",
                      help="JSON over the official defaults for the outcome runs (both codes)")
  add_stages_flag(parser, ["setup", "equivalence", "outcomes", "report"])
  args = parse_official_args(parser, argv, "run_finetuning.py", official_worker)
  if args is None:
    return 0
  if not args.pretrained or not os.path.exists(os.path.join(args.pretrained,
                                                            "pretrain_config.json")):
    parser.error("--pretrained must be a pre-trained model directory (pretrain_config.json)")
  args.seeds = [int(s) for s in args.seeds.split(",")]
  args.tasks = args.tasks.split(",")
  args.sides = args.sides.split(",")
  args.data_dir = os.path.join(args.work_dir, "data")
  stages = args.stages
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  if "setup" in stages:
    stage_setup(args)
  equivalence = stage_equivalence(args) if "equivalence" in stages else {}
  if "report" in stages and "outcomes" not in stages:
    args.sides = []  # the report reads the runs that are done, trains none
  outcomes = stage_outcomes(args) if {"outcomes", "report"} & set(stages) else {}
  if "report" in stages:
    report(args, equivalence, outcomes)
  return 0


if __name__ == "__main__":
  sys.exit(main())
