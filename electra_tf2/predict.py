"""Moved to `electra_tf2.serving.predict`; this import path keeps working as an alias."""

from electra_tf2.serving.predict import (  # noqa: F401
    INPUT_FORMATS, PredictError, check_model_path, load_runner, main)
