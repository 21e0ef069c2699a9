"""Any language, any vocabulary (#42): special tokens found by role and described beside
the data, model directories and exports; SentencePiece from build-vocab to pre-training.

The oracle for SentencePiece ids is the `sentencepiece` library itself; the corpora are
made here (a few hundred lines of Korean, Chinese, German and Russian words).
"""

import json
import dataclasses
import os
import random

import pytest

from electra_tf2.text import description as description_lib
from electra_tf2.text import vocab as vocab_lib
from electra_tf2.data_prep import build_vocab
from electra_tf2.data_prep.common import DataPrepError
from electra_tf2.text.vocab import SpecialTokenIds, VocabError

WORDS = ("한국어 문장 학교 선생님 사랑 中文 句子 学校 老师 Straße über schön Привет мир "
         "город книга").split()
TINY_ENCODER = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
                "intermediate_size": 64}


def write_corpus(directory, documents=40, seed=0):
  """Documents of 6 sentences of 8 words each, blank lines between documents."""
  rng = random.Random(seed)
  os.makedirs(directory, exist_ok=True)
  docs = ["\n".join(" ".join(rng.choice(WORDS) for _ in range(8)) + "." for _ in range(6))
          for _ in range(documents)]
  path = os.path.join(directory, "corpus.txt")
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n\n".join(docs) + "\n")
  return path


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
  """A unigram SentencePiece model of 60 pieces built by `build-vocab --kind sentencepiece`."""
  root = tmp_path_factory.mktemp("spm")
  corpus = write_corpus(str(root / "corpus"))
  output = str(root / "spm.model")
  build_vocab.learn_sentencepiece_from_files([corpus], 60, output, log=None)
  return output


@pytest.fixture(scope="module")
def spm_model_elsewhere(tmp_path_factory):
  """A model trained by the sentencepiece library with its own spellings, as models trained
  elsewhere are: <unk>=0, <s>=1, </s>=2, <pad>=3, <mask>=4."""
  import sentencepiece
  root = tmp_path_factory.mktemp("spm_elsewhere")
  corpus = write_corpus(str(root / "corpus"))
  sentencepiece.SentencePieceTrainer.train(
      input=corpus, model_prefix=str(root / "other"), vocab_size=60, pad_id=3,
      user_defined_symbols=["<mask>"], minloglevel=2)
  return str(root / "other.model")


def write_tokens(path, tokens):
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(tokens) + "\n")
  return str(path)


# -- special tokens by role -------------------------------------------------------------


def test_special_tokens_are_found_by_role_in_either_spelling(tmp_path):
  bert = write_tokens(tmp_path / "bert.txt", ["x", "[MASK]", "[SEP]", "[CLS]", "[UNK]", "[PAD]"])
  assert vocab_lib.special_token_ids(vocab_lib.load_vocab(bert)) == SpecialTokenIds(5, 4, 3, 2, 1)
  roberta = write_tokens(tmp_path / "roberta.txt", ["<s>", "<pad>", "</s>", "<unk>", "y",
                                                    "<mask>"])
  vocab = vocab_lib.load_vocab(roberta)
  assert vocab_lib.special_tokens(vocab) == ("<pad>", "<unk>", "<s>", "</s>", "<mask>")
  assert vocab_lib.special_token_ids(vocab) == SpecialTokenIds(1, 3, 0, 2, 5)


def test_a_vocabulary_without_a_mask_like_token_is_one_line(tmp_path):
  path = write_tokens(tmp_path / "v.txt", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "x"])
  with pytest.raises(VocabError) as error:
    vocab_lib.load_vocab(path)
  message = str(error.value)
  assert "\n" not in message and path in message
  assert "no MASK-like token ([MASK] or <mask>)" in message and "electra build-vocab" in message


