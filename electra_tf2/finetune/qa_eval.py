"""Moved to `electra_tf2.tasks.qa_eval`; this import path keeps working as an alias."""

from electra_tf2.tasks.qa_eval import (  # noqa: F401
    Dataset, compute_exact, compute_f1, exact_match_score, f1_score, mrqa_evaluate,
    normalize_answer, squad_v1_evaluate, squad_v2_evaluate)
