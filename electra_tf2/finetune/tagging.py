"""Moved to `electra_tf2.tasks.tagging`; this import path keeps working as an alias."""

from electra_tf2.tasks.tagging import (  # noqa: F401
    Chunking, LABEL_ENCODING, Sentence, TaggingExample, read_conll)
