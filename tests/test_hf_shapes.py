"""Hugging Face ELECTRA checkpoints of shapes and settings the other tests do not use.

Embedding size equal to, below and above the hidden size, head sizes 16 and 96,
an intermediate size that is not 4 x hidden, relu and tanh, type_vocab_size 1
and 3, a vocabulary of 8000, config.json without `architectures`, a regression
(num_labels 1) classifier, an embedding table padded past the vocabulary; and the settings that must be refused in one line
(GELU's tanh approximations: gelu_new and gelu_pytorch_tanh load as our gelu_tanh,
gelu_fast is refused; a generator head transformers computes otherwise,
max_seq_length above max_position_embeddings). Oracle: transformers on the
same checkpoint and the same token ids.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from hf_models import TEXTS, hf_tokenizer, load_hf, save_hf_model  # noqa: E402 (USE_TF=0)
from fixtures import WORDS, WORD_VOCAB, noisy_pretrainer  # noqa: E402
import torch  # noqa: E402
import electra_tf2  # noqa: E402
from electra_tf2.models import model_directory  # noqa: E402
from electra_tf2.checkpoints import directories, huggingface  # noqa: E402
from electra_tf2.conversion import convert, hf_export, hf_import  # noqa: E402
from electra_tf2.config.encoder import BertConfig  # noqa: E402
from electra_tf2.tasks import task_builder  # noqa: E402
from electra_tf2.tasks.config import resolve_finetuning_config  # noqa: E402

TOLERANCE = 1e-4
PAIRS_B = ["a dog runs fast", "he was born in new york city", "paris", "we see it"]
TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
# (name, ElectraConfig values, pairs): every shape hidden 32 or 96, 2 layers or fewer.
SHAPES = [
    ("embedding = hidden, head 16, intermediate 50, relu, 3 token types",
     dict(TINY, embedding_size=32, intermediate_size=50, hidden_act="relu", type_vocab_size=3),
     True),
    ("one head of 96, embedding 48 < hidden, tanh",
     dict(TINY, hidden_size=96, num_attention_heads=1, embedding_size=48, hidden_act="tanh",
          num_hidden_layers=1), True),
    ("vocab 8000, embedding 48 > hidden, 1 token type",
     dict(TINY, embedding_size=48, type_vocab_size=1,
          tokens=WORD_VOCAB + [f"w{i}" for i in range(8000 - len(WORD_VOCAB))]), False),
]


def without_architectures(path):
  """config.json as transformers reads it without `architectures` (AutoModel: ElectraModel)."""
  config_file = os.path.join(path, "config.json")
  with open(config_file) as f:
    config = json.load(f)
  del config["architectures"]
  with open(config_file, "w") as f:
    json.dump(config, f)
  return path


def torch_inputs(path, texts, texts_b=None):
  encoded = hf_tokenizer(path)(texts, texts_b, padding=True, return_tensors="pt")
  return encoded, encoded["attention_mask"].numpy().astype(bool)


def assert_one_line(error, *words):
  message = str(error)
  assert "\n" not in message, message
  for word in words:
    assert word in message, (word, message)


@pytest.mark.parametrize("name,shape,pairs", SHAPES, ids=[s[0] for s in SHAPES])
def test_discriminator_and_encoder_equal_transformers(tmp_path, name, shape, pairs):
  path = save_hf_model(str(tmp_path / "hf"), **shape)
  model = electra_tf2.Discriminator.from_pretrained(path)
  assert model.loading_report.ok
  out = model.predict(TEXTS, verbose=0)
  encoded, mask = torch_inputs(path, TEXTS)
  np.testing.assert_array_equal(out["input_ids"], encoded["input_ids"].numpy())
  torch_model = load_hf(path, "ElectraForPreTraining")
  with torch.no_grad():
    logits = torch_model(**encoded).logits.numpy()
  diff = float(np.abs(out["logits"] - logits)[mask].max())
  print(f"\n{name}: Discriminator max |diff| = {diff:.2g}")
  assert diff <= TOLERANCE
  if pairs:
    classifier = electra_tf2.TextClassifier.from_pretrained(path, num_classes=2)
    features = classifier.text_inputs(tf.constant(TEXTS), tf.constant(PAIRS_B))
    encoded, mask = torch_inputs(path, TEXTS, PAIRS_B)
    np.testing.assert_array_equal(features["segment_ids"], encoded["token_type_ids"].numpy())
    with torch.no_grad():
      hidden = torch_model.electra(**encoded).last_hidden_state.numpy()
    diff = float(np.abs(np.asarray(classifier.encode(features)) - hidden)[mask].max())
    print(f"{name}: encoder on pairs max |diff| = {diff:.2g}")
    assert diff <= TOLERANCE


def test_embedding_equal_to_hidden_round_trips_bit_exactly(tmp_path):
  """No embeddings_project: from-hf then hf-export gives the same tensors, nothing else."""
  path = save_hf_model(str(tmp_path / "hf"), **SHAPES[0][1])
  out = str(tmp_path / "model")
  assert convert.main(["from-hf", "--hf-dir", path, "--output-dir", out]) == 0
  exported = str(tmp_path / "export")
  hf_export.export_hugging_face(model_directory.restore_pretrainer(out), exported)
  original = huggingface.read_directory(path).tensors
  again = huggingface.read_directory(exported).tensors
  assert not any("embeddings_project" in n for n in again)
  assert sorted(again) == sorted(original)
  for name, value in original.items():
    assert again[name].tobytes() == value.tobytes(), name


ARCHITECTURES = ["ElectraForPreTraining", "ElectraForMaskedLM", "ElectraModel",
                 "ElectraForSequenceClassification", "ElectraForTokenClassification",
                 "ElectraForQuestionAnswering", "ElectraForMultipleChoice"]


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_architecture_is_told_from_the_weights_without_architectures(tmp_path, architecture):
  path = without_architectures(save_hf_model(str(tmp_path / "hf"), architecture, **TINY))
  assert huggingface.read_directory(path).architecture == architecture


def test_sequence_classifier_without_architectures_loads_its_head(tmp_path):
  path = without_architectures(save_hf_model(str(tmp_path / "hf"),
                                             "ElectraForSequenceClassification", seed=5,
                                             num_labels=3, **TINY))
  model = electra_tf2.TextClassifier.from_pretrained(path)
  assert model.head_kind == "hf" and model.num_classes == 3 and model.loading_report.ok
  encoded, _ = torch_inputs(path, TEXTS, PAIRS_B)
  with torch.no_grad():
    theirs = load_hf(path, "ElectraForSequenceClassification")(**encoded).logits.numpy()
  assert float(np.abs(model.predict((TEXTS, PAIRS_B), verbose=0) - theirs).max()) <= TOLERANCE


def test_regression_classifier_equals_transformers(tmp_path):
  """num_labels 1 (as STS-B): the Hugging Face head loads and gives the score [batch]."""
  path = save_hf_model(str(tmp_path / "hf"), "ElectraForSequenceClassification", seed=5,
                       num_labels=1, **TINY)
  model = electra_tf2.TextClassifier.from_pretrained(path)
  assert model.num_classes == 1 and model.head_kind == "hf" and model.loading_report.ok
  encoded, _ = torch_inputs(path, TEXTS, PAIRS_B)
  with torch.no_grad():
    theirs = load_hf(path, "ElectraForSequenceClassification")(**encoded).logits.numpy()
  ours = model.predict((TEXTS, PAIRS_B), verbose=0)
  assert ours.shape == (len(TEXTS),)
  assert float(np.abs(ours - theirs[:, 0]).max()) <= TOLERANCE


@pytest.mark.parametrize("activation", ["gelu_new", "gelu_pytorch_tanh"])
def test_tanh_approximated_gelu_loads_as_gelu_tanh(tmp_path, activation):
  """transformers' two tanh GELUs are our gelu_tanh: the same logits as transformers on the
  same ids; from-hf writes gelu_tanh and hf-export gives gelu_new and every tensor back."""
  path = save_hf_model(str(tmp_path / "hf"), hidden_act=activation, **TINY)
  model = electra_tf2.Discriminator.from_pretrained(path)
  assert model.bert_config.hidden_act == "gelu_tanh"
  out = model.predict(TEXTS, verbose=0)
  encoded, mask = torch_inputs(path, TEXTS)
  with torch.no_grad():
    logits = load_hf(path, "ElectraForPreTraining")(**encoded).logits.numpy()
  assert float(np.abs(out["logits"] - logits)[mask].max()) <= 1e-5
  converted, exported = str(tmp_path / "model"), str(tmp_path / "export")
  assert convert.main(["from-hf", "--hf-dir", path, "--output-dir", converted]) == 0
  pretrainer = model_directory.restore_pretrainer(converted)
  assert pretrainer.discriminator.bert_config.hidden_act == "gelu_tanh"
  hf_export.export_hugging_face(pretrainer, exported)
  assert huggingface.read_config(exported)["hidden_act"] == "gelu_new"
  original = huggingface.read_directory(path).tensors
  for name, value in huggingface.read_directory(exported).tensors.items():
    assert value.tobytes() == original[name].tobytes(), name


def test_other_gelu_approximations_are_refused_in_one_line(tmp_path, capsys):
  path = save_hf_model(str(tmp_path / "hf"), hidden_act="gelu_fast", **TINY)
  with pytest.raises(electra_tf2.ElectraError) as error:
    electra_tf2.Discriminator.from_pretrained(path)
  assert_one_line(error.value, "config.json", "hidden_act", "gelu_fast", "gelu_new")
  out = str(tmp_path / "out")
  assert convert.main(["from-hf", "--hf-dir", path, "--output-dir", out]) == 2
  assert_one_line(capsys.readouterr().err.strip(), "error: ", "config.json", "gelu_fast")
  assert not os.path.exists(out)


def test_generator_with_another_activation_is_refused_both_ways(tmp_path, capsys):
  """transformers' generator head is gelu whatever hidden_act says; ELECTRA's is hidden_act."""
  path = save_hf_model(str(tmp_path / "hf"), "ElectraForMaskedLM", hidden_act="relu", **TINY)
  out = str(tmp_path / "out")
  assert convert.main(["from-hf", "--hf-dir", path, "--output-dir", out]) == 2
  assert_one_line(capsys.readouterr().err.strip(), "config.json", "hidden_act", "'relu'",
                  "generator_predictions")
  assert not os.path.exists(out)
  model = noisy_pretrainer({"model_hparam_overrides": dict(TINY, hidden_act="relu"),
                            "embedding_size": 16, "vocab_size": 40, "electra_objective": False,
                            "uniform_generator": False}, seed=1, scale=0.1)
  with pytest.raises(hf_export.HuggingFaceExportError) as error:
    hf_export.export_hugging_face(model, str(tmp_path / "export"), generator=True)
  assert_one_line(error.value, "hidden_act", "'relu'", "without --generator")
  assert not os.path.exists(str(tmp_path / "export"))


def test_max_seq_length_above_max_position_embeddings_is_one_line(tmp_path):
  path = save_hf_model(str(tmp_path / "hf"), **TINY)  # max_position_embeddings 40
  with pytest.raises(electra_tf2.ElectraError) as error:
    electra_tf2.TextClassifier.from_pretrained(path, num_classes=2, max_seq_length=64)
  assert_one_line(error.value, path, "max_seq_length 64", "max_position_embeddings 40",
                  "max_seq_length <= 40")
  data = tmp_path / "data"
  model_dir = str(data / "models" / "hf40")
  hf_import.convert_directory(path, model_dir)
  with pytest.raises(electra_tf2.ElectraError) as error:
    resolve_finetuning_config("hf40", str(data), {"max_seq_length": 64}, "rte")
  assert_one_line(error.value, model_dir, "max_seq_length 64", "max_position_embeddings 40",
                  '"max_seq_length": 40')


@pytest.mark.parametrize("hidden,layers,size", [(1024, 24, "large"), (768, 12, "base"),
                                                (256, 12, "small"), (32, 2, "small")])
def test_model_size_follows_the_shape(tmp_path, hidden, layers, size):
  """A converted electra-large fine-tunes with the official large defaults (5e-5, 0.9)."""
  bert = BertConfig(vocab_size=len(WORD_VOCAB), hidden_size=hidden, num_hidden_layers=layers,
                    num_attention_heads=max(1, hidden // 64), intermediate_size=4 * hidden)
  directory = huggingface.HuggingFaceDirectory(
      str(tmp_path / "hf"), {}, "ElectraForPreTraining", bert, hidden, {},
      huggingface.SAFETENSORS_FILE, None, True)
  config = hf_import.pretraining_config(directory)
  assert config.model_size == size
  model_dir = str(tmp_path / "data" / "models" / "hf")
  directories.write_config(model_dir, directories.PRETRAIN_CONFIG_FILE,
                           config.replace(model_dir=model_dir).to_dict(),
                           directories.PRETRAIN_PATH_KEYS)
  finetuning = resolve_finetuning_config("hf", str(tmp_path / "data"), {}, "mnli")
  large = size == "large"
  assert finetuning.learning_rate == (5e-5 if large else 1e-4)
  assert finetuning.layerwise_lr_decay == (0.9 if large else 0.8)


def test_question_answerer_of_a_short_checkpoint_says_what_to_pass(tmp_path):
  """max_position_embeddings 40: the default max_query_length 64 leaves no window."""
  path = save_hf_model(str(tmp_path / "hf"), "ElectraForQuestionAnswering", **TINY)
  with pytest.raises(electra_tf2.ElectraError) as error:
    electra_tf2.QuestionAnswerer.from_pretrained(path)
  assert_one_line(error.value, "max_seq_length 40", "max_query_length 64",
                  "max_query_length <= 36")
  model = electra_tf2.QuestionAnswerer.from_pretrained(path, max_query_length=16)
  assert model.head_kind == "hf" and model.loading_report.ok


def test_pairs_on_one_token_type_are_one_line(tmp_path):
  """type_vocab_size 1: segment id 1 has no embedding (transformers fails on it too)."""
  path = save_hf_model(str(tmp_path / "hf"), type_vocab_size=1, **TINY)
  model = electra_tf2.TextClassifier.from_pretrained(path, num_classes=2)
  assert model.predict(["a cat"], verbose=0).shape == (1, 2)
  for pairs in (lambda: model.predict((["a cat"], ["the mat"]), verbose=0),
                lambda: model.featurize(["a cat"], ["the mat"]),
                lambda: model((tf.constant(["a cat"]), tf.constant(["the mat"])))):
    with pytest.raises(electra_tf2.ElectraError) as error:
      pairs()
    assert_one_line(error.value, "type_vocab_size 1", "single texts")
  with pytest.raises(electra_tf2.ElectraError) as error:
    electra_tf2.QuestionAnswerer.from_pretrained(path, max_query_length=16)
  assert_one_line(error.value, "type_vocab_size is 1", "segment 1")


SST_TRAIN = [f"{a} {b} {c}\t{i % 2}" for i, (a, b, c) in enumerate(
    zip(WORDS * 2, WORDS[5:] + WORDS * 2, WORDS[11:] + WORDS * 2))][:24]
SST_DEV = [f"{a} {b}\t{i % 2}" for i, (a, b) in enumerate(zip(WORDS, WORDS[3:]))][:8]


def fine_tune_padded(data, model_dir: str, padded: int):
  """Fine-tunes the converted model dir (its own vocabulary, `padded` rows) on a tiny SST
  set for 3 steps; returns the config and the run's results ([{task: metrics}])."""
  from electra_tf2.training import finetuning as runner  # pylint: disable=g-import-not-at-top
  for name, lines in (("train", SST_TRAIN), ("dev", SST_DEV)):
    os.makedirs(data / "finetuning_data" / "sst", exist_ok=True)
    with open(data / "finetuning_data" / "sst" / f"{name}.tsv", "w", encoding="utf-8") as f:
      f.write("\n".join(["sentence\tlabel"] + lines) + "\n")
  config = resolve_finetuning_config("padded", str(data), {
      "max_seq_length": 32, "train_batch_size": 8, "eval_batch_size": 8,
      "num_train_epochs": 1.0, "learning_rate": 1e-3}, "sst")
  assert config.vocab_size == padded and config.vocab_file == os.path.join(model_dir, "vocab.txt")
  task_builder.check_vocab(config)
  return config, runner.run_finetuning(config)


