"""Vocabulary learning (data_prep/build_vocab.py) and the embedded default corpus."""

import collections
import os
import random
import re
import shutil
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")

from electra_tf2.data_prep import default_corpus  # noqa: E402
from electra_tf2.data_prep.build_vocab import learn_vocab, learn_vocab_from_files  # noqa: E402
from electra_tf2.data_prep.common import DataPrepError  # noqa: E402
from electra_tf2.text.tokenizer import FullTokenizer  # noqa: E402
from electra_tf2.text.vocab import load_vocab, SPECIAL_TOKENS  # noqa: E402

TEXT = """The quick brown fox jumps over the lazy dog.
Unaffable people want wanted wanting things; the dogs jumped quickly.
Crème brûlée and café au lait, naïve façade, Straße.

中文字符 and 日本語 text, plus Ελληνικά words and ΟΔΟΣ.
Numbers 1984, 3.14 and e-mail@example.com appear [MASK] too.
"""


@pytest.fixture()
def corpus(tmp_path):
  d = tmp_path / "corpus"
  d.mkdir()
  for i in range(3):
    (d / f"part{i}.txt").write_text(TEXT * (5 + i), encoding="utf-8")
  (d / "binary.dat").write_bytes(b"\x00\x01\x02garbage")
  return d


def test_learned_vocab_has_the_special_tokens_first_and_the_exact_size(corpus, tmp_path):
  out = tmp_path / "vocab.txt"
  files = sorted(str(p) for p in corpus.iterdir())
  warnings = []
  summary = learn_vocab_from_files(files, 300, str(out), num_unused=3, log=None,
                                   warn=warnings.append)
  tokens = out.read_text(encoding="utf-8").split("\n")[:-1]
  assert len(tokens) == 300 == summary["vocab_size"]
  assert tokens[:5] == list(SPECIAL_TOKENS) == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  assert tokens[5:8] == ["[unused0]", "[unused1]", "[unused2]"]
  assert summary["skipped"] == 1 and any("binary.dat" in w for w in warnings)
  vocab = load_vocab(str(out), expected_size=300)
  assert "##s" in vocab and "the" in vocab and "ο" in vocab and "中" in vocab
  # Every character of the corpus is in the vocab alone and as ##c: no [UNK] on it.
  tok = FullTokenizer(str(out))
  ids = [i for line in TEXT.splitlines() for i in tok.encode(line)]
  assert vocab["[UNK]"] not in ids
  assert tok.tokenize("the dogs") == ["the", "dogs"] or tok.tokenize("the dogs")[0] == "the"


def test_cased_vocab_keeps_case_and_accents(corpus, tmp_path):
  out = tmp_path / "cased.txt"
  learn_vocab_from_files([str(corpus / "part0.txt")], 400, str(out), do_lower_case=False,
                         log=None)
  vocab = load_vocab(str(out))
  assert "T" in vocab and "è" in vocab and "Σ" in vocab


def test_small_corpus_is_padded_with_unused_tokens():
  vocab = learn_vocab({"hello": 5, "world": 3}, 60)
  assert len(vocab) == 60 and vocab[:5] == list(SPECIAL_TOKENS)
  assert vocab[-1].startswith("[unused") and len(set(vocab)) == 60
  # 20 tokens hold the 5 special ones and 7 characters alone and as ##c: the 7 most
  # frequent (z 8, y 7, x 6, then a-d of the 5s), said in one line; then the learned "zy".
  notes = []
  vocab = learn_vocab({"abcdefghijklmnopqrstuvwxyz": 5, "zy": 2, "xz": 1}, 20,
                      log=notes.append)
  assert vocab[5:] == list("abcdxyz") + ["##" + c for c in "abcdxyz"] + ["zy"]
  assert [n for n in notes if "note" in n] == [
      "  note: --vocab-size 20 holds 7 of the 26 characters above --character-coverage 1.0 "
      "(each alone and as ##c); the rarest 19 become [UNK]: raise --vocab-size or lower "
      "--character-coverage"]
  with pytest.raises(DataPrepError, match="too small"):
    learn_vocab({"abcdefghijklmnopqrstuvwxyz": 5}, 6)
  with pytest.raises(DataPrepError, match="no words"):
    learn_vocab({}, 100)


