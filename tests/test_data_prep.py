"""The pre-training data builder writes the official builder's examples.

`Reference*` below is a plain transcription of the official
build_pretraining_dataset.py semantics written for this test: BERT's
pure-Python FullTokenizer (tf-models-official), tf.io.gfile.GFile lines,
tf.train.Example protos, the global `random`. It shares no code with data_prep.
It draws either as the builder documents (`draws="per-document"`: the packing
reseeds `random` with "<seed>\\0<input name>\\0<k>" at the k-th document of
each input, the file order comes from random.Random(seed + job)) or as the
official script does (`draws="official"`: everything from `random` seeded
with seed + job), the oracle of the held-out statistics.
"""

import gzip
import os
import random
import string
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import REPO_ROOT, shared_data_path

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")
oracle_lib = pytest.importorskip("official.nlp.tools.tokenization")

from electra_tf2.data_prep import common  # noqa: E402
from electra_tf2.data_prep.builder import (  # noqa: E402
    BuildConfig, build_pretraining_data, read_info)
from electra_tf2.data_prep.common import DataPrepError  # noqa: E402
from electra_tf2.data_prep.example_encoding import ExampleEncoder  # noqa: E402
from electra_tf2.data_prep.packing import ExampleBuilder  # noqa: E402
from electra_tf2.text.vocab import VocabError  # noqa: E402

SCRIPT = os.path.join(REPO_ROOT, "data_prep", "build_pretraining_dataset.py")


# ---------------------------------------------------------------------------
# The reference: the official algorithm, transcribed from the spec
# ---------------------------------------------------------------------------

class ReferenceExampleBuilder:
  """Official ExampleBuilder (build_pretraining_dataset.py:34-114), over a tokenizer with tokenize/convert_tokens_to_ids."""

  def __init__(self, tokenizer, max_length, cls_id, sep_id):
    self.tokenizer = tokenizer
    self.max_length = max_length
    self.target_length = max_length
    self.sentences = []
    self.length = 0
    self.cls_id, self.sep_id = cls_id, sep_id

  def add_line(self, line):
    line = line.strip().replace("\n", " ")
    if not line and self.length != 0:
      return self.create_example()
    ids = self.tokenizer.convert_tokens_to_ids(self.tokenizer.tokenize(line))
    self.sentences.append(ids)
    self.length += len(ids)
    if self.length >= self.target_length:
      return self.create_example()
    return None

  def create_example(self):
    if random.random() < 0.1:
      first_target = 100000
    else:
      first_target = (self.target_length - 3) // 2
    a, b = [], []
    for sentence in self.sentences:
      goes_to_a = (len(a) == 0 or len(a) + len(sentence) < first_target
                   or (len(b) == 0 and len(a) < first_target and random.random() < 0.5))
      if goes_to_a:
        a = a + sentence
      else:
        b = b + sentence
    a = a[:self.max_length - 2]
    b = b[:max(0, self.max_length - len(a) - 3)]
    self.sentences = []
    self.length = 0
    if random.random() < 0.05:
      self.target_length = random.randint(5, self.max_length)
    else:
      self.target_length = self.max_length
    return self.features(a, b)

  def features(self, a, b):
    ids = [self.cls_id] + a + [self.sep_id]
    segments = [0] * len(ids)
    if b:
      ids = ids + b + [self.sep_id]
      segments = segments + [1] * (len(b) + 1)
    mask = [1] * len(ids)
    pad = [0] * (self.max_length - len(ids))
    return {"input_ids": ids + pad, "input_mask": mask + pad, "segment_ids": segments + pad}


def to_tf_example(features):
  return tf.train.Example(features=tf.train.Features(feature={
      k: tf.train.Feature(int64_list=tf.train.Int64List(value=v)) for k, v in features.items()}))


def make_oracle(vocab_file, do_lower_case=True, strip_accents=True):
  tok = oracle_lib.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
  tok.wordpiece_tokenizer.max_input_chars_per_word = 200
  if not strip_accents:
    tok.basic_tokenizer._run_strip_accents = lambda text: text  # pylint: disable=protected-access
  return tok


class MemoTokenizer:
  """The oracle with each distinct line tokenized once (the reference runs are many)."""

  def __init__(self, oracle):
    self.vocab = oracle.vocab
    self._oracle = oracle
    self._ids = {}

  def tokenize(self, line):
    return [line]

  def convert_tokens_to_ids(self, tokens):
    line, = tokens
    if line not in self._ids:
      self._ids[line] = self._oracle.convert_tokens_to_ids(self._oracle.tokenize(line))
    return self._ids[line]


_ORACLES = {}


def memo_oracle(vocab_file, do_lower_case, strip_accents):
  key = (vocab_file, do_lower_case, strip_accents)
  if key not in _ORACLES:
    _ORACLES[key] = MemoTokenizer(make_oracle(vocab_file, do_lower_case, strip_accents))
  return _ORACLES[key]


def reference_input_names(paths):
  """Each path relative to the deepest folder holding all of them, with '/'."""
  top = os.path.commonpath([os.path.dirname(os.path.abspath(p)) for p in paths])
  return {p: os.path.relpath(os.path.abspath(p), top).replace(os.sep, "/") for p in paths}


