"""The tensorflow-text tokenizer gives the ids of ELECTRA's FullTokenizer (model/tokenization.py).

Oracle: `official.nlp.tools.tokenization.FullTokenizer` (tf-models-official, pure
Python: BERT's), set to the ELECTRA behaviour it differs in: words over 200
characters become [UNK] (it uses 400); ELECTRA's `strip_accents=False` (PR #88;
it only matters when lowercasing) is emulated by not stripping; and ELECTRA's
`_is_control` removes every category C* where BERT's removes Cc and Cf only
(`electra_text` drops the rest first: private use, surrogates, unassigned).

Unassigned means unassigned in Python's `unicodedata` (14.0 in Python 3.11), as
for the official code: the cleaning's character class is built from Python's
tables (text/tokenizer.py `clean_pattern`), not from RE2's newer ones, so every
code point tokenizes as the oracle does (`test_every_code_point_matches_the_oracle`).

Difference that remains, checked below rather than hidden: TensorFlow's ICU
lowercasing lacks the case mappings of about 40 capitals added in Unicode 14
(Vithkuqi, Glagolitic, Latin Extended-D). The words holding them differ
(`BasicTokenizer`), but not the ids with the BERT vocab, where they are [UNK]
either way.

Fixed differences of tensorflow-text's own BertTokenizer (see the module doc of
electra_tf2/text/tokenizer.py) are covered by `TRICKY`.
"""

import os
import subprocess
import sys
import unicodedata

import numpy as np
import pytest

from conftest import REPO_ROOT, shared_data_path

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")
oracle_lib = pytest.importorskip("official.nlp.tools.tokenization")

from electra_tf2.text.tokenizer import BasicTokenizer, FullTokenizer  # noqa: E402
from electra_tf2.text.vocab import VocabError  # noqa: E402

CONFIGS = [  # (do_lower_case, strip_accents)
    (True, True),
    (True, False),
    (False, True),
]

TRICKY = [
    "", " ", "\t\n\r", "Hello, World!", "unaffable un-aff-able", "[MASK] [CLS] [SEP]",
    "a\x00b", "a\x01b\x7fc", "x\x0by\x0cz", "a\x1cb\x1d c\x85d", "zero\u200bwidth\u200djoin",
    "soft\u00adhyphen", "bom\ufeffhere", "repl\ufffdacement", "nbsp\u00a0here\u3000ideo",
    "line\u2028sep\u2029par", "tab\there", "Crème Brûlée", "naïve café", "e\u0301 a\u0308",
    "ISTANBUL İzmir ıi", "JIJ Įį ÌÍĨ", "ΟΔΟΣ ΟΔΟΣ. ΣΑΣ", "Σ", "straße STRASSE ß", "ﬁne ﬂow",
    "x² H₂O ½", "ＡＢＣ ｆｕｌｌ", "中文字符 日本語のテキスト 한국어", "\u4e00\u9fff\u3400\uf900",
    "\U00020000\U0002a6df", "emoji 😀👍🏽 ok", "Ⅷ ⅷ", "Ǆǅǆ", "ﬀ ﬃ", "Ωmega ΩΩ", "K Å",
    "don't won't o'clock", "e-mail e.g. i.e. U.S.A.", "$100 #1 @user ^_^ `code` ~home",
    "a" * 200, "a" * 201, "é" * 200, "é" * 201, "ab" * 100 + "x", "word " * 3 + "z" * 250 + " end",
    "\u00e9" * 150 + "\u00e8" * 60, "\u1100" * 201, "x" * 199 + "é", "pre " + "é" * 201 + "! post",
    "mixed ascii é " * 20, "\u0130" * 150, "...", "—–-", "«quote» „lower“ ‘single’",
    "a\u0301\u0302\u0303b", "\u0345", "ǰ ΐ", "ŉ", "İ̇", "𐐀𐐁 𐐨", "Ⓐ ⓐ", "ᾼ ᾳ",
]


