"""Proof against Hugging Face: our official-layout export, read by transformers' own reader.

A random electra_small (every variable random, LayerNorm and biases included,
so a swapped or transposed tensor shows) is written as an official TF1
checkpoint by `electra_tf2.conversion.convert`, loaded by transformers'
`load_tf_weights_in_electra` into `ElectraForPreTraining` and (generator mode)
`ElectraForMaskedLM`, and run on real sentences tokenised with the shared
vocab. Logits must agree within 1e-4 (float32). The Hugging Face directory of
`electra_tf2.conversion.hf_export` must load with `from_pretrained` and agree too.

torch (the CPU build) and transformers 4.57 are test-only dependencies
(the `test` extra). `pytest -s tests/test_hf_parity.py` shows the differences.
"""

import contextlib
import io
import os
import shutil

os.environ.setdefault("USE_TF", "0")  # transformers: PyTorch classes only

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers.models.electra import modeling_electra  # noqa: E402

from conftest import shared_data_path  # noqa: E402
from electra_tf2.networks import variable_names  # noqa: E402
from electra_tf2.conversion import convert, hf_export  # noqa: E402
from electra_tf2.config.pretraining import resolve_pretraining_config
from electra_tf2.models.pretrainer import ElectraPretrainer  # noqa: E402
from electra_tf2.text.tokenizer import FullTokenizer  # noqa: E402

TOLERANCE = 1e-4
MAX_LEN = 48


@pytest.fixture(scope="module")
def model():
  keras.utils.set_random_seed(1)
  config = resolve_pretraining_config("electra_small")
  model = ElectraPretrainer.from_pretraining_config(config)
  rng = np.random.default_rng(1)
  for variable in model.trainable_variables:
    noise = rng.normal(0.0, 0.05, tuple(variable.shape)).astype(np.float32)
    variable.assign(variable.numpy() + noise)
  return model


@pytest.fixture(scope="module")
def batch():
  """Sentence pairs from the shared corpus: [CLS] a [SEP] b [SEP], padded, of varied lengths."""
  vocab = shared_data_path("vocab", "vocab.txt")
  corpus = shared_data_path("corpus", "bert_sample_text.txt")
  with open(corpus, encoding="utf-8") as f:
    lines = [line.strip() for line in f if line.strip()]
  tokenizer = FullTokenizer(vocab)
  pairs = [(lines[0], lines[1]), (lines[4], lines[5]), (lines[8], lines[9]), (lines[10], "")]
  rows = []
  for a, b in pairs:
    ids_a, ids_b = tokenizer.encode(a)[:MAX_LEN // 2 - 2], tokenizer.encode(b)[:MAX_LEN // 2 - 1]
    ids = [101] + ids_a + [102] + (ids_b + [102] if ids_b else [])
    rows.append((ids, [0] * (len(ids_a) + 2) + [1] * (len(ids) - len(ids_a) - 2)))
  length = max(len(ids) for ids, _ in rows)
  input_ids = np.zeros((len(rows), length), np.int32)
  mask, segments = np.zeros_like(input_ids), np.zeros_like(input_ids)
  for i, (ids, segs) in enumerate(rows):
    input_ids[i, :len(ids)], mask[i, :len(ids)], segments[i, :len(ids)] = ids, 1, segs
  assert len({int(m.sum()) for m in mask}) == len(rows)  # different lengths, with padding
  assert 100 not in set(input_ids.ravel())  # real words, not [UNK]
  return {"input_ids": input_ids, "input_mask": mask, "segment_ids": segments,
          "texts": [a for a, _ in pairs], "tokenizer": tokenizer, "vocab": vocab}


def ours(model, batch):
  args = [tf.constant(batch[k]) for k in ("input_ids", "input_mask", "segment_ids")]
  disc = model.discriminator_head(model.discriminator(*args)).numpy()
  gen = model.mlm_head(model.generator(*args), model.generator.embedding_table).numpy()
  return disc, gen


def theirs(hf_model, batch):
  with torch.no_grad():
    return hf_model(input_ids=torch.tensor(batch["input_ids"], dtype=torch.long),
                    attention_mask=torch.tensor(batch["input_mask"], dtype=torch.long),
                    token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long)
                    ).logits.numpy()


def electra_config(model, generator: bool):
  bert = model.config.generator if generator else model.config.discriminator
  return transformers.ElectraConfig(
      vocab_size=bert.vocab_size, embedding_size=model.config.embedding_size,
      hidden_size=bert.hidden_size, num_hidden_layers=bert.num_hidden_layers,
      num_attention_heads=bert.num_attention_heads, intermediate_size=bert.intermediate_size,
      hidden_act="gelu", max_position_embeddings=512, type_vocab_size=2, layer_norm_eps=1e-12)