def test_the_kind_is_recognised_from_the_file_and_the_other_kind_refused(tmp_path, spm_model,
                                                                         capsys):
  renamed = str(tmp_path / "pieces.bin")  # no .model name: recognised by its bytes
  with open(spm_model, "rb") as src, open(renamed, "wb") as dst:
    dst.write(src.read())
  text = write_tokens(tmp_path / "vocab.txt", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
  assert vocab_lib.vocab_kind(renamed) == "sentencepiece"
  assert vocab_lib.vocab_kind(text) == "wordpiece"
  with pytest.raises(VocabError, match=r"is a SentencePiece model, not a WordPiece vocab.txt: "
                                       r"pass --kind sentencepiece"):
    vocab_lib.check_kind(spm_model, "wordpiece")
  with pytest.raises(VocabError, match=r"is a WordPiece vocab.txt, not a SentencePiece .model: "
                                       r"pass --kind wordpiece"):
    vocab_lib.check_kind(text, "sentencepiece")
  corpus = str(tmp_path / "c")
  write_corpus(corpus, documents=1)
  for argv, expected in ((["--output", str(tmp_path / "v.model")],
                          "a .model file is a SentencePiece model; pass --kind sentencepiece"),
                         (["--kind", "sentencepiece", "--output", str(tmp_path / "v.txt")],
                          "a SentencePiece model is written as NAME.model"),
                         (["--output", str(tmp_path / "v.txt"), "--character-coverage", "0"],
                          "--character-coverage 0.0: must be in (0, 1]")):
    assert build_vocab.main(["--corpus-dir", corpus, "--vocab-size", "60", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and expected in err and argv[-1] in err


# -- the description ----------------------------------------------------------------------


def test_description_round_trip_old_directories_and_disagreement(tmp_path):
  tokens = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]",
                                                              "[MASK]", "the"]
  model_dir = tmp_path / "model"
  model_dir.mkdir()
  vocab = write_tokens(model_dir / "vocab.txt", tokens)
  # A directory written before descriptions: the vocabulary's BERT spellings.
  old = description_lib.read_description(str(model_dir), vocab)
  assert old.special_ids == vocab_lib.BERT_UNCASED_SPECIAL_IDS and old.kind == "wordpiece"
  assert description_lib.read_description(str(tmp_path / "empty")) is None
  described = description_lib.describe_vocab(vocab, do_lower_case=False)
  path = description_lib.write_description(str(model_dir), described)
  with open(path, encoding="utf-8") as f:
    saved = json.load(f)
  assert saved["special_tokens"]["mask"] == {"token": "[MASK]", "id": 103}
  assert saved["vocab_file"] == "vocab.txt" and saved["do_lower_case"] is False
  assert description_lib.read_description(str(model_dir)) == described
  # The vocabulary beside it changed: [CLS] and [SEP] swapped.
  tokens[101], tokens[102] = tokens[102], tokens[101]
  write_tokens(model_dir / "vocab.txt", tokens)
  with pytest.raises(VocabError) as error:
    description_lib.read_description(str(model_dir))
  message = str(error.value)
  assert "\n" not in message and path in message and vocab in message
  assert "CLS [CLS]=101 there, [CLS]=102 here" in message


def test_spm_vocab_is_the_model_pieces_and_its_description(spm_model):
  import sentencepiece
  processor = sentencepiece.SentencePieceProcessor(model_file=spm_model)
  vocab = vocab_lib.load_vocab(spm_model)
  assert len(vocab) == processor.get_piece_size() == 60
  assert all(vocab[processor.id_to_piece(i)] == i for i in range(60))
  described = description_lib.describe_vocab(spm_model)
  assert described.kind == "sentencepiece" and described.do_lower_case is False
  assert described.special_tokens == vocab_lib.SPECIAL_TOKENS
  assert described.special_ids == SpecialTokenIds(0, 1, 2, 3, 4)
  assert (processor.pad_id(), processor.unk_id(), processor.bos_id(), processor.eos_id()) == (
      0, 1, 2, 3)


def test_build_vocab_sentencepiece_bpe_and_bad_corpora(tmp_path):
  corpus = write_corpus(str(tmp_path / "corpus"))
  output = str(tmp_path / "bpe.model")
  build_vocab.learn_sentencepiece_from_files([corpus], 70, output, model_type="bpe",
                                             user_symbols=["<url>"], num_unused=2, log=None)
  import sentencepiece
  processor = sentencepiece.SentencePieceProcessor(model_file=output)
  assert [processor.id_to_piece(i) for i in range(8)] == [
      "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]", "[unused1]", "<url>"]
  assert processor.get_piece_size() == 70
  empty = str(tmp_path / "blank.txt")
  with open(empty, "w", encoding="utf-8") as f:
    f.write("\u200b\n\x01\n\n")
  with pytest.raises(DataPrepError, match=r"is empty once normalised \(nmt_nfkc\)"):
    build_vocab.learn_sentencepiece_from_files([empty], 60, str(tmp_path / "e.model"), log=None)
  with pytest.raises(DataPrepError, match=r"refused: Vocabulary size too high \(9000\)"):
    build_vocab.learn_sentencepiece_from_files([corpus], 9000, str(tmp_path / "b.model"),
                                               log=None)
  with pytest.raises(DataPrepError, match=r"no words found .* once normalised"):
    build_vocab.learn_vocab_from_files([empty], 60, str(tmp_path / "e.txt"), log=None)


# -- SentencePiece through the data builder and pre-training -----------------------------


def test_sentencepiece_tokenizer_gives_the_library_ids(spm_model):
  import sentencepiece
  from electra_tf2.text.kinds import load_tokenizer
  processor = sentencepiece.SentencePieceProcessor(model_file=spm_model)
  tokenizer = load_tokenizer(spm_model, do_lower_case=True)  # casing: the model's own rule
  texts = ["한국어 문장 学校 老师", "Straße über schön", "Привет   мир.", "", "ＡＢＣ ｘ"]
  assert tokenizer.encode_batch(texts) == [processor.encode(t) for t in texts]
  ids = tokenizer.tokenize_to_ids(__import__("tensorflow").constant(texts)).to_list()
  assert ids == [processor.encode(t) for t in texts]
  assert tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]", "[MASK]"]) == [2, 3, 4]


