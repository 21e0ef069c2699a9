"""Replaced-token scores of an ELECTRA discriminator: per WordPiece, per word, per sentence.

- `graph`: the in-graph scoring that the SavedModel's `score` signature and
  `TextScorer` share (windows, token logits, sentence scores);
- `scorer`: `TextScorer`, the Python API on raw texts;
- `terminal`: `render`, a scored sentence in the terminal.

`electra score` is cli/score.py. The names below are imported on first use, so that
importing `electra_tf2.scoring.terminal` loads no TensorFlow (the scorer needs it).
"""

import importlib

_EXPORTS = {"SENTENCE_SCORES": "graph", "ScoringError": "graph", "render": "terminal",
            **{name: "scorer" for name in ("DEFAULT_RANK_SCORE", "SentenceScore", "TextScorer",
                                           "WordScore", "rank_order", "word_spans")}}
__all__ = sorted(_EXPORTS)


def __getattr__(name):
  if name not in _EXPORTS:
    raise AttributeError(f"module 'electra_tf2.scoring' has no attribute {name!r}")
  value = getattr(importlib.import_module(f"electra_tf2.scoring.{_EXPORTS[name]}"), name)
  globals()[name] = value
  return value