def test_padded_embedding_table_loads_fine_tunes_and_exports(tmp_path):
  """vocab_size 12 rows above vocab.txt (padded, as transformers accepts): the Keras
  models equal transformers, the converted model dir fine-tunes with its own vocab and
  hf-exports the same weights; a vocab longer than the table, or a short one that is not
  the model's own, is still refused in one line."""
  padded = len(WORD_VOCAB) + 12
  path = save_hf_model(str(tmp_path / "hf"), vocab_size=padded, **TINY)
  model = electra_tf2.Discriminator.from_pretrained(path)
  encoded, mask = torch_inputs(path, TEXTS)
  with torch.no_grad():
    theirs = load_hf(path, "ElectraForPreTraining")(**encoded).logits.numpy()
  assert float(np.abs(model.predict(TEXTS, verbose=0)["logits"] - theirs)[mask].max()) <= TOLERANCE

  data = tmp_path / "data"
  model_dir = str(data / "models" / "padded")
  assert convert.main(["from-hf", "--hf-dir", path, "--output-dir", model_dir]) == 0
  config, results = fine_tune_padded(data, model_dir, padded)
  # The fine-tuned classifier keeps the padded table; loaded back, it scores the dev set as
  # the run's own evaluation did, and its encoder moved from the converted weights.
  trial = config.trial_model_dir(1)
  classifier = electra_tf2.TextClassifier.from_pretrained(trial)
  table = next(v for v in classifier.weights if "word_embeddings" in v.path)
  assert table.shape[0] == padded
  texts, labels = zip(*(line.split("\t") for line in SST_DEV))
  accuracy = np.mean(classifier.predict(list(texts), verbose=0).argmax(-1) == np.array(
      [classifier.label_list.index(label) for label in labels]))
  assert 100 * accuracy == pytest.approx(results[0]["sst"]["accuracy"], abs=1e-4)  # in %
  converted = model_directory.restore_pretrainer(model_dir)
  before = next(v for v in converted.weights if "word_embeddings" in v.path).numpy()
  assert not np.array_equal(table.numpy(), before)
  exported = str(tmp_path / "export")
  hf_export.export_hugging_face(model_directory.restore_pretrainer(model_dir), exported)
  with torch.no_grad():
    again = load_hf(exported, "ElectraForPreTraining")(**encoded).logits.numpy()
  assert float(np.abs(again - theirs).max()) <= TOLERANCE

  with open(data / "vocab.txt", "w", encoding="utf-8") as f:  # the data dir's, not the model's
    f.write("\n".join(WORD_VOCAB) + "\n")
  with pytest.raises(electra_tf2.ElectraError) as error:
    task_builder.check_vocab(config.replace(vocab_file=str(data / "vocab.txt")))
  assert_one_line(error.value, f"has {len(WORD_VOCAB)} tokens", f"vocab_size={padded}")
  with open(os.path.join(path, "vocab.txt"), "a", encoding="utf-8") as f:
    f.write("".join(f"extra{i}\n" for i in range(13)))
  with pytest.raises(electra_tf2.ElectraError) as error:
    huggingface.read_directory(path)
  assert_one_line(error.value, f"has {padded + 1} tokens", f"more than the {padded} rows")


