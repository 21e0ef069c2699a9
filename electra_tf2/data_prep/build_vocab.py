"""Learns a vocabulary from a corpus, for pre-training in any language.

  electra build-vocab --corpus-dir DIR --vocab-size 30522 --output vocab.txt
  electra build-vocab --kind sentencepiece --corpus-dir DIR --vocab-size 32000 --output spm.model

--kind sentencepiece trains a SentencePiece model (unigram, or --model-type bpe)
with the `sentencepiece` trainer on the corpus lines (blank lines dropped), with
the special tokens reserved at the same ids as below: [PAD]=0, [UNK]=1,
[CLS]=2 (its BOS), [SEP]=3 (its EOS), [MASK]=4 and the [unusedN] as user
symbols, then --user-symbols. Its text normalization (--normalization-rule,
default nmt_nfkc) and --character-coverage are the trainer's own.

--kind wordpiece (the default):

Words are split exactly as the tokenizer will split them (BERT's BasicTokenizer:
lowercasing and accent stripping unless turned off, punctuation and CJK
characters as words of their own), counted, and given to tensorflow-text's
WordPiece vocabulary learner (`tensorflow_text.tools.wordpiece_vocab`).

The vocab starts with the special tokens at fixed ids: [PAD]=0, [UNK]=1,
[CLS]=2, [SEP]=3, [MASK]=4, then --num-unused [unusedN] tokens (room for
tokens you add later), then every character that --character-coverage keeps
(default 1.0: all of them, a character seen once included) alone and as "##c",
then the learned word pieces by frequency: the count threshold is lowered, down
to 1, until they fill --vocab-size. Only when even threshold 1 gives too few
(a corpus too small for the size; a note says so) do [unusedN] tokens fill the
rest, so the file always has exactly --vocab-size lines: set the model config's
vocab_size to that.
"""

from __future__ import annotations

import collections
import os
import sys
import time
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple


from electra_tf2.data_prep.common import (DataPrepError, LineReader, SkipFile, corpus_files,
                              human_bytes, open_input, quiet_tensorflow_logs, run_script)
from electra_tf2.utils.atomic_io import atomic_path, write_text_atomic
from electra_tf2.text.vocab import SPECIAL_TOKENS

_BATCH_LINES = 8192


def _corpus_chunks(files: Sequence[str], max_bytes: Optional[int],
                   warn: Callable[[str], None], left_out_of: str, stats: Dict[str, int]):
  """Yields the corpus' non-blank lines, a chunk at a time, read as the data builder reads
  them (up to about `max_bytes`); counts "files", "skipped", "lines" (read, blank ones
  included) and "bytes" into `stats`. A line over 8 MB is left out with a warning naming
  `left_out_of`; an unreadable file is skipped with a warning."""
  for path in files:
    if max_bytes is not None and stats["bytes"] >= max_bytes:
      break
    try:
      with open_input(path) as stream:
        reader = LineReader(stream, path)
        reader.sniff()
        for kind, _, payload in reader:
          if kind == "long":
            payload.drain()
            warn(f"{path} line {payload.line_no}: longer than 8 MB, left out of {left_out_of}")
            continue
          yield [line for line in payload if line and not line.isspace()]
          stats["lines"] += len(payload)
          if max_bytes is not None and reader.bytes_read + stats["bytes"] >= max_bytes:
            break
        stats["bytes"] += reader.bytes_read
      stats["files"] += 1
    except SkipFile as e:
      stats["skipped"] += 1
      warn(f"skipped {path}: {e}")


