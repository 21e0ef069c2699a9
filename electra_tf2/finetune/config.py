"""Moved to `electra_tf2.tasks.config`; this import path keeps working as an alias."""

from electra_tf2.tasks.config import (  # noqa: F401
    ADDED_HPARAMS, ConfigError, FinetuningConfig, GLUE_TASKS, LOSS_REDUCTIONS, QA_TASKS,
    check_task_names, known_tasks, read_pretrained_config, resolve_finetuning_config, rules,
    schema)