@pytest.mark.parametrize("setting", [{"tokenizer_class": "BertJapaneseTokenizer",
                                      "word_tokenizer_type": "mecab"},
                                     {"tokenize_chinese_chars": False}],
                         ids=["mecab words", "CJK characters not split"])
def test_a_tokenizer_other_than_wordpiece_is_refused_in_one_line(tmp_path, capsys, setting):
  """Our models tokenize with BERT's WordPiece rules; a directory whose tokenizer_config.json
  says otherwise would get other ids than transformers' (shown for CJK), so from_pretrained
  and from-hf refuse it; vocab_file= takes WordPiece on its vocabulary knowingly."""
  path = save_hf_model(str(tmp_path / "hf"), **TINY)
  config_file = os.path.join(path, "tokenizer_config.json")
  with open(config_file) as f:
    tokenizer_config = json.load(f)
  with open(config_file, "w") as f:
    json.dump(dict(tokenizer_config, **setting), f)
  if "tokenize_chinese_chars" in setting:  # the reason: transformers' ids differ from ours
    ours = electra_tf2.Discriminator.from_pretrained(path, vocab_file=os.path.join(
        path, "vocab.txt")).featurize(["the cat 猫猫 sat"])["input_ids"]
    theirs = hf_tokenizer(path)(["the cat 猫猫 sat"])["input_ids"]
    assert list(ours[0][:len(theirs[0])]) != theirs[0]
  problem = next(iter(setting.items()))
  with pytest.raises(electra_tf2.ElectraError) as error:
    electra_tf2.Discriminator.from_pretrained(path)
  assert_one_line(error.value, config_file, problem[0], "vocab_file=PATH")
  assert convert.main(["from-hf", "--hf-dir", path, "--output-dir",
                       str(tmp_path / "model")]) == 2
  assert_one_line(capsys.readouterr().err.strip(), config_file, problem[0], "WordPiece")
  assert not os.path.exists(tmp_path / "model")