def electra_text(text):
  """`text` without the characters ELECTRA's `_is_control` removes beyond BERT's, which
  the oracle implements: model/tokenization.py:335-344 takes every category C*, BERT
  Cc and Cf only, so private use (Co), surrogates (Cs) and unassigned (Cn) go here."""
  if isinstance(text, bytes):
    text = text.decode("utf-8", "ignore")  # the oracle's convert_to_unicode
  return "".join(c for c in text if unicodedata.category(c) not in ("Co", "Cs", "Cn"))


class ElectraOracle:
  """A tf-models-official (BERT) tokenizer that sees `electra_text` of its input."""

  def __init__(self, bert):
    self.bert = bert

  def tokenize(self, text):
    return self.bert.tokenize(electra_text(text))

  def __getattr__(self, name):
    return getattr(self.bert, name)


def make_oracle(vocab_file, do_lower_case=True, strip_accents=True):
  """BERT's FullTokenizer as ELECTRA configures it."""
  tok = oracle_lib.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
  tok.wordpiece_tokenizer.max_input_chars_per_word = 200
  if not strip_accents:
    tok.basic_tokenizer._run_strip_accents = lambda text: text  # pylint: disable=protected-access
  return ElectraOracle(tok)


def basic_oracle(do_lower_case=True):
  """BERT's BasicTokenizer (words only) as ELECTRA's."""
  return ElectraOracle(oracle_lib.BasicTokenizer(do_lower_case=do_lower_case))


def oracle_ids(oracle, text):
  return oracle.convert_tokens_to_ids(oracle.tokenize(text))


@pytest.fixture(scope="module")
def tiny_vocab(tmp_path_factory):
  words = ["the", "quick", "brown", "fox", "un", "##aff", "##able", "hello", "world", "mask",
           "cls", "sep", "cafe", "café", "crème", "creme", "brulee", "straße", "istanbul",
           "izmir", "##s", "##ing", "want", "##ed", "σ", "ς", "ο", "δ", "中", "文", "é", "è"]
  chars = [chr(c) for c in range(ord("a"), ord("z") + 1)] + list("0123456789")
  punct = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
  tokens = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + punct + chars
            + ["##" + c for c in chars] + words)
  seen, unique = set(), []
  for t in tokens:
    if t not in seen:
      seen.add(t)
      unique.append(t)
  path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
  path.write_text("\n".join(unique) + "\n", encoding="utf-8")
  return str(path)


@pytest.fixture(scope="module")
def bert_vocab():
  return shared_data_path("vocab", "vocab.txt")


@pytest.fixture(scope="module")
def rich_vocab(tiny_vocab):
  """BERT's vocab when ../shared/data is there (more words to match), else the tiny one."""
  from conftest import SHARED_DATA
  path = os.path.join(SHARED_DATA, "vocab", "vocab.txt")
  return path if os.path.isfile(path) else tiny_vocab


def _check_all_paths(tok, oracle, texts):
  want = [oracle_ids(oracle, t) for t in texts]
  assert tok.encode_batch(texts) == want
  lists, n_tokens, _ = tok.encode_lines(texts)
  assert lists == want and n_tokens == sum(map(len, want))
  flat, splits = tok.encode_batch_flat(texts)
  assert [flat[splits[i]:splits[i + 1]].tolist() for i in range(len(texts))] == want
  graph = tok.tokenize_to_ids(tf.constant([t.encode("utf-8") for t in texts])).to_list()
  assert graph == want
  assert [tok.tokenize(t) for t in texts] == [oracle.tokenize(t) for t in texts]


@pytest.mark.parametrize("do_lower_case,strip_accents", CONFIGS)
def test_tricky_strings_match_the_oracle_with_a_tiny_vocab(tiny_vocab, do_lower_case, strip_accents):
  tok = FullTokenizer(tiny_vocab, do_lower_case=do_lower_case, strip_accents=strip_accents)
  _check_all_paths(tok, make_oracle(tiny_vocab, do_lower_case, strip_accents), TRICKY)