def max_difference(a, b, mask):
  return float(np.abs(a - b)[mask.astype(bool)].max())


@pytest.mark.parametrize("mode", ["discriminator", "generator"])
def test_load_tf_weights_in_electra_matches_our_logits(tmp_path, model, batch, mode):
  names = variable_names.pretrainer_variable_map(model)
  prefix = convert.write_official_checkpoint(str(tmp_path),
                                             convert.official_tensors(names), global_step=7)
  generator = mode == "generator"
  config = electra_config(model, generator)
  hf_class = transformers.ElectraForMaskedLM if generator else transformers.ElectraForPreTraining
  hf_model = hf_class(config).eval()
  with torch.no_grad():  # whatever is not loaded stays NaN
    for parameter in hf_model.parameters():
      parameter.fill_(float("nan"))
  log = io.StringIO()
  with contextlib.redirect_stdout(log):
    modeling_electra.load_tf_weights_in_electra(hf_model, config, prefix,
                                                discriminator_or_generator=mode)
  hf_model.eval()

  # Every model parameter was loaded; only the other model's variables were skipped.
  not_loaded = [n for n, p in hf_model.named_parameters() if torch.isnan(p).any()]
  assert not_loaded == []
  lines = log.getvalue().splitlines()
  initialized = {line.split()[-1] for line in lines if line.startswith("Initialize PyTorch")}
  skipped = {line.split()[1] for line in lines if line.startswith("Skipping")}
  if generator:
    used = {n for n in names if n.startswith(("electra/embeddings/", "generator/",
                                              "generator_predictions/"))}
  else:
    used = {n for n in names if n.startswith(("electra/", "discriminator_predictions/"))}
  assert initialized == used
  assert skipped == set(names) - used

  disc, gen = ours(model, batch)
  logits = theirs(hf_model, batch)
  diff = max_difference(gen if generator else disc, logits, batch["input_mask"])
  print(f"\nHF parity ({mode}, {'ElectraForMaskedLM' if generator else 'ElectraForPreTraining'}"
        f" via load_tf_weights_in_electra): max |ours - HF| = {diff:.3g} over "
        f"{int(batch['input_mask'].sum())} tokens{' x 30522 logits' if generator else ''}")
  assert diff <= TOLERANCE


def test_hugging_face_directory_loads_with_from_pretrained(tmp_path, model, batch):
  model_dir = str(tmp_path / "model")
  convert.write_model_dir(model, resolve_pretraining_config("electra_small"), model_dir)
  shutil.copy(batch["vocab"], os.path.join(model_dir, "vocab.txt"))
  disc, gen = ours(model, batch)
  for generator, hf_class, expected in ((False, transformers.ElectraForPreTraining, disc),
                                        (True, transformers.ElectraForMaskedLM, gen)):
    out = str(tmp_path / ("generator" if generator else "discriminator"))
    assert hf_export.main(["--model-dir", model_dir, "--output-dir", out]
                          + (["--generator"] if generator else [])) == 0
    hf_model, info = hf_class.from_pretrained(out, output_loading_info=True)
    hf_model.eval()
    assert info["missing_keys"] == [] and info["unexpected_keys"] == []
    assert info["mismatched_keys"] == []
    diff = max_difference(expected, theirs(hf_model, batch), batch["input_mask"])
    print(f"\nHF directory ({hf_class.__name__}.from_pretrained): max |ours - HF| = {diff:.3g}")
    assert diff <= TOLERANCE

  # The tokenizer files give the same ids as ours.
  hf_tokenizer = transformers.ElectraTokenizerFast.from_pretrained(out)
  for text in batch["texts"]:
    assert hf_tokenizer(text)["input_ids"][1:-1] == batch["tokenizer"].encode(text)


def test_safetensors_header_is_aligned_and_complete(tmp_path):
  from safetensors.numpy import load_file
  tensors = {"b": np.arange(3, dtype=np.float32), "a": np.ones((2, 5), np.float32).T}
  path = str(tmp_path / "x.safetensors")
  hf_export.write_safetensors(path, tensors)
  with open(path, "rb") as f:
    assert int.from_bytes(f.read(8), "little") % 8 == 0
  loaded = load_file(path)
  assert sorted(loaded) == ["a", "b"]
  for name, value in tensors.items():
    np.testing.assert_array_equal(loaded[name], value)