def count_words(files: Sequence[str], do_lower_case: bool = True,
                strip_accents: Optional[bool] = None, max_bytes: Optional[int] = None,
                warn: Callable[[str], None] = lambda s: None) -> Dict[str, object]:
  """Word counts of the corpus, split as the tokenizer splits text.

  Returns {"counts": Counter(word -> count), "files", "skipped", "lines", "bytes"}.
  """
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from electra_tf2.text.tokenizer import BasicTokenizer  # pylint: disable=g-import-not-at-top
  splitter = BasicTokenizer(do_lower_case, strip_accents)
  counts: collections.Counter = collections.Counter()
  stats = {"files": 0, "skipped": 0, "lines": 0, "bytes": 0}
  pending: List[str] = []

  def flush() -> None:
    if not pending:
      return
    words = splitter.split_graph(tf.constant(pending, tf.string)).flat_values.numpy()
    if len(words):
      unique, n = np.unique(words, return_counts=True)
      counts.update(dict(zip(unique.tolist(), n.tolist())))
    pending.clear()

  for chunk in _corpus_chunks(files, max_bytes, warn, "the word counts", stats):
    for line in chunk:
      pending.append(line)
      if len(pending) >= _BATCH_LINES:
        flush()
  flush()
  decoded = collections.Counter()
  for word, n in counts.items():
    decoded[word.decode("utf-8", "replace")] += n
  stats["counts"] = decoded
  return stats


def covered_chars(word_counts: Dict[str, int], coverage: float,
                  skip: Sequence[str] = ()) -> List[str]:
  """The characters of the words, most frequent first, that cover `coverage` of all
  character occurrences (SentencePiece's --character_coverage rule); 1.0 keeps every one.

  A character is counted once per occurrence in each word, times the word's count; ties
  are broken by the character, so the result is deterministic.
  """
  skip = set(skip)
  char_counts: collections.Counter = collections.Counter()
  for word, n in word_counts.items():
    if word not in skip:
      for c in word:
        char_counts[c] += n
  ranked = sorted(char_counts.items(), key=lambda x: (-x[1], x[0]))
  total = sum(char_counts.values())
  kept: List[str] = []
  covered = 0
  for c, n in ranked:
    if kept and covered >= coverage * total:
      break
    kept.append(c)
    covered += n
  return kept


def learn_vocab(word_counts: Dict[str, int], vocab_size: int, num_unused: int = 0,
                binary_search: bool = False, learn_params: Optional[Dict[str, object]] = None,
                character_coverage: float = 1.0,
                log: Callable[[str], None] = lambda s: None) -> List[str]:
  """The vocabulary (exactly vocab_size tokens) learned from word counts.

  Reserved first: SPECIAL_TOKENS at ids 0..4, then [unused0..num_unused-1]; then
  every character covering `character_coverage` of the corpus (`covered_chars`), alone
  and as "##c" (the most frequent that fit when the size cannot hold them all); then
  tensorflow-text's learned pieces, most frequent first, up to vocab_size; then
  [unusedN] padding only when even count threshold 1 (every piece seen once) gives too few.

  tensorflow-text's `learn()` binary-searches the count threshold that gives
  about vocab_size tokens, running the whole learner (4 passes over all words)
  at each of ~15 thresholds (its default floor is 2). By default this runs the
  same learner (`learn_with_thresh`, same preprocessing and parameters) at one
  threshold chosen from the word counts -- lowered, down to 1, while it gives fewer
  pieces than there is room for -- and keeps the most frequent pieces: about 10x
  faster. binary_search=True runs `learn()` itself (it stops within slack_ratio under
  the size; its character rule keeps the `max_unique_chars` most frequent, here as many
  as are covered).
  """
  from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner  # pylint: disable=g-import-not-at-top
  reserved = list(SPECIAL_TOKENS) + [f"[unused{i}]" for i in range(num_unused)]
  if vocab_size < len(reserved) + 1:
    raise DataPrepError(f"--vocab-size {vocab_size}: must exceed the {len(reserved)} reserved "
                        "tokens")
  _check_coverage(character_coverage)
  if not word_counts:
    raise DataPrepError("the corpus has no words to learn a vocabulary from")
  chars = covered_chars(word_counts, character_coverage, reserved)
  params = {"upper_thresh": 10_000_000, "lower_thresh": 1, "num_iterations": 4,
            "max_input_tokens": 5_000_000, "max_token_length": 50,
            "max_unique_chars": len(chars), "slack_ratio": 0.05,
            "include_joiner_token": True, "joiner": "##"}
  params.update(learn_params or {})
  items = sorted(word_counts.items())
  if binary_search:
    vocab = learner.learn(items, vocab_size, reserved, **params)
  else:
    vocab = _learn_at_one_threshold(learner, items, vocab_size, reserved, chars, params,
                                    character_coverage, log)
  return _exactly(vocab_size, vocab, num_unused)


