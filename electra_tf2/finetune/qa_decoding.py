"""Moved to `electra_tf2.tasks.qa_decoding`; this import path keeps working as an alias."""

from electra_tf2.tasks.qa_decoding import (  # noqa: F401
    OUTPUT_NAMES, Prediction, SpanBasedQAScorer, best_prediction, compute_softmax,
    decode_example, get_best_indexes, get_final_text, nbest_json)
