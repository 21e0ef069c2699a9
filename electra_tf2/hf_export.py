"""Moved to `electra_tf2.conversion.hf_export`; this import path keeps working as an alias."""

from electra_tf2.conversion.hf_export import (  # noqa: F401
    HuggingFaceExportError, LAYER_NORM_EPS, WEIGHTS_FILE, export_hugging_face, hf_config,
    hf_parameter_name, hf_state_dict, main, write_safetensors)
