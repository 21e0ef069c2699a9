"""Moved to `electra_tf2.pretraining.input_pipeline`; this import path keeps working as an alias."""

from electra_tf2.pretraining.input_pipeline import (  # noqa: F401
    DataError, Inputs, OFFICIAL_NUM_SHARDS, check_tfrecords, corrupt_data_error,
    estimated_num_examples, features_to_inputs, get_updated_inputs, input_fn, mixing_warning,
    tfrecord_files)