def reference_build(files, vocab_file, out_dir, max_length=128, num_jobs=1, num_shards=10,
                    blanks_separate_docs=True, do_lower_case=True, strip_accents=True, seed=0,
                    archives=False, draws="per-document"):
  """The official driver + ExampleWriter (one job after the other), drawing as `draws` says."""
  assert draws in ("per-document", "official")
  os.makedirs(out_dir, exist_ok=True)
  input_names = reference_input_names(files)
  saved = random.getstate()
  try:
    for job in range(num_jobs):
      random.seed(seed + job)
      order = random if draws == "official" else random.Random(seed + job)
      tokenizer = memo_oracle(vocab_file, do_lower_case, strip_accents)
      builder = ReferenceExampleBuilder(tokenizer, max_length, tokenizer.vocab["[CLS]"],
                                        tokenizer.vocab["[SEP]"])
      writers = [tf.io.TFRecordWriter(os.path.join(out_dir, f"pretrain_data.tfrecord-{i}-of-{num_shards}"))
                 for i in range(num_shards) if i % num_jobs == job]
      written = [0]

      def write(features):
        if features:
          writers[written[0] % len(writers)].write(to_tf_example(features).SerializeToString())
          written[0] += 1

      def start_document(input_name, k):
        if draws == "per-document":
          random.seed(f"{seed}\0{input_name}\0{k}")
          # the draw the official builder made after the previous example
          if random.random() < 0.05:
            builder.target_length = random.randint(5, max_length)
          else:
            builder.target_length = max_length

      def write_examples(path, input_name, blanks):
        documents = 0
        in_document = False
        with tf.io.gfile.GFile(path) as f:
          for line in f:
            line = line.strip()
            if line and not in_document:
              start_document(input_name, documents)
              documents += 1
              in_document = True
            elif not line and blanks:
              in_document = False
            if line or blanks:
              write(builder.add_line(line))
        write(builder.add_line(""))

      names = [f for i, f in enumerate(sorted(files)) if i % num_jobs == job]
      order.shuffle(names)
      for name in names:
        if archives:
          import tarfile
          tmp = os.path.join(out_dir, f"tmp_job_{job}")
          with tarfile.open(name) as tar:
            members = sorted(m.name for m in tar.getmembers() if m.isfile())
            tar.extractall(tmp)
          order.shuffle(members)
          for member in members:
            write_examples(os.path.join(tmp, member), f"{input_names[name]}/{member}", False)
        else:
          write_examples(name, input_names[name], blanks_separate_docs)
      for w in writers:
        w.close()
  finally:
    random.setstate(saved)


def read_shards(out_dir):
  """{shard name: [features dict, ...]} of the pretrain_data.tfrecord-* files."""
  out = {}
  for name in sorted(os.listdir(out_dir)):
    if name.startswith("pretrain_data.tfrecord-"):
      examples = []
      for record in tf.compat.v1.io.tf_record_iterator(os.path.join(out_dir, name)):
        ex = tf.train.Example.FromString(record)
        examples.append({k: list(v.int64_list.value) for k, v in ex.features.feature.items()})
      out[name] = examples
  return out


# ---------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------

WORDS = ("the quick brown fox jumps over lazy dog un aff able want ed ing cafe café crème "
         "brûlée straße istanbul İzmir naïve Σ ΟΔΟΣ 中文 日本 hello world , . ! ? ; : ' \" ( ) - "
         "zzyzx qwrtp 1984 3.14 [MASK] e-mail").split()


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
  chars = sorted(set("".join(WORDS).lower()) | set(string.ascii_lowercase + string.digits))
  pieces = ["the", "quick", "brown", "fox", "jump", "##s", "over", "lazy", "dog", "un", "##aff",
            "##able", "want", "##ed", "##ing", "cafe", "hello", "world", "mask", "straße", "οδος"]
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + ["##" + c for c in chars] + pieces
  seen, unique = set(), []
  for t in tokens:
    if t not in seen and t.strip():
      seen.add(t)
      unique.append(t)
  path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
  path.write_text("\n".join(unique) + "\n", encoding="utf-8")
  return str(path)


def random_line(rng, n_words):
  return " ".join(rng.choice(WORDS) for _ in range(n_words))


def write_corpus(directory, seed=0, n_files=5):
  """Files with documents, blank and whitespace-only lines, CRLF, a \\r inside a line,
  long and very short lines, an empty file and one without a final newline."""
  rng = random.Random(seed)
  os.makedirs(directory, exist_ok=True)
  paths = []
  for i in range(n_files):
    lines = []
    for _ in range(rng.randint(1, 6)):
      for _ in range(rng.randint(1, 12)):
        lines.append(random_line(rng, rng.choice([1, 2, 5, 10, 30, 80, 200])))
      lines.append(rng.choice(["", "", "   ", "\t"]))
    text = "\n".join(lines)
    if i == 1:
      text = text.replace("\n", "\r\n")
    if i == 2:
      text = text.replace(" fox ", " fox\rjumps ") + "\n"
    path = os.path.join(directory, f"doc{i}.txt")
    with open(path, "w", encoding="utf-8", newline="") as f:
      f.write(text)
    paths.append(path)
  open(os.path.join(directory, "empty.txt"), "w").close()
  with open(os.path.join(directory, "blanks.txt"), "w") as f:
    f.write("\n\n  \n\n")
  paths += [os.path.join(directory, "empty.txt"), os.path.join(directory, "blanks.txt")]
  return sorted(paths)


