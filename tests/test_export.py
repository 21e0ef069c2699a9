"""SavedModels: token-id and raw-text signatures, loaded back and through saved_model_cli."""

import json
import os
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from conftest import REPO_ROOT, shared_data_path
from electra_tf2.conversion import convert
from electra_tf2.serving import export, predict
from electra_tf2.text import packing
from electra_tf2.config.pretraining import resolve_pretraining_config
from electra_tf2.tasks import config as finetune_config
from electra_tf2.models import finetuning as finetune_model
from electra_tf2.models.pretrainer import ElectraPretrainer, NoDiscriminatorError
from electra_tf2.text.tokenizer import FullTokenizer
from fixtures import noisy_pretrainer

MAX_LEN = 16
TINY = {"model_hparam_overrides": {"hidden_size": 32, "num_hidden_layers": 2},
        "embedding_size": 16, "generator_hidden_size": 0.5, "max_seq_length": MAX_LEN}
TEXTS = ["The chef cooked the meal.",
         "",
         "Possibly this may have been the reason why early risers in that locality, during the "
         "rainy season, adopted a thoughtful habit of body.",  # longer than MAX_LEN
         "Ünïcödé  and 力加勝北区 too"]
PAIRS = [("The chef cooked the meal.", "It was good."),
         ("a " * 30, "b"),
         ("short", "b c d e f g h i j k l m n o p q r s t"),
         ("one two three four five six seven eight", "nine ten eleven twelve thirteen fourteen"),
         ("", "")]
SAVED_MODEL_CLI = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")


def bert_truncate_seq_pair(tokens_a, tokens_b, max_length):
  """BERT's run_classifier._truncate_seq_pair, as the oracle."""
  while len(tokens_a) + len(tokens_b) > max_length:
    (tokens_a if len(tokens_a) > len(tokens_b) else tokens_b).pop()


def expected_features(tokenizer, a, b=None):
  ids_a = tokenizer.encode(a)
  if b is None:
    ids_a = ids_a[:MAX_LEN - 2]
    return [101] + ids_a + [102], [0] * (len(ids_a) + 2)
  ids_b = tokenizer.encode(b)
  bert_truncate_seq_pair(ids_a, ids_b, MAX_LEN - 3)
  return ([101] + ids_a + [102] + ids_b + [102],
          [0] * (len(ids_a) + 2) + [1] * (len(ids_b) + 1))


def test_truncated_pair_lengths_follow_bert():
  grid = [(a, b, m) for a in range(25) for b in range(25) for m in range(0, 30, 3)]
  expected = []
  for a, b, m in grid:
    tokens_a, tokens_b = list(range(a)), list(range(b))
    bert_truncate_seq_pair(tokens_a, tokens_b, m)
    expected.append((len(tokens_a), len(tokens_b)))
  la, lb, budget = (tf.constant(column, tf.int64) for column in zip(*grid))
  new_a, new_b = packing.truncated_pair_lengths(la, lb, budget)
  assert list(zip(new_a.numpy().tolist(), new_b.numpy().tolist())) == expected


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
  """DATA/models/tiny, a tiny random pre-trained model with the real vocab, and its
  discriminator SavedModel."""
  vocab = shared_data_path("vocab", "vocab.txt")
  root = tmp_path_factory.mktemp("export")
  config = resolve_pretraining_config("electra_small", None, TINY)
  model = noisy_pretrainer(TINY, seed=3, scale=0.1)
  data_dir = str(root / "data")
  model_dir = os.path.join(data_dir, "models", "tiny")
  convert.write_model_dir(model, config, model_dir)
  shutil.copy(vocab, os.path.join(model_dir, "vocab.txt"))
  path = str(root / "discriminator")
  assert export.main(["--model-dir", model_dir, "--output-dir", path]) == 0
  return {"model": model, "model_dir": model_dir, "data_dir": data_dir, "path": path,
          "vocab": vocab, "tokenizer": FullTokenizer(vocab), "root": root}


@pytest.fixture(scope="module")
def loaded(exported):
  return tf.saved_model.load(exported["path"])


def in_process(model, input_ids, input_mask, segment_ids):
  logits = model.discriminator_head(model.discriminator(
      tf.constant(input_ids, tf.int32), tf.constant(input_mask, tf.int32),
      tf.constant(segment_ids, tf.int32)))
  return logits.numpy()