def _learn_at_one_threshold(learner, items: List[Tuple[str, int]], vocab_size: int,
                            reserved: List[str], chars: List[str], params: Dict[str, object],
                            character_coverage: float, log: Callable[[str], None]) -> List[str]:
  """The default learner (`learn_vocab`): the reserved tokens, the characters that fit
  (alone and as ##c), then the most frequent pieces learned at one threshold."""
  p = learner.Params(params["upper_thresh"], params["lower_thresh"], params["num_iterations"],
                     params["max_input_tokens"], params["max_token_length"],
                     params["max_unique_chars"], vocab_size, params["slack_ratio"],
                     params["include_joiner_token"], params["joiner"], reserved)
  fit = (vocab_size - len(reserved)) // 2
  if fit < 1:
    raise DataPrepError(f"--vocab-size {vocab_size} is too small: no room for a single "
                        "character (alone and as ##c) after the reserved tokens")
  if len(chars) > fit:
    log(f"  note: --vocab-size {vocab_size} holds {fit} of the {len(chars)} characters above "
        f"--character-coverage {character_coverage} (each alone and as ##c); the rarest "
        f"{len(chars) - fit} become [UNK]: raise --vocab-size or lower --character-coverage")
    chars = chars[:fit]
  mandatory = reserved + sorted(chars) + [p.joiner + c for c in sorted(chars)]
  room = vocab_size - len(mandatory)
  all_counts = learner.get_input_words(items, reserved, p.max_token_length)
  filtered = learner.filter_input_words(all_counts, set(chars), p.max_input_tokens)
  learned: List[str] = []
  if filtered and room:
    learned = _learned_pieces(learner, items, filtered, p, set(mandatory), room, log)
  return mandatory + learned[:room]