def test_tokenizer_json_without_vocab_txt_loads_and_converts(tmp_path):
  """A fast tokenizer saved with legacy_format=False (tokenizer.json, no vocab.txt, cased):
  the Keras model tokenizes as transformers does and equals it; from-hf writes the vocab.txt;
  a tokenizer.json that is not WordPiece is refused in one line."""
  import transformers
  path = save_hf_model(str(tmp_path / "hf"), cased=True, **TINY)
  fast = transformers.ElectraTokenizerFast(vocab_file=os.path.join(path, "vocab.txt"),
                                           do_lower_case=False)
  tokens = open(os.path.join(path, "vocab.txt"), encoding="utf-8").read().split("\n")[:-1]
  for name in ("vocab.txt", "tokenizer_config.json"):
    os.remove(os.path.join(path, name))
  fast.save_pretrained(path, legacy_format=False)
  assert not os.path.exists(os.path.join(path, "vocab.txt"))
  texts = ["The Cat sat", "a Dog runs in New York"]
  out = electra_tf2.Discriminator.from_pretrained(path).predict(texts, verbose=0)
  encoded = transformers.AutoTokenizer.from_pretrained(path)(texts, padding=True,
                                                             return_tensors="pt")
  np.testing.assert_array_equal(out["input_ids"], encoded["input_ids"].numpy())
  assert "Cat" in fast.convert_ids_to_tokens(encoded["input_ids"][0])  # cased indeed
  with torch.no_grad():
    theirs = load_hf(path, "ElectraForPreTraining")(**encoded).logits.numpy()
  mask = encoded["attention_mask"].numpy().astype(bool)
  assert float(np.abs(out["logits"] - theirs)[mask].max()) <= TOLERANCE
  model_dir = str(tmp_path / "model")
  assert convert.main(["from-hf", "--hf-dir", path, "--output-dir", model_dir]) == 0
  assert open(os.path.join(model_dir, "vocab.txt"), encoding="utf-8").read().split("\n")[:-1] \
      == tokens
  tokenizer_json = os.path.join(path, "tokenizer.json")
  with open(tokenizer_json, encoding="utf-8") as f:
    values = json.load(f)
  values["model"]["type"] = "BPE"
  with open(tokenizer_json, "w", encoding="utf-8") as f:
    json.dump(values, f)
  with pytest.raises(electra_tf2.ElectraError) as error:
    electra_tf2.Discriminator.from_pretrained(path)
  assert_one_line(error.value, tokenizer_json, "BPE", "vocab_file=PATH")
  vocab = os.path.join(model_dir, "vocab.txt")  # as the message says
  assert electra_tf2.Discriminator.from_pretrained(path, vocab_file=vocab).loading_report.ok


