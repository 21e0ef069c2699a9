"""Moved: the task heads are layers, in `electra_tf2.layers.task_heads` (kept as an alias)."""

from electra_tf2.layers.task_heads import (ClassificationHead, DenseHead, QAHead,  # noqa: F401
                                           RegressionHead, TaggingHead, TaskHead)
