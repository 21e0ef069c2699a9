"""Bad input as properties: every malformed hparams, TSV, QA JSON, vocab or corpus file
is either accepted (as docs/reliability.md says) or refused with one ElectraError line
naming the file and the line or field. Never a traceback, never a partial output.
"""

import json
import math
import os

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from electra_tf2.text import vocab as vocab_lib
from electra_tf2.config.pretraining import ConfigError, resolve_pretraining_config
from electra_tf2.utils.errors import ElectraError
from electra_tf2.tasks.task import FinetuningDataError
from tests.conftest import REPO_ROOT
from tests.fixtures import make_config, make_tasks

PROPERTY = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])
SCHEMA = json.load(open(os.path.join(REPO_ROOT, "electra_tf2", "config", "presets",
                                   "pretraining_defaults.json")))
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.text(max_size=8),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([float("nan"), float("inf"), 1e308, 2**63, 2**31, -1, 0]))
VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=3),
                   st.dictionaries(st.text(max_size=5), SCALARS, max_size=3))
KEYS = st.one_of(st.sampled_from(sorted(k for k in SCHEMA if not k.startswith("_"))),
                 st.text(min_size=1, max_size=12))


def assert_one_line(error: ElectraError, *names: str) -> None:
  """One line, naming at least one of `names` (a file, a field)."""
  message = str(error)
  assert message and "\n" not in message and "Traceback" not in message, message
  assert any(name in message or repr(name) in message for name in names), (message, names)


# ---------------------------------------------------------------------------
# hparams
# ---------------------------------------------------------------------------


EXTREMES = st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e308, 2**63, 2**31,
                            -2**31, -1, 0, "", [], {}, None, True])
HPARAMS = st.one_of(
    st.dictionaries(KEYS, VALUES, min_size=1, max_size=3),
    st.builds(lambda key, value: {key: value}, st.sampled_from(sorted(SCHEMA)), EXTREMES))


@PROPERTY
@given(HPARAMS)
@example({"gradient_accumulation_steps": 0})  # was a ZeroDivisionError
@example({"mask_prob": 1e308})  # was an OverflowError (max_predictions_per_seq)
def test_hparams_are_resolved_or_refused_naming_the_field(tmp_path, hparams):
  try:
    config = resolve_pretraining_config("electra_small", str(tmp_path), json.dumps(hparams))
  except ConfigError as e:
    assert_one_line(e, *hparams, "max_seq_length", "max_position_embeddings", "train_batch_size")
    return
  # Accepted: every value is finite and fits the int32 the training loop feeds TensorFlow.
  for key, value in config.to_dict().items():
    if isinstance(value, float):
      assert math.isfinite(value), key
    if isinstance(value, int) and not isinstance(value, bool):
      assert abs(value) < 2**31, key


FINETUNING_SCHEMA = json.load(open(os.path.join(REPO_ROOT, "electra_tf2", "config", "presets",
                                              "finetuning_defaults.json")))


@PROPERTY
@given(st.one_of(
    st.dictionaries(KEYS, VALUES, min_size=1, max_size=2),
    st.builds(lambda key, value: {key: value}, st.sampled_from(sorted(FINETUNING_SCHEMA)),
              EXTREMES)))
def test_finetuning_hparams_are_resolved_or_refused_naming_the_field(tmp_path, hparams):
  keys = list(hparams)
  task_names = hparams.pop("task_names", ["rte"])  # make_config's own argument
  try:
    make_config(str(tmp_path), task_names, **hparams)
  except ConfigError as e:
    assert_one_line(e, *keys, "task", "max_seq_length")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("key", ["learning_rate", "weight_decay_rate", "temperature",
                                 "disc_weight", "mask_prob"])
def test_non_finite_floats_are_refused(tmp_path, key, value):
  with pytest.raises(ConfigError, match=f"--hparams: {key} must be a finite number"):
    resolve_pretraining_config("electra_small", str(tmp_path), json.dumps({key: value}))