def _mixed_lines(seed: int, n: int):
  """n lines of 8 words: Latin words (1-3 syllables), Hangul words (1-3 syllables) and CJK
  runs (2-4 characters), each drawn Zipf-like (P(i) ~ 1/(i+1)) from 150 words, 400
  syllables and 1500 characters: many characters are seen once or never."""
  rng, pick = random.Random(seed), random.Random(seed + 1)

  def zipf(k):
    return min(k - 1, int(k ** rng.random()) - 1)

  latin = ["".join(rng.choice("bdfgklmnprstvz") + rng.choice("aeiou")
                   for _ in range(rng.randint(1, 3))) for _ in range(150)]
  lines = []
  for _ in range(n):
    words = []
    for _ in range(8):
      kind = pick.randrange(3)
      if kind == 0:
        words.append(latin[zipf(150)])
      elif kind == 1:
        words.append("".join(chr(0xAC00 + zipf(400)) for _ in range(pick.randint(1, 3))))
      else:
        words.append("".join(chr(0x4E00 + zipf(1500)) for _ in range(pick.randint(2, 4))))
    lines.append(" ".join(words))
  return lines


def _words(line):
  """The words BasicTokenizer (cased) makes of a _mixed_lines line: CJK characters alone."""
  out = []
  for w in line.split():
    out.extend(list(w) if "\u4e00" <= w[0] <= "\u9fff" else [w])
  return out


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
  """A 400-line Hangul/CJK/Latin corpus, its characters and its multi-character words."""
  train = _mixed_lines(1, 400)
  path = tmp_path_factory.mktemp("mixed") / "train.txt"
  path.write_text("\n".join(train) + "\n", encoding="utf-8")
  chars = collections.Counter(c for line in train for c in line if not c.isspace())
  multi = {w for line in train for w in _words(line) if len(w) > 1}
  return {"path": str(path), "train": train, "chars": chars, "multi": multi}


def test_wordpiece_fills_the_size_and_says_when_the_corpus_cannot(mixed, tmp_path):
  # At count threshold 1 every distinct word is a piece of its own, so the corpus gives
  # 5 special + each character alone and as ##c + its multi-character words: exactly
  # that size fills with learned tokens. The old floor of threshold 2 padded ~900.
  size = 5 + 2 * len(mixed["chars"]) + len(mixed["multi"])
  assert size == 3048
  out = tmp_path / "v.txt"
  summary = learn_vocab_from_files([mixed["path"]], size, str(out), do_lower_case=False,
                                   log=None)
  tokens = out.read_text(encoding="utf-8").split("\n")[:-1]
  assert summary["padding"] == 0 and len(tokens) == len(set(tokens)) == size
  assert not [t for t in tokens if t.startswith("[unused")]
  assert mixed["multi"] <= set(tokens)
  # 50 more than the corpus holds: 50 [unused] entries and one line that says so.
  logs = []
  summary = learn_vocab_from_files([mixed["path"]], size + 50, str(tmp_path / "w.txt"),
                                   do_lower_case=False, log=logs.append)
  assert summary["padding"] == 50
  assert [l for l in logs if "note" in l] == [
      f"  note: the corpus gives only {size} tokens even keeping every piece seen once; "
      f"50 are [unused] padding: give more text or --vocab-size {size}"]


def test_wordpiece_keeps_rare_characters_and_has_fewer_unknowns(mixed, tmp_path):
  out = tmp_path / "v.txt"
  learn_vocab_from_files([mixed["path"]], 3000, str(out), do_lower_case=False, log=None)
  vocab = load_vocab(str(out))
  chars = mixed["chars"]
  once = sorted(c for c, n in chars.items() if n == 1)
  assert len(chars) > 1000 and len(once) > 100  # beyond tensorflow-text's 1000 characters
  assert all(c in vocab and "##" + c in vocab for c in chars)
  tok = FullTokenizer(str(out), do_lower_case=False)
  hangul_once = [c for c in once if "\uac00" <= c <= "\ud7a3"][0]
  assert tok.tokenize("\uac00" + hangul_once) == ["\uac00", "##" + hangul_once]
  # Held-out lines: a word is [UNK] only when it has a character the corpus never showed.
  # tensorflow-text's rule (the 1000 most frequent characters) also lost the rare ones.
  held = [w for line in _mixed_lines(2, 100) for w in _words(line)]
  unseen = sum(1 for w in held if any(c not in chars for c in w))
  top = {c for c, _ in sorted(chars.items(), key=lambda x: (-x[1], x[0]))[:1000]}
  old_rule = sum(1 for w in held if any(c not in top for c in w))
  unknown = sum(1 for line in _mixed_lines(2, 100) for t in tok.tokenize(line) if t == "[UNK]")
  assert unknown == unseen < old_rule
  # --character-coverage below 1 drops the rarest: the characters seen once here.
  covered = learn_vocab(dict(collections.Counter(w for line in mixed["train"]
                                                 for w in _words(line))),
                        3000, character_coverage=1 - len(once) / sum(chars.values()))
  assert not [c for c in once if c in covered] and set(chars) - set(once) <= set(covered)


