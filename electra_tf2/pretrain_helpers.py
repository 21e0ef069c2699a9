"""Moved to `electra_tf2.pretraining.helpers`; this import path keeps working as an alias."""

from electra_tf2.pretraining.helpers import (  # noqa: F401
    MaskingConfig, Seed, gather_positions, get_candidates_mask, mask, num_to_predict,
    sample_from_softmax, sample_ids_from_softmax, scatter_update, unmask)