# ---------------------------------------------------------------------------
# GLUE TSV
# ---------------------------------------------------------------------------

CELLS = st.text(alphabet=st.characters(blacklist_characters="\t\n\r",
                                      blacklist_categories=("Cs",)), max_size=12)
LABELS = st.one_of(st.sampled_from(["entailment", "not_entailment"]), CELLS)


@PROPERTY
@given(rows=st.lists(st.lists(st.one_of(CELLS, LABELS), min_size=0, max_size=6), max_size=8),
       raw=st.binary(max_size=20), mode=st.sampled_from(["text", "bytes", "latin-1"]))
def test_glue_rows_are_read_or_refused_naming_the_file_and_line(tmp_path, rows, raw, mode):
  config = make_config(str(tmp_path), ["rte"])
  path = os.path.join(config.task_data_dir("rte"), "train.tsv")
  os.makedirs(os.path.dirname(path), exist_ok=True)
  text = "index\tsentence1\tsentence2\tlabel\n" + "".join("\t".join(r) + "\n" for r in rows)
  with open(path, "wb") as f:
    f.write(text.encode("utf-8") + (raw if mode == "bytes" else b"") +
            ("\u00e9t\u00e9\n".encode("latin-1") if mode == "latin-1" else b""))
  task, = make_tasks(config)
  try:
    examples = task.get_examples("train")
    task.check_labels(examples)
  except FinetuningDataError as e:
    assert_one_line(e, path)
    return
  for read in examples:  # accepted: whole rows with a known label only
    assert read.label in ("entailment", "not_entailment")
    assert read.source.startswith(f"{path}:")


# ---------------------------------------------------------------------------
# SQuAD / MRQA JSON
# ---------------------------------------------------------------------------

ANSWERS = st.one_of(
    st.lists(st.fixed_dictionaries({"answer_start": st.one_of(st.integers(-5, 40), SCALARS),
                                    "text": st.one_of(st.text(max_size=6), SCALARS)}),
             max_size=2),
    SCALARS, st.dictionaries(st.text(max_size=3), SCALARS, max_size=2))
QAS = st.fixed_dictionaries(
    {"id": st.one_of(st.text(max_size=6), st.integers()), "question": st.one_of(
        st.text(max_size=10), SCALARS), "answers": ANSWERS},
    optional={"is_impossible": st.one_of(st.booleans(), SCALARS)})
PARAGRAPHS = st.fixed_dictionaries({"context": st.one_of(st.text(max_size=30), SCALARS),
                                    "qas": st.one_of(st.lists(QAS, max_size=3), SCALARS)})


@PROPERTY
@given(paragraphs=st.lists(PARAGRAPHS, max_size=3), task_name=st.sampled_from(["squad", "squadv1"]))
@example(paragraphs=[{"context": "abc", "qas": [{"id": "q\n1", "question": "x", "answers": {"0": 1},
                                               "is_impossible": False}]}], task_name="squad")
@example(paragraphs=[{"context": "", "qas": [{"id": "q", "question": "x", "answers": [],
                                            "is_impossible": True}]}], task_name="squad")
def test_squad_json_is_read_or_refused_naming_the_file_and_question(tmp_path, paragraphs,
                                                                    task_name):
  config = make_config(str(tmp_path), [task_name], max_seq_length=128)
  path = os.path.join(config.task_data_dir(task_name), "train.json")
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    json.dump({"data": [{"paragraphs": paragraphs}]}, f)
  task, = make_tasks(config)
  try:
    examples = task.get_examples("train")
  except FinetuningDataError as e:
    assert_one_line(e, path)
    return
  for read in examples:  # accepted: an answer inside its context, or none
    if not read.is_impossible:
      assert 0 <= read.start_position <= read.end_position < len(read.doc_tokens)


@PROPERTY
@given(lines=st.lists(st.one_of(st.text(max_size=20), st.binary(max_size=10).map(repr)),
                      max_size=4))