@pytest.mark.parametrize("do_lower_case,strip_accents", CONFIGS)
def test_tricky_strings_match_the_oracle_with_the_bert_vocab(bert_vocab, do_lower_case, strip_accents):
  tok = FullTokenizer(bert_vocab, do_lower_case=do_lower_case, strip_accents=strip_accents)
  _check_all_paths(tok, make_oracle(bert_vocab, do_lower_case, strip_accents), TRICKY)


def test_word_length_limit_is_200_characters(tiny_vocab):
  tok = FullTokenizer(tiny_vocab)
  unk = tok.vocab["[UNK]"]
  assert tok.encode("a" * 200) == [tok.vocab["a"]] + [tok.vocab["##a"]] * 199
  assert tok.encode("a" * 201) == [unk]
  # Characters, not bytes: 200 two-byte characters are still one word to split.
  assert tok.encode("é" * 200) == [tok.vocab["e"]] + [tok.vocab["##e"]] * 199
  assert tok.encode("é" * 201) == [unk]
  assert tok.encode("x " + "a" * 300 + " b") == [tok.vocab["x"], unk, tok.vocab["b"]]


def test_strip_accents_only_applies_when_lowercasing(tiny_vocab):
  # Official BasicTokenizer: `if do_lower_case: lower; if strip_accents: strip`.
  assert FullTokenizer(tiny_vocab, do_lower_case=False, strip_accents=True).tokenize("café") == ["café"]
  assert FullTokenizer(tiny_vocab, do_lower_case=True, strip_accents=True).tokenize("Café") == ["cafe"]
  assert FullTokenizer(tiny_vocab, do_lower_case=True, strip_accents=False).tokenize("Café") == ["café"]
  assert FullTokenizer(tiny_vocab, strip_accents=None).strip_accents is True


def test_invalid_utf8_and_surrogates_are_handled_like_the_oracle(rich_vocab):
  tok = FullTokenizer(rich_vocab)
  oracle = make_oracle(rich_vocab)
  raw = [b"caf\xc3\xa9 \xff\xfeok", b"\xc3", b"ab\xe2\x82cd", b"\xed\xa0\x80x"]
  graph = tok.module.tokenize_to_ids(tf.constant(raw)).to_list()
  assert graph == [oracle_ids(oracle, r) for r in raw]  # oracle decodes with "ignore"
  assert tok.encode_batch(raw) == graph
  assert tok.encode("a\ud800b c") == oracle_ids(oracle, "a\ud800b c")  # lone surrogate


def test_saved_model_round_trip(tmp_path, rich_vocab):
  import tensorflow_text  # noqa: F401  (registers the ops for loading)
  tok = FullTokenizer(rich_vocab)
  tf.saved_model.save(tok.module, str(tmp_path / "tok"))
  loaded = tf.saved_model.load(str(tmp_path / "tok"))
  texts = TRICKY[:40]
  got = loaded.tokenize_to_ids(tf.constant([t.encode("utf-8") for t in texts]))
  assert isinstance(got, tf.RaggedTensor)
  assert got.to_list() == tok.encode_batch(texts)


def test_vocab_is_validated(tmp_path):
  bad = tmp_path / "bad.txt"
  bad.write_text("[PAD]\n[CLS]\n[SEP]\n[MASK]\nhello\n", encoding="utf-8")
  with pytest.raises(VocabError, match=r"\[UNK\]"):
    FullTokenizer(str(bad))
  good = tmp_path / "good.txt"
  good.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n", encoding="utf-8")
  with pytest.raises(VocabError, match="vocab_size=7"):
    FullTokenizer(str(good), expected_vocab_size=7)
  tok = FullTokenizer(str(good), expected_vocab_size=6)
  assert tok.convert_tokens_to_ids(["hello", "[UNK]"]) == [5, 1]
  assert tok.convert_ids_to_tokens([5, 0]) == ["hello", "[PAD]"]
  assert tok.vocab_size == 6 and tok.inv_vocab[5] == "hello"
  with pytest.raises(KeyError):
    tok.convert_tokens_to_ids(["nope"])


