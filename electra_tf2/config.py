"""Moved to `electra_tf2.pretraining.config`; this import path keeps working as an alias."""

from electra_tf2.pretraining.config import (  # noqa: F401
    ADDED_HPARAMS, ConfigError, ENCODER_HPARAMS, ObjectiveConfig, PretrainingConfig,
    resolve_pretraining_config, saved_bert_config, schema, uses_generator_encoder)