def test_mrqa_jsonl_is_read_or_refused_naming_the_line(tmp_path, lines):
  config = make_config(str(tmp_path), ["newsqa"], max_seq_length=128)
  path = os.path.join(config.task_data_dir("newsqa"), "train.jsonl")
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    f.write(json.dumps({"header": {}}) + "\n" + "\n".join(lines) + "\n")
  task, = make_tasks(config)
  try:
    task.get_examples("train")
  except FinetuningDataError as e:
    assert_one_line(e, path)


# ---------------------------------------------------------------------------
# Vocab files
# ---------------------------------------------------------------------------

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@PROPERTY
@given(tokens=st.lists(st.one_of(st.sampled_from(SPECIALS + ["a", "##b", ""]), st.text(
    max_size=5)), max_size=12), raw=st.one_of(st.just(b""), st.binary(max_size=4)))
def test_vocab_is_loaded_or_refused_naming_the_file_and_line(tmp_path, tokens, raw):
  path = str(tmp_path / "vocab.txt")
  with open(path, "wb") as f:
    f.write("\n".join(tokens).encode("utf-8") + raw)
  try:
    vocab = vocab_lib.load_vocab(path)
  except vocab_lib.VocabError as e:
    assert_one_line(e, path)
    return
  assert set(SPECIALS) <= set(vocab) and sorted(vocab.values()) == list(range(len(vocab)))


# ---------------------------------------------------------------------------
# Corpus files
# ---------------------------------------------------------------------------


def build(tmp_path, corpus: bytes, name: str):
  from electra_tf2.data_prep.builder import BuildConfig, build_pretraining_data
  from tests.fixtures import write_vocab
  vocab = str(tmp_path / "vocab.txt")
  if not os.path.exists(vocab):
    write_vocab(vocab)
  path = tmp_path / name
  path.write_bytes(corpus)
  out = tmp_path / f"out_{name}"
  cfg = BuildConfig(inputs=[str(path)], vocab_file=vocab, output_dir=str(out), progress=False,
                    max_seq_length=32, num_shards=2, seed=0)
  return str(path), out, lambda: build_pretraining_data(cfg, log=lambda s: None,
                                                        warn=lambda s: None)


@PROPERTY
@given(corpus=st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode)))
def test_corpus_files_are_built_or_refused_leaving_no_partial_output(tmp_path, corpus):
  import pathlib
  import tempfile
  path, out, run = build(pathlib.Path(tempfile.mkdtemp(dir=tmp_path)), corpus, "corpus.txt")
  try:
    summary = run()
  except ElectraError as e:
    assert_one_line(e, path, str(out))
    assert not out.exists() or not os.listdir(out)  # nothing half-written
    return
  assert summary.stats.examples > 0 and len(os.listdir(out)) == 4  # 2 shards, info, tokenizer


def test_one_100_mb_line_is_built(tmp_path):
  """A corpus of one 100 MB line (no newline at all) is read: the documented behaviour."""
  words = b"the quick brown fox jumps over the lazy dog " * (100 * 2**20 // 44 + 1)
  path, out, run = build(tmp_path, words[:100 * 2**20], "one_line.txt")
  summary = run()
  assert summary.stats.examples > 0


def test_a_message_with_a_newline_is_still_one_line(capsys):
  from electra_tf2.utils import errors
  assert errors.report(ElectraError("bad.json: question 'a\nb' has no answer")) == 2
  assert capsys.readouterr().err == "error: bad.json: question 'a\\nb' has no answer\n"


# ---------------------------------------------------------------------------
# Text inputs of the serving commands and readers
# ---------------------------------------------------------------------------

LINE_BYTES = st.one_of(
    st.text(alphabet=st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)),
            max_size=8).map(str.encode),
    st.binary(max_size=6).filter(lambda b: b"\n" not in b))


def first_undecodable_line(content: bytes):
  """The number of the first line that is not UTF-8 (a line ends at \\n; trailing \\r
  dropped), or None: Python's own decoder as the oracle."""
  for number, line in enumerate(content.split(b"\n"), 1):
    try:
      line.rstrip(b"\r").decode("utf-8")
    except UnicodeDecodeError:
      return number
  return None