@pytest.mark.slow
def test_lowercasing_ignores_the_process_locale(rich_vocab):
  """ICU lowercases "I" to dotless "ı" under a Turkish locale; Python never does."""
  texts = ["ISTANBUL İzmir JIJ Įį ÌÍĨ Ì\u0301x", "I\u0307 DIŞ ıI"]
  want = FullTokenizer(rich_vocab).encode_batch(texts)
  code = ("import sys, json;"
          "from electra_tf2.text.tokenizer import FullTokenizer;"
          "print(json.dumps([FullTokenizer(sys.argv[2]).encode_batch(json.loads(sys.argv[3])),"
          " FullTokenizer(sys.argv[2], strip_accents=False).encode_batch(json.loads(sys.argv[3]))]))")
  import json
  no_strip = FullTokenizer(rich_vocab, strip_accents=False).encode_batch(texts)
  # Turkish (ICU: I -> ı, İ -> i); the Lithuanian rules (Ì -> i̇̀) are undone by the same code.
  env = dict(os.environ, LC_ALL="tr_TR.UTF-8", LANG="tr_TR.UTF-8", TF_CPP_MIN_LOG_LEVEL="3",
             PYTHONPATH=REPO_ROOT)  # this checkout's electra_tf2
  out = subprocess.run([sys.executable, "-c", code, "", rich_vocab, json.dumps(texts)],
                       env=env, capture_output=True, text=True, timeout=120, check=True)
  got = json.loads(out.stdout.strip().splitlines()[-1])
  assert got == [want, no_strip]


def _code_points():
  """Planes 0, 1 and 14 whole; a sample of the CJK planes 2-3 and of the empty planes 4-13."""
  ranges = [range(0, 0x20000), range(0xE0000, 0xE1000), range(0x20000, 0x40000, 7),
            range(0x40000, 0xE0000, 4099)]
  return [cp for r in ranges for cp in r if not 0xD800 <= cp <= 0xDFFF]


def test_every_code_point_matches_the_oracle(rich_vocab):
  """Each code point inside and between words, unassigned and private-use ones included."""
  tok = FullTokenizer(rich_vocab)
  oracle = make_oracle(rich_vocab)
  cps = _code_points()
  assert sum(unicodedata.category(chr(c)) in ("Cn", "Co") for c in cps) > 1000
  texts = [f"A{chr(c)}b {chr(c)} x{chr(c)}{chr(c)}." for c in cps]
  ours, _, _ = tok.encode_lines(texts)
  diffs = [hex(cp) for cp, text, got in zip(cps, texts, ours) if got != oracle_ids(oracle, text)]
  assert diffs == []


@pytest.mark.parametrize("do_lower_case,strip_accents", CONFIGS[1:])
def test_assigned_code_points_match_the_oracle_in_other_configs(rich_vocab, do_lower_case,
                                                                strip_accents):
  tok = FullTokenizer(rich_vocab, do_lower_case=do_lower_case, strip_accents=strip_accents)
  oracle = make_oracle(rich_vocab, do_lower_case, strip_accents)
  cps = [cp for cp in range(0, 0x30000) if not 0xD800 <= cp <= 0xDFFF
         and unicodedata.category(chr(cp)) != "Cn" and not 0x3400 <= cp <= 0x9FFF
         and not 0x20000 <= cp <= 0x2FFFF and not 0xAC00 <= cp <= 0xD7A3]
  texts = [f"A{chr(c)}b {chr(c)}{chr(c)}." for c in cps]
  ours, _, _ = tok.encode_lines(texts)
  diffs = [hex(cp) for cp, text, got in zip(cps, texts, ours) if got != oracle_ids(oracle, text)]
  assert diffs == []