def padded(rows):
  length = max(len(ids) for ids, _ in rows)
  ids = np.zeros((len(rows), length), np.int32)
  mask, segments = np.zeros_like(ids), np.zeros_like(ids)
  for i, (row, segs) in enumerate(rows):
    ids[i, :len(row)], mask[i, :len(row)], segments[i, :len(row)] = row, 1, segs
  return ids, mask, segments


def test_signatures_and_token_ids(exported, loaded):
  assert sorted(loaded.signatures) == ["score", "serving_default", "text", "text_pair",
                                    "token_ids"]
  assert os.path.basename(loaded.vocab_file.asset_path.numpy().decode()) == "vocab.txt"
  ids, mask, segments = padded([([101, 7592, 2088, 102], [0, 0, 0, 0]),
                                ([101, 2023, 102, 2003, 1037, 3231, 102], [0, 0, 0, 1, 1, 1, 1])])
  out = loaded.signatures["token_ids"](input_ids=tf.constant(ids), input_mask=tf.constant(mask),
                                       segment_ids=tf.constant(segments))
  logits = in_process(exported["model"], ids, mask, segments)
  np.testing.assert_allclose(out["logits"].numpy(), logits, atol=1e-5)
  np.testing.assert_allclose(out["replaced_probability"].numpy(), 1 / (1 + np.exp(-logits)),
                             atol=1e-5)


def test_text_signature_tokenizes_pads_and_truncates(exported, loaded):
  tokenizer = exported["tokenizer"]
  out = loaded.signatures["text"](text=tf.constant(TEXTS))
  rows = [expected_features(tokenizer, t) for t in TEXTS]
  assert len(tokenizer.encode(TEXTS[2])) > MAX_LEN  # truncation is exercised
  ids, mask, segments = padded(rows)
  assert ids.shape == (len(TEXTS), MAX_LEN)
  np.testing.assert_array_equal(out["input_ids"].numpy(), ids)
  np.testing.assert_array_equal(out["input_mask"].numpy(), mask)
  np.testing.assert_array_equal(out["segment_ids"].numpy(), segments)
  logits = in_process(exported["model"], ids, mask, segments)
  real = mask.astype(bool)
  np.testing.assert_allclose(out["logits"].numpy()[real], logits[real], atol=1e-5)
  empty = loaded.signatures["text"](text=tf.constant([], tf.string))
  assert empty["input_ids"].shape == (0, 2) and empty["logits"].shape == (0, 2)
  # serving_default is the text signature
  default = loaded.signatures["serving_default"](text=tf.constant(TEXTS))
  np.testing.assert_array_equal(default["logits"].numpy(), out["logits"].numpy())


def test_text_pair_signature_truncates_like_bert(exported, loaded):
  tokenizer = exported["tokenizer"]
  out = loaded.signatures["text_pair"](text=tf.constant([a for a, _ in PAIRS]),
                                       text_b=tf.constant([b for _, b in PAIRS]))
  ids, mask, segments = padded([expected_features(tokenizer, a, b) for a, b in PAIRS])
  np.testing.assert_array_equal(out["input_ids"].numpy(), ids)
  np.testing.assert_array_equal(out["segment_ids"].numpy(), segments)
  np.testing.assert_array_equal(out["input_mask"].numpy(), mask)
  real = mask.astype(bool)
  np.testing.assert_allclose(out["replaced_probability"].numpy()[real],
                             1 / (1 + np.exp(-in_process(exported["model"], ids, mask,
                                                         segments)[real])), atol=1e-5)


