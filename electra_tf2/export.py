"""Moved to `electra_tf2.serving.export`; this import path keeps working as an alias."""

from electra_tf2.serving.export import (  # noqa: F401
    ExportError, KINDS, ServingModule, discriminator_outputs, encoder_outputs,
    finetuned_outputs, float32_outputs, main, serving_module)
