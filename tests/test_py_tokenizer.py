"""The pure-Python tokenizer and packing (electra_tf2/text/py_tokenizer.py) give the ids and
features of the TensorFlow ones (text/tokenizer.py `FullTokenizer`, text/packing.py
`TextFeaturizer`), which tests/test_tokenization.py checks against the official tokenizer;
the official-semantics oracle of that file (`make_oracle`) is asked too.

bench/parity/py_tokenizer_parity.py compares every text of ../shared in every configuration;
here a sample keeps the test under half a minute.
"""

import glob
import json
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bench.parity.litert_tokenizer_parity import squad_texts
from conftest import SHARED_DATA, shared_data_path
from no_tensorflow import run_without_tensorflow
from test_tokenization import (CONFIGS, TRICKY, basic_oracle, make_oracle, oracle_ids,
                               tiny_vocab)  # noqa: F401 (a fixture)

tf = pytest.importorskip("tensorflow")

from electra_tf2.text.packing import TextFeaturizer, truncate_seq_pair  # noqa: E402
from electra_tf2.text.py_tokenizer import (PyFullTokenizer, PyTextFeaturizer,  # noqa: E402
                                           pack_ids, pair_lengths)
from electra_tf2.text.tokenizer import FullTokenizer, to_utf8  # noqa: E402
from electra_tf2.text.vocab import VocabError  # noqa: E402

PROPERTY = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def tokenizers(tiny_vocab):  # noqa: F811
  """{(vocab, lower, strip): (ours, TensorFlow's, oracle)}, made on first use."""
  made = {}

  def get(vocab, lower=True, strip=True):
    key = (vocab, lower, strip)
    if key not in made:
      made[key] = (PyFullTokenizer(vocab, lower, strip), FullTokenizer(vocab, lower, strip),
                   make_oracle(vocab, lower, strip))
    return made[key]
  return get


def _vocab_tokens(path):
  with open(path, encoding="utf-8") as f:
    return f.read().split("\n")[:-1]


@pytest.mark.parametrize("lower,strip", CONFIGS)
def test_tricky_texts_give_the_tensorflow_and_official_ids(tokenizers, tiny_vocab, lower,  # noqa: F811
                                                            strip):
  texts = TRICKY + [t.encode("utf-8") for t in TRICKY[:8]] + [b"caf\xc3\xa9 \xff\xfeok"]
  ours, tf_tokenizer, oracle = tokenizers(tiny_vocab, lower, strip)
  got = ours.encode_batch(texts)
  assert got == tf_tokenizer.encode_batch(texts)
  assert got == [oracle_ids(oracle, t) for t in texts]
  if strip:  # BERT's BasicTokenizer strips accents whenever it lowercases
    words = basic_oracle(lower)
    assert [ours.basic_tokenize(t) for t in TRICKY] == [words.tokenize(t) for t in TRICKY]


# Any code point (lone surrogates too), and runs of characters the rules treat specially.
SPECIAL_RUNS = st.sampled_from([
    "un", "##aff", "able", "the", "fox", "Σ", "ΟΔΟΣ", "é", "e\u0301", "İ", "ß", "中文", "\u3000",
    "\u00a0", "\u2028", "\x00", "\x0b", "\x85", "\u200b", "\ufeff", "\ufffd", "\ue000", "\U000e0001",
    "\u1fef", "\u037e", "\u2000", "ﬁ", "¿", "'", "-", "  ", "\t", "\r\n", "x" * 199, "é" * 201,
    "\U00020000", "\U0001f600", "\U00010100", "\ud800"])
TEXTS = st.lists(st.one_of(st.text(st.characters(codec=None), max_size=12), SPECIAL_RUNS),
                 max_size=10).map("".join)


@PROPERTY
@given(texts=st.lists(st.one_of(TEXTS, st.binary(max_size=12)), min_size=1, max_size=12),
       config=st.sampled_from(CONFIGS))
