"""The LiteRT tokenizer (electra_tf2/text/litert_tokenizer.py), run by the LiteRT
interpreter from a `.tflite` file, gives the official tokenizer's ids and our SavedModel
tokenizer's features.

Oracles: tf-models-official's BERT FullTokenizer with ELECTRA's 200-character words
(tests/test_tokenization.py `make_oracle`), and for packing and tagging features our
in-graph `TextFeaturizer` / `tagging.word_features`, themselves checked against the
official rules in tests/test_export.py and tests/test_keras_models.py.
"""

import unicodedata

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tft = pytest.importorskip("tensorflow_text")
oracle_lib = pytest.importorskip("official.nlp.tools.tokenization")

from test_tokenization import (TRICKY, _code_points, basic_oracle, make_oracle,  # noqa: E402
                               oracle_ids)

from electra_tf2.litert.convert import write_tflite  # noqa: E402
from electra_tf2.litert.model import make_interpreter  # noqa: E402
from electra_tf2.text import litert_normalizer, tagging  # noqa: E402
from electra_tf2.text.litert_tokenizer import LiteRTFeaturizer, prepare_texts  # noqa: E402
from electra_tf2.text.packing import TextFeaturizer  # noqa: E402
from electra_tf2.text.tokenizer import FullTokenizer  # noqa: E402

MAX_SEQ_LENGTH = 12
FEATURES = ("input_ids", "input_mask", "segment_ids")


def rich_tokens():
  """Special tokens, every character (and its ## form) that TRICKY normalizes to, and its
  words: most words are matched, so differences in normalization show as ids."""
  oracle = basic_oracle(do_lower_case=True)
  words = {w for text in TRICKY for w in oracle.tokenize(text)} | {
      w for text in TRICKY for w in text.split() if w.isprintable()}
  words = sorted(w for w in words if len(w) < 20)
  chars = sorted({c for w in words for c in w})
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + ["##" + c for c in chars]
  tokens += [w for w in words if w not in tokens]
  return tokens


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
  path = tmp_path_factory.mktemp("litert_vocab") / "vocab.txt"
  path.write_text("\n".join(rich_tokens()) + "\n", encoding="utf-8")
  return str(path)


class Tokenizer:
  """The featurizer as a .tflite: ids and row splits, single, pair and word features."""

  def __init__(self, vocab_file, path, do_lower_case):
    with open(vocab_file, encoding="utf-8") as f:
      vocab = [line.rstrip("\n") for line in f]
    self.lower = do_lower_case
    featurizer = LiteRTFeaturizer(vocab, do_lower_case, max_seq_length=MAX_SEQ_LENGTH)

    def serve(text, text_b):
      ids, splits = featurizer.token_ids(text)
      out = {"ids": ids, "splits": splits}
      for prefix, features in (("single", featurizer.single(text)),
                               ("pair", featurizer.pair(text, text_b)),
                               ("words", featurizer.word_features(text))):
        out.update({f"{prefix}_{k}": v for k, v in features.items()})
      return out
    write_tflite(path, serve, ["text", "text_b"], [], {"do_lower_case": do_lower_case})
    self.runner = make_interpreter(model_path=path).get_signature_runner("serving_default")

  def run(self, texts, texts_b=None, prepare=True):
    def column(values):
      data = prepare_texts(values, self.lower) if prepare else values
      return np.array(data, dtype=object)
    return self.runner(text=column(texts), text_b=column(texts if texts_b is None else texts_b))

  def ids(self, texts, prepare=True):
    out = self.run(texts, prepare=prepare)
    ids, splits = out["ids"], out["splits"]
    return [ids[splits[i]:splits[i + 1]].tolist() for i in range(len(texts))]


@pytest.fixture(scope="module", params=[True, False], ids=["uncased", "cased"])
def tokenizer(request, vocab_file, tmp_path_factory):
  path = str(tmp_path_factory.mktemp("litert_tokenizer") / "tokenizer.tflite")
  return Tokenizer(vocab_file, path, request.param)


def test_the_normalizer_model_is_the_official_map_for_every_code_point(vocab_file):
  """The kernel, reading our trie and string pool, returns what `official_char` says."""
  with open(vocab_file, encoding="utf-8") as f:
    tokens = f.read().split("\n")
  mapping, placeholder = litert_normalizer.char_map(set("".join(tokens)), True, True)
  normalizer = tft.FastBertNormalizer(model_buffer=litert_normalizer.model_buffer(mapping))
  chars = list(litert_normalizer.code_points())
  got = normalizer.normalize(tf.constant([c.encode("utf-8") for c in chars])).numpy()
  wrong = [hex(ord(c)) for c, g in zip(chars, got) if g.decode("utf-8") != mapping.get(c, c)]
  assert wrong == []
  assert mapping["Σ"] == "σ" and mapping["é"] == "e" and "ß" not in mapping  # no NFKC
  assert "½" not in mapping and mapping["\x00"] == "" and mapping["\u3000"] == " "
  assert placeholder not in "".join(tokens)


def test_tricky_texts_match_the_oracle(tokenizer, vocab_file):
  oracle = make_oracle(vocab_file, tokenizer.lower)
  assert tokenizer.ids(TRICKY) == [oracle_ids(oracle, t) for t in TRICKY]


