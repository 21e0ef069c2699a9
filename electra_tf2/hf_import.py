"""Moved to `electra_tf2.conversion.hf_import`; this import path keeps working as an alias."""

from electra_tf2.conversion.hf_import import (  # noqa: F401
    CONFIG_FILE, ConversionReport, HuggingFaceDirectory, HuggingFaceImportError,
    convert_directory, notice, pretrainer_from_directory, pretraining_config, read_directory,
    read_safetensors, write_report)