@example(texts=["ΟΔΟΣ. ΣΑΣ σ\u0301Σ", "a\u1fefb \u037e"], config=(True, True))
def test_any_unicode_text_gives_the_tensorflow_and_official_ids(tokenizers, tiny_vocab, texts,  # noqa: F811
                                                                 config):
  ours, tf_tokenizer, oracle = tokenizers(tiny_vocab, *config)
  got = ours.encode_batch(texts)
  assert got == tf_tokenizer.encode_batch(texts)
  assert got == [oracle_ids(oracle, t) for t in texts]


def shared_texts():
  """{file relative to ../shared/data: its texts}: every line of the text files (GLUE,
  CoNLL, corpus, the vocabulary itself), every title, context, question and answer of
  SQuAD's JSON files."""
  texts = {}
  for path in sorted(glob.glob(os.path.join(SHARED_DATA, "**", "*"), recursive=True)):
    if os.path.isfile(path):
      if path.endswith(".json"):
        texts[os.path.relpath(path, SHARED_DATA)] = list(squad_texts(path))
      else:
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
          texts[os.path.relpath(path, SHARED_DATA)] = f.read().split("\n")
  return texts


@pytest.mark.parametrize("lower,step", [(True, 4), (False, 11)])
def test_shared_texts_give_the_tensorflow_ids(tokenizers, lower, step):
  """Every 4th text of every file of ../shared uncased (every 11th cased), BERT's vocab."""
  vocab = shared_data_path("vocab", "vocab.txt")
  ours, tf_tokenizer, _ = tokenizers(vocab, lower, True)
  n_texts = n_ids = 0
  for name, texts in shared_texts().items():
    sample = texts[::step]
    got = ours.encode_batch(sample)
    want = tf_tokenizer.encode_batch(sample)
    for i, (a, b) in enumerate(zip(got, want)):
      assert a == b, f"{name} text {i * step}: {sample[i][:80]!r}"
    n_texts += len(sample)
    n_ids += sum(map(len, got))
  assert n_texts * step > 500_000 and n_ids * step > 5_000_000, (n_texts, n_ids)  # all read


def test_words_over_200_characters_and_long_vocab_entries(tmp_path):
  """The search window (the longest entry) does not miss a long entry; 200 is kept, 201 is
  [UNK]; a word that cannot be matched is one [UNK] (official WordpieceTokenizer)."""
  long_entry = "b" * 40
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "##a", long_entry,
            "##" + long_entry, "##c"]
  tok = PyFullTokenizer.from_tokens(tokens)
  assert tok.tokenize("a" + long_entry * 2 + "c") == ["a", "##" + long_entry,
                                                      "##" + long_entry, "##c"]
  assert tok.tokenize("a" * 200) == ["a"] + ["##a"] * 199
  assert tok.tokenize("a" * 201 + " a") == ["[UNK]", "a"]
  assert tok.tokenize("ax ab a") == ["[UNK]", "[UNK]", "a"]


def test_bad_vocabularies_are_one_line():
  with pytest.raises(VocabError, match="lacks \\[UNK\\]"):
    PyFullTokenizer.from_tokens(["a", "b"])
  with pytest.raises(VocabError, match="duplicate"):
    PyFullTokenizer.from_tokens(["[UNK]", "a", "a"])
  with pytest.raises(VocabError, match="lacks \\[CLS\\] and \\[SEP\\]"):
    PyTextFeaturizer(["[UNK]", "a"])
  with pytest.raises(VocabError, match="does not exist"):
    PyFullTokenizer("/nonexistent/vocab.txt")


def test_pair_lengths_are_the_official_truncation_loop():
  """Every pair of lengths up to 12 and budgets up to 14: `_truncate_seq_pair`'s result."""
  for budget in range(0, 15):
    for len_a in range(13):
      for len_b in range(13):
        a, b = list(range(len_a)), list(range(len_b))
        truncate_seq_pair(a, b, budget)
        got = pair_lengths(np.array([len_a]), np.array([len_b]), budget)
        assert (int(got[0][0]), int(got[1][0])) == (len(a), len(b)), (budget, len_a, len_b)


