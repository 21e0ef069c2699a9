"""electra_tf2.scoring: windows, scores, words, the score signature and the CLI, on tiny models."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from conftest import REPO_ROOT
from electra_tf2 import scoring
from electra_tf2.networks import variable_names
from electra_tf2.conversion import convert
from electra_tf2.serving import export
from electra_tf2.cli import score as scoring_cli
from electra_tf2.scoring import graph as scoring_graph
from electra_tf2.text import windows
from electra_tf2.config.pretraining import resolve_pretraining_config
from electra_tf2.models.pretrainer import ElectraPretrainer
from fixtures import noisy_pretrainer

MAX_LEN = 8  # windows of 6 WordPieces: long texts are easy to write
WORDS = ["the", "chef", "cook", "##ed", "meal", ".", "!", "a", "dog", "ate", "drank", "bone",
         "cafe", "don", "'", "t", "zz", "##z"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
PLANTED = ("drank", "##z")  # the planted model flags these and nothing else
TINY = {"model_hparam_overrides": {"hidden_size": 32, "num_hidden_layers": 2},
        "embedding_size": 16, "generator_hidden_size": 0.5, "max_seq_length": MAX_LEN,
        "vocab_size": len(VOCAB)}


def gelu(x):
  return 0.5 * x * (1 + math.erf(x / math.sqrt(2)))


# Logits of the planted model, by hand: every hidden state is (+-4, -+4, 0, ...) (see plant()).
GOOD_LOGIT = 2 * gelu(-4.0) - 3
BAD_LOGIT = 2 * gelu(4.0) - 3


def sigmoid(x):
  return 1 / (1 + np.exp(-np.asarray(x, np.float64)))


def plant(model):
  """Weights with known outputs: every sublayer's output projection is zero, so each
  layer is a LayerNorm of its input; word embeddings (-1, 1, 0...) or, for PLANTED,
  (1, -1, 0...); no position or type embeddings; an identity projection into the
  first 16 of 32 hidden units. The final state is then (-4, 4, 0...) or (4, -4, 0...)
  and the head (identity dense, gelu, then 2 * unit 0 - 3) gives GOOD_LOGIT or BAD_LOGIT.
  """
  variables = variable_names.encoder_variable_map(model.discriminator, "electra")
  for name, variable in variables.items():
    if name.endswith("/gamma"):
      variable.assign(np.ones(variable.shape, np.float32))
    elif "/output/dense/" in name or name.endswith(("/beta", "_embeddings", "project/bias")):
      variable.assign(np.zeros(variable.shape, np.float32))
  words = np.zeros((len(VOCAB), 16), np.float32)
  words[:, :2] = [-1, 1]
  for token in PLANTED:
    words[VOCAB.index(token), :2] = [1, -1]
  variables["electra/embeddings/word_embeddings"].assign(words)
  variables["electra/embeddings_project/kernel"].assign(np.eye(16, 32, dtype=np.float32))
  head = model.discriminator_head
  head.dense.kernel.assign(np.eye(32, dtype=np.float32))
  head.dense.bias.assign(np.zeros(32, np.float32))
  kernel = np.zeros((32, 1), np.float32)
  kernel[0] = 2
  head.dense_1.kernel.assign(kernel)
  head.dense_1.bias.assign([-3.0])


def write_model(root, name, model, hparams=TINY):
  model_dir = os.path.join(str(root), name)
  convert.write_model_dir(model, resolve_pretraining_config("electra_small", None, hparams),
                          model_dir)
  with open(os.path.join(model_dir, "vocab.txt"), "w", encoding="utf-8") as f:
    f.write("\n".join(VOCAB) + "\n")
  return model_dir


@pytest.fixture(scope="module")
def models(tmp_path_factory):
  root = tmp_path_factory.mktemp("scoring")
  random = noisy_pretrainer(TINY, seed=5, scale=0.2)
  planted = ElectraPretrainer.from_pretraining_config(
      resolve_pretraining_config("electra_small", None, TINY))
  plant(planted)
  return {"root": root, "random": random, "random_dir": write_model(root, "random", random),
          "planted": planted, "planted_dir": write_model(root, "planted", planted)}


@pytest.fixture(scope="module")
def random_scorer(models):
  return scoring.TextScorer.load(models["random_dir"], batch_size=3)


@pytest.fixture(scope="module")
def planted_scorer(models):
  return scoring.TextScorer.load(models["planted_dir"])


# ---------------------------------------------------------------------------
# Windows
# ---------------------------------------------------------------------------


def oracle_windows(n, width, stride):
  """Window starts as the docs say: every stride, the last one ending at the text's end."""
  starts, s = [], 0
  while True:
    starts.append(min(s, max(n - width, 0)))
    if starts[-1] + width >= n:
      return starts
    s += stride