# Texts where the host SentencePiece could part from the graph's: empty and blank texts,
# whitespace that is not ASCII, control characters, NUL, U+FFFD, U+2581 itself, full-width
# and astral characters, bytes (invalid UTF-8 too), texts longer than max_seq_length.
SPM_TEXTS = ["한국어 문장 学校 老师", "Straße über schön", "Привет   мир.", "", "   ", "ＡＢＣ ｘ",
             "мир\u00a0город\u3000книга", "a\x0bdog\x0c runs\r\nfast", "\x01 학교 \x02", "a\x00b",
             "x\ufffdy \u2581 schön", "😀 사랑", " ".join(WORDS * 3), b"\xd0\xbc\xd0\xb8\xd1\x80",
             b"ab\xffcd \xe2\x82 x", "город" * 40]


@pytest.mark.parametrize("trained_by", ["build-vocab", "elsewhere"])
@pytest.mark.parametrize("max_seq_length", [6, 24])
def test_host_sentencepiece_features_equal_the_graph_featurizer(request, trained_by,
                                                                 max_seq_length):
  """PyTextFeaturizer with a SentencePiece model (the `sentencepiece` library, no
  TensorFlow) against TextFeaturizer in the graph (tensorflow-text): single texts, pairs
  (truncated), padding and the tagging features, id for id."""
  import numpy as np
  import tensorflow as tf
  from electra_tf2.text import tagging
  from electra_tf2.text.packing import TextFeaturizer
  from electra_tf2.text.py_tokenizer import PyTextFeaturizer
  from electra_tf2.text.sentencepiece import read_model
  path = request.getfixturevalue("spm_model" if trained_by == "build-vocab"
                                 else "spm_model_elsewhere")
  vocab = vocab_lib.load_vocab(path)
  pieces, model = sorted(vocab, key=vocab.get), read_model(path)
  graph = TextFeaturizer(pieces, max_seq_length=max_seq_length, sentencepiece_model=model)
  host = PyTextFeaturizer(pieces, max_seq_length=max_seq_length, sentencepiece_model=model)
  assert (host.cls_id, host.sep_id) == ((2, 3) if trained_by == "build-vocab" else (1, 2))
  texts, texts_b = SPM_TEXTS, list(reversed(SPM_TEXTS))

  def same(ours, expected):
    assert ours.keys() == expected.keys()
    for key, value in expected.items():
      assert ours[key].dtype == np.int32, key
      np.testing.assert_array_equal(ours[key], value.numpy(), err_msg=key)

  same(host.features(texts), graph.features(tf.constant(texts)))
  same(host.features(texts, texts_b), graph.features(tf.constant(texts), tf.constant(texts_b)))
  same(host.word_features(texts), tagging.word_features(graph, tf.constant(texts)))
  unpadded = host.features(texts, texts_b)["input_ids"]
  padded = host.features(texts, texts_b, pad_to_max_length=True)["input_ids"]
  assert padded.shape == (len(texts), max_seq_length)
  np.testing.assert_array_equal(padded[:, :unpadded.shape[1]], unpadded)
  assert not padded[:, unpadded.shape[1]:].any()


def test_host_sentencepiece_refuses_a_bad_model_in_one_line():
  from electra_tf2.text.py_tokenizer import PyTextFeaturizer
  with pytest.raises(VocabError) as error:
    PyTextFeaturizer(list(vocab_lib.SPECIAL_TOKENS), sentencepiece_model=b"not a model")
  message = str(error.value)
  assert "\n" not in message and "SentencePiece model cannot be loaded" in message


def test_build_data_with_sentencepiece_writes_the_description_and_library_ids(tmp_path,
                                                                                spm_model):
  import sentencepiece
  import tensorflow as tf
  from electra_tf2.data_prep.builder import BuildConfig, build_pretraining_data
  corpus = write_corpus(str(tmp_path / "corpus"), documents=6)
  out = str(tmp_path / "tfrecords")
  build_pretraining_data(BuildConfig(inputs=[corpus], vocab_file=spm_model, output_dir=out,
                                     max_seq_length=32, num_shards=1, seed=0, progress=False),
                         log=lambda s: None)
  with open(os.path.join(out, description_lib.DESCRIPTION_FILE), encoding="utf-8") as f:
    assert json.load(f)["kind"] == "sentencepiece"
  processor = sentencepiece.SentencePieceProcessor(model_file=spm_model)
  with open(corpus, encoding="utf-8") as f:
    first_line = f.readline().rstrip("\n")
  record = next(iter(tf.data.TFRecordDataset(os.path.join(out, "pretrain_data.tfrecord-0-of-1"))))
  example = tf.train.Example.FromString(record.numpy())
  ids = list(example.features.feature["input_ids"].int64_list.value)
  expected = processor.encode(first_line)
  assert ids[0] == 2 and ids[1:1 + len(expected)] == expected  # [CLS], then the first line


def test_build_data_on_a_corpus_empty_once_normalised_is_one_line(tmp_path, spm_model):
  from electra_tf2.data_prep.builder import BuildConfig, build_pretraining_data
  blank = str(tmp_path / "blank.txt")
  with open(blank, "w", encoding="utf-8") as f:
    f.write("\u200b\n\x01 \n\n\t\n")  # a zero-width space, a control character, blanks
  with pytest.raises(DataPrepError) as error:
    build_pretraining_data(BuildConfig(inputs=[blank], vocab_file=spm_model,
                                       output_dir=str(tmp_path / "out"), max_seq_length=32,
                                       num_shards=1, seed=0, progress=False),
                           log=lambda s: None)
  message = str(error.value)
  assert "\n" not in message and blank in message and spm_model in message
  assert "hold no token once normalised" in message and "one sentence per line" in message


