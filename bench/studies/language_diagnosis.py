"""Why a pre-trained start does no better than random init in bench/studies/language_study.py.

  python -m bench.studies.language_diagnosis --work-dir /tmp/language_study \\
      [--stages tokens,weights,discriminator,probe,finetune] [--kinds wordpiece,sentencepiece]
      [--variants pretrained:3e-4:0.8:3:2000,random:3e-4:0.8:3:2000,...]

Reads a finished study's work dir (its vocabularies, TFRecords, pre-trained models and
task/) and checks, per vocabulary kind, cheapest first (docs/languages.md "Why"):
- tokens: the ids TextClassifier computes from the task's texts (in the graph, what `fit`
  and `predict` use; and `featurize`, the host path) equal those of the tokenizer
  `build-data` used (the TFRecords' ids are matched back to corpus lines too);
- weights: every encoder weight of TextClassifier.from_pretrained equals a distinct tensor of
  the checkpoint's `model/discriminator` (read through the checkpoint's object graph);
- discriminator: on the test reviews (never in the pre-training corpus), the pre-trained
  and an untrained pre-trainer's replaced-token detection (AUC on its own generator's
  replacements and on 15% uniform random ones) and generator MLM accuracy;
- probe: logistic regression (C by 3-fold CV) on frozen features of the training reviews,
  tested on the test reviews: the [CLS] state, the mean final state, the mean input
  embedding; [CLS] cosine across texts;
- finetune: the study's fine-tuning with other settings, test accuracy after every epoch:
  init (pretrained, random, pre_emb: only the embeddings pre-trained, pre_layers: only the
  layers), learning rate, layer-wise decay, epochs, training examples (the first N), and
  optionally the head's input (cls, or mean: the mean of the final states).
Results: one JSON line per measurement, appended to WORK_DIR/diagnosis.jsonl.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
from typing import Any, Dict, List

import numpy as np

from bench.common import add_stages_flag, append_json, log as common_log, script_parser
from bench.studies import language_study as study

STAGES = ("tokens", "weights", "discriminator", "probe", "finetune")
DEFAULT_VARIANTS = ("pretrained:3e-4:0.8:3:2000,random:3e-4:0.8:3:2000,"
                    "pretrained:1e-3:0.8:3:2000,random:1e-3:0.8:3:2000,"
                    "pretrained:3e-4:0:3:2000,random:3e-4:0:3:2000,"
                    "pretrained:3e-4:0.8:10:200,random:3e-4:0.8:10:200,"
                    "pre_emb:3e-4:0.8:10:200,pre_layers:3e-4:0.8:10:200")


def log(message: str) -> None:
  common_log(message, tag="diagnosis")


def task(args):
  return (study.read_tsv(os.path.join(args.work_dir, "task", "train.tsv")),
          study.read_tsv(os.path.join(args.work_dir, "task", "test.tsv")))


def data_tokenizer(args, kind: str):
  """The tokenizer `build-data` made the TFRecords with (its recorded settings)."""
  from electra_tf2.text.kinds import load_tokenizer
  data = study.kind_dir(args, kind)
  with open(os.path.join(data, "pretrain_tfrecords", "pretrain_data.info.json"),
            encoding="utf-8") as f:
    settings = json.load(f)["settings"]
  return load_tokenizer(os.path.join(data, study.VOCAB_FILES[kind]),
                        settings["do_lower_case"], settings["strip_accents"])


def mean_pooled_classifier():
  """A TextClassifier whose head reads the mean of the final states (padding masked out)
  instead of the [CLS] state."""
  import electra_tf2
  from keras import ops

  class MeanPooledClassifier(electra_tf2.TextClassifier):

    def call_features(self, features, training: bool = False):
      hidden = self.encode(features, training)  # [batch, seq_len, hidden]
      mask = ops.cast(features["input_mask"], hidden.dtype)[..., None]
      pooled = ops.sum(hidden * mask, 1, keepdims=True) / ops.sum(mask, 1, keepdims=True)
      return self.head(pooled, features, training=training)["logits"]

  return MeanPooledClassifier


def classifier(args, kind: str, init: str, max_seq_length: int = 64, pool: str = "cls"):
  """TextClassifier of the study's pre-trained model: its weights (`pretrained`), as
  initialised (`random`), or only its embeddings / only its layers pre-trained; its head
  on [CLS] (`pool` "cls") or on the mean of the final states ("mean")."""
  import electra_tf2
  from electra_tf2.models import sources
  options = {"num_classes": 2, "max_seq_length": max_seq_length}
  path = study.model_dir(args, kind)
  if pool not in ("cls", "mean"):
    raise ValueError(f"unknown pool {pool}: cls or mean")
  model_class = electra_tf2.TextClassifier if pool == "cls" else mean_pooled_classifier()
  if init == "pretrained":
    return model_class.from_pretrained(path, **options)
  model = model_class.from_source(sources.load_source(path), **options)
  model.build()
  if init in ("pre_emb", "pre_layers"):
    pretrained = electra_tf2.TextClassifier.from_pretrained(path, **options)
    for mine, theirs in zip(model.encoder.weights, pretrained.encoder.weights):
      if ("/embeddings/" in mine.path) == (init == "pre_emb"):
        mine.assign(theirs.numpy())
  elif init != "random":
    raise ValueError(f"unknown init {init}")
  return model


def stage_tokens(args, kind: str) -> Dict[str, Any]:
  import tensorflow as tf
  (train, _), (test, _) = task(args)
  texts = train + test
  tok = data_tokenizer(args, kind)
  model = classifier(args, kind, "pretrained")
  wanted = [[tok.special_ids.cls] + ids[:62] + [tok.special_ids.sep]
            for ids in tok.encode_batch(texts)]

  def differing(features) -> int:
    ids, mask = np.asarray(features["input_ids"]), np.asarray(features["input_mask"])
    return sum(ids[i][mask[i] == 1].tolist() != w for i, w in enumerate(wanted))

  graph = differing(model.text_inputs(tf.constant(texts)))
  host = differing(model.featurize(texts))
  # TFRecords -> ids, matched against the data tokenizer's ids of the corpus line they
  # start with (a record starts at a line: its first segment's first sentence).
  lines = [line for name in ("news.txt", "reviews.txt")
           for line in open(os.path.join(args.work_dir, "corpus", name),
                            encoding="utf-8").read().split("\n") if line.strip()]
  by_start: Dict[tuple, List[List[int]]] = {}
  for ids in tok.encode_batch(lines):
    by_start.setdefault(tuple(ids[:6]), []).append(ids)
  records = matched = 0
  shards = sorted(glob.glob(os.path.join(study.kind_dir(args, kind), "pretrain_tfrecords",
                                         "pretrain_data.tfrecord-*")))[:20]
  for raw in tf.data.TFRecordDataset(shards).take(100):
    ids = list(tf.train.Example.FromString(raw.numpy()).features.feature[
        "input_ids"].int64_list.value)
    records += 1
    n = ids.index(tok.special_ids.sep) - 1
    matched += ids[0] == tok.special_ids.cls and any(
        ids[1:1 + min(len(line), n)] == line[:n] for line in by_start.get(tuple(ids[1:7]), []))
  return {"texts": len(texts), "differ_in_graph": graph, "differ_featurize": host,
          "records": records, "records_matching_a_corpus_line": matched}


def stage_weights(args, kind: str) -> Dict[str, Any]:
  import tensorflow as tf
  from tensorflow.core.protobuf import trackable_object_graph_pb2
  checkpoint = os.path.join(study.model_dir(args, kind), f"ckpt-{args.pretrain_steps}")
  reader = tf.train.load_checkpoint(checkpoint)
  graph = trackable_object_graph_pb2.TrackableObjectGraph()
  graph.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))

  def tensors(node_id: int, seen: frozenset) -> List[np.ndarray]:
    node = graph.nodes[node_id]
    found = [reader.get_tensor(a.checkpoint_key) for a in node.attributes
             if a.name == "VARIABLE_VALUE"]
    for child in node.children:
      if child.node_id not in seen:
        found += tensors(child.node_id, seen | {child.node_id})
    return found

  root = {c.local_name: c.node_id for c in graph.nodes[0].children}
  parts = {c.local_name: c.node_id for c in graph.nodes[root["model"]].children}
  disc, gen = (tensors(parts[name], frozenset()) for name in ("discriminator", "generator"))
  weights = [w.numpy() for w in classifier(args, kind, "pretrained").encoder.weights]
  used, equal = set(), 0
  for w in weights:
    hit = next((i for i, t in enumerate(disc)
                if i not in used and t.shape == w.shape and np.array_equal(t, w)), None)
    if hit is not None:
      used.add(hit)
      equal += 1
  random_weights = classifier(args, kind, "random").encoder.weights
  return {"encoder_weights": len(weights), "equal_to_a_discriminator_tensor": equal,
          "discriminator_tensors": len(disc),
          "equal_to_a_generator_tensor": sum(
              any(t.shape == w.shape and np.array_equal(t, w) for t in gen) for w in weights),
          "random_init_differs": sum(not np.array_equal(r.numpy(), w)
                                     for r, w in zip(random_weights, weights))}


def stage_discriminator(args, kind: str) -> Dict[str, Any]:
  import keras
  import tensorflow as tf
  from sklearn.metrics import roc_auc_score
  from electra_tf2.models import model_directory
  from electra_tf2.checkpoints.directories import load_pretraining_config
  from electra_tf2.models.pretrainer import ElectraPretrainer
  _, (texts, _) = task(args)
  tok = data_tokenizer(args, kind)
  length = 64
  ids = np.zeros((len(texts), length), np.int32)
  for i, row in enumerate(tok.encode_batch(texts)):
    row = [tok.special_ids.cls] + row[:length - 2] + [tok.special_ids.sep]
    ids[i, :len(row)] = row
  mask = (ids != 0).astype(np.int32)
  rng = np.random.default_rng(args.seed)
  config = load_pretraining_config(study.model_dir(args, kind))
  real = (mask == 1) & (ids != tok.special_ids.cls) & (ids != tok.special_ids.sep)
  uniform = np.where(real & (rng.random(ids.shape) < 0.15),
                     rng.integers(5, config.vocab_size, ids.shape), ids).astype(np.int32)
  result = {}
  keras.utils.set_random_seed(args.seed)  # the untrained model's weights
  for name, model in (("pretrained", model_directory.restore_pretrainer(
      study.model_dir(args, kind))), ("untrained", ElectraPretrainer.from_pretraining_config(
          config))):
    probs, labels, hits, targets, uniform_probs = [], [], [], [], []
    for start in range(0, len(texts), 250):
      rows = slice(start, start + 250)
      out = model({"input_ids": tf.constant(ids[rows]), "input_mask": tf.constant(mask[rows]),
                   "segment_ids": tf.zeros_like(tf.constant(ids[rows]))}, training=False,
                  seed=tf.constant([start, args.seed], tf.int32))
      keep = out["input_mask"].numpy().astype(bool)
      probs.append(out["disc_probs"].numpy()[keep])
      labels.append(out["disc_labels"].numpy()[keep])
      weights = out["masked_lm_weights"].numpy().astype(bool)
      hits.append((out["mlm_preds"].numpy() == out["masked_lm_ids"].numpy())[weights])
      targets.append(out["masked_lm_ids"].numpy()[weights])
      hidden = model.discriminator(tf.constant(uniform[rows]), tf.constant(mask[rows]),
                                   tf.zeros_like(tf.constant(ids[rows])), training=False)
      logits = model.discriminator_head(hidden)
      uniform_probs.append(np.reshape(np.asarray(logits), ids[rows].shape))  # AUC: logits do
    labels_ = np.concatenate(labels)
    result[name] = {
        "replaced_share": float(labels_.mean()),
        "auc_own_generator": float(roc_auc_score(labels_, np.concatenate(probs))),
        "auc_uniform": float(roc_auc_score((uniform != ids)[real],
                                           np.concatenate(uniform_probs)[real])),
        "mlm_accuracy": float(np.concatenate(hits).mean()),
        "mlm_most_frequent_target_share": float(np.bincount(np.concatenate(targets)).max() /
                                                len(np.concatenate(targets)))}
  return result


def stage_probe(args, kind: str) -> Dict[str, Any]:
  import keras
  import tensorflow as tf
  from sklearn.linear_model import LogisticRegressionCV
  from sklearn.pipeline import make_pipeline
  from sklearn.preprocessing import StandardScaler
  (train, train_labels), (test, test_labels) = task(args)
  result = {}
  for init in ("pretrained", "random"):
    keras.utils.set_random_seed(args.seed)  # the random init's weights
    model = classifier(args, kind, init)

    def features(texts):
      parts: Dict[str, List[np.ndarray]] = {"cls": [], "mean_state": [], "mean_embedding": []}
      for start in range(0, len(texts), 250):
        f = model.text_inputs(tf.constant(texts[start:start + 250]))
        hidden = model.encode(f).numpy()
        mask = f["input_mask"].numpy()[..., None].astype(np.float32)
        embedded = tf.gather(model.encoder.embedding_table, f["input_ids"]).numpy()
        parts["cls"].append(hidden[:, 0])
        parts["mean_state"].append((hidden * mask).sum(1) / mask.sum(1))
        parts["mean_embedding"].append((embedded * mask).sum(1) / mask.sum(1))
      return {k: np.concatenate(v) for k, v in parts.items()}

    a, b = features(train), features(test)
    unit = a["cls"] / np.linalg.norm(a["cls"], axis=1, keepdims=True)
    cosine = unit @ unit.T
    row = {"cls_cosine": float(cosine[np.triu_indices(len(cosine), 1)].mean())}
    for name in a:
      probe = make_pipeline(StandardScaler(), LogisticRegressionCV(
          Cs=[0.001, 0.01, 0.1, 1, 10], cv=3, max_iter=3000)).fit(a[name], train_labels)
      row[f"probe_{name}"] = float(probe.score(b[name], test_labels))
    result[init] = row
  return result


def finetune_variant(args, kind: str, variant: str) -> Dict[str, Any]:
  """`init:lr:layerwise_decay:epochs:examples[:pool]` -> test accuracy after every epoch
  (pool: cls, the default, or mean)."""
  import keras
  init, lr, decay, epochs, examples, *pool = variant.split(":")
  lr, decay, epochs, examples = float(lr), float(decay), int(epochs), int(examples)
  (train, train_labels), (test, test_labels) = task(args)
  train, train_labels = train[:examples], train_labels[:examples]
  keras.utils.set_random_seed(args.seed)
  pool = pool[0] if pool else "cls"
  model = classifier(args, kind, init, pool=pool)
  steps = epochs * -(-len(train) // 32)
  model.compile(optimizer=model.official_optimizer(learning_rate=lr, num_train_steps=steps,
                                                   layerwise_lr_decay=decay,
                                                   weight_decay_rate=0.0),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=["accuracy"])
  start = time.time()
  history = model.fit(train, train_labels, batch_size=32, epochs=epochs, verbose=0,
                      validation_data=(test, test_labels)).history
  return {"init": init, "pool": pool, "learning_rate": lr, "layerwise_lr_decay": decay,
          "epochs": epochs, "train_examples": len(train), "seed": args.seed,
          "test_accuracy": [round(a, 4) for a in history["val_accuracy"]],
          "train_loss": [round(a, 4) for a in history["loss"]],
          "seconds": round(time.time() - start, 1)}


def parse_args(argv=None) -> argparse.Namespace:
  parser = script_parser(__doc__)
  parser.add_argument("--work-dir", default="/tmp/language_study",
                      help="bench/studies/language_study.py's work dir, pre-training done")
  add_stages_flag(parser, STAGES)
  parser.add_argument("--kinds", default=",".join(study.KINDS))
  parser.add_argument("--pretrain-steps", type=int, default=4000,
                      help="the checkpoint read by the weights stage (ckpt-N)")
  parser.add_argument("--variants", default=DEFAULT_VARIANTS,
                      help="finetune: comma-separated "
                           "init:lr:layerwise_decay:epochs:examples[:cls|mean]")
  parser.add_argument("--seed", type=int, default=0)
  args = parser.parse_args(argv)
  if not os.path.exists(os.path.join(args.work_dir, "task", "test.tsv")):
    parser.error(f"--work-dir {args.work_dir} has no task/test.tsv: run "
                 "bench/studies/language_study.py there first")
  return args


def main(argv=None) -> int:
  args = parse_args(argv)
  stages = {"tokens": stage_tokens, "weights": stage_weights,
            "discriminator": stage_discriminator, "probe": stage_probe}
  output = os.path.join(args.work_dir, "diagnosis.jsonl")
  for kind in args.kinds.split(","):
    for stage in args.stages:
      if stage == "finetune":
        for variant in args.variants.split(","):
          row = {"kind": kind, "stage": stage, **finetune_variant(args, kind, variant)}
          log(json.dumps(row))
          append_json(output, row)
        continue
      row = {"kind": kind, "stage": stage, **stages[stage](args, kind)}
      log(json.dumps(row))
      append_json(output, row)
  return 0


if __name__ == "__main__":
  sys.exit(main())