def build(files, vocab_file, out_dir, **kwargs):
  kwargs.setdefault("num_shards", 10)
  kwargs.setdefault("seed", 0)
  cfg = BuildConfig(inputs=list(files), vocab_file=vocab_file, output_dir=str(out_dir),
                    progress=False, **kwargs)
  return build_pretraining_data(cfg, log=lambda s: None, warn=WARNINGS.append)


WARNINGS = []


# ---------------------------------------------------------------------------
# Equality with the reference
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("max_length,blanks,seed,lower,strip", [
    (128, True, 0, True, True),
    (16, True, 1, True, True),
    (7, False, 2, True, True),
    (64, True, 3, False, True),
    (40, True, 4, True, False),
])
def test_examples_equal_the_reference(tmp_path, vocab_file, max_length, blanks, seed, lower, strip):
  files = write_corpus(tmp_path / "corpus", seed=seed)
  build(files, vocab_file, tmp_path / "ours", max_seq_length=max_length, blanks_separate_docs=blanks,
        seed=seed, do_lower_case=lower, strip_accents=strip)
  reference_build(files, vocab_file, str(tmp_path / "ref"), max_length=max_length,
                  blanks_separate_docs=blanks, seed=seed, do_lower_case=lower, strip_accents=strip)
  ours, ref = read_shards(tmp_path / "ours"), read_shards(tmp_path / "ref")
  assert sorted(ours) == sorted(ref)
  assert sum(map(len, ref.values())) > 5
  for name in ref:
    assert ours[name] == ref[name], name


def test_examples_equal_the_reference_with_several_jobs(tmp_path, vocab_file):
  """Job j: inputs i % 3 == j, shards i % 3 == j, random.Random(seed + j).

  A small corpus runs its jobs one after the other in this process (the spawned
  workers run the same code; see the command-line test).
  """
  files = write_corpus(tmp_path / "corpus", seed=7, n_files=8)
  summary = build(files, vocab_file, tmp_path / "ours", num_processes=3, num_shards=7, seed=5,
                  max_seq_length=24)
  assert summary.workers == 1 and "3 jobs in this process" in "\n".join(summary.lines())
  reference_build(files, vocab_file, str(tmp_path / "ref"), max_length=24, num_jobs=3,
                  num_shards=7, seed=5)
  assert read_shards(tmp_path / "ours") == read_shards(tmp_path / "ref")


def test_examples_equal_the_reference_on_the_shared_corpus(tmp_path):
  vocab = shared_data_path("vocab", "vocab.txt")
  corpus = shared_data_path("corpus")
  files = sorted(os.path.join(corpus, n) for n in ("bert_sample_text.txt", "gutenberg/pg11.txt",
                                                    "wikitext-2-raw/wiki.valid.raw"))
  build(files, vocab, tmp_path / "ours", num_shards=5, seed=11)
  reference_build(files, vocab, str(tmp_path / "ref"), num_shards=5, seed=11)
  ours, ref = read_shards(tmp_path / "ours"), read_shards(tmp_path / "ref")
  assert sum(map(len, ref.values())) > 2000
  assert ours == ref


def read_records(out_dir):
  """The serialized examples of every shard in out_dir, sorted (the multiset)."""
  return sorted(record for name in os.listdir(out_dir) if name.startswith("pretrain_data.tfrecord-")
                for record in tf.compat.v1.io.tf_record_iterator(os.path.join(out_dir, name)))


def test_examples_do_not_depend_on_how_the_work_is_split(tmp_path, vocab_file):
  """Per-document draws: jobs and shards change where an example goes, never the example."""
  files = write_corpus(tmp_path / "corpus", seed=12, n_files=9)
  splits = [(1, 1), (3, 7), (4, 4), (2, 5)]
  got = []
  for jobs, shards in splits:
    out = tmp_path / f"out-{jobs}-{shards}"
    build(files, vocab_file, out, num_processes=jobs, num_shards=shards, seed=4, max_seq_length=20)
    got.append(read_records(out))
  assert len(got[0]) > 20 and all(g == got[0] for g in got[1:])
  # The seed does change them.
  build(files, vocab_file, tmp_path / "other-seed", num_shards=1, seed=5, max_seq_length=20)
  assert read_records(tmp_path / "other-seed") != got[0]


def example_stats(out_dir, max_length, final_marker=None):
  """Held-out statistics of the examples in out_dir and its subfolders (see the test below)."""
  shares = {"examples": 0, "single": 0, "short": 0, "tokens": 0, "non_final": 0}
  ids_seen = set()
  shards = [read_shards(d) for d, _, names in os.walk(out_dir)
            if any(n.startswith("pretrain_data.tfrecord-") for n in names)]
  for shard in (examples for by_name in shards for examples in by_name.values()):
    for ex in shard:
      n = sum(ex["input_mask"])
      ids = ex["input_ids"][:n]
      shares["examples"] += 1
      shares["tokens"] += n - ids.count(ids[0]) - ids.count(ids[n - 1])  # less [CLS], [SEP]s
      ids_seen.update(ids)
      if final_marker is not None and final_marker in ids:
        continue  # a document's last example: cut short by the document's end
      shares["non_final"] += 1
      shares["single"] += 1 not in ex["segment_ids"]
      shares["short"] += n < max_length
  total = shares["non_final"]
  return {"examples": shares["examples"], "tokens": shares["tokens"], "ids": len(ids_seen),
          "single": shares["single"] / total, "short": shares["short"] / total}