@pytest.fixture(scope="module")
def spm_model_dir(tmp_path_factory, spm_model):
  """DATA with spm.model only, TFRecords built with it, and a tiny model pre-trained 2 steps."""
  import shutil
  root = tmp_path_factory.mktemp("spm_data")
  data = root / "data"
  data.mkdir()
  shutil.copy(spm_model, data / "spm.model")
  corpus = write_corpus(str(root / "corpus"), documents=8)
  config = pretrain_tiny(data, corpus, str(data / "spm.model"), 60, deterministic=True)
  assert config.vocab_file == str(data / "spm.model")  # found without a vocab.txt
  assert config.special_ids == SpecialTokenIds(0, 1, 2, 3, 4)
  return config.model_dir


def pretrain_tiny(data, corpus, vocab_file, vocab_size, strip_accents=None, **hparams):
  """DATA/pretrain_tfrecords built from `corpus` with `vocab_file`, and a tiny model
  pre-trained 2 steps on them; returns its config."""
  from electra_tf2.config.pretraining import resolve_pretraining_config
  from electra_tf2.data_prep.builder import BuildConfig, build_pretraining_data
  from electra_tf2.training.tf_pretraining import run_pretraining
  build_pretraining_data(BuildConfig(inputs=[corpus], vocab_file=vocab_file,
                                     strip_accents=strip_accents,
                                     output_dir=str(data / "pretrain_tfrecords"),
                                     max_seq_length=32, num_shards=1, seed=0, progress=False),
                         log=lambda s: None)
  config = resolve_pretraining_config("electra_small", str(data), {
      "num_train_steps": 2, "train_batch_size": 4, "max_seq_length": 32,
      "vocab_size": vocab_size, "model_hparam_overrides": TINY_ENCODER, "embedding_size": 16,
      "save_checkpoints_steps": 2, "seed": 1, **hparams})
  run_pretraining(config)
  return config


def test_pretraining_on_sentencepiece_data_describes_the_model_directory(spm_model_dir,
                                                                          tmp_path):
  import shutil
  from electra_tf2.checkpoints import describe as describe_lib
  found = describe_lib.describe(spm_model_dir)
  assert found.tokenizer.kind == "sentencepiece" and found.vocab_file.endswith("spm.model")
  assert found.tokenizer.special_ids == found.pretraining_config.special_ids
  # An old directory (no description) is described by its vocabulary, as before.
  old = str(tmp_path / "old")
  shutil.copytree(spm_model_dir, old)
  os.remove(os.path.join(old, description_lib.DESCRIPTION_FILE))
  # (its vocabulary is its own copy: model directories hold theirs)
  assert describe_lib.describe(old).tokenizer == dataclasses.replace(
      found.tokenizer, vocab_file=os.path.join(old, "spm.model"))
  # A description that disagrees with the vocabulary is refused in one line.
  path = os.path.join(old, description_lib.DESCRIPTION_FILE)
  values = found.tokenizer.to_dict()
  values["special_tokens"]["mask"] = {"token": "[MASK]", "id": 7}
  with open(path, "w", encoding="utf-8") as f:
    json.dump(values, f)
  with pytest.raises(VocabError, match=r"disagrees with the vocabulary .*spm.model: MASK "
                                       r"\[MASK\]=7 there, \[MASK\]=4 here"):
    describe_lib.describe(old)


