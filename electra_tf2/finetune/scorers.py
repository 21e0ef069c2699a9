"""Moved to `electra_tf2.tasks.scorers`; this import path keeps working as an alias."""

from electra_tf2.tasks.scorers import (  # noqa: F401
    AccuracyScorer, EntityLevelF1Scorer, MCCScorer, RegressionScorer, Results, Scorer,
    SentenceLevelScorer, Span, get_span_labels, get_tags)