def test_held_out_statistics_match_the_official_builder(tmp_path, vocab_file):
  """Per-document draws keep the official statistics (the oracle: the reference drawing
  everything from one generator per job, as the official script does).

  Corpus: one single-token word per line, documents of 300-1500 lines, each ending
  with a marker word. Every example that is not a document's last (no marker) then
  has exactly its target length in tokens, so
  - it has one segment only when the 10% single-segment draw said so;
  - it is shorter than max_length (16) exactly when the 5% draw gave a random target
    t in [5, 16] that leaves room for the specials: t <= 12 (t <= 13 single-segment),
    a share of 0.9 * 8/12 + 0.1 * 9/12 = 0.675 of the random targets.
  About 20,000 examples: the shares' standard deviations are ~0.2 points; the
  tolerances are 1 point (5 deviations); example and token counts within 1%.
  """
  oracle = make_oracle(vocab_file)
  words = ["the", "quick", "brown", "fox", "over", "lazy", "dog", "cafe", "hello", "want"]
  marker = "world"
  word_ids = [oracle.convert_tokens_to_ids(oracle.tokenize(w)) for w in words + [marker]]
  assert all(len(ids) == 1 for ids in word_ids)
  rng = random.Random(31)
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  for f in range(8):
    docs = []
    for _ in range(40):
      docs.append("\n".join([rng.choice(words) for _ in range(rng.randint(300, 1500))] + [marker]))
    (corpus / f"part-{f}.txt").write_text("\n\n".join(docs) + "\n", encoding="utf-8")
  files = sorted(str(p) for p in corpus.iterdir())
  max_length = 16
  build(files, vocab_file, tmp_path / "ours", max_seq_length=max_length, num_shards=4, seed=3)
  reference_build(files, vocab_file, str(tmp_path / "official"), max_length=max_length,
                  num_shards=4, seed=3, draws="official")
  ours = example_stats(tmp_path / "ours", max_length, word_ids[-1][0])
  official = example_stats(tmp_path / "official", max_length, word_ids[-1][0])
  assert official["examples"] > 18000
  for stats in (ours, official):
    assert abs(stats["single"] - 0.10) < 0.01, stats
    assert abs(stats["short"] / 0.675 - 0.05) < 0.01, stats
  assert abs(ours["single"] - official["single"]) < 0.01
  assert abs(ours["short"] - official["short"]) < 0.01
  assert abs(ours["examples"] / official["examples"] - 1) < 0.01
  assert abs(ours["tokens"] / official["tokens"] - 1) < 0.01
  assert ours["ids"] == official["ids"] == len(word_ids) + 2


def test_held_out_statistics_match_the_official_builder_on_the_shared_corpus(tmp_path):
  """The same comparison on real text (no marker: documents end anywhere), over four
  seeds (~11,000 examples each way): example and token counts within 1%, the ids
  in use (coverage of the vocab) within 1%, the single-segment and short-example
  shares within 1.5 points (their standard deviations are ~0.3 points)."""
  vocab = shared_data_path("vocab", "vocab.txt")
  corpus = shared_data_path("corpus")
  files = sorted(os.path.join(corpus, n) for n in ("bert_sample_text.txt", "gutenberg/pg11.txt",
                                                    "wikitext-2-raw/wiki.valid.raw"))
  for seed in (11, 12, 13, 14):
    build(files, vocab, tmp_path / "ours" / str(seed), num_shards=1, seed=seed)
    reference_build(files, vocab, str(tmp_path / "official" / str(seed)), num_shards=1,
                    seed=seed, draws="official")
  assert read_records(tmp_path / "ours" / "11") != read_records(tmp_path / "official" / "11")
  ours = example_stats(tmp_path / "ours", 128)
  official = example_stats(tmp_path / "official", 128)
  assert official["examples"] > 10000
  for key in ("examples", "tokens", "ids"):
    assert abs(ours[key] / official[key] - 1) < 0.01, (key, ours, official)
  for key in ("single", "short"):
    assert abs(ours[key] - official[key]) < 0.015, (key, ours, official)