def test_keras_classifier_on_raw_text_with_sentencepiece(spm_model_dir, spm_model, tmp_path):
  import keras
  import numpy as np
  import sentencepiece
  import tensorflow as tf
  import electra_tf2
  texts = ["한국어 문장 学校 老师", "Straße über schön", "Привет мир."]
  model = electra_tf2.TextClassifier.from_pretrained(spm_model_dir, num_classes=2,
                                                     max_seq_length=16)
  processor = sentencepiece.SentencePieceProcessor(model_file=spm_model)
  features = model.text_inputs(tf.constant(texts))
  for row, mask, text in zip(features["input_ids"].numpy(), features["input_mask"].numpy(),
                             texts):
    assert row[mask == 1].tolist() == [2] + processor.encode(text) + [3]
  # featurize (the host-side features) gives the same ids, not WordPiece over the pieces.
  host = model.featurize(texts, pad_to_max_length=True)
  assert host["input_ids"].dtype == np.int32 and host["input_ids"].shape == (3, 16)
  for row, mask, text in zip(host["input_ids"], host["input_mask"], texts):
    assert row[mask == 1].tolist() == [2] + processor.encode(text) + [3]
  pair = model.featurize(["мир"], ["学校"])
  a, b = processor.encode("мир"), processor.encode("学校")
  assert pair["input_ids"].tolist() == [[2] + a + [3] + b + [3]]
  assert pair["segment_ids"].tolist() == [[0] * (len(a) + 2) + [1] * (len(b) + 1)]
  model.compile(optimizer="adam",
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  model.fit(texts, [0, 1, 0], batch_size=3, epochs=1, verbose=0)
  logits = model.predict(texts, verbose=0)
  model.save(str(tmp_path / "m.keras"))
  again = keras.saving.load_model(str(tmp_path / "m.keras"))
  np.testing.assert_allclose(again.predict(texts, verbose=0), logits, atol=1e-6)
  model.export_saved_model(str(tmp_path / "saved"))
  loaded = tf.saved_model.load(str(tmp_path / "saved"))
  served = loaded.signatures["serving_default"](text=tf.constant(texts))
  np.testing.assert_allclose(served["logits"].numpy(), logits, atol=1e-5)
  # The .tflite tokenizes in FastSentencepieceTokenize's LiteRT kernel: the same outputs.
  lite = electra_tf2.LiteRTModel(model.export_litert(str(tmp_path / "m.tflite")))
  assert lite.settings["tokenizer"] == "sentencepiece"
  out = lite.predict(texts)
  np.testing.assert_allclose(out["logits"], logits, atol=1e-4)
  assert out["label"].tolist() == served["label"].numpy().tolist()


def test_hf_export_writes_a_tokenizer_transformers_loads_for_the_same_ids(spm_model_dir,
                                                                           spm_model, tmp_path):
  transformers = pytest.importorskip("transformers")
  import sentencepiece
  from electra_tf2.conversion import hf_export
  out = str(tmp_path / "hf")
  assert hf_export.main(["--model-dir", spm_model_dir, "--output-dir", out]) == 0
  # The fast tokenizer converts the .model with protobuf >= 7 (constraints.txt pins 6.33
  # for Beam): the slow one reads it with sentencepiece itself.
  tokenizer = transformers.AutoTokenizer.from_pretrained(out, use_fast=False)
  processor = sentencepiece.SentencePieceProcessor(model_file=spm_model)
  for text in ["한국어 문장 学校 老师", "Straße  über schön", "Привет мир.", "ＡＢＣ x"]:
    assert tokenizer(text)["input_ids"] == [2] + processor.encode(text) + [3]
  assert tokenizer("мир", "学校")["input_ids"] == (
      [2] + processor.encode("мир") + [3] + processor.encode("学校") + [3])
  assert tokenizer.mask_token_id == 4 and tokenizer.pad_token_id == 0
  with open(os.path.join(out, description_lib.DESCRIPTION_FILE), encoding="utf-8") as f:
    assert json.load(f)["vocab_file"] == "spm.model"


def test_export_command_sentencepiece_savedmodel_and_tflite_on_raw_text(spm_model_dir, spm_model,
                                                                       tmp_path):
  import numpy as np
  import sentencepiece
  import tensorflow as tf
  from electra_tf2.serving import export
  out = str(tmp_path / "saved")
  assert export.main(["--model-dir", spm_model_dir, "--output-dir", out]) == 0
  with open(os.path.join(out, description_lib.DESCRIPTION_FILE), encoding="utf-8") as f:
    assert json.load(f)["kind"] == "sentencepiece"
  loaded = tf.saved_model.load(out)
  texts = ["한국어 学校", "über мир"]
  outputs = loaded.signatures["text"](text=tf.constant(texts))
  processor = sentencepiece.SentencePieceProcessor(model_file=spm_model)
  for row, mask, text in zip(outputs["input_ids"].numpy(), outputs["input_mask"].numpy(), texts):
    assert row[mask == 1].tolist() == [2] + processor.encode(text) + [3]
  # The .tflite: the SavedModel's ids (the sentencepiece library's) and outputs, texts with
  # normalised characters, a control character and invalid UTF-8 included.
  from electra_tf2 import LiteRTModel
  path = str(tmp_path / "m.tflite")
  assert export.main(["--model-dir", spm_model_dir, "--format", "litert", "--output",
                      path]) == 0
  texts = ["한국어 学校 老师", "über мир.", "ＡＢＣ x\x01y", b"Stra\xc3\x9fe \xff sch\xc3\xb6n", ""]
  lite = LiteRTModel(path).predict(texts)
  utf8 = [t.decode("utf-8", "replace") if isinstance(t, bytes) else t for t in texts]
  saved = {k: v.numpy() for k, v in loaded.signatures["text"](
      text=tf.constant([t.encode("utf-8") for t in utf8])).items()}
  assert sorted(lite) == sorted(saved)
  for row, mask, text in zip(lite["input_ids"], lite["input_mask"], utf8):
    assert row[mask == 1].tolist() == [2] + processor.encode(text) + [3]
  width = saved["input_ids"].shape[1]
  for name, value in saved.items():
    if value.ndim > 1 and value.shape[1] == width:  # per token: the .tflite pads as predict
      np.testing.assert_allclose(lite[name][:, :width], value, atol=1e-4, err_msg=name)
    else:
      np.testing.assert_allclose(lite[name], value, atol=1e-4, err_msg=name)


def test_classification_task_featurises_pairs_with_sentencepiece(tmp_path, spm_model):
  import shutil
  import sentencepiece
  from fixtures import make_config, make_tasks, write_lines
  shutil.copy(spm_model, tmp_path / "spm.model")
  config = make_config(str(tmp_path), ["rte"], max_seq_length=12, vocab_size=60,
                       vocab_file=str(tmp_path / "spm.model"))
  write_lines(os.path.join(config.task_data_dir("rte"), "train.tsv"),
              ["index\tsentence1\tsentence2\tlabel", "0\t한국어 문장\tПривет мир\tentailment"])
  task, = make_tasks(config)
  example, = task.get_examples("train")
  task.prepare([example])
  features, = task.featurize(example, True)
  processor = sentencepiece.SentencePieceProcessor(model_file=spm_model)
  a, b = processor.encode("한국어 문장"), processor.encode("Привет мир")
  expected = [2] + a + [3] + b + [3]
  assert len(expected) <= 12
  assert features["input_ids"][:len(expected)] == expected
  assert features["segment_ids"][:len(expected)] == [0] * (len(a) + 2) + [1] * (len(b) + 1)


def test_vocab_report_flags_jamo_and_names_the_option(tmp_path):
  corpus = write_corpus(str(tmp_path / "corpus"))
  stripped = build_vocab.learn_vocab_from_files([corpus], 300, str(tmp_path / "v1.txt"),
                                                log=None)["scripts"]
  assert "--no-strip-accents" in stripped["HANGUL"]["flag"]
  assert stripped["HANGUL"]["jamo"] == stripped["HANGUL"]["words"] > 0
  kept = build_vocab.learn_vocab_from_files([corpus], 300, str(tmp_path / "v2.txt"),
                                            strip_accents=False, log=None)["scripts"]
  assert kept["HANGUL"]["jamo"] == 0 and kept["HANGUL"]["flag"] is None
  assert kept["CYRILLIC"]["unk"] == 0 and kept["CJK"]["flag"] is None
  from electra_tf2.data_prep import vocab_report
  assert [vocab_report.script_of(w) for w in ("über", "мир", "学校", "한", "١٢ب", "42")] == [
      "LATIN", "CYRILLIC", "CJK", "HANGUL", "ARABIC", "OTHER"]


@pytest.mark.parametrize("trained_by", ["build-vocab", "elsewhere"])
def test_chunking_labels_the_first_piece_of_each_word_with_sentencepiece(
    tmp_path, request, trained_by):
  import shutil
  import sentencepiece
  from fixtures import make_config, make_tasks, write_lines
  spm_model = request.getfixturevalue("spm_model" if trained_by == "build-vocab"
                                      else "spm_model_elsewhere")
  shutil.copy(spm_model, tmp_path / "spm.model")
  config = make_config(str(tmp_path), ["chunk"], max_seq_length=40, vocab_size=60,
                       vocab_file=str(tmp_path / "spm.model"))
  words = ["한국어", "学校", "Straße", "über", "Привет", "мир."]
  write_lines(os.path.join(config.task_data_dir("chunk"), "train.txt"),
              [f"{w} X {'B-NP' if i % 2 == 0 else 'I-NP'}" for i, w in enumerate(words)])
  task, = make_tasks(config)
  example, = task.get_examples("train")
  task.prepare([example])
  features, = task.featurize(example, True)
  processor = sentencepiece.SentencePieceProcessor(model_file=spm_model)
  pieces = [processor.encode(w) for w in words]  # every word tokenized alone
  expected = [processor.bos_id()] + [i for p in pieces for i in p] + [processor.eos_id()]
  assert processor.bos_id() == (2 if trained_by == "build-vocab" else 1)  # [CLS] or <s>
  assert features["input_ids"][:len(expected)] == expected
  positions = features["chunk_labeled_positions"][:len(words)]
  assert positions == [1 + sum(len(p) for p in pieces[:k]) for k in range(len(words))]
  assert [features["input_ids"][p] for p in positions] == [p[0] for p in pieces]
  assert features["chunk_labels_mask"][:len(words) + 1] == [1.0] * len(words) + [0]


def test_squad_answer_spans_round_trip_through_sentencepiece_offsets(tmp_path, spm_model):
  import shutil
  import numpy as np
  from electra_tf2.tasks import qa_decoding
  from fixtures import make_config, make_tasks
  shutil.copy(spm_model, tmp_path / "spm.model")
  # Full-width letters that the model's nmt_nfkc rule rewrites, a word with punctuation.
  context = "Привет  ＡＢＣ мир学校, über schön.\nStraße 老师"
  answers = ["ＡＢＣ мир学校", "schön", "über", "学校", "Straße 老师"]
  qas = [{"id": f"q{i}", "question": "мир?",
          "answers": [{"text": a, "answer_start": context.index(a)}]}
         for i, a in enumerate(answers)]
  directory = tmp_path / "finetuning_data" / "squadv1"
  directory.mkdir(parents=True)
  for split in ("train", "dev"):
    with open(directory / f"{split}.json", "w", encoding="utf-8") as f:
      json.dump({"data": [{"paragraphs": [{"context": context, "qas": qas}]}]}, f)
  config = make_config(str(tmp_path), ["squadv1"], max_seq_length=64, vocab_size=60,
                       vocab_file=str(tmp_path / "spm.model"), joint_prediction=False,
                       max_query_length=8)
  task, = make_tasks(config)
  train, dev = task.get_examples("train"), task.get_examples("dev")
  task.prepare(train + dev)
  for example, eval_example, answer in zip(train, dev, answers):
    window, = task.featurize(example, True)
    start, end = window["squadv1_start_positions"], window["squadv1_end_positions"]
    eval_window, = task.featurize(eval_example, False, for_eval=True)
    spans = eval_window["squadv1_token_char_spans"]
    begin = context.index(answer)
    assert (spans[start][0], spans[end][1]) == (begin, begin + len(answer))
    # The labelled span, decoded: the same characters of the context.
    logits = np.full(64, -10.0)
    results = {eval_window["squadv1_eid"]: {
        "start_logits": np.where(np.arange(64) == start, 10.0, logits),
        "end_logits": np.where(np.arange(64) == end, 10.0, logits)}}
    nbest, _ = qa_decoding.decode_example(eval_example, [eval_window], results, "squadv1",
                                          config, v2=False)
    assert nbest[0].text == answer


def test_score_command_and_scorer_with_sentencepiece(spm_model_dir, spm_model, tmp_path,
                                                     capsys):
  import sentencepiece
  from electra_tf2 import scoring
  from electra_tf2.serving import export
  from electra_tf2.cli import score as scoring_cli
  processor = sentencepiece.SentencePieceProcessor(model_file=spm_model)
  texts = ["한국어  学校 ＡＢＣ über", "Привет мир город книга " * 4]  # the second: 3 windows
  path = str(tmp_path / "in.txt")
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(texts) + "\n")
  out = str(tmp_path / "out.jsonl")
  assert scoring_cli.main(["file", "--model-dir", spm_model_dir, "--input", path, "--output",
                           out, "--max-seq-length", "16", "--quiet"]) == 0
  with open(out, encoding="utf-8") as f:
    records = [json.loads(line) for line in f]
  saved = str(tmp_path / "saved")
  assert export.main(["--model-dir", spm_model_dir, "--output-dir", saved,
                      "--max-seq-length", "16"]) == 0
  from_saved = scoring.TextScorer.load(saved).score(texts)
  for text, record, result in zip(texts, records, from_saved):
    assert record["tokens"] == [processor.id_to_piece(i) for i in processor.encode(text)]
    # A word: a piece led by U+2581 and the pieces after it; here the whitespace words.
    words = text.split()
    starts = []
    for word in words:
      starts.append(text.index(word, starts[-1] + 1 if starts else 0))
    assert [(w["word"], w["start"], w["end"]) for w in record["words"]] == [
        (w, s, s + len(w)) for w, s in zip(words, starts)]
    assert result.tokens == record["tokens"]
    assert [w.text for w in result.words] == words
    assert result.scores["mean_log_odds"] == pytest.approx(record["scores"]["mean_log_odds"],
                                                           abs=1e-4)
  assert records[1]["windows"] > 1


