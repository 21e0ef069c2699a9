"""Moved to `electra_tf2.tasks.qa`; this import path keeps working as an alias."""

from electra_tf2.tasks.qa import (  # noqa: F401
    MRQATask, QAExample, QATask, SQuADTask, improve_answer_span, mrqa, pieces_of_answer,
    read_squad, squad, squadv1, word_starts)