@pytest.mark.slow
def test_multiprocess_command_line_equals_the_reference(tmp_path, vocab_file):
  files = write_corpus(tmp_path / "corpus", seed=3, n_files=4)
  out = tmp_path / "out"
  (out).mkdir()
  (out / "notes.txt").write_text("mine")
  result = subprocess.run(
      [sys.executable, SCRIPT, "--corpus-dir", str(tmp_path / "corpus"), "--vocab-file", vocab_file,
       "--output-dir", str(out), "--num-processes", "2", "--num-shards", "4", "--seed", "9",
       "--max-seq-length", "32", "--no-progress", "--max-workers", "2"],
      capture_output=True, text=True, timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert result.returncode == 0, result.stderr
  assert "seed      9" in result.stdout and "2 jobs in 2 worker processes" in result.stdout
  reference_build(files, vocab_file, str(tmp_path / "ref"), max_length=32, num_jobs=2,
                  num_shards=4, seed=9)
  assert read_shards(out) == read_shards(tmp_path / "ref")
  assert (out / "notes.txt").read_text() == "mine"
  assert read_info(str(out))["settings"]["num_processes"] == 2


def test_openwebtext_archives_equal_the_reference(tmp_path, vocab_file):
  import tarfile
  rng = random.Random(3)
  data = tmp_path / "data"
  (data / "openwebtext").mkdir(parents=True)
  for a in range(3):
    docs = tmp_path / f"docs{a}"
    docs.mkdir()
    with tarfile.open(data / "openwebtext" / f"urlsf_subset0{a}-{a}_data.xz", "w:xz") as tar:
      for d in range(rng.randint(2, 6)):
        path = docs / f"{a:02d}{d:03d}-{rng.randrange(10**6):x}.txt"
        path.write_text("\n\n".join(random_line(rng, rng.randint(1, 60)) for _ in range(rng.randint(1, 8))))
        tar.add(path, arcname=path.name)
  (data / "vocab.txt").write_text(open(vocab_file, encoding="utf-8").read(), encoding="utf-8")
  from electra_tf2.data_prep import build_openwebtext_pretraining_dataset as owt
  assert owt.main(["--data-dir", str(data), "--num-shards", "6", "--seed", "2",
                   "--max-seq-length", "20", "--no-progress"]) == 0
  archives = sorted(str(p) for p in (data / "openwebtext").iterdir())
  reference_build(archives, vocab_file, str(tmp_path / "ref"), max_length=20, num_shards=6, seed=2,
                  archives=True)
  ours = read_shards(data / "pretrain_tfrecords")
  assert ours == read_shards(tmp_path / "ref") and sum(map(len, ours.values())) > 5


# ---------------------------------------------------------------------------
# Packing: properties on random documents
# ---------------------------------------------------------------------------

class IdsTokenizer:
  """A 'tokenizer' for the reference: a line is "ids" and its ids, space separated."""
  vocab = {"[CLS]": 2, "[SEP]": 3}

  def tokenize(self, line):
    return line.split()[1:]

  def convert_tokens_to_ids(self, tokens):
    return [int(t) for t in tokens]


lines_strategy = st.lists(
    st.one_of(st.none(), st.lists(st.integers(5, 999), min_size=0, max_size=90)),
    min_size=0, max_size=60)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=lines_strategy, max_length=st.integers(5, 80), seed=st.integers(0, 2**32 - 1))
def test_packing_equals_the_reference_and_keeps_the_invariants(lines, max_length, seed):
  """None is a blank line; a list is a line's token ids (maybe none: a line of control chars)."""
  ours = ExampleBuilder(max_length, random.Random(seed))
  encoder = ExampleEncoder(1000, max_length, 2, 3)
  got = []
  for line in lines + [None]:
    example = ours.add_blank() if line is None else ours.add_line(list(line))
    if example:
      got.append(encoder.features(*example))

  saved = random.getstate()
  random.seed(seed)
  try:
    ref = ReferenceExampleBuilder(IdsTokenizer(), max_length, 2, 3)
    want = [f for f in (ref.add_line("" if line is None else " ".join(["ids", *map(str, line)]))
                        for line in lines + [None]) if f]
  finally:
    random.setstate(saved)
  assert got == want

  for f in got:
    ids, mask, seg = f["input_ids"], f["input_mask"], f["segment_ids"]
    assert len(ids) == len(mask) == len(seg) == max_length
    n = sum(mask)
    assert mask == [1] * n + [0] * (max_length - n)            # ones then zeros
    assert ids[0] == 2 and ids.count(2) == 1                     # exactly one [CLS], first
    assert ids.count(3) in (1, 2) and ids[n - 1] == 3           # one or two [SEP], last real
    assert all(i == 0 for i in ids[n:])                          # zero padding
    n_a = ids.index(3) + 1
    assert seg == [0] * n_a + [1] * (n - n_a) + [0] * (max_length - n)  # 0s, then 1s
    assert (n - n_a > 0) == (ids.count(3) == 2)                  # segment B ends with [SEP]


ENCODER_VOCAB = 20000  # ids of one, two and three varint bytes


@settings(max_examples=200, deadline=None)
@given(first=st.lists(st.integers(0, ENCODER_VOCAB - 1), max_size=40),
       second=st.lists(st.integers(0, ENCODER_VOCAB - 1), max_size=40), extra=st.integers(0, 20))
def test_serialized_bytes_equal_deterministic_protobuf(first, second, extra):
  max_length = len(first) + len(second) + 3 + extra
  encoder = ExampleEncoder(ENCODER_VOCAB, max_length, 101, 102)
  features = encoder.features(first, second)
  assert encoder.encode(first, second) == to_tf_example(features).SerializeToString(deterministic=True)


# ---------------------------------------------------------------------------
# Bad input, interruptions, the output directory
# ---------------------------------------------------------------------------