def _learned_pieces(learner, items: List[Tuple[str, int]], filtered, p, mandatory: Set[str],
                    room: int, log: Callable[[str], None]) -> List[str]:
  """The pieces tensorflow-text learns beyond `mandatory`, most frequent first, at a count
  threshold lowered (a third each time, down to its floor) until they fill `room`."""
  upper, lower = learner.get_search_threshs(items, p.upper_thresh, p.lower_thresh)
  counts = sorted((c for _, c in filtered), reverse=True)
  # Pieces outnumber words: start where about vocab_size/2 distinct words remain.
  thresh = counts[min(len(counts), max(1, p.vocab_size // 2)) - 1]
  thresh = max(lower, min(upper, thresh))
  while True:
    vocab = learner.learn_with_thresh(filtered, thresh, p)
    learned = [t for t in vocab if t not in mandatory and t
               and not any(c.isspace() for c in t)]
    log(f"  threshold {thresh}: {len(vocab)} tokens, {len(learned)} beyond the characters")
    if len(learned) >= room or thresh <= lower:
      return learned
    thresh = max(lower, thresh // 3)


def _exactly(vocab_size: int, vocab: List[str], num_unused: int) -> List[str]:
  """vocab without tokens holding whitespace or repeated, cut to vocab_size tokens or
  filled up with the [unusedN] after the reserved ones."""
  vocab = [t for t in vocab if t and not any(c.isspace() for c in t)]
  seen = set()
  unique = []
  for t in vocab:
    if t not in seen:
      seen.add(t)
      unique.append(t)
  vocab = unique[:vocab_size]
  next_unused = num_unused
  while len(vocab) < vocab_size:
    token = f"[unused{next_unused}]"
    next_unused += 1
    if token not in seen:
      vocab.append(token)
  return vocab


def learn_vocab_from_files(files: Sequence[str], vocab_size: int, output: str,
                           do_lower_case: bool = True, strip_accents: Optional[bool] = None,
                           num_unused: int = 0, max_bytes: Optional[int] = None,
                           binary_search: bool = False, character_coverage: float = 1.0,
                           log: Optional[Callable[[str], None]] = print,
                           warn: Optional[Callable[[str], None]] = None) -> Dict[str, object]:
  """Counts words, learns the vocab, writes it atomically to `output`; returns a summary."""
  say = log or (lambda s: None)
  warn = warn or (lambda s: print(f"warning: {s}", file=sys.stderr))
  start = time.time()
  _check_output(output)
  _check_coverage(character_coverage)
  stats = count_words(files, do_lower_case, strip_accents, max_bytes, warn)
  counts = stats["counts"]
  if not counts:
    raise DataPrepError(f"no words found in {len(files)} input file(s) "
                        f"({stats['skipped']} skipped) once normalised (control characters "
                        "removed): nothing to learn a vocabulary from")
  t_count = time.time() - start
  vocab = learn_vocab(counts, vocab_size, num_unused, binary_search=binary_search,
                      character_coverage=character_coverage, log=say)
  n_padding = sum(1 for t in vocab if t.startswith("[unused")) - num_unused
  try:
    write_text_atomic(output, "\n".join(vocab) + "\n")
  except OSError as e:
    raise DataPrepError(f"--output {output}: cannot be written ({e.strerror})") from None
  from electra_tf2.text.vocab import load_vocab  # pylint: disable=g-import-not-at-top
  load_vocab(output, expected_size=vocab_size)
  summary = {"vocab_size": len(vocab), "padding": n_padding, "unique_words": len(counts),
             "files": stats["files"], "skipped": stats["skipped"], "lines": stats["lines"],
             "bytes": stats["bytes"], "seconds": time.time() - start}
  say(f"build_vocab: {output}: {len(vocab)} tokens ({len(SPECIAL_TOKENS)} special, {num_unused} "
      f"unused, {len(vocab) - len(SPECIAL_TOKENS) - num_unused - n_padding} learned, "
      f"{n_padding} [unused] padding) in {summary['seconds']:.1f} s")
  say(f"  from {stats['files']} files ({human_bytes(stats['bytes'])}, {stats['lines']:,} lines, "
      f"{len(counts):,} distinct words; counted in {t_count:.1f} s)"
      + (f"; skipped {stats['skipped']} files" if stats["skipped"] else ""))
  if n_padding:
    say(f"  note: the corpus gives only {vocab_size - n_padding} tokens even keeping every piece "
        f"seen once; {n_padding} are [unused] padding: give more text or --vocab-size "
        f"{vocab_size - n_padding}")
  from electra_tf2.data_prep import vocab_report  # pylint: disable=g-import-not-at-top
  from electra_tf2.text.tokenizer import FullTokenizer  # pylint: disable=g-import-not-at-top
  sample = read_corpus_lines(files, _REPORT_BYTES)["lines"]
  summary["scripts"] = vocab_report.script_report(
      FullTokenizer(output, do_lower_case, strip_accents), sample)
  say(f"  coverage per script (the first {human_bytes(_REPORT_BYTES)} of the corpus):")
  for line in vocab_report.report_lines(summary["scripts"]):
    say(line)
  return summary


_REPORT_BYTES = 1 << 20


# SentencePiece's normalization rules (its --normalization_rule_name).
NORMALIZATION_RULES = ("nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf", "identity")


def read_corpus_lines(files: Sequence[str], max_bytes: Optional[int] = None,
                      warn: Callable[[str], None] = lambda s: None) -> Dict[str, object]:
  """The corpus' non-blank lines, read as the data builder reads them.

  Returns {"lines": [str], "files", "skipped", "bytes"}.
  """
  lines: List[str] = []
  stats = {"files": 0, "skipped": 0, "lines": 0, "bytes": 0}
  for chunk in _corpus_chunks(files, max_bytes, warn, "the vocabulary", stats):
    lines.extend(chunk)
  stats["lines"] = lines
  return stats


def learn_sentencepiece_from_files(files: Sequence[str], vocab_size: int, output: str,
                                   model_type: str = "unigram",
                                   character_coverage: float = 0.9995,
                                   normalization_rule: str = "nmt_nfkc",
                                   user_symbols: Sequence[str] = (), num_unused: int = 0,
                                   max_bytes: Optional[int] = None,
                                   log: Optional[Callable[[str], None]] = print,
                                   warn: Optional[Callable[[str], None]] = None
                                   ) -> Dict[str, object]:
  """Trains a SentencePiece model on the corpus lines, the special tokens reserved at
  ids 0-4 (module doc), and writes it atomically to `output`; returns a summary."""
  import io  # pylint: disable=g-import-not-at-top
  import sentencepiece  # pylint: disable=g-import-not-at-top
  say = log or (lambda s: None)
  warn = warn or (lambda s: print(f"warning: {s}", file=sys.stderr))
  start = time.time()
  _check_output(output)
  if normalization_rule not in NORMALIZATION_RULES:
    raise DataPrepError(f"--normalization-rule {normalization_rule}: use one of "
                        f"{', '.join(NORMALIZATION_RULES)}")
  _check_coverage(character_coverage)
  stats = read_corpus_lines(files, max_bytes, warn)
  lines = stats["lines"]
  normalizer = sentencepiece.SentencePieceNormalizer(rule_name=normalization_rule)
  if not any(normalizer.normalize(line) for line in lines):
    raise DataPrepError(f"the corpus ({len(files)} input file(s), {stats['skipped']} skipped) "
                        f"is empty once normalised ({normalization_rule}): give files with text")
  symbols = ["[MASK]"] + [f"[unused{i}]" for i in range(num_unused)] + list(user_symbols)
  model = io.BytesIO()
  try:
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, vocab_size=vocab_size,
        model_type=model_type, character_coverage=character_coverage,
        normalization_rule_name=normalization_rule, pad_id=0, unk_id=1, bos_id=2, eos_id=3,
        pad_piece="[PAD]", unk_piece="[UNK]", bos_piece="[CLS]", eos_piece="[SEP]",
        user_defined_symbols=symbols, input_sentence_size=0, minloglevel=2,
        num_threads=os.cpu_count() or 1)
  except RuntimeError as e:
    # "INTERNAL: src/x.cc(744) [check] Vocabulary size too high (80). Please set ..."
    detail = (str(e).strip().splitlines() or [type(e).__name__])[-1].split("] ")[-1]
    raise DataPrepError(f"--vocab-size {vocab_size}: the SentencePiece trainer refused: {detail}"
                        ) from None
  try:
    with atomic_path(output) as tmp, open(tmp, "wb") as f:
      f.write(model.getvalue())
  except OSError as e:
    raise DataPrepError(f"--output {output}: cannot be written ({e.strerror})") from None
  summary = {"vocab_size": vocab_size, "files": stats["files"], "skipped": stats["skipped"],
             "lines": len(lines), "bytes": stats["bytes"], "seconds": time.time() - start}
  say(f"build_vocab: {output}: a {model_type} SentencePiece model of {vocab_size} pieces "
      f"(5 special, {num_unused} unused, {len(user_symbols)} user symbols) from "
      f"{stats['files']} files ({human_bytes(stats['bytes'])}, {len(lines):,} lines) "
      f"in {summary['seconds']:.1f} s")
  return summary


def _check_output(output: str) -> None:
  """One line when `output` is a directory or its directory cannot be created."""
  if os.path.isdir(output):
    raise DataPrepError(f"--output {output}: is a directory; give a file name such as "
                        f"{os.path.join(output, 'vocab.txt')}")
  out_dir = os.path.dirname(os.path.abspath(output))
  if not os.path.isdir(out_dir):
    try:
      os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
      raise DataPrepError(f"--output {output}: cannot create its directory ({e.strerror})"
                          ) from None


def _check_coverage(character_coverage: float) -> None:
  """One line when --character-coverage is not a share."""
  if not 0 < character_coverage <= 1:
    raise DataPrepError(f"--character-coverage {character_coverage}: must be in (0, 1]")


def _check_output_kind(output: str, kind: str) -> None:
  """One line when the --output name says the other kind (.model is SentencePiece's)."""
  if kind == "wordpiece" and output.endswith(".model"):
    raise DataPrepError(f"--output {output}: a .model file is a SentencePiece model; pass "
                        "--kind sentencepiece, or a vocab.txt name for WordPiece")
  if kind == "sentencepiece" and not output.endswith(".model"):
    raise DataPrepError(f"--output {output}: a SentencePiece model is written as NAME.model; "
                        "pass such a name, or --kind wordpiece for a vocab.txt")


def main(argv=None) -> int:
  import argparse  # pylint: disable=g-import-not-at-top
  from electra_tf2.data_prep.build_pretraining_dataset import (  # pylint: disable=g-import-not-at-top
      add_tokenizer_flags)
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--corpus-dir", action="append", default=[],
                      help="Text files (the files directly in it; repeatable).")
  parser.add_argument("--corpus-glob", action="append", default=[],
                      help="Glob of text files, ** recursing (repeatable).")
  parser.add_argument("--file-list", action="append", default=[],
                      help="A file naming one text file per line (repeatable).")
  parser.add_argument("--vocab-size", type=int, required=True,
                      help="Tokens in the vocab (the model config's vocab_size).")
  parser.add_argument("--output", required=True,
                      help="The vocab.txt (or, --kind sentencepiece, the .model) to write.")
  parser.add_argument("--kind", choices=("wordpiece", "sentencepiece"), default="wordpiece",
                      help="WordPiece vocab.txt (default) or a SentencePiece .model.")
  parser.add_argument("--model-type", choices=("unigram", "bpe"), default="unigram",
                      help="SentencePiece: the model (default unigram).")
  parser.add_argument("--character-coverage", type=float, default=None,
                      help="Share of the character occurrences whose characters are kept "
                           "(WordPiece: alone and as ##c; default 1.0, every character; "
                           "SentencePiece: default 0.9995, 1.0 for small alphabets).")
  parser.add_argument("--normalization-rule", default="nmt_nfkc", choices=NORMALIZATION_RULES,
                      help="SentencePiece: the text normalization (default nmt_nfkc).")
  parser.add_argument("--user-symbols", default="",
                      help="SentencePiece: comma-separated pieces kept whole (after [MASK]).")
  parser.add_argument("--num-unused", type=int, default=0,
                      help="[unusedN] tokens reserved after the special tokens.")
  parser.add_argument("--max-corpus-bytes", type=int, default=None,
                      help="Read at most this much text (a sample of a large corpus).")
  parser.add_argument("--binary-search", action="store_true",
                      help="Use tensorflow-text's learn() binary search over thresholds "
                           "(about 10x slower, slightly closer to its usual output).")
  add_tokenizer_flags(parser)
  args = parser.parse_args(argv)
  if not (args.corpus_dir or args.corpus_glob or args.file_list):
    parser.error("give the text with --corpus-dir, --corpus-glob or --file-list")
  quiet_tensorflow_logs()

  def work():
    _check_output_kind(args.output, args.kind)
    files = corpus_files(args)
    if args.kind == "sentencepiece":
      learn_sentencepiece_from_files(
          files, args.vocab_size, args.output, args.model_type,
          0.9995 if args.character_coverage is None else args.character_coverage,
          args.normalization_rule, [s for s in args.user_symbols.split(",") if s],
          args.num_unused, args.max_corpus_bytes)
      return
    learn_vocab_from_files(files, args.vocab_size, args.output, args.do_lower_case,
                           args.strip_accents, args.num_unused, args.max_corpus_bytes,
                           args.binary_search,
                           1.0 if args.character_coverage is None else args.character_coverage)
  return run_script(work, f"{args.output} was not written")