def oracle_owner(p, starts, n, width):
  """The window where token p has the most context on its nearer side (first on a tie)."""
  best, best_context = None, -1
  for j, s in enumerate(starts):
    end = min(s + width, n)
    if s <= p < end and min(p - s, end - 1 - p) > best_context:
      best, best_context = j, min(p - s, end - 1 - p)
  return best


def test_window_layout_matches_the_rule():
  cases = [(n, w, s) for w in (1, 2, 5, 6, 9) for s in range(1, w + 1) for n in range(0, 30)]
  for width, stride in {(w, s) for _, w, s in cases}:
    lengths = [n for n, w, s in cases if (w, s) == (width, stride)]
    layout = {k: v.numpy() for k, v in windows.window_layout(
        tf.constant(lengths, tf.int64), width, stride).items()}
    w = 0
    for row, n in enumerate(lengths):
      starts = oracle_windows(n, width, stride)
      assert layout["num_windows"][row] == len(starts), (n, width, stride)
      owner = [oracle_owner(p, starts, n, width) for p in range(n)]
      for j, start in enumerate(starts):
        assert layout["row"][w] == row and layout["start"][w] == start
        assert layout["length"][w] == min(width, n - start)
        owned = list(range(layout["own_start"][w], layout["own_end"][w]))
        assert owned == [p for p in range(n) if owner[p] == j], (n, width, stride, j)
        w += 1
  assert w == len(layout["row"])


def test_each_token_is_read_from_its_window():
  """A fake discriminator whose logit is 1000 * position in the window + token id."""
  def fake(input_ids, input_mask, segment_ids):
    position = tf.range(tf.shape(input_ids)[1])[None] + 0 * input_ids
    return tf.cast(1000 * position + input_ids, tf.float32)

  rows = [list(range(10, 10 + n)) for n in (0, 3, 6, 7, 20, 41)]
  ids = tf.ragged.constant(rows, dtype=tf.int64)
  width, stride = 6, 4
  logits, num_windows = scoring_graph.windowed_token_logits(ids, fake, width + 2, stride, 2, 3)
  for row, got, count in zip(rows, logits.to_list(), num_windows.numpy()):
    starts = oracle_windows(len(row), width, stride)
    assert count == len(starts)
    expected = [1000 * (1 + p - starts[oracle_owner(p, starts, len(row), width)]) + row[p]
                for p in range(len(row))]
    assert got == expected


# ---------------------------------------------------------------------------
# Scores
# ---------------------------------------------------------------------------


def model_logits(model, ids):
  """The discriminator on one [CLS] ids [SEP] row, without [CLS]/[SEP]."""
  row = tf.constant([[2] + ids + [3]], tf.int32)
  out = model.discriminator_head(model.discriminator(row, tf.ones_like(row), tf.zeros_like(row)))
  return out.numpy()[0, 1:-1]


