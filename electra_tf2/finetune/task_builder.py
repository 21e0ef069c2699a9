"""Moved to `electra_tf2.tasks.task_builder`; this import path keeps working as an alias."""

from electra_tf2.tasks.task_builder import (  # noqa: F401
    TASKS, check_vocab, get_tasks, make_tokenizer, takes_pairs)