@pytest.fixture(scope="module")
def featurizers(tiny_vocab):  # noqa: F811
  """(lower, max_seq_length) -> (ours, TensorFlow's), made on first use."""
  vocab = _vocab_tokens(tiny_vocab)
  made = {}

  def get(lower, max_seq_length):
    if (lower, max_seq_length) not in made:
      made[lower, max_seq_length] = (PyTextFeaturizer(vocab, lower, max_seq_length),
                                     TextFeaturizer(vocab, lower, max_seq_length))
    return made[lower, max_seq_length]
  return get


@settings(PROPERTY, max_examples=12)  # 0.25 s per example in TensorFlow's eager ops
@given(texts=st.lists(TEXTS, min_size=1, max_size=16), data=st.data(),
       max_seq_length=st.sampled_from([3, 7]), lower=st.booleans())
@example(texts=["", "a"], data=None, max_seq_length=3, lower=True)
def test_features_are_the_tensorflow_featurizer_s(featurizers, texts, data, max_seq_length,
                                                  lower):
  texts_b = (data.draw(st.lists(TEXTS, min_size=len(texts), max_size=len(texts)))
             if data is not None else ["", "b c d e"])
  ours, reference = featurizers(lower, max_seq_length)
  encoded = [tf.constant([to_utf8(t) for t in batch]) for batch in (texts, texts_b)]
  for got, want in ((ours.features(texts), reference.single(encoded[0])),
                    (ours.features(texts, texts_b), reference.pair(*encoded))):
    assert got.keys() == want.keys()
    for name in got:
      assert got[name].dtype == np.int32
      np.testing.assert_array_equal(got[name], want[name].numpy(), err_msg=name)


def test_padding_to_max_length_and_empty_batches():
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world"]
  featurizer = PyTextFeaturizer(tokens, max_seq_length=6)
  got = featurizer.features(["hello world world world world", ""], ["hello", "world"],
                            pad_to_max_length=True)
  assert got["input_ids"].tolist() == [[2, 5, 6, 3, 5, 3], [2, 3, 6, 3, 0, 0]]
  assert got["input_mask"].tolist() == [[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]]
  assert got["segment_ids"].tolist() == [[0, 0, 0, 0, 1, 1], [0, 0, 1, 1, 0, 0]]
  empty = featurizer.features([])
  assert all(v.shape == (0, 2) and v.dtype == np.int32 for v in empty.values())
  assert pack_ids([[7] * 9], cls_id=2, sep_id=3)["input_ids"].shape == (1, 11)  # no cut
  with pytest.raises(ValueError, match="needs max_seq_length"):
    pack_ids([[1]], cls_id=2, sep_id=3, pad_to_max_length=True)


def test_works_with_tensorflow_blocked(tiny_vocab):  # noqa: F811
  """Imports, tokenizes (ASCII and other text) and packs in a process without TensorFlow:
  the tokens and every feature equal TensorFlow's tokenizer and featurizer here."""
  text = "The quick brown fox. Crème brûlée 中文"
  pair = (["unaffable", text], ["the fox", ""])
  result = run_without_tensorflow(f"""
    import json
    from electra_tf2.text.py_tokenizer import PyFullTokenizer, PyTextFeaturizer
    tok = PyFullTokenizer({tiny_vocab!r})
    features = PyTextFeaturizer({tiny_vocab!r}, max_seq_length=12).features(*{pair!r})
    print(json.dumps([tok.tokenize({text!r}),
                      {{name: value.tolist() for name, value in features.items()}}]))
  """)
  tokens, features = json.loads(result.stdout.splitlines()[-1])
  assert tokens == FullTokenizer(tiny_vocab).tokenize(text)
  want = TextFeaturizer(_vocab_tokens(tiny_vocab), max_seq_length=12).pair(
      *(tf.constant([to_utf8(t) for t in texts]) for texts in pair))
  assert features.keys() == want.keys() and len(features) >= 3
  for name, value in features.items():
    np.testing.assert_array_equal(value, want[name].numpy(), err_msg=name)
