"""Moved to `electra_tf2.conversion.convert`; this import path keeps working as an alias."""

from electra_tf2.conversion.convert import (  # noqa: F401
    ConversionError, ConversionReport, DEFAULT_IGNORE, GLOBAL_STEP, OUR_GLOBAL_STEP_KEY,
    PRETRAIN_CONFIG_FILE, RELEASED_PRESETS, REPORT_FILE, VOCAB_FILE, assign_from_checkpoint,
    check_released_preset, checkpoint_architecture, checkpoint_layout, checkpoint_shapes,
    config_architecture, convert_official_checkpoint, convert_official_finetuned,
    export_official_checkpoint, export_official_finetuned, finetuned_from_official,
    is_finetuned_model_dir, is_ignored, load_pretrainer_weights, main, match_shapes,
    match_variables, notice, official_tensors, pretrainer_from_official, read_global_step,
    resolve_checkpoint_path, write_official_checkpoint, write_portable_checkpoint, write_report)