def test_basic_tokenizer_words_match_the_oracle():
  ours = BasicTokenizer().tokenize_batch(TRICKY)
  oracle = basic_oracle(do_lower_case=True)
  assert ours == [oracle.tokenize(t) for t in TRICKY]
  cased = BasicTokenizer(do_lower_case=False).tokenize_batch(TRICKY)
  assert cased == [basic_oracle(do_lower_case=False).tokenize(t) for t in TRICKY]
  # Difference 2 of the module doc: capitals whose lowercase TF's ICU lacks.
  cps = [cp for cp in range(0x30000) if unicodedata.category(chr(cp)) in ("Lu", "Lt")]
  texts = [chr(cp) for cp in cps]
  got = BasicTokenizer().tokenize_batch(texts)
  diffs = [cp for cp, text, words in zip(cps, texts, got) if words != oracle.tokenize(text)]
  for cp, words in zip(cps, got):  # ICU left the capital as it is; Python lowercases it
    if cp in diffs:
      assert words == [chr(cp)] != [chr(cp).lower()], hex(cp)
  assert len(diffs) < 100


def read_lines_like_gfile(path):
  """Lines as the official builder saw them: split on \\n, every \\r dropped."""
  with open(path, "rb") as f:
    data = f.read()
  lines = data.replace(b"\r", b"").split(b"\n")
  if lines and lines[-1] == b"":
    lines.pop()
  return [line.decode("utf-8") for line in lines]


def shared_corpus_files():
  root = shared_data_path("corpus")
  out = []
  for dirpath, _, names in os.walk(root):
    out.extend(os.path.join(dirpath, n) for n in names)
  return sorted(out)


def test_ids_identical_on_every_line_of_the_shared_corpus(bert_vocab):
  """Issue 4: every line of ../shared/data/corpus, default settings, id for id."""
  tok = FullTokenizer(bert_vocab)
  oracle = make_oracle(bert_vocab)
  n_lines = n_tokens = 0
  for path in shared_corpus_files():
    lines = read_lines_like_gfile(path)
    ours, count, _ = tok.encode_lines([line.strip() for line in lines])
    for i, (line, got) in enumerate(zip(lines, ours)):
      want = oracle_ids(oracle, line.strip())
      assert got == want, f"{path} line {i + 1}: {line[:80]!r}"
    n_lines += len(lines)
    n_tokens += count
  print(f"\n{n_lines} lines, {n_tokens} tokens: identical")
  assert n_lines > 100_000


@pytest.mark.parametrize("do_lower_case,strip_accents", CONFIGS[1:])
def test_ids_identical_on_the_shared_corpus_in_other_configs(bert_vocab, do_lower_case,
                                                              strip_accents):
  tok = FullTokenizer(bert_vocab, do_lower_case=do_lower_case, strip_accents=strip_accents)
  oracle = make_oracle(bert_vocab, do_lower_case, strip_accents)
  lines = []
  for path in shared_corpus_files():
    lines += read_lines_like_gfile(path)[::7]
  ours, _, _ = tok.encode_lines(lines)
  assert ours == [oracle_ids(oracle, line) for line in lines]


def test_encode_lines_flat_merges_ascii_and_other_lines_in_order(tiny_vocab):
  tok = FullTokenizer(tiny_vocab)
  texts = ["the fox", "café", "", "brown", "crème quick", "x" * 300, "é" * 300]
  flat, splits = tok.encode_lines_flat(texts)
  assert splits.dtype == np.int64 and len(splits) == len(texts) + 1
  per_line = [flat[splits[i]:splits[i + 1]].tolist() for i in range(len(texts))]
  assert per_line == [tok.encode(t) for t in texts]