def run_cli(args, outdir):
  result = subprocess.run(args + ["--outdir", str(outdir), "--overwrite"], capture_output=True,
                          text=True, cwd=REPO_ROOT, timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  return {name[:-4]: np.load(os.path.join(outdir, name)) for name in os.listdir(outdir)}


@pytest.mark.slow
def test_saved_model_cli_runs_both_signatures(exported):
  """The stock CLI on a --no-text-signatures export; the documented wrapper on text."""
  root, model = exported["root"], exported["model"]
  ids_only = str(root / "ids_only")
  assert export.main(["--model-dir", exported["model_dir"], "--output-dir", ids_only,
                      "--no-text-signatures"]) == 0
  outputs = run_cli([SAVED_MODEL_CLI, "run", "--dir", ids_only, "--tag_set", "serve",
                     "--signature_def", "serving_default", "--input_exprs",
                     "input_ids=[[101, 7592, 2088, 102, 0]];input_mask=[[1, 1, 1, 1, 0]];"
                     "segment_ids=[[0, 0, 0, 0, 0]]"], root / "cli_ids")
  expected = in_process(model, [[101, 7592, 2088, 102, 0]], [[1, 1, 1, 1, 0]], [[0] * 5])
  np.testing.assert_allclose(outputs["logits"], expected, atol=1e-5)

  wrapper = ("import sys, tensorflow_text; from tensorflow.python.tools import saved_model_cli; "
             "sys.argv[0] = 'saved_model_cli'; saved_model_cli.main()")
  outputs = run_cli([sys.executable, "-c", wrapper, "run", "--dir", exported["path"],
                     "--tag_set", "serve", "--signature_def", "text", "--input_exprs",
                     f"text={TEXTS!r}"], root / "cli_text")
  ids, mask, segments = padded([expected_features(exported["tokenizer"], t) for t in TEXTS])
  np.testing.assert_array_equal(outputs["input_ids"], ids)
  real = mask.astype(bool)
  np.testing.assert_allclose(outputs["logits"][real],
                             in_process(model, ids, mask, segments)[real], atol=1e-5)


def test_encoder_export(exported):
  model = exported["model"]
  module = export.serving_module(model, "encoder")
  path = module.save(str(exported["root"] / "encoder"))
  # Saving traced the function once (for its signature), not once more in its save context.
  assert module.token_ids.experimental_get_tracing_count() == 1
  loaded = tf.saved_model.load(path)
  assert sorted(loaded.signatures) == ["serving_default", "token_ids"]
  ids, mask, segments = padded([([101, 7592, 2088, 102], [0] * 4), ([101, 2023, 102], [0] * 3)])
  out = loaded.signatures["serving_default"](input_ids=tf.constant(ids),
                                             input_mask=tf.constant(mask),
                                             segment_ids=tf.constant(segments))
  sequence = model.discriminator(tf.constant(ids), tf.constant(mask), tf.constant(segments))
  assert out["sequence_output"].shape == (2, 4, 32)
  np.testing.assert_allclose(out["sequence_output"].numpy()[mask == 1],
                             sequence.numpy()[mask == 1], atol=1e-5)
  np.testing.assert_allclose(out["pooled_output"].numpy(), sequence.numpy()[:, 0], atol=1e-5)
  attribute = loaded.token_ids(tf.constant(ids), tf.constant(mask), tf.constant(segments))
  np.testing.assert_array_equal(attribute["pooled_output"], out["pooled_output"])
  # exporting again (a trailing slash, as shells complete it) replaces the SavedModel whole
  before = sorted(os.listdir(exported["root"]))
  export.serving_module(model, "encoder").save(path + os.sep)
  assert sorted(tf.saved_model.load(path).signatures) == ["serving_default", "token_ids"]
  assert sorted(os.listdir(exported["root"])) == before


def skips_padding(path: str, signature: str) -> bool:
  """Whether a SavedModel signature's encoder runs `skip_padding` (the real tokens'
  states scattered back into the padded layout inside its layers)."""
  graph = tf.saved_model.load(path).signatures[signature].graph.as_graph_def()
  return any(node.op == "ScatterNd" and "/layer_0" in node.name
             for f in graph.library.function for node in f.node_def)


def finetuned_model_dir(exported, tasks, heads):
  """(model, directory) of a random fine-tuned model with `heads` under DATA/models/tiny."""
  config = finetune_config.resolve_finetuning_config(
      "tiny", exported["data_dir"], {"max_seq_length": MAX_LEN}, tasks)
  keras.utils.set_random_seed(4)
  model = finetune_model.build_model(config, heads)
  model_dir = config.trial_model_dir(1)
  finetune_model.save_model_files(model, config, model_dir)
  tf.train.CheckpointManager(tf.train.Checkpoint(model=model), model_dir, max_to_keep=None,
                             checkpoint_name="ckpt").save(10)
  return model, model_dir


def test_finetuned_export(exported):
  """A fine-tuned model directory (classification + tagging heads), auto-detected."""
  model, model_dir = finetuned_model_dir(exported, "mnli,chunk", [
      {"kind": "classification", "task": "mnli",
       "label_list": ["contradiction", "entailment", "neutral"]},
      {"kind": "tagging", "task": "chunk", "label_list": ["B-NP", "I-NP", "O"]}])
  path = str(exported["root"] / "finetuned")
  assert export.main(["--model-dir", model_dir, "--output-dir", path]) == 0
  loaded = tf.saved_model.load(path)
  pairs = PAIRS[:3]
  out = loaded.signatures["text_pair"](text=tf.constant([a for a, _ in pairs]),
                                       text_b=tf.constant([b for _, b in pairs]))
  features = {k: out[k] for k in ("input_ids", "input_mask", "segment_ids")}
  seq_len = features["input_ids"].shape[1]
  features["chunk_labeled_positions"] = tf.broadcast_to(tf.range(seq_len),
                                                        features["input_ids"].shape)
  expected = model(features)
  np.testing.assert_allclose(out["mnli_logits"].numpy(), expected["mnli"]["logits"].numpy(),
                             atol=1e-5)
  labels = np.array(["contradiction", "entailment", "neutral"])
  assert [x.decode() for x in out["mnli_label"].numpy()] == list(
      labels[expected["mnli"]["predictions"].numpy()])
  assert out["chunk_logits"].shape == (len(pairs), seq_len, 3)
  np.testing.assert_allclose(out["chunk_logits"].numpy(), expected["chunk"]["logits"].numpy(),
                             atol=1e-5)
  assert not skips_padding(path, "text_pair")  # a per-token head reads the padding's rows
  # --format litert of a pair task takes pairs without --text-pairs (GLUE's text_b tasks)
  from electra_tf2 import LiteRTModel
  from electra_tf2.tasks import task_builder
  assert [task_builder.takes_pairs(t) for t in ("mnli", "sts", "sst", "cola", "squad", "chunk")] \
      == [True, True, False, False, False, False]
  lite = str(exported["root"] / "finetuned.tflite")
  assert export.main(["--model-dir", model_dir, "--format", "litert", "--output", lite]) == 0
  got = LiteRTModel(lite).predict(([a for a, _ in pairs], [b for _, b in pairs]))
  np.testing.assert_allclose(got["mnli_logits"], out["mnli_logits"].numpy(), atol=1e-5)
  # several heads: the rule's names prefixed by the task; the old class ids stay in the
  # SavedModel only (electra_tf2/utils/output_names.py)
  rule = {"mnli_logits", "mnli_probabilities", "mnli_label", "chunk_logits", "chunk_labels"}
  assert rule | {"mnli_predictions", "chunk_predictions"} <= set(out)
  assert rule <= set(got) and not {"mnli_predictions", "chunk_predictions"} & set(got)
  np.testing.assert_allclose(got["mnli_probabilities"].sum(-1), 1.0, atol=1e-5)
  chunk_tags = np.array(["B-NP", "I-NP", "O"])[expected["chunk"]["predictions"].numpy()]
  assert (out["chunk_labels"].numpy().astype(str) == chunk_tags).all()


def test_rule_aliases_docstring():
  import doctest
  from electra_tf2.utils import output_names
  result = doctest.testmod(output_names)
  assert result.attempted == 3 and result.failed == 0


def test_every_export_path_names_outputs_as_keras_does(exported, tmp_path, capsys):
  """One naming rule (electra_tf2/utils/output_names.py): `electra export --kind finetuned` of a
  one-head model, as a SavedModel and as a .tflite, has the Keras TextClassifier's output
  names (`logits`, `probabilities`, `label`); the SavedModel keeps the old `sst_*` names
  as aliases, and a .tflite written with the old names still loads and answers to both."""
  from electra_tf2 import LiteRTModel, TextClassifier
  labels = ["negative", "positive"]
  model, model_dir = finetuned_model_dir(
      exported, "sst", [{"kind": "classification", "task": "sst", "label_list": labels}])
  texts = [TEXTS[0], TEXTS[2]]
  features = {"input_ids", "input_mask", "segment_ids"}
  keras_names = set(TextClassifier.from_pretrained(model_dir).serve(tf.constant(texts)))
  assert keras_names - features == {"logits", "probabilities", "label"}
  saved = str(tmp_path / "sst")
  assert export.main(["--model-dir", model_dir, "--output-dir", saved]) == 0
  out = tf.saved_model.load(saved).signatures["text"](text=tf.constant(texts))
  assert set(out) - features == keras_names - features | {"sst_logits", "sst_predictions",
                                                            "sst_label"}
  np.testing.assert_allclose(out["sst_logits"].numpy(), out["logits"].numpy())
  np.testing.assert_allclose(out["probabilities"].numpy(),
                             tf.nn.softmax(out["logits"]).numpy(), atol=1e-6)
  assert list(out["label"].numpy()) == list(out["sst_label"].numpy())
  # [CLS] heads only: the SavedModel skips the padding's rows (equal to the .tflite below,
  # which keeps the padded graph, on two texts of different lengths)
  assert skips_padding(saved, "text") and skips_padding(saved, "token_ids")
  lite = str(tmp_path / "sst.tflite")
  assert export.main(["--model-dir", model_dir, "--format", "litert", "--output", lite]) == 0
  got = LiteRTModel(lite).predict(texts)
  assert set(got) - features == keras_names - features
  np.testing.assert_allclose(got["logits"], out["logits"].numpy(), atol=1e-5)
  # a .tflite written before the rule (its outputs `sst_*` only): both names answer
  old = str(tmp_path / "old.tflite")
  legacy = export.finetuned_outputs(model)

  def old_names(input_ids, input_mask, segment_ids):
    return {k: v for k, v in legacy(input_ids, input_mask, segment_ids).items()
            if k.startswith("sst_")}
  export.ServingModule(old_names, model.variables, exported["vocab"],
                       max_seq_length=MAX_LEN).write_litert(old)
  got_old = LiteRTModel(old).predict(texts)
  assert {"sst_logits", "sst_label", "logits", "label"} <= set(got_old)
  assert "probabilities" not in got_old
  np.testing.assert_allclose(got_old["logits"], got_old["sst_logits"])
  np.testing.assert_allclose(got_old["logits"], out["logits"].numpy(), atol=1e-5)
  (tmp_path / "texts.txt").write_text("\n".join(texts) + "\n")
  for path in (lite, old, saved):
    jsonl = str(tmp_path / "out.jsonl")
    assert predict.main(["--model", path, "--input", str(tmp_path / "texts.txt"),
                         "--output", jsonl]) == 0
    with open(jsonl, encoding="utf-8") as f:
      rows = [json.loads(line) for line in f]
    assert [row["label"] for row in rows] == [x.decode() for x in out["label"].numpy()], path
  capsys.readouterr()


def test_export_errors(exported, tmp_path, capsys):
  electric = ElectraPretrainer.from_pretraining_config(resolve_pretraining_config(
      "electra_small", None, dict(TINY, electric_objective=True)))
  with pytest.raises(NoDiscriminatorError, match="--kind discriminator needs an ELECTRA "
                                                 "discriminator; this model was pre-trained as "
                                                 "ELECTRIC: export --kind encoder"):
    export.serving_module(electric, "discriminator")
  with pytest.raises(export.ExportError, match="exceeds max_position_embeddings"):
    export.serving_module(exported["model"], "encoder", max_seq_length=513)
  os.rename(os.path.join(exported["model_dir"], "vocab.txt"), str(tmp_path / "vocab.txt"))
  try:
    assert export.main(["--model-dir", exported["model_dir"],
                        "--output-dir", str(tmp_path / "x")]) == 2
  finally:
    os.rename(str(tmp_path / "vocab.txt"), os.path.join(exported["model_dir"], "vocab.txt"))
  assert "pass --vocab-file" in capsys.readouterr().err
  # a directory that holds something else is never replaced
  kept = sorted(os.listdir(exported["model_dir"]))
  assert export.main(["--model-dir", exported["model_dir"], "--output-dir",
                      exported["model_dir"], "--no-text-signatures"]) == 2
  assert "already holds files that are not a SavedModel" in capsys.readouterr().err
  assert sorted(os.listdir(exported["model_dir"])) == kept


def test_writers_refuse_an_output_dir_that_another_run_holds(exported, tmp_path, capsys):
  from electra_tf2.utils import run_lock
  from electra_tf2.conversion import hf_export
  out = str(tmp_path / "out")
  held = run_lock._acquire_local(run_lock.lock_path(out))  # pylint: disable=protected-access
  try:
    for main, args in ((export.main, ["--no-text-signatures"]), (hf_export.main, []),
                       (convert.main, None)):
      args = (["to-official", "--model-dir", exported["model_dir"], "--output-dir", out]
              if args is None else ["--model-dir", exported["model_dir"], "--output-dir", out,
                                    *args])
      assert main(args) == 2
      err = capsys.readouterr().err
      assert err.startswith(f"error: {out}: another run writes here: host ") and \
          f"PID {os.getpid()}" in err and err.count("\n") == 1, err
      assert not os.path.exists(out)
  finally:
    os.close(held)
  assert hf_export.main(["--model-dir", exported["model_dir"], "--output-dir", out]) == 0
  imported = str(tmp_path / "imported")
  held = run_lock._acquire_local(run_lock.lock_path(imported))  # pylint: disable=protected-access
  try:
    assert convert.main(["from-hf", "--hf-dir", out, "--output-dir", imported]) == 2
    assert f"error: {imported}: another run writes here" in capsys.readouterr().err
    assert not os.path.exists(imported)
  finally:
    os.close(held)


def test_litert_export_and_predict_commands(exported, loaded, tmp_path, capsys):
  """`electra export --format litert` gives the text signature's outputs; `electra predict`
  writes the same lines from the .tflite and from the SavedModel."""
  from electra_tf2 import LiteRTModel
  path = str(tmp_path / "discriminator.tflite")
  assert export.main(["--model-dir", exported["model_dir"], "--format", "litert",
                      "--output", path]) == 0
  got = LiteRTModel(path).predict(TEXTS)
  expected = loaded.signatures["text"](text=tf.constant(TEXTS))
  assert sorted(got) == sorted(expected)
  for name, value in expected.items():
    np.testing.assert_allclose(got[name], value.numpy(), atol=1e-5, err_msg=name)
  texts = tmp_path / "texts.txt"
  texts.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
  rows = {}
  for model in (path, exported["path"]):
    out = str(tmp_path / f"{os.path.basename(model)}.jsonl")
    assert predict.main(["--model", model, "--input", str(texts), "--output", out,
                         "--batch-size", "3"]) == 0
    assert f"{len(TEXTS)}/{len(TEXTS)}" in capsys.readouterr().out
    with open(out, encoding="utf-8") as f:
      rows[model] = [json.loads(line) for line in f]
  lite, saved = rows[path], rows[exported["path"]]
  assert len(lite) == len(TEXTS) and [r["input_ids"] for r in lite] == \
      [r["input_ids"] for r in saved]
  np.testing.assert_allclose([r["logits"] for r in lite], [r["logits"] for r in saved],
                             atol=1e-5)


def test_litert_flags_and_predict_inputs_are_checked_in_one_line(exported, tmp_path, capsys):
  tflite, calibration = str(tmp_path / "m.tflite"), tmp_path / "calibration.txt"
  calibration.write_text("a text\n", encoding="utf-8")
  cases = [([], "--output-dir is required"),
           (["--output-dir", str(tmp_path / "x"), "--quantize", "float16"],
            "--quantize only apply to --format litert"),
           (["--format", "litert"], "give --output MODEL.tflite"),
           (["--format", "litert", "--output", tflite, "--quantize", "int8"],
            "pass calibration_texts (--calibration-file"),
           (["--format", "litert", "--output", tflite, "--calibration-file", str(calibration)],
            "only apply to quantize int8, not none")]
  for args, words in cases:
    assert export.main(["--model-dir", exported["model_dir"], *args]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err
  assert not os.path.exists(tflite)
  for args, words in ((["--format", "litert", "--output", tflite, "--dtype", "bfloat16"],
                       "--dtype bfloat16 applies to SavedModels"),
                      (["--output-dir", str(tmp_path / "x"), "--kind", "encoder",
                        "--window-stride", "4"], "kind encoder without question answering has"),
                      (["--format", "litert", "--output", tflite, "--window-stride", "4"],
                       "a .tflite of kind discriminator has none"),
                      (["--output-dir", str(tmp_path / "x"), "--window-stride", "0"],
                       "--window-stride must be >= 1")):
    assert export.main(["--model-dir", exported["model_dir"], *args]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err
  assert not os.path.exists(tflite) and not os.path.exists(tmp_path / "x")
  texts = str(calibration)
  (tmp_path / "model.keras").write_bytes(b"PK\x05\x06" + b"\0" * 18)  # an empty zip
  (tmp_path / "empty.txt").write_text("")
  (tmp_path / "pair.txt").write_text("one text\na\tb\n")
  for args, words in (
      (["--model", str(tmp_path)], "neither a .tflite file nor a SavedModel"),
      (["--model", str(tmp_path / "model.keras")], "is a Keras file (.keras): load it"),
      (["--model", exported["model_dir"]], "is a pre-trained model directory, not an "
                                           "exported model: electra export --model-dir"),
      (["--model", exported["path"], "--batch-size", "0"], "--batch-size must"),
      (["--model", exported["path"], "--signature", "token_ids"], "does not take text"),
      (["--model", exported["path"], "--input", str(tmp_path / "missing.txt")],
       f"--input {tmp_path / 'missing.txt'} does not exist"),
      (["--model", exported["path"], "--input", str(tmp_path / "empty.txt")],
       f"--input {tmp_path / 'empty.txt'} is empty: give one text per line"),
      (["--model", exported["path"], "--input", str(tmp_path / "pair.txt")],
       f"{tmp_path / 'pair.txt'}:2: 2 tab-separated column(s), expected 1: text")):
    if "--input" not in args:
      args = [*args, "--input", texts]
    assert predict.main([*args, "--output", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err
  assert not os.path.exists(tmp_path / "o.jsonl")


def test_mediapipe_target_writes_the_classifier_s_probabilities_on_token_ids(exported, tmp_path,
                                                                            capsys):
  """`--target mediapipe`: the one classification head's probabilities on MediaPipe's
  inputs ([CLS] WordPieces [SEP], zero-padded, int32 [1, max_seq_length]); refused in one
  line for a model that is no one-head classifier, and outside --format litert."""
  labels = ["negative", "positive"]
  model, model_dir = finetuned_model_dir(exported, "sst", [
      {"kind": "classification", "task": "sst", "label_list": labels}])
  lite = str(tmp_path / "sst.tflite")
  assert export.main(["--model-dir", model_dir, "--format", "litert", "--target", "mediapipe",
                      "--output", lite]) == 0
  assert "inputs: input_word_ids, input_mask, input_type_ids [1, 16]" in capsys.readouterr().out
  runner = tf.lite.Interpreter(model_path=lite).get_signature_runner("serving_default")
  tokenizer = exported["tokenizer"]
  for text in TEXTS[:2]:
    ids = tokenizer.convert_tokens_to_ids(["[CLS]", *tokenizer.tokenize(text), "[SEP]"])
    features = {name: np.zeros([1, MAX_LEN], np.int32) for name in
                ("input_ids", "input_mask", "segment_ids")}
    features["input_ids"][0, :len(ids)], features["input_mask"][0, :len(ids)] = ids, 1
    got = runner(input_word_ids=features["input_ids"], input_mask=features["input_mask"],
                 input_type_ids=features["segment_ids"])["probabilities"]
    expected = tf.nn.softmax(model({k: tf.constant(v) for k, v in features.items()})
                             ["sst"]["logits"]).numpy()
    np.testing.assert_allclose(got, expected, atol=1e-4)
  for args, words in ((["--output-dir", str(tmp_path / "x"), "--target", "mediapipe"],
                       "--target only apply to --format litert"),
                      (["--format", "litert", "--output", lite, "--target", "mediapipe"],
                       "give a fine-tuned model with one classification head")):
    assert export.main(["--model-dir", exported["model_dir"], *args]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err


def test_predict_reads_json_lines_of_the_signature_s_fields(exported, tmp_path, capsys):
  """JSON lines: a "text" field per line, ids carried; the same outputs as the text file."""
  lines = tmp_path / "texts.txt"
  lines.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
  records = tmp_path / "texts.jsonl"
  records.write_text("".join(json.dumps({"id": f"t{i}", "text": t}) + "\n"
                             for i, t in enumerate(TEXTS)), encoding="utf-8")
  rows = {}
  for path in (lines, records):
    out = tmp_path / f"{path.name}.out"
    assert predict.main(["--model", exported["path"], "--input", str(path),
                         "--output", str(out)]) == 0
    rows[path] = [json.loads(line) for line in out.read_text().splitlines()]
  assert [r.pop("id") for r in rows[records]] == [f"t{i}" for i in range(len(TEXTS))]
  assert rows[records] == rows[lines]
  first = capsys.readouterr().out.splitlines()[0]
  assert first == f"{exported['path']} takes text: reading {lines} as text per line"
  records.write_text('{"id": 1, "txt": "a"}\n')
  assert predict.main(["--model", exported["path"], "--input", str(records),
                       "--output", str(tmp_path / "o.jsonl")]) == 2
  assert capsys.readouterr().err == (f'error: {records}:1: needs string fields "text" (and '
                                     'may have an "id")\n')