def test_from_hf_keeps_the_accents_tokenizer_config_keeps(tmp_path):
  """tokenizer_config.json strip_accents false with do_lower_case (as Korean models need):
  the directory converted by from-hf tokenizes as transformers does, accents kept."""
  path = save_hf_model(str(tmp_path / "hf"), tokens=WORD_VOCAB + ["café", "naïve"], **TINY)
  config_file = os.path.join(path, "tokenizer_config.json")
  with open(config_file) as f:
    values = json.load(f)
  with open(config_file, "w") as f:
    json.dump(dict(values, strip_accents=False), f)
  texts = ["a café", "the naïve cat"]
  theirs = hf_tokenizer(path)(texts, padding=True)["input_ids"]
  assert {len(WORD_VOCAB), len(WORD_VOCAB) + 1} <= {i for ids in theirs for i in ids}
  model_dir = str(tmp_path / "data" / "models" / "model")
  assert convert.main(["from-hf", "--hf-dir", path, "--output-dir", model_dir]) == 0
  ours = electra_tf2.Discriminator.from_pretrained(model_dir).featurize(texts)["input_ids"]
  np.testing.assert_array_equal(np.asarray(ours)[:, :len(theirs[0])], theirs)
  config = resolve_finetuning_config("model", str(tmp_path / "data"), {"max_seq_length": 32},
                                     "sst")  # fine-tuning from it keeps them too
  tokenizer = task_builder.make_tokenizer(config, config.do_lower_case)
  runner_ids = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(texts[1]))
  assert config.strip_accents is False and runner_ids == theirs[1][1:1 + len(runner_ids)]


