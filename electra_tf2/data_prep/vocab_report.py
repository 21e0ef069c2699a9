"""Coverage of a WordPiece vocabulary per script, with what to change when it is poor.

`script_report(tokenizer, lines)` tokenizes sample lines word by word and, for each
script (the Unicode name's first word of a word's first letter: HANGUL, CJK, ARABIC,
CYRILLIC, LATIN, ...), counts words, pieces, characters and [UNK]s. It flags:
- Hangul split into jamo (U+1100-U+11FF, U+3130-U+318F): accent stripping (NFD)
  decomposes every syllable; the fix is --no-strip-accents (or SentencePiece);
- a script with over 5% of its words [UNK]: too little text or too small a vocabulary;
- an alphabetic script split into characters (under 1.5 characters a piece).
CJK ideographs are split into characters by BERT's rule on purpose and are not flagged.
"""

from __future__ import annotations

import collections
import unicodedata
from typing import Dict, List, Sequence

_JAMO = ((0x1100, 0x11FF), (0x3130, 0x318F), (0xA960, 0xA97F), (0xD7B0, 0xD7FF))
_BY_CHARACTER = ("CJK", "HIRAGANA", "KATAKANA")  # one character a word by design (or close)
UNK_LIMIT = 0.05
CHARS_PER_PIECE_LIMIT = 1.5


def script_of(word: str) -> str:
  """The script of a word's first letter (HANGUL, CJK, LATIN, ...); "OTHER" without one."""
  for char in word:
    if char.isalpha():
      if any(low <= ord(char) <= high for low, high in _JAMO):
        return "HANGUL"
      name = unicodedata.name(char, "")
      return name.split(" ")[0] if name else "OTHER"
  return "OTHER"


def _is_jamo(piece: str) -> bool:
  return any(low <= ord(c) <= high for c in piece for low, high in _JAMO)


def script_report(tokenizer, lines: Sequence[str]) -> Dict[str, Dict[str, object]]:
  """{script: {"words", "pieces", "chars", "unk", "jamo", "flag"}} over the words of
  `lines`, split and tokenized by `tokenizer` (a FullTokenizer); "flag" is the line saying
  what to change, or None."""
  from electra_tf2.text.tokenizer import BasicTokenizer  # pylint: disable=g-import-not-at-top
  splitter = BasicTokenizer(tokenizer.do_lower_case, tokenizer.strip_accents)
  words = [w for row in splitter.tokenize_batch(list(lines)) for w in row]
  stats: Dict[str, Dict[str, object]] = collections.defaultdict(
      lambda: {"words": 0, "pieces": 0, "chars": 0, "unk": 0, "jamo": 0})
  unk = tokenizer.special_ids.unk
  for word, ids in zip(words, tokenizer.encode_batch(words) if words else []):
    entry = stats[script_of(word)]
    entry["words"] += 1
    entry["pieces"] += len(ids)
    entry["chars"] += len(word)
    entry["unk"] += int(unk in ids)
    entry["jamo"] += int(_is_jamo(word))
  for script, entry in stats.items():
    entry["flag"] = _flag(script, entry, tokenizer)
  return dict(stats)


def _flag(script: str, entry: Dict[str, object], tokenizer) -> object:
  words, pieces = entry["words"], entry["pieces"]
  if script == "HANGUL" and entry["jamo"] and tokenizer.strip_accents:
    return ("HANGUL is split into jamo (accent stripping decomposes every syllable): pass "
            "--no-strip-accents (or --no-lower-case), or use --kind sentencepiece")
  if words and entry["unk"] / words > UNK_LIMIT:
    return (f"{script}: {entry['unk'] / words:.1%} of the words are [UNK]: more {script} text "
            "or a larger --vocab-size (or --kind sentencepiece, whose character coverage "
            "keeps rare characters)")
  if (script not in _BY_CHARACTER and script != "OTHER" and pieces
      and entry["chars"] / pieces < CHARS_PER_PIECE_LIMIT and entry["chars"] > words):
    return (f"{script} is split into characters ({entry['chars'] / pieces:.2f} characters a "
            "piece): a larger --vocab-size, more text, or --kind sentencepiece")
  return None


def report_lines(stats: Dict[str, Dict[str, object]]) -> List[str]:
  """The report as lines: one per script (most words first), then the flags."""
  lines = []
  for script, entry in sorted(stats.items(), key=lambda kv: -kv[1]["words"]):
    words, pieces = entry["words"], max(1, entry["pieces"])
    lines.append(f"  {script:<10} {words:>8,} words, {entry['pieces'] / max(1, words):.2f} "
                 f"pieces a word, {entry['chars'] / pieces:.2f} characters a piece, "
                 f"[UNK] {entry['unk'] / max(1, words):.2%}")
  lines += [f"  note: {entry['flag']}" for entry in stats.values() if entry["flag"]]
  return lines


__all__ = ["script_report", "report_lines", "script_of"]