def test_question_answerer_with_sentencepiece_fits_predicts_and_exports(spm_model_dir,
                                                                        tmp_path):
  """QuestionAnswerer on a SentencePiece model directory (it refused one before): fit on
  character spans, answers that are the context's characters between the pieces' offsets,
  and the same answers from the SavedModel and the .tflite (its windows and answers
  around the file). Equality with the runner: tests/test_qa_windows.py."""
  import keras
  import numpy as np
  import tensorflow as tf
  import electra_tf2
  context = "Привет  ＡＢＣ мир学校, über schön.\nStraße 老师 " + "город книга " * 6
  questions = ["Привет мир?", "学校?", "город?"]
  contexts = [context, "мир学校, über", context]
  answers = ["über", "学", "книга"]
  starts = [c.index(a) for c, a in zip(contexts, answers)]
  model = electra_tf2.QuestionAnswerer.from_pretrained(
      spm_model_dir, max_seq_length=24, max_query_length=6, doc_stride=4, beam_size=4,
      n_best_size=4)
  model.compile(optimizer=keras.optimizers.Adam(1e-3))
  history = model.fit((questions, contexts), (starts, [s + len(a) for s, a in
                                                      zip(starts, answers)]),
                      batch_size=3, epochs=1, verbose=0)
  assert np.isfinite(history.history["loss"]).all()
  out = model.predict((questions, contexts), verbose=0)
  for c, text, start, end in zip(contexts, out["span_text"], out["answer_start"],
                                 out["answer_end"]):
    assert c[start:end] == text  # exactly the context's characters, whitespace kept
  assert [t for t in out["answer_text"] if t] == [
      t for t, no in zip(out["span_text"], out["is_impossible"]) if not no]
  model.export_saved_model(str(tmp_path / "saved"))
  served = tf.saved_model.load(str(tmp_path / "saved")).signatures["serving_default"](
      question=tf.constant(questions), context=tf.constant(contexts))
  assert [t.decode("utf-8") for t in served["span_text"].numpy()] == out["span_text"].tolist()
  for key in ("answer_start", "answer_end"):
    assert served[key].numpy().tolist() == out[key].tolist()
  np.testing.assert_allclose(served["score"].numpy(), out["score"], atol=1e-4)
  lite = electra_tf2.LiteRTModel(model.export_litert(str(tmp_path / "qa.tflite")))
  from_lite = lite.predict((questions, contexts))
  assert [t.decode("utf-8") if isinstance(t, bytes) else t
          for t in from_lite["span_text"]] == out["span_text"].tolist()
  assert from_lite["answer_start"].tolist() == out["answer_start"].tolist()