def serving_commands(tmp_path, path):
  """Every command that reads a user's text file, on `path`, without a model (each reads
  its text before loading one): name -> a call returning the exit code."""
  from electra_tf2.serving import export, predict
  from electra_tf2.cli import score as cli
  missing, out = str(tmp_path / "no_model"), str(tmp_path / "out.jsonl")
  return {
      "predict": lambda: predict.main(["--model", missing, "--input", path, "--output", out]),
      "export --calibration-file": lambda: export.main([
          "--model-dir", missing, "--format", "litert", "--output", out, "--quantize", "int8",
          "--calibration-file", path]),
      "score file": lambda: cli.main(["file", "--model-dir", missing, "--input", path,
                                      "--output", out]),
      "score rerank": lambda: cli.main(["rerank", "--model-dir", missing, "--input", path,
                                        "--output", out])}


@PROPERTY
@given(lines=st.lists(LINE_BYTES, max_size=5), newline=st.sampled_from([b"\n", b"\r\n"]),
       trailing=st.booleans())
@example(lines=[b"the c\xffat"], newline=b"\n", trailing=True)
@example(lines=[b"ok", b"", b"\xc3"], newline=b"\r\n", trailing=False)
def test_every_command_refuses_bytes_that_are_not_utf8_naming_the_line(tmp_path, capsys, lines,
                                                                       newline, trailing):
  """predict, export --calibration-file, score file and score rerank: exit 2 with one line
  naming the file and the first line that is not UTF-8; the readers (`predict_file`'s,
  `QuestionAnswerer.read_rows`') raise the same one line."""
  from electra_tf2.utils import predictions
  content = newline.join(lines) + (newline if trailing else b"")
  path = str(tmp_path / "input.txt")
  with open(path, "wb") as f:
    f.write(content)
  bad = first_undecodable_line(content)
  wanted = f"{path}:{bad}: not valid UTF-8"
  for name, run in serving_commands(tmp_path, path).items():
    assert run() == 2, name
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), (name, err)
    assert (wanted in err) if bad else ("UTF-8" not in err), (name, err)
  for names, jsonl in ((["text"], False), (["question", "context"], True)):
    try:
      predictions.read_rows(path, names, jsonl)
    except predictions.InputFileError as e:
      assert_one_line(e, path)
      assert (wanted in str(e)) if bad else ("UTF-8" not in str(e)), str(e)
    else:
      assert bad is None
  assert not os.path.exists(tmp_path / "out.jsonl")


@pytest.mark.parametrize("content", [b"", b"\n \n\t\r\n"])
def test_score_refuses_an_input_without_text_in_one_line(tmp_path, capsys, content):
  path = tmp_path / "input.txt"
  path.write_bytes(content)
  for name, run in serving_commands(tmp_path, str(path)).items():
    if name.startswith("score"):
      assert run() == 2
      assert capsys.readouterr().err == (f"error: --input {path} is empty: give one text (or "
                                         "JSON object) per line\n")


# ---------------------------------------------------------------------------
# Damaged checkpoints, both formats, on every command that reads one
# ---------------------------------------------------------------------------

# (directory, file) of each format: the portable checkpoint and its sidecar, the TensorFlow
# checkpoint's data, index and state file.
CHECKPOINT_FILES = [("portable", "portable-2.npz"), ("portable", "portable-2.json"),
                    ("tensorflow", "ckpt-2.data-00000-of-00001"), ("tensorflow", "ckpt-2.index"),
                    ("tensorflow", "checkpoint")]


@pytest.fixture(scope="module")
def trained_dirs(tmp_path_factory):
  from tests.fixtures import write_trained_model_dirs
  return write_trained_model_dirs(str(tmp_path_factory.mktemp("trained")))


