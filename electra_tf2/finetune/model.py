"""Moved to `electra_tf2.models.finetuning`; this import path keeps working as an alias."""

from electra_tf2.models.finetuning import (  # noqa: F401
    FINETUNING_CONFIG_FILE, HEADS, MODEL_CONFIG_FILE, FinetuningModel, build_head, build_model,
    load_finetuned_model, load_pretrained_encoder, save_model_files)