def write_bad_files(corpus):
  """A binary file, a UTF-16 one and a file with one line that is not UTF-8 (line 2)."""
  (corpus / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
  (corpus / "utf16.txt").write_bytes("hello world\n".encode("utf-16"))
  (corpus / "latin1.txt").write_bytes("the fox\ncaf\xe9 au lait\nthe dog\n".encode("latin-1"))


def test_bad_files_are_skipped_and_counted(tmp_path, vocab_file):
  corpus = tmp_path / "corpus"
  write_corpus(corpus, seed=1, n_files=2)
  write_bad_files(corpus)
  with gzip.open(corpus / "zipped.txt.gz", "wt", encoding="utf-8") as f:
    f.write("the quick brown fox\n\nhello world\n")
  all_files = sorted(str(p) for p in corpus.iterdir())
  WARNINGS.clear()
  summary = build(all_files, vocab_file, tmp_path / "out", max_seq_length=16)
  s = summary.stats
  assert s.skipped == {"binary": [str(corpus / "image.png")], "UTF-16": [str(corpus / "utf16.txt")]}
  assert s.invalid_lines == 1 and s.files_read == len(all_files) - 2
  assert any("latin1.txt: 1 line(s) are not valid UTF-8 (first: line 2)" in w for w in WARNINGS)
  assert any("image.png" in w and "binary" in w for w in WARNINGS)
  text = "\n".join(summary.lines())
  assert "skipped 2" in text and "1 not UTF-8" in text
  # The readable lines of latin1.txt and the gzipped file were used.
  tokens = [t for shard in read_shards(tmp_path / "out").values() for ex in shard
            for t in ex["input_ids"]]
  vocab = dict((t, i) for i, t in enumerate(open(vocab_file, encoding="utf-8").read().split("\n")))
  assert vocab["dog"] in tokens and vocab["hello"] in tokens


def test_summary_warns_when_the_vocab_does_not_fit_the_text(tmp_path, vocab_file):
  corpus = tmp_path / "corpus"
  normal = build(write_corpus(corpus, seed=2, n_files=2), vocab_file, tmp_path / "a",
                 max_seq_length=16)
  assert normal.stats.unk_tokens == 0 and "[UNK]" in "\n".join(normal.lines())
  assert not any("warning" in line for line in normal.lines())
  # CJK characters are split one by one and none is in the vocab: 3 of 6 tokens.
  (corpus / "cjk.txt").write_text("the \u6f22 fox \u5b57 dog \u8a9e\n" * 20, encoding="utf-8")
  summary = build([str(corpus / "cjk.txt")], vocab_file, tmp_path / "b", max_seq_length=16)
  assert summary.stats.unk_tokens == summary.stats.tokens // 2
  warning, = [line for line in summary.lines() if "warning" in line]
  assert f"50.0% of the tokens are [UNK]: the vocab {vocab_file} does not fit" in warning


def test_unreadable_file_is_skipped(tmp_path, vocab_file, monkeypatch):
  files = write_corpus(tmp_path / "corpus", seed=2, n_files=2)
  real_open = common.open_input

  def flaky_open(path, *args):
    if path.endswith("doc0.txt"):
      raise common.SkipFile("unreadable", "permission denied")
    return real_open(path, *args)

  monkeypatch.setattr("electra_tf2.data_prep.input_examples.open_input", flaky_open)
  summary = build(files, vocab_file, tmp_path / "out")
  assert summary.stats.skipped == {"unreadable": [str(tmp_path / "corpus" / "doc0.txt")]}
  assert summary.stats.files_read == len(files) - 1 and summary.stats.examples > 0


def test_empty_inputs_give_one_clear_error_and_change_nothing(tmp_path, vocab_file):
  out = tmp_path / "out"
  out.mkdir()
  (out / "pretrain_data.tfrecord-0-of-1").write_bytes(b"old")
  (tmp_path / "bin").mkdir()
  (tmp_path / "bin" / "a.bin").write_bytes(b"\x00\x01\x02")
  (tmp_path / "blank.txt").write_text("\n\n   \n")
  with pytest.raises(DataPrepError, match=r"no examples were produced: 1 of 1 inputs were skipped \(binary\)"):
    build([str(tmp_path / "bin" / "a.bin")], vocab_file, out, num_shards=1)
  with pytest.raises(DataPrepError, match="no examples were produced"):
    build([str(tmp_path / "blank.txt")], vocab_file, out, num_shards=1)
  with pytest.raises(DataPrepError, match="no input files"):
    build([], vocab_file, out, num_shards=1)
  assert sorted(os.listdir(out)) == ["pretrain_data.tfrecord-0-of-1"]
  assert (out / "pretrain_data.tfrecord-0-of-1").read_bytes() == b"old"


@pytest.mark.slow
def test_command_line_errors_are_one_line(tmp_path, vocab_file):
  bad_vocab = tmp_path / "bad_vocab.txt"
  bad_vocab.write_text("[PAD]\n[CLS]\n[SEP]\n[MASK]\nthe\nthe\n")
  (tmp_path / "corpus").mkdir()
  (tmp_path / "corpus" / "a.txt").write_text("the fox\n")
  (tmp_path / "empty").mkdir()
  cases = [
      (["--corpus-dir", str(tmp_path / "corpus"), "--vocab-file", str(bad_vocab)], "duplicate"),
      (["--corpus-dir", str(tmp_path / "corpus"), "--vocab-file", str(tmp_path / "nope.txt")],
       "does not exist"),
      (["--corpus-dir", str(tmp_path / "missing"), "--vocab-file", vocab_file], "no such directory"),
      (["--corpus-dir", str(tmp_path / "empty"), "--vocab-file", vocab_file], "no input files"),
      (["--corpus-dir", str(tmp_path / "corpus"), "--vocab-file", vocab_file, "--vocab-size", "7"],
       "vocab_size=7"),
      (["--corpus-dir", str(tmp_path / "corpus"), "--vocab-file", vocab_file, "--num-shards", "1",
        "--num-processes", "2"], "--num-shards 1 is smaller than --num-processes 2"),
      (["--corpus-dir", str(tmp_path / "corpus"), "--vocab-file", vocab_file,
        "--max-seq-length", "3"], "--max-seq-length 3"),
  ]
  for args, message in cases:
    result = subprocess.run([sys.executable, SCRIPT, *args, "--output-dir", str(tmp_path / "out")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, (args, result.stderr)
    lines = [l for l in result.stderr.strip().splitlines() if not l.startswith("note:")]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_blanks_separate_docs_is_a_real_boolean():
  from electra_tf2.data_prep.build_pretraining_dataset import build_parser
  parse = lambda *a: build_parser().parse_args(["--vocab-file", "v", "--output-dir", "o", *a])
  assert parse().blanks_separate_docs is True
  assert parse("--blanks-separate-docs").blanks_separate_docs is True
  assert parse("--blanks-separate-docs", "False").blanks_separate_docs is False
  assert parse("--blanks-separate-docs=false").blanks_separate_docs is False
  assert parse("--no-blanks-separate-docs").blanks_separate_docs is False
  assert parse("--no-lower-case", "--no-strip-accents").do_lower_case is False
  assert parse("--strip-accents").strip_accents is True and parse("--do-strip-accents").strip_accents


def test_interrupted_run_keeps_the_old_shards_and_leaves_no_temp_files(tmp_path, vocab_file, monkeypatch):
  files = write_corpus(tmp_path / "corpus", seed=4)
  out = tmp_path / "out"
  build(files, vocab_file, out, num_shards=3)
  before = {n: (out / n).read_bytes() for n in os.listdir(out)}
  calls = [0]
  real = ExampleEncoder.encode

  def failing_encode(self, a, b):
    calls[0] += 1
    if calls[0] > 3:
      raise KeyboardInterrupt
    return real(self, a, b)

  monkeypatch.setattr(ExampleEncoder, "encode", failing_encode)
  with pytest.raises(KeyboardInterrupt):
    build(files, vocab_file, out, num_shards=3, seed=99)
  assert {n: (out / n).read_bytes() for n in os.listdir(out)} == before


def test_only_shards_are_replaced_in_the_output_dir(tmp_path, vocab_file):
  files = write_corpus(tmp_path / "corpus", seed=5)
  out = tmp_path / "out"
  out.mkdir()
  (out / "README.md").write_text("keep me")
  (out / "pretrain_data.tfrecord-0-of-5").write_bytes(b"stale")
  (out / ".pretrain_data.tfrecord-1-of-3.tmp-123-456").write_bytes(b"left over")
  summary = build(files, vocab_file, out, num_shards=3)
  names = sorted(os.listdir(out))
  assert names == ["README.md", "pretrain_data.info.json"] + [
      f"pretrain_data.tfrecord-{i}-of-3" for i in range(3)] + ["tokenizer_description.json"]
  assert (out / "README.md").read_text() == "keep me"
  assert any("another --num-shards" in n for n in summary.notes)
  info = read_info(str(out))
  assert info["stats"]["examples"] == summary.stats.examples > 0
  assert info["settings"]["seed"] == 0 and info["settings"]["vocab_size"] > 5


def test_lines_over_the_long_line_limit_are_streamed_with_the_same_examples(tmp_path, vocab_file,
                                                                            monkeypatch):
  monkeypatch.setattr(common, "LONG_LINE_BYTES", 3000)
  monkeypatch.setattr(common, "LONG_LINE_PIECE_BYTES", 1000)
  monkeypatch.setattr(common, "READ_BLOCK_BYTES", 2000)
  rng = random.Random(8)
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  with open(corpus / "long.txt", "w", encoding="utf-8") as f:
    f.write(random_line(rng, 30) + "\n" + random_line(rng, 2500) + "\n\n" + " ".join(["a"] * 101_000)
            + "\n" + random_line(rng, 40) + "\n" + "\u3000" * 5000 + "\n" + random_line(rng, 5) + "\n")
  files = [str(corpus / "long.txt")]
  WARNINGS.clear()
  summary = build(files, vocab_file, tmp_path / "ours", max_seq_length=32, num_shards=2)
  assert summary.stats.long_lines == 3
  assert any("line 2 is" in w and "read in pieces" in w for w in WARNINGS)
  reference_build(files, vocab_file, str(tmp_path / "ref"), max_length=32, num_shards=2)
  assert read_shards(tmp_path / "ours") == read_shards(tmp_path / "ref")


def test_a_long_line_that_is_not_utf8_is_skipped_like_a_short_one(tmp_path, vocab_file, monkeypatch):
  monkeypatch.setattr(common, "LONG_LINE_BYTES", 3000)
  monkeypatch.setattr(common, "LONG_LINE_PIECE_BYTES", 1000)
  monkeypatch.setattr(common, "READ_BLOCK_BYTES", 2000)
  rng = random.Random(9)
  head, tail = random_line(rng, 30) + "\n", random_line(rng, 40) + "\n\n" + random_line(rng, 20) + "\n"
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  (corpus / "bad.txt").write_bytes(head.encode() + b"caf\xe9 " * 1000 + b"\n" + tail.encode())
  clean = tmp_path / "clean"  # the same file name (it keys the documents' draws), the line left out
  clean.mkdir()
  (clean / "bad.txt").write_text(head + tail, encoding="utf-8")
  WARNINGS.clear()
  summary = build([str(corpus / "bad.txt")], vocab_file, tmp_path / "ours", max_seq_length=32,
                  num_shards=1)
  assert summary.stats.long_lines == 1 and summary.stats.invalid_lines == 1
  assert any("bad.txt line 2: a 5.0 KB line that is not valid UTF-8; skipped" in w for w in WARNINGS)
  reference_build([str(clean / "bad.txt")], vocab_file, str(tmp_path / "ref"), max_length=32,
                  num_shards=1)
  assert read_shards(tmp_path / "ours") == read_shards(tmp_path / "ref")


def test_a_line_of_tens_of_megabytes(tmp_path, vocab_file):
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  with open(corpus / "huge.txt", "w", encoding="utf-8") as f:
    f.write("the fox jumps.\n")
    chunk = "the quick brown fox jumps over the lazy dog " * 1000
    for _ in range(30_000_000 // len(chunk)):
      f.write(chunk)
    f.write("\nhello world\n")
  WARNINGS.clear()
  summary = build([str(corpus / "huge.txt")], vocab_file, tmp_path / "out", num_shards=1)
  assert summary.stats.long_lines == 1 and summary.stats.examples >= 1
  assert any("huge.txt line 2 is 30.0 MB long" in w for w in WARNINGS)
  oracle = make_oracle(vocab_file)
  first = read_shards(tmp_path / "out")["pretrain_data.tfrecord-0-of-1"][0]["input_ids"]
  head = oracle.convert_tokens_to_ids(oracle.tokenize("the fox jumps."))
  assert first[1:1 + len(head)] == head
  words = set(oracle.convert_tokens_to_ids(oracle.tokenize(chunk[:200]))) | {0, 2, 3}
  assert set(first[1 + len(head):]) <= words and len(first) == 128


def test_vocab_problems_are_vocab_errors(tmp_path):
  (tmp_path / "a.txt").write_text("x\n")
  vocab = tmp_path / "v.txt"
  vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nx\n")
  with pytest.raises(VocabError, match=r"no MASK-like token"):
    build([str(tmp_path / "a.txt")], str(vocab), tmp_path / "out")


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(st.sampled_from(["", "a", "ab cd", "x" * 150, "w " * 40, "é ü\r x", "\t\ty",
                                       "\r", "  lead", "trail  ", "\u2028", "z" * 7]), max_size=14),
       ending=st.sampled_from([b"", b"\n", b"\r\n", b"\r"]), block=st.sampled_from([1, 3, 7, 64, 4096]),
       long_limit=st.sampled_from([5, 20, 100, 10**6]), piece=st.sampled_from([1, 4, 30]))
def test_line_reader_splits_exactly_like_gfile(tmp_path_factory, parts, ending, block, long_limit,
                                               piece):
  """GFile splits on \\n only, drops every \\r, and stops at a last line that is then empty."""
  import io
  data = "\n".join(parts).encode("utf-8") + ending
  path = tmp_path_factory.mktemp("gf") / "f.txt"
  path.write_bytes(data)
  with tf.io.gfile.GFile(str(path)) as f:
    want = [line[:-1] if line.endswith("\n") else line for line in f]
  old = common.READ_BLOCK_BYTES, common.LONG_LINE_BYTES, common.LONG_LINE_PIECE_BYTES
  common.READ_BLOCK_BYTES, common.LONG_LINE_BYTES, common.LONG_LINE_PIECE_BYTES = block, long_limit, piece
  try:
    reader = common.LineReader(io.BytesIO(data), "f")
    reader.sniff()
    got = []
    for kind, line_no, payload in reader:
      assert line_no == len(got) + 1
      if kind == "lines":
        got += payload
      else:
        got.append(b"".join(payload.pieces()).decode("utf-8"))
  finally:
    common.READ_BLOCK_BYTES, common.LONG_LINE_BYTES, common.LONG_LINE_PIECE_BYTES = old
  assert got == want


def test_input_listing(tmp_path):
  d = tmp_path / "c"
  (d / "sub").mkdir(parents=True)
  for name in ("b.txt", "a.txt", "sub/x.txt", "pretrain_data.tfrecord-0-of-1", "pretrain_data.info.json"):
    (d / name).write_text("t")
  files, notes = common.list_input_files(corpus_dirs=[str(d)])
  assert files == [str(d / "a.txt"), str(d / "b.txt")]
  assert any("left out 1 subdirectory (sub)" in n and "--corpus-glob" in n for n in notes)
  assert any("written by this builder" in n for n in notes)
  files, _ = common.list_input_files(globs=[str(d / "**" / "*.txt")], corpus_dirs=[str(d)])
  assert files == [str(d / "a.txt"), str(d / "b.txt"), str(d / "sub" / "x.txt")]  # no duplicates
  listing = tmp_path / "list.txt"
  listing.write_text("# inputs\nc/sub/x.txt\n\n" + str(d / "a.txt") + "\n")
  assert common.list_input_files(file_lists=[str(listing)])[0] == [str(d / "a.txt"),
                                                                    str(d / "sub" / "x.txt")]
  listing.write_text("c/missing.txt\n")
  with pytest.raises(DataPrepError, match="line 1: c/missing.txt does not exist"):
    common.list_input_files(file_lists=[str(listing)])
  with pytest.raises(DataPrepError, match="no such directory"):
    common.list_input_files(corpus_dirs=[str(tmp_path / "nope")])