def damage(path: str, how: str, where: float) -> None:
  """Truncates `path` at fraction `where` of its size, flips a bit of the byte there, or
  deletes it."""
  if how == "delete":
    os.remove(path)
    return
  with open(path, "rb") as f:
    content = bytearray(f.read())
  at = min(int(where * len(content)), len(content) - 1)
  if how == "truncate":
    del content[at:]
  else:
    content[at] ^= 0x10
  with open(path, "wb") as f:
    f.write(bytes(content))


def checkpoint_readers(model_dir: str, data_dir: str, out: str):
  """Every command that reads `model_dir`'s checkpoint: name -> a call returning the exit
  code (from_pretrained's ElectraError reported as a command reports it)."""
  from electra_tf2.cli import score as cli
  from electra_tf2.config.pretraining import resolve_pretraining_config
  from electra_tf2.conversion import hf_export
  from electra_tf2.models.discriminator import Discriminator
  from electra_tf2.training import tf_pretraining
  from electra_tf2.utils.errors import run_command
  from tests.fixtures import TINY_PRETRAINING
  texts = os.path.join(out, "texts.txt")
  with open(texts, "w", encoding="utf-8") as f:
    f.write("w1 w2 w3\n")
  resume = dict(TINY_PRETRAINING, model_dir=model_dir, num_train_steps=3)
  return {
      "from_pretrained": lambda: run_command(
          lambda _: Discriminator.from_pretrained(model_dir) and 0),
      "hf-export": lambda: hf_export.main(["--model-dir", model_dir, "--output-dir",
                                           os.path.join(out, "hf")]),
      "score": lambda: cli.main(["file", "--model-dir", model_dir, "--input", texts,
                                 "--output", os.path.join(out, "scores.jsonl")]),
      "pretrain (resume)": lambda: run_command(lambda _: tf_pretraining.run_pretraining(
          resolve_pretraining_config("electra_small", data_dir, resume)) and 0)}


@settings(max_examples=16, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(file=st.sampled_from(CHECKPOINT_FILES), how=st.sampled_from(["truncate", "flip", "delete"]),
       where=st.floats(0, 1), reader=st.sampled_from(["from_pretrained", "hf-export", "score",
                                                      "pretrain (resume)"]))
@example(file=CHECKPOINT_FILES[0], how="truncate", where=0.5, reader="score")  # BadZipFile
@example(file=CHECKPOINT_FILES[0], how="flip", where=0.5, reader="from_pretrained")  # bad CRC
@example(file=CHECKPOINT_FILES[0], how="truncate", where=0.5, reader="hf-export")
@example(file=CHECKPOINT_FILES[1], how="truncate", where=0.5, reader="pretrain (resume)")
@example(file=CHECKPOINT_FILES[2], how="flip", where=0.5, reader="score")
@example(file=CHECKPOINT_FILES[3], how="truncate", where=0.3, reader="from_pretrained")
def test_a_damaged_checkpoint_is_read_or_refused_naming_the_file(trained_dirs, tmp_path, capsys,
                                                                 file, how, where, reader):
  """Every reader of a checkpoint either reads it (the damage missed what it reads, or the
  file is not needed: a missing sidecar) or exits 2 with one line naming the file."""
  import shutil
  import tempfile
  kind, name = file
  work = tempfile.mkdtemp(dir=tmp_path)
  model_dir = shutil.copytree(trained_dirs[kind], os.path.join(work, kind))
  damage(os.path.join(model_dir, name), how, where)
  capsys.readouterr()
  code = checkpoint_readers(model_dir, trained_dirs["data"], work)[reader]()
  err = capsys.readouterr().err
  lines = [line for line in err.splitlines() if line.startswith("error: ") or "Traceback" in line]
  assert code in (0, 2), (reader, err[-3000:])
  if code == 2:
    assert len(lines) == 1 and "Traceback" not in err, (reader, err[-3000:])
    assert any(part in lines[0] for part in (name, "ckpt-2", "checkpoint")), lines[0]
  if (kind, how) == ("portable", "delete") or name == "checkpoint":
    return  # the weights are whole: read (a resume says the input stream starts afresh)
  assert code == 2 or how == "flip", (reader, err[-3000:])  # a truncated file is refused