def test_binary_search_option_uses_the_library_learner():
  counts = {w: n for w, n in zip("the of and to in is it you that he was for on are".split(),
                                  range(200, 10, -13))}
  vocab = learn_vocab(counts, 80, binary_search=True)
  assert len(vocab) == 80 and vocab[:5] == list(SPECIAL_TOKENS)


@pytest.mark.slow
def test_build_vocab_command_line_errors(tmp_path):
  script = os.path.join(REPO_ROOT, "data_prep", "build_vocab.py")
  (tmp_path / "empty").mkdir()
  result = subprocess.run([sys.executable, script, "--corpus-dir", str(tmp_path / "empty"),
                           "--vocab-size", "100", "--output", str(tmp_path / "v.txt")],
                          capture_output=True, text=True, timeout=120)
  assert result.returncode == 2 and result.stderr.strip() == "error: no input files found"
  result = subprocess.run([sys.executable, script, "--vocab-size", "100", "--output", "v.txt"],
                          capture_output=True, text=True, timeout=120)
  assert result.returncode == 2 and "--corpus-dir" in result.stderr


def test_default_corpus_is_deterministic_prose(tmp_path):
  a = default_corpus.write_default_corpus(str(tmp_path / "a"), max_bytes=150_000, num_files=3)
  b = default_corpus.write_default_corpus(str(tmp_path / "b"), max_bytes=150_000, num_files=3)
  assert a == b and a["files"] == 3 and 100_000 < a["bytes"] < 300_000
  names = sorted(os.listdir(tmp_path / "a"))
  assert names == ["docstrings-00.txt", "docstrings-01.txt", "docstrings-02.txt"]
  for name in names:
    assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
  text = (tmp_path / "a" / names[0]).read_text(encoding="utf-8")
  assert "\n\n" in text and ">>>" not in text
  lines = [l for l in text.split("\n") if l]
  assert all(len(re.findall("[A-Za-z]{2,}", l)) >= 4 for l in lines)
  with pytest.raises(DataPrepError, match="already holds files"):
    default_corpus.write_default_corpus(str(tmp_path / "a"))


def test_prepare_default_data_dir_builds_then_skips(tmp_path):
  data = tmp_path / "data"
  logs = []
  result = default_corpus.prepare_default_data_dir(
      str(data), vocab_size=1000, max_seq_length=64, num_shards=2, num_processes=1,
      corpus_bytes=200_000, log=logs.append)
  assert result["built"] == ["corpus", "vocab", "tfrecords"]
  assert result["vocab_size"] == 1000 and result["num_examples"] > 100
  shards = sorted(os.listdir(data / "pretrain_tfrecords"))
  assert shards == ["pretrain_data.info.json", "pretrain_data.tfrecord-0-of-2",
                    "pretrain_data.tfrecord-1-of-2", "tokenizer_description.json"]
  assert result["tfrecords"] == str(data / "pretrain_tfrecords" / "pretrain_data.tfrecord*")
  again = default_corpus.prepare_default_data_dir(
      str(data), vocab_size=1000, max_seq_length=64, num_shards=2, num_processes=1,
      corpus_bytes=200_000, log=None)
  assert again["built"] == [] and again["num_examples"] == result["num_examples"]
  # Another sequence length rebuilds the TFRecords only.
  third = default_corpus.prepare_default_data_dir(
      str(data), vocab_size=1000, max_seq_length=32, num_shards=2, num_processes=1, log=None)
  assert third["built"] == ["tfrecords"]
  # A vocab of another size is refused before anything is written, with this
  # script's flag in the message.
  other = tmp_path / "other"
  other.mkdir()
  shutil.copy(data / "vocab.txt", other / "vocab.txt")
  with pytest.raises(default_corpus.DataPrepError, match=re.escape(
      f"{other / 'vocab.txt'} has 1000 tokens but --vocab-size is 2000: pass --vocab-size "
      "1000 to use it, or delete it")):
    default_corpus.prepare_default_data_dir(str(other), vocab_size=2000, log=None)
  assert sorted(os.listdir(other)) == ["vocab.txt"]