def test_every_code_point_matches_the_oracle(tokenizer, vocab_file):
  """Inside and between words; even the code points Python calls unassigned, which
  ELECTRA's `_is_control` removes (`prepare_texts` first, as the SavedModel tokenizer's
  class built from Python's tables)."""
  oracle = make_oracle(vocab_file, tokenizer.lower)
  cps = _code_points()
  texts = [f"A{chr(c)}b {chr(c)} x{chr(c)}{chr(c)}." for c in cps]
  got = tokenizer.ids(texts)
  wrong = [hex(cp) for cp, text, ids in zip(cps, texts, got) if ids != oracle_ids(oracle, text)]
  assert wrong == []


def test_the_python_step_does_what_the_map_cannot(tokenizer, vocab_file):
  """Final sigma and invalid UTF-8: wrong from the graph alone, right after prepare_texts."""
  oracle = make_oracle(vocab_file, tokenizer.lower)
  texts = [b"caf\xc3\xa9 \xff\xfeok", b"ab\xe2\x82cd", "ΟΔΟΣ ΟΔΟΣ. ΣΑΣ".encode("utf-8")]
  want = [oracle_ids(oracle, t) for t in texts]
  assert tokenizer.ids(texts) == want
  alone = tokenizer.ids(texts, prepare=False)
  assert alone[0] != want[0] and alone[1] != want[1]  # invalid bytes become spaces
  assert (alone[2] != want[2]) == tokenizer.lower  # Σ -> σ, not the final ς
  assert tokenizer.ids(["a\ud800b c"]) == [oracle_ids(oracle, "a\ud800b c")]


def test_shared_texts_match_the_oracle(tmp_path):
  """The BERT vocabulary on SST-2 dev, WikiText-2 valid and the vocabulary's own lines
  (bench/parity/litert_tokenizer_parity.py measures every file)."""
  from conftest import shared_data_path
  bert_vocab = shared_data_path("vocab", "vocab.txt")
  texts = []
  for parts in (("glue", "SST-2", "dev.tsv"), ("corpus", "wikitext-2-raw", "wiki.valid.raw"),
                ("vocab", "vocab.txt")):
    with open(shared_data_path(*parts), encoding="utf-8") as f:
      texts += f.read().splitlines()
  got = Tokenizer(bert_vocab, str(tmp_path / "bert.tflite"), True).ids(texts)
  oracle = make_oracle(bert_vocab)
  assert got == FullTokenizer(bert_vocab).encode_batch(texts)
  sample = texts[::7]
  assert got[::7] == [oracle_ids(oracle, t) for t in sample]


def test_features_are_the_savedmodel_featurizer_s(tokenizer, vocab_file):
  """Single and pair packing (truncation included) and the tagging features."""
  with open(vocab_file, encoding="utf-8") as f:
    vocab = f.read().split("\n")[:-1]
  texts = ["", "Hello, World!", "the quick brown fox " * 5, "a", "é " * 30, "ΟΔΟΣ x"]
  texts_b = ["unaffable", "", "x", "the fox " * 9, "b", "c d e f g"]
  reference = TextFeaturizer(vocab, tokenizer.lower, MAX_SEQ_LENGTH)
  data = [tf.constant(prepare_texts(t, tokenizer.lower)) for t in (texts, texts_b)]
  got = tokenizer.run(texts, texts_b)
  expected = {"single": reference.single(data[0]), "pair": reference.pair(*data),
              "words": tagging.word_features(reference, data[0])}
  for prefix, features in expected.items():
    for name, value in features.items():
      np.testing.assert_array_equal(got[f"{prefix}_{name}"], value.numpy(),
                                    err_msg=f"{prefix}_{name}")
  assert got["single_input_ids"].shape[1] == MAX_SEQ_LENGTH  # the long text is cut


def test_ascii_whitespace_splits_words_as_tf_strings_split(tokenizer):
  """Tagging words: split where tf.strings.split splits (ASCII whitespace), not on other
  Unicode spaces (which then separate WordPieces inside the word)."""
  chars = [chr(cp) for cp in range(0x3001) if unicodedata.category(chr(cp)) != "Cs"]
  texts = [f"a{c}b" for c in chars]
  words = tf.strings.split(tf.constant([t.encode("utf-8") for t in texts])).row_lengths()
  got = tokenizer.run(texts)["words_words_mask"].sum(axis=1)
  assert got.tolist() == words.numpy().tolist()


def test_the_parity_bench_s_reference_is_electra_s_tokenizer(vocab_file):
  """bench/parity/litert_tokenizer_parity.py compares with ELECTRA's `_is_control` (every C*),
  not BERT's (Cc, Cf): private use, unassigned and format characters are removed."""
  from bench.parity import litert_tokenizer_parity
  import importlib
  reference = litert_tokenizer_parity.official_tokenizer(vocab_file, True)
  oracle = make_oracle(vocab_file, True)
  try:
    texts = ["a\ue000b", "x\U000e0080y z", "caf\u00e9\u200b .", "\u0378q"]
    assert [reference(t) for t in texts] == [oracle_ids(oracle, t) for t in texts]
  finally:
    importlib.reload(oracle_lib)  # the bench patched the module's _is_control
