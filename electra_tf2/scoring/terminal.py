"""A scored sentence in the terminal: words at or above a threshold marked (and red)."""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the type only: the scorer needs TensorFlow, rendering does not
  from electra_tf2.scoring.scorer import SentenceScore

_RED, _RESET = "\x1b[1;31m", "\x1b[0m"


def _char_width(char: str) -> int:
  if unicodedata.combining(char):
    return 0
  return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def render(result: SentenceScore, threshold: float = 0.5, width: int = 100,
           color: bool = False) -> str:
  """The text with its words of probability >= threshold underlined by `^` (and red)."""
  words = result.words
  if all(w.start is not None for w in words):
    display = "".join(" " if c.isspace() else c for c in result.text)
    spans = [(w.start, w.end) for w in words]
  else:  # words the tokenizer saw, when they cannot all be found in the input
    display, spans = "", []
    for w in words:
      display += " " if display else ""
      spans.append((len(display), len(display) + len(w.text)))
      display += w.text
  marked = np.zeros(len(display) + 1, bool)
  flagged = [w for w in words if w.probability >= threshold]
  for w, (a, b) in zip(words, spans):
    if w.probability >= threshold:
      marked[a:b] = True
  lines = []
  begin = 0
  while begin < len(display) or not lines:
    end, used = begin, 0
    while end < len(display) and used + _char_width(display[end]) <= max(width, 1):
      used += _char_width(display[end])
      end += 1
    if end < len(display) and " " in display[begin + 1:end]:
      end = display.rindex(" ", begin + 1, end) + 1
    end = max(end, begin + 1) if display else end
    text, carets = "", ""
    for i in range(begin, min(end, len(display))):
      char = display[i]
      on = marked[i] and not char.isspace()
      text += (_RED + char + _RESET) if on and color else char
      carets += ("^" if on else " ") * _char_width(char)
    lines.append(text.rstrip())
    if carets.strip():
      lines.append(carets.rstrip())
    begin = end
    if not display:
      break
  scores = result.scores
  if flagged:
    lines.append(f"  p >= {threshold:g}: " + ", ".join(f"{w.text} {w.probability:.2f}"
                                                       for w in flagged))
  else:
    lines.append(f"  no word has p >= {threshold:g}")
  windows = f", {result.num_windows} windows" if result.num_windows > 1 else ""
  lines.append(f"  sentence: mean p {scores['mean_probability']:.3f}, max p "
               f"{scores['max_probability']:.3f}, mean log-odds {scores['mean_log_odds']:.2f}, "
               f"sum log-odds {scores['sum_log_odds']:.2f} ({len(result.tokens)} WordPieces"
               f"{windows})")
  return "\n".join(lines)


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------
