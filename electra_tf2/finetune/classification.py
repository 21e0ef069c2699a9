"""Moved to `electra_tf2.tasks.classification`; this import path keeps working as an alias."""

from electra_tf2.tasks.classification import (  # noqa: F401
    ClassificationTask, CoLA, GLUE_NAMES, InputExample, MAX_WARNINGS, MNLI, MRPC, QNLI, QQP,
    RTE, RegressionTask, SST, STS, SUBMISSION_FILES, SingleOutputTask, WNLI, read_tsv,
    submission_file_name, submission_label)
