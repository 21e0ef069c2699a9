"""Moved to `electra_tf2.tasks.task`; this import path keeps working as an alias."""

from electra_tf2.tasks.task import (  # noqa: F401
    CachedTokenizer, Example, FeatureSpec, FinetuningDataError, Task, log_features, read_lines,
    shared_feature_specs)
