"""The embedded default corpus, and the whole default data preparation in one call.

Every install of this project has English text without downloading anything:
the docstrings of the Python standard library and of the packages in
run-time dependencies (numpy, absl, keras, tensorflow, tensorflow_text, tf_keras,
tf-models-official). `write_default_corpus` extracts them (with `ast`, nothing
is imported), one paragraph per line with a blank line between documents (one
document per module), into a few text files. The output depends only on the
installed files: the same Python and installed packages give the same corpus.

`prepare_default_data_dir(data_dir)` then builds, skipping what is complete:

  <data_dir>/corpus/                         the text (or your own .txt files)
  <data_dir>/vocab.txt                       a WordPiece vocab learned from it
  <data_dir>/pretrain_tfrecords/pretrain_data.tfrecord-*-of-N

so that pre-training can start right away:

  electra default-data --data-dir DATA
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import re
import shutil
import sysconfig
import time
import warnings
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple


from electra_tf2.data_prep.common import DataPrepError

# Where the text comes from, in this order; a package that is not installed is skipped.
DEFAULT_PACKAGES = ("numpy", "absl", "keras", "tensorflow", "tensorflow_text", "tf_keras",
                    "official")
DEFAULT_MAX_BYTES = 4_000_000      # total corpus size
STDLIB_SHARE = 0.5                 # at most this share from the standard library
DEFAULT_NUM_FILES = 8
DEFAULT_VOCAB_SIZE = 8000
DEFAULT_NUM_SHARDS = 256  # enough for the pipeline to mix its ~8k examples (docs/data_prep.md)
DEFAULT_SEED = 12345

_SKIP_DIRS = {"site-packages", "dist-packages", "test", "tests", "testing", "idlelib",
              "__pycache__", "_vendor", "vendored", "third_party", "lib2to3", "turtledemo",
              "ensurepip", "pydoc_data", "benchmarks", "tools"}
_WORD_RE = re.compile(r"[A-Za-z]{2,}")
_RULE_RE = re.compile(r"(?:^|\s)[-=~^*]{3,}(?=\s|$)")


def _python_files(root: str) -> Iterator[str]:
  """The .py files under root, sorted, without tests and vendored code."""
  for dirpath, dirnames, filenames in os.walk(root):
    dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
    for name in sorted(filenames):
      if (name.endswith(".py") and not name.startswith("test_") and not name.endswith("_test.py")
          and name != "conftest.py"):
        yield os.path.join(dirpath, name)


def _paragraphs(docstring: str) -> Iterator[str]:
  """Prose paragraphs of a cleaned docstring, each on one line; code and tables left out."""
  for block in re.split(r"\n[ \t]*\n", docstring):
    lines = block.split("\n")
    first = lines[0]
    if not first.strip() or first[:1] in (" ", "\t"):
      continue  # indented: code, literal blocks, argument tables
    stripped = first.lstrip()
    if stripped.startswith((">>>", "...", "..", "::", "$ ", "+--", "===", "---", "|", "```")):
      continue
    text = " ".join(" ".join(lines).split())
    text = _RULE_RE.sub(" ", text).strip()  # numpydoc section underlines
    if len(_WORD_RE.findall(text)) < 4:
      continue
    letters = sum(c.isalpha() or c == " " for c in text)
    if letters < 0.75 * len(text):
      continue
    yield text


def _module_document(path: str) -> List[str]:
  """The docstring paragraphs of one module (module, classes, functions), in source order."""
  try:
    with open(path, "rb") as f:
      source = f.read()
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      tree = ast.parse(source, filename=path)
  except (SyntaxError, ValueError, OSError, RecursionError):
    return []
  nodes = [tree] + [n for n in ast.walk(tree)
                    if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
  nodes.sort(key=lambda n: getattr(n, "lineno", 0))
  out: List[str] = []
  for node in nodes:
    doc = ast.get_docstring(node, clean=True)
    if doc:
      out.extend(_paragraphs(doc))
  return out


def _sources() -> List[Tuple[str, str]]:
  """(name, root directory) of the standard library and of each installed default package."""
  out = [("python-stdlib", sysconfig.get_paths()["stdlib"])]
  for package in DEFAULT_PACKAGES:
    try:
      spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
      spec = None
    if spec is None or not spec.submodule_search_locations:
      continue
    out.append((package, sorted(spec.submodule_search_locations)[0]))
  return out


def default_corpus_documents(max_bytes: int = DEFAULT_MAX_BYTES) -> List[Tuple[str, List[str]]]:
  """The corpus as (source, paragraphs) documents: deterministic for the installed files.

  The standard library gives at most STDLIB_SHARE of max_bytes, then each
  package an equal share of the rest; a paragraph already seen is left out.
  """
  sources = _sources()
  seen = set()
  documents: List[Tuple[str, List[str]]] = []
  total = 0
  n_packages = max(1, len(sources) - 1)
  budgets = [int(max_bytes * STDLIB_SHARE)] + [0] * n_packages
  for index, (name, root) in enumerate(sources):
    if index > 0:
      budgets[index] = (max_bytes - total) // (len(sources) - index)
    used = 0
    for path in _python_files(root):
      if used >= budgets[index] or total >= max_bytes:
        break
      paragraphs = []
      for p in _module_document(path):
        key = hashlib.sha1(p.encode("utf-8", "surrogatepass")).digest()
        if key in seen:
          continue
        seen.add(key)
        paragraphs.append(p)
      if not paragraphs:
        continue
      size = sum(len(p.encode("utf-8", "surrogatepass")) + 1 for p in paragraphs) + 1
      documents.append((f"{name}:{os.path.relpath(path, root)}", paragraphs))
      used += size
      total += size
  return documents


def write_default_corpus(corpus_dir: str, max_bytes: int = DEFAULT_MAX_BYTES,
                         num_files: int = DEFAULT_NUM_FILES) -> Dict[str, int]:
  """Writes the default corpus into corpus_dir (created; must not exist or be empty).

  The files (docstrings-00.txt ...) are written in a temporary directory that is
  renamed to corpus_dir at the end, so a half-written corpus never appears.
  Returns counts: files, documents, lines, bytes.
  """
  if os.path.isdir(corpus_dir) and os.listdir(corpus_dir):
    raise DataPrepError(f"{corpus_dir} already holds files: pass an empty or new directory")
  documents = default_corpus_documents(max_bytes)
  if not documents:
    raise DataPrepError("found no docstrings in the Python installation to build the default "
                        "corpus from; give a corpus of your own")
  parent = os.path.dirname(os.path.abspath(corpus_dir))
  os.makedirs(parent, exist_ok=True)
  tmp = os.path.join(parent, f".{os.path.basename(corpus_dir)}.tmp-{os.getpid()}")
  shutil.rmtree(tmp, ignore_errors=True)
  os.makedirs(tmp)
  try:
    total = sum(sum(len(p) + 1 for p in paras) + 1 for _, paras in documents)
    per_file = total / num_files
    files: List[List[str]] = [[] for _ in range(num_files)]
    size = 0
    lines = 0
    for _, paragraphs in documents:
      index = min(num_files - 1, int(size / per_file))
      files[index].extend(paragraphs)
      files[index].append("")
      size += sum(len(p) + 1 for p in paragraphs) + 1
      lines += len(paragraphs)
    n_bytes = 0
    for i, file_lines in enumerate(files):
      text = "\n".join(file_lines) + "\n" if file_lines else ""
      data = text.encode("utf-8", "replace")
      n_bytes += len(data)
      with open(os.path.join(tmp, f"docstrings-{i:02d}.txt"), "wb") as f:
        f.write(data)
    if os.path.isdir(corpus_dir):
      os.rmdir(corpus_dir)  # empty (checked above)
    os.replace(tmp, corpus_dir)
  except BaseException:
    shutil.rmtree(tmp, ignore_errors=True)
    raise
  return {"files": num_files, "documents": len(documents), "lines": lines, "bytes": n_bytes}


def prepare_default_data_dir(data_dir: str, vocab_size: int = DEFAULT_VOCAB_SIZE,
                             max_seq_length: int = 128, num_shards: int = DEFAULT_NUM_SHARDS,
                             num_processes: int = 1, seed: int = DEFAULT_SEED,
                             corpus_bytes: int = DEFAULT_MAX_BYTES,
                             log: Optional[Callable[[str], None]] = print) -> Dict[str, object]:
  """Builds <data_dir>/corpus, <data_dir>/vocab.txt and <data_dir>/pretrain_tfrecords.

  Each step is skipped when its output is already complete:
  - corpus/ exists and holds files (yours, or the default corpus written before);
  - vocab.txt exists (validated; it must have vocab_size tokens);
  - pretrain_tfrecords/ holds a finished build (pretrain_data.info.json) made
    from the same vocab, corpus files, max_seq_length, num_shards and seed.

  Args:
    data_dir: the data directory (created if missing).
    vocab_size: tokens in the learned vocab (the model config's vocab_size).
    max_seq_length: example length.
    num_shards: TFRecord shards.
    num_processes: builder jobs (the official --num-processes; the output depends
      on it, so the default is a fixed 1: the same data on every machine).
    seed: seed of the builder's random choices.
    corpus_bytes: size of the default corpus.
    log: where progress lines go (None: silent).

  Returns:
    {"corpus_dir", "vocab_file", "vocab_size", "tfrecords" (glob), "tfrecord_dir",
     "num_examples", "built" (the steps done now)}.
  Raises:
    DataPrepError or electra_tf2.text.vocab.VocabError, with a one-line message.
  """
  say = log or (lambda s: None)
  data_dir = os.path.abspath(data_dir)
  corpus_dir = os.path.join(data_dir, "corpus")
  vocab_file = os.path.join(data_dir, "vocab.txt")
  out_dir = os.path.join(data_dir, "pretrain_tfrecords")
  built: List[str] = []
  os.makedirs(data_dir, exist_ok=True)
  vocab = _existing_vocab(vocab_file, vocab_size)  # first: a mismatch must not cost the corpus step
  inputs = _corpus_step(corpus_dir, corpus_bytes, built, say)
  vocab = _vocab_step(vocab, inputs, vocab_file, vocab_size, built, say)
  settings = {"max_seq_length": max_seq_length, "num_shards": num_shards, "seed": seed,
              "num_processes": num_processes}
  n_examples = _tfrecords_step(inputs, vocab_file, out_dir, settings, built, log)
  return {"corpus_dir": corpus_dir, "vocab_file": vocab_file, "vocab_size": len(vocab),
          "tfrecord_dir": out_dir,
          "tfrecords": os.path.join(out_dir, "pretrain_data.tfrecord*"),
          "num_examples": n_examples, "built": built}


def _existing_vocab(vocab_file: str, vocab_size: int) -> Optional[Dict[str, int]]:
  """The vocab already in the data directory (None if there is none): it must have vocab_size
  tokens."""
  from electra_tf2.text.vocab import load_vocab  # pylint: disable=g-import-not-at-top
  if not os.path.exists(vocab_file):
    return None
  vocab = load_vocab(vocab_file)
  if len(vocab) != vocab_size:
    raise DataPrepError(f"{vocab_file} has {len(vocab)} tokens but --vocab-size is "
                        f"{vocab_size}: pass --vocab-size {len(vocab)} to use it, or delete "
                        "it to learn a new vocab")
  return vocab


def _corpus_step(corpus_dir: str, corpus_bytes: int, built: List[str],
                 say: Callable[[str], None]) -> List[str]:
  """Writes the default corpus unless corpus_dir holds files; the corpus files."""
  from electra_tf2.data_prep.common import list_input_files  # pylint: disable=g-import-not-at-top
  if os.path.isdir(corpus_dir) and os.listdir(corpus_dir):
    say(f"corpus: using the files in {corpus_dir}")
  else:
    t = time.time()
    counts = write_default_corpus(corpus_dir, max_bytes=corpus_bytes)
    built.append("corpus")
    say(f"corpus: wrote {counts['bytes'] / 1e6:.1f} MB of docstrings ({counts['documents']} "
        f"modules, {counts['lines']} paragraphs) to {corpus_dir} in {time.time() - t:.1f} s")
  inputs, _ = list_input_files(corpus_dirs=[corpus_dir])
  if not inputs:
    raise DataPrepError(f"{corpus_dir} has no files")
  return inputs


def _vocab_step(vocab: Optional[Dict[str, int]], inputs: List[str], vocab_file: str,
                vocab_size: int, built: List[str], say: Callable[[str], None]) -> Dict[str, int]:
  """Learns a WordPiece vocab from the corpus files unless there is one; the vocab."""
  from electra_tf2.data_prep.build_vocab import (  # pylint: disable=g-import-not-at-top
      learn_vocab_from_files)
  from electra_tf2.text.vocab import load_vocab  # pylint: disable=g-import-not-at-top
  if vocab is not None:
    say(f"vocab: using {vocab_file} ({len(vocab)} tokens)")
    return vocab
  t = time.time()
  learn_vocab_from_files(inputs, vocab_size, vocab_file, log=None)
  vocab = load_vocab(vocab_file, expected_size=vocab_size)
  built.append("vocab")
  say(f"vocab: learned {len(vocab)} tokens into {vocab_file} in {time.time() - t:.1f} s")
  return vocab


def _tfrecords_step(inputs: List[str], vocab_file: str, out_dir: str, settings: Dict[str, int],
                    built: List[str], log: Optional[Callable[[str], None]]) -> int:
  """Builds the pre-training TFRecords unless out_dir holds a finished build of these
  inputs, vocab and settings (max_seq_length, num_shards, seed, num_processes);
  the number of examples."""
  from electra_tf2.data_prep.builder import (  # pylint: disable=g-import-not-at-top
      RANDOM_DRAWS, BuildConfig, build_pretraining_data, file_sha256, inputs_fingerprint,
      read_info)
  say = log or (lambda s: None)
  sizes = [(p, os.path.getsize(p)) for p in inputs]
  info = read_info(out_dir)
  wanted = {**settings, "vocab_sha256": file_sha256(vocab_file), "do_lower_case": True,
            "mode": "text", "random_draws": RANDOM_DRAWS}
  if (info is not None and all(info["settings"].get(k) == v for k, v in wanted.items())
      and info["inputs"]["fingerprint"] == inputs_fingerprint(sizes)):
    n_examples = info["stats"]["examples"]
    say(f"tfrecords: using the {n_examples} examples in {out_dir}")
    return n_examples
  cfg = BuildConfig(inputs=inputs, vocab_file=vocab_file, output_dir=out_dir,
                    progress=log is not None, label="tfrecords", **settings)
  summary = build_pretraining_data(cfg, log=say if log is not None else (lambda s: None))
  built.append("tfrecords")
  return summary.stats.examples


def main(argv: Optional[Sequence[str]] = None) -> int:
  import argparse  # pylint: disable=g-import-not-at-top
  parser = argparse.ArgumentParser(
      description="Builds the default data directory: docstring corpus, vocab, TFRecords.")
  parser.add_argument("--data-dir", required=True, help="The data directory to fill.")
  parser.add_argument("--vocab-size", type=int, default=DEFAULT_VOCAB_SIZE,
                      help="Tokens of the WordPiece vocab learned from the corpus "
                      "(the model's vocab_size); an existing vocab.txt must have this many.")
  parser.add_argument("--max-seq-length", type=int, default=128,
                      help="Tokens per pre-training example (the model's max_seq_length).")
  parser.add_argument("--num-shards", type=int, default=DEFAULT_NUM_SHARDS,
                      help="TFRecord files to write.")
  parser.add_argument("--num-processes", type=int, default=1,
                      help="Builder jobs (which shard holds which example depends on it).")
  parser.add_argument("--seed", type=int, default=DEFAULT_SEED,
                      help="Seed of the builder's random choices.")
  parser.add_argument("--corpus-bytes", type=int, default=DEFAULT_MAX_BYTES,
                      help="Size of the default corpus (installed packages' docstrings) to write.")
  parser.add_argument("--corpus-only", action="store_true",
                      help="Only write <data-dir>/corpus.")
  args = parser.parse_args(argv)
  from electra_tf2.data_prep.common import (  # pylint: disable=g-import-not-at-top
      quiet_tensorflow_logs, run_script)
  quiet_tensorflow_logs()

  def work():
    if args.corpus_only:
      counts = write_default_corpus(os.path.join(args.data_dir, "corpus"), args.corpus_bytes)
      print(f"wrote {counts}")
    else:
      prepare_default_data_dir(args.data_dir, vocab_size=args.vocab_size,
                               max_seq_length=args.max_seq_length, num_shards=args.num_shards,
                               num_processes=args.num_processes, seed=args.seed,
                               corpus_bytes=args.corpus_bytes)
  return run_script(work, f"{args.data_dir} keeps the steps that were complete (each is "
                          "written whole or not at all)")