def test_planted_weights_give_known_scores(planted_scorer):
  texts = ["the dog drank the bone .", "the dog ate the bone .", "", "zzz zz"]
  results = planted_scorer.score(texts)
  bad, good = BAD_LOGIT, GOOD_LOGIT
  expected_logits = [[good, good, bad, good, good, good], [good] * 6, [], [good, bad, good]]
  for result, logits in zip(results, expected_logits):
    np.testing.assert_allclose(result.token_log_odds, logits, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(result.token_probabilities, sigmoid(logits), rtol=1e-5, atol=1e-6)
  first = results[0].scores
  np.testing.assert_allclose(first["sum_log_odds"], 5 * good + bad, rtol=1e-5)
  np.testing.assert_allclose(first["mean_log_odds"], (5 * good + bad) / 6, rtol=1e-5)
  np.testing.assert_allclose(first["mean_probability"], (5 * sigmoid(good) + sigmoid(bad)) / 6,
                             rtol=1e-5)
  np.testing.assert_allclose(first["max_probability"], sigmoid(bad), rtol=1e-5)
  empty = results[2]
  assert empty.tokens == [] and empty.words == [] and empty.scores["sum_log_odds"] == 0
  assert all(math.isnan(empty.scores[k]) for k in ("mean_probability", "max_probability",
                                                  "mean_log_odds"))
  assert empty.to_record()["scores"]["mean_log_odds"] is None
  # words: "zzz" is zz ##z, its probability the max over its two pieces
  assert results[3].tokens == ["zz", "##z", "zz"]
  assert [(w.text, w.first_token, w.num_tokens) for w in results[3].words] == [
      ("zzz", 0, 2), ("zz", 2, 1)]
  np.testing.assert_allclose([w.probability for w in results[3].words],
                             sigmoid([bad, good]), rtol=1e-5)


def test_scores_match_the_model_with_and_without_windows(models, random_scorer):
  model = models["random"]
  texts = ["the chef cooked the meal .", "a dog ate a bone !",
           " ".join(["the chef cooked the meal ."] * 4 + ["a dog drank"])]  # 31 WordPieces
  results = random_scorer.score(texts)
  index = {t: i for i, t in enumerate(VOCAB)}
  for text, result in zip(texts, results):
    ids = [index[t] for t in result.tokens]
    n = len(ids)
    starts = oracle_windows(n, MAX_LEN - 2, scoring_graph.default_stride(MAX_LEN))
    assert result.num_windows == len(starts)
    windows = [model_logits(model, ids[s:s + MAX_LEN - 2]) for s in starts]
    expected = np.array([windows[j][p - starts[j]] for p in range(n)
                         for j in [oracle_owner(p, starts, n, MAX_LEN - 2)]])
    np.testing.assert_allclose(result.token_log_odds, expected, atol=1e-5)
    np.testing.assert_allclose(result.scores["mean_log_odds"], expected.mean(), atol=1e-5)
    np.testing.assert_allclose(result.scores["sum_log_odds"], expected.sum(), atol=1e-4)
    np.testing.assert_allclose(result.scores["mean_probability"], sigmoid(expected).mean(),
                               atol=1e-6)
    np.testing.assert_allclose(result.scores["max_probability"], sigmoid(expected).max(),
                               atol=1e-6)
  assert results[2].num_windows > 1 and len(results[2].tokens) == 31  # nothing truncated


def test_words_are_found_in_the_input(planted_scorer):
  text = "The Chef\tCOOKED  the Café!  Don't xyzzy."
  result = planted_scorer.score([text])[0]
  got = [(w.text, w.start, w.end, w.num_tokens) for w in result.words]
  assert got == [("The", 0, 3, 1), ("Chef", 4, 8, 1), ("COOKED", 9, 15, 2), ("the", 17, 20, 1),
                 ("Café", 21, 25, 1), ("!", 25, 26, 1), ("Don", 28, 31, 1), ("'", 31, 32, 1),
                 ("t", 32, 33, 1), ("xyzzy", 34, 39, 1), (".", 39, 40, 1)]
  assert result.tokens[10] == "[UNK]"
  # a word the input does not show as the tokenizer does: spans stop, words remain
  spans = scoring.word_spans("a b", ["a", "c", "b"], True)
  assert spans == [(0, 1), None, None]


def test_rank_puts_the_planted_original_first(planted_scorer):
  candidates = ["the dog drank the bone .", "the chef drank a meal .", "the dog ate the bone .",
                "zzz dog ate the bone ."]
  for by in scoring.SENTENCE_SCORES:
    ranked = planted_scorer.rank(candidates, by)
    assert ranked[0][0] == 2, by
  assert scoring.rank_order([2.0, float("nan"), 1.0, 2.0]) == [2, 0, 3, 1]
  with pytest.raises(scoring.ScoringError, match="unknown sentence score"):
    planted_scorer.rank(candidates, "median")


def test_render_marks_suspicious_words(planted_scorer):
  result = planted_scorer.score(["The dog DRANK the bone."])[0]
  lines = scoring.render(result, 0.5, width=80).split("\n")
  assert lines[0] == "The dog DRANK the bone."
  assert lines[1] == "        ^^^^^"
  assert lines[2] == f"  p >= 0.5: DRANK {sigmoid(BAD_LOGIT):.2f}"
  assert lines[3].startswith("  sentence: mean p ")
  colored = scoring.render(result, 0.5, width=80, color=True).split("\n")[0]
  assert "\x1b[1;31mD\x1b[0m" in colored
  # narrow terminal: wrapped at spaces, carets under their line
  wrapped = scoring.render(result, 0.5, width=10).split("\n")
  assert wrapped[:4] == ["The dog", "DRANK the", "^^^^^", "bone."]
  nothing = scoring.render(planted_scorer.score(["the dog ate"])[0], 0.5).split("\n")
  assert nothing[1] == "  no word has p >= 0.5"


# ---------------------------------------------------------------------------
# SavedModel
# ---------------------------------------------------------------------------

STANDALONE = r"""
import json, sys
import numpy as np, tensorflow as tf, tensorflow_text
model = tf.saved_model.load(sys.argv[1])
out = model.signatures["score"](text=tf.constant(json.loads(sys.argv[2])))
np.savez(sys.argv[3], **{k: v.numpy() for k, v in out.items()},
         **{"setting_" + k: v.numpy() for k, v in model.score_settings().items()})
assert not [m for m in sys.modules if m.startswith("electra_tf2")]
"""


@pytest.mark.slow
def test_score_signature_with_tensorflow_and_tensorflow_text_only(models, random_scorer):
  path = str(models["root"] / "saved")
  assert export.main(["--model-dir", models["random_dir"], "--output-dir", path]) == 0
  texts = ["the chef cooked the meal .", "", "xyzzy " + "a dog ate a bone ! " * 3]
  result = subprocess.run([sys.executable, "-c", STANDALONE, path, json.dumps(texts),
                           str(models["root"] / "out.npz")],
                          capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  out = dict(np.load(str(models["root"] / "out.npz")))
  assert int(out["setting_max_seq_length"]) == MAX_LEN
  assert int(out["setting_window_stride"]) == scoring_graph.default_stride(MAX_LEN)
  assert bool(out["setting_do_lower_case"])
  expected = random_scorer.raw_scores(texts)
  assert sorted(k for k in out if not k.startswith("setting_")) == sorted(expected)
  for name, value in expected.items():
    np.testing.assert_allclose(out[name], value, atol=1e-5, err_msg=name)
  assert out["num_windows"].tolist()[1:] == [1, 6]
  # the Python API on the SavedModel gives the records of the model directory
  loaded = scoring.TextScorer.load(path)
  for a, b in zip(loaded.score(texts), random_scorer.score(texts)):
    assert a.tokens == b.tokens and [w.text for w in a.words] == [w.text for w in b.words]
    np.testing.assert_allclose(a.token_log_odds, b.token_log_odds, atol=1e-5)
  with pytest.raises(scoring.ScoringError, match="fixed at export"):
    scoring.TextScorer.load(path, max_seq_length=16)


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def run(args, capsys=None):
  """The CLI: (exit code, stdout, stderr lines without TensorFlow's start-up lines).

  In a subprocess, as a user runs it; in this process (faster) given `capsys`.
  """
  if capsys is not None:
    capsys.readouterr()
    code = scoring_cli.main(args + (["--quiet"] if args[0] != "show" else []))
    out, err = capsys.readouterr()
  else:
    result = subprocess.run([sys.executable, "-m", "electra_tf2", "score"] + args,
                            capture_output=True, text=True, cwd=REPO_ROOT, timeout=300,
                            env=dict(os.environ, PYTHONPATH=REPO_ROOT))
    code, out, err = result.returncode, result.stdout, result.stderr
  stderr = [line for line in err.splitlines()
            if line.strip() and " E external/" not in line and " E tensorflow/" not in line]
  return code, out, stderr


def read_jsonl(path):
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f]


@pytest.mark.slow
def test_cli_score_text_and_jsonl(models, tmp_path, capsys):
  source = tmp_path / "in.txt"
  long = "the chef cooked the meal . " * 3
  source.write_text("the dog drank the bone .\n\n" + long + "\n", encoding="utf-8")
  out = tmp_path / "out.jsonl"
  code, _, stderr = run(["score", "--model-dir", models["planted_dir"], "--input", str(source),
                         "--output", str(out)])
  assert code == 0, stderr
  records = read_jsonl(out)
  assert [r["line"] for r in records] == [1, 2, 3]
  assert [w["word"] for w in records[0]["words"] if w["probability"] > 0.5] == ["drank"]
  assert records[1]["error"].startswith("nothing to score") and records[1]["scores"][
      "mean_log_odds"] is None
  assert records[2]["num_tokens"] == 21 and records[2]["windows"] == 6
  assert any(line.startswith("warning:") and "line 2" in line for line in stderr)
  assert any(line.startswith("note:") and "line 3" in line and "windows" in line
             for line in stderr)
  jsonl = tmp_path / "in.jsonl"
  jsonl.write_text('{"id": "a", "text": "a dog ate"}\n{"text": "drank"}\n', encoding="utf-8")
  code, _, stderr = run(["score", "--model-dir", models["planted_dir"], "--input", str(jsonl),
                         "--output", str(out)], capsys)
  assert code == 0, stderr
  records = read_jsonl(out)
  assert records[0]["id"] == "a" and "id" not in records[1]
  assert records[1]["tokens"] == ["drank"]


@pytest.mark.slow
def test_cli_rerank(models, tmp_path, capsys):
  groups = tmp_path / "groups.jsonl"
  groups.write_text(
      json.dumps({"id": "u1", "candidates": ["the dog drank the bone .", "the dog ate the bone .",
                                             "the chef drank the meal ."]}) + "\n\n" +
      json.dumps({"candidates": ["zzz ate", "zz ate", "a dog drank"]}) + "\n", encoding="utf-8")
  out = tmp_path / "ranked.jsonl"
  code, _, stderr = run(["rerank", "--model-dir", models["planted_dir"], "--input", str(groups),
                         "--output", str(out), "--by", "sum_log_odds"], capsys)
  assert code == 0, stderr
  first, second = read_jsonl(out)
  assert first["id"] == "u1" and first["by"] == "sum_log_odds"
  assert [c["index"] for c in first["candidates"]][0] == 1
  assert [c["rank"] for c in first["candidates"]] == [1, 2, 3]
  assert second["id"] == 3 and second["candidates"][0]["text"] == "zz ate"


@pytest.mark.parametrize("content, message", [
    (b"the dog\n\xff\xfe bad\n", "in.txt:2: not valid UTF-8 (byte 0xff at byte 1 of the line)"),
])
@pytest.mark.slow
def test_cli_score_rejects_invalid_utf8(models, tmp_path, capsys, content, message):
  source = tmp_path / "in.txt"
  source.write_bytes(content)
  out = tmp_path / "out.jsonl"
  code, _, stderr = run(["score", "--model-dir", models["planted_dir"], "--input", str(source),
                         "--output", str(out)], capsys)
  assert code == 2
  assert len(stderr) == 1 and stderr[0].startswith("error: ") and message in stderr[0]
  assert not out.exists() and os.listdir(tmp_path) == ["in.txt"]  # nothing half-written


@pytest.mark.parametrize("content, message", [
    ('{"candidates": ["a dog"]}\n{"candidates": "a dog"}\n',
     'groups.jsonl:2: "candidates" must be a non-empty list of strings'),
    ('{"candidates": ["a dog", " "]}\n', "groups.jsonl:1: candidate 1 is empty"),
    ('{"candidates": ["a dog"]\n', "groups.jsonl:1: not valid JSON"),
    ('["a dog"]\n', "groups.jsonl:1: a JSON list, not an object"),
])
def test_cli_rerank_bad_groups(models, tmp_path, capsys, content, message):
  source = tmp_path / "groups.jsonl"
  source.write_text(content, encoding="utf-8")
  code, _, stderr = run(["rerank", "--model-dir", models["planted_dir"], "--input", str(source),
                         "--output", str(tmp_path / "out.jsonl")], capsys)
  assert code == 2 and len(stderr) == 1 and message in stderr[0], stderr
  assert not (tmp_path / "out.jsonl").exists()


def test_cli_model_errors(models, tmp_path, capsys):
  mlm_hparams = dict(TINY, electra_objective=False, untied_generator=False,
                     generator_hidden_size=1.0)
  mlm = ElectraPretrainer.from_pretraining_config(resolve_pretraining_config(
      "electra_small", None, mlm_hparams))
  mlm_dir = write_model(tmp_path, "mlm", mlm, mlm_hparams)
  source = tmp_path / "in.txt"
  source.write_text("a dog\n", encoding="utf-8")
  for model_dir, message in [
      (mlm_dir, "needs an ELECTRA discriminator; this model was pre-trained as MLM only"),
      (str(tmp_path / "missing"), "does not exist"),
      (str(tmp_path), "is no ELECTRA checkpoint: expected")]:
    code, _, stderr = run(["score", "--model-dir", model_dir, "--input", str(source),
                           "--output", str(tmp_path / "o.jsonl")], capsys)
    assert code == 2 and len(stderr) == 1 and message in stderr[0], stderr
  code, _, stderr = run(["score", "--model-dir", mlm_dir, "--input", str(tmp_path / "none.txt"),
                         "--output", str(tmp_path / "o.jsonl")], capsys)
  assert code == 2 and stderr == [f"error: --input {tmp_path / 'none.txt'} is not a file"]


@pytest.mark.slow
def test_cli_show(models):
  code, stdout, stderr = run(["show", "--model-dir", models["planted_dir"], "--color", "never",
                              "The dog DRANK the bone."])
  assert code == 0, stderr
  lines = stdout.split("\n")
  assert lines[:2] == ["The dog DRANK the bone.", "        ^^^^^"]