def test_score_reads_a_hugging_face_discriminator_directory(tmp_path, capsys):
  """`electra score` and TextScorer.load on a Hugging Face ElectraForPreTraining directory
  (vocab.txt, then tokenizer.json alone): each token's replaced probability is transformers'
  sigmoid of its logits on transformers' ids; a generator directory and --checkpoint are
  refused in one line."""
  import transformers
  from electra_tf2.scoring import TextScorer
  from electra_tf2.cli import score as cli
  path = save_hf_model(str(tmp_path / "hf"), **TINY)
  texts = ["The cat sat on the mat.", "what is the capital of France?"]
  (tmp_path / "in.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
  out = tmp_path / "out.jsonl"
  assert cli.main(["score", "--model-dir", path, "--input", str(tmp_path / "in.txt"),
                   "--output", str(out), "--quiet"]) == 0
  records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
  model = load_hf(path, "ElectraForPreTraining")

  def theirs(tokenizer, text):
    encoded = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
      probabilities = torch.sigmoid(model(**encoded).logits)[0].numpy()
    return tokenizer.convert_ids_to_tokens(encoded["input_ids"][0]), probabilities

  for text, record in zip(texts, records):
    tokens, probabilities = theirs(hf_tokenizer(path), text)
    assert record["tokens"] == tokens[1:-1]  # the text's tokens, [CLS] and [SEP] apart
    np.testing.assert_allclose(record["token_probabilities"], probabilities[1:-1], atol=1e-4)
  # tokenizer.json alone (a fast tokenizer saved with legacy_format=False), cased.
  fast = transformers.ElectraTokenizerFast(vocab_file=os.path.join(path, "vocab.txt"),
                                           do_lower_case=False)
  for name in ("vocab.txt", "tokenizer_config.json"):
    os.remove(os.path.join(path, name))
  fast.save_pretrained(path, legacy_format=False)
  result = TextScorer.load(path).score(["The Cat sat"])[0]
  tokens, probabilities = theirs(transformers.AutoTokenizer.from_pretrained(path), "The Cat sat")
  assert result.tokens == tokens[1:-1] and "[UNK]" in result.tokens  # cased: "The" unknown
  np.testing.assert_allclose(result.token_probabilities, probabilities[1:-1], atol=1e-4)
  generator = save_hf_model(str(tmp_path / "generator"), "ElectraForMaskedLM", **TINY)
  capsys.readouterr()
  for model_dir, extra, words in ((generator, [], ("ElectraForMaskedLM", "ElectraForPreTraining")),
                                  (path, ["--checkpoint", "ckpt-1"], ("--checkpoint",))):
    assert cli.main(["score", "--model-dir", model_dir, "--input", str(tmp_path / "in.txt"),
                     "--output", str(out), "--quiet"] + extra) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and model_dir in error, error
    assert all(word in error for word in words), error