@pytest.fixture(scope="module")
def korean_model_dir(tmp_path_factory):
  """DATA/vocab.txt learned, and TFRecords built, without accent stripping (the vocabulary
  report's advice for Korean), and a tiny model pre-trained 2 steps on them."""
  root = tmp_path_factory.mktemp("korean_data")
  data = root / "data"
  data.mkdir()
  corpus = write_corpus(str(root / "corpus"), documents=8)
  vocab = str(data / "vocab.txt")
  build_vocab.learn_vocab_from_files([corpus], 120, vocab, strip_accents=False, log=None)
  return str(data), pretrain_tiny(data, corpus, vocab, 120, strip_accents=False).model_dir


KOREAN_TEXTS = ["한국어 문장 학교", "선생님 사랑 über schön", "Привет 中文 句子"]


def test_korean_without_accent_stripping_from_the_data_to_every_model(korean_model_dir,
                                                                      tmp_path):
  """The casing of the TFRecords (`--no-strip-accents`) reaches the model directory's
  description, and from there the Keras models, fine-tuning, `electra export` and
  `hf-export`: Hangul syllables stay whole (oracle: transformers' BertTokenizerFast with
  strip_accents=False; the official rule would decompose them into jamo)."""
  transformers = pytest.importorskip("transformers")
  import tensorflow as tf
  import electra_tf2
  from electra_tf2.checkpoints import describe as describe_lib
  from electra_tf2.conversion import hf_export
  from electra_tf2.serving import export
  from electra_tf2.tasks.config import resolve_finetuning_config
  from electra_tf2.tasks.task_builder import make_tokenizer
  import numpy as np
  data, model_dir = korean_model_dir
  vocab = os.path.join(data, "vocab.txt")
  oracle = transformers.BertTokenizerFast(vocab, do_lower_case=True, strip_accents=False)
  expected = [oracle(t)["input_ids"] for t in KOREAN_TEXTS]
  stripped = transformers.BertTokenizerFast(vocab, do_lower_case=True)
  assert expected != [stripped(t)["input_ids"] for t in KOREAN_TEXTS]  # jamo otherwise

  def rows(features):
    return [row[mask == 1].tolist() for row, mask in
            zip(np.asarray(features["input_ids"]), np.asarray(features["input_mask"]))]
  assert describe_lib.describe(model_dir).tokenizer.strip_accents is False
  classifier = electra_tf2.TextClassifier.from_pretrained(model_dir, num_classes=2)
  assert rows(classifier.featurize(KOREAN_TEXTS)) == expected  # on the host
  assert rows(classifier.text_inputs(tf.constant(KOREAN_TEXTS))) == expected  # in the graph
  inputs = classifier.text_inputs.get_config()
  assert type(classifier.text_inputs).from_config(inputs).strip_accents is False  # .keras
  del inputs["strip_accents"]  # a config written before the option: the official rule
  assert type(classifier.text_inputs).from_config(inputs).strip_accents is True
  from electra_tf2.text.litert_tokenizer import litert_featurizer
  lite = litert_featurizer(classifier.text_inputs.vocab, True, 32, None, False)
  assert rows(lite.features(tf.constant(KOREAN_TEXTS))) == expected  # the .tflite's graph
  config = resolve_finetuning_config("electra_small", data, {"vocab_size": 120}, "sst")
  assert config.strip_accents is False
  assert resolve_finetuning_config("electra_small", data, {"vocab_size": 120,
                                                           "strip_accents": True},
                                   "sst").strip_accents is True  # the user's value wins
  tokenizer = make_tokenizer(config, config.do_lower_case)
  assert [[2] + tokenizer.tokenizer.encode(t) + [3] for t in KOREAN_TEXTS] == expected
  out = str(tmp_path / "saved")
  assert export.main(["--model-dir", model_dir, "--output-dir", out]) == 0
  signature = tf.saved_model.load(out).signatures["text"]
  assert rows(signature(text=tf.constant(KOREAN_TEXTS))) == expected
  from electra_tf2.scoring.scorer import TextScorer
  for scorer in (TextScorer.load(model_dir), TextScorer.load(out)):  # directory, SavedModel
    assert scorer.strip_accents is False
    words = [[w.text for w in result.words] for result in scorer.score(KOREAN_TEXTS[:1])]
    assert words == [["한국어", "문장", "학교"]]
  hf_dir = str(tmp_path / "hf")
  assert hf_export.main(["--model-dir", model_dir, "--output-dir", hf_dir]) == 0
  loaded = transformers.AutoTokenizer.from_pretrained(hf_dir)
  assert [loaded(t)["input_ids"] for t in KOREAN_TEXTS] == expected


def test_get_final_text_keeps_accents_when_the_tokenizer_did():
  from electra_tf2.tasks.qa_decoding import get_final_text
  # The official rule strips the context's accents: "café" is not found, the whole text
  # comes back; without stripping the span is cut out of the original characters.
  assert get_final_text("café", "Café!", True) == "Café!"
  assert get_final_text("cafe", "Café!", True) == "Café"
  assert get_final_text("café", "Café!", True, strip_accents=False) == "Café"
