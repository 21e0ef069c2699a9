"""Replaced-token scores of an ELECTRA discriminator: per WordPiece, per word, per sentence.

- `graph`: the in-graph scoring that the SavedModel's `score` signature and
  `TextScorer` share (windows, token logits, sentence scores);
- `scorer`: `TextScorer`, the Python API on raw texts;
- `render`: a scored sentence in the terminal;
- `cli`: `electra score` (files, re-ranking, show).
"""

from electra_tf2.scoring.graph import SENTENCE_SCORES, ScoringError
from electra_tf2.scoring.render import render
from electra_tf2.scoring.scorer import (DEFAULT_RANK_SCORE, SentenceScore, TextScorer, WordScore,
                                        rank_order, word_spans)

__all__ = ["DEFAULT_RANK_SCORE", "SENTENCE_SCORES", "ScoringError", "SentenceScore", "TextScorer",
           "WordScore", "rank_order", "render", "word_spans"]
