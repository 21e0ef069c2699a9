"""Moved to `electra_tf2.pretraining.objectives`; this import path keeps working as an alias."""

from electra_tf2.pretraining.objectives import (  # noqa: F401
    AUC_THRESHOLDS, FakedData, MetricAccumulator, auc_from_counts, auc_thresholds,
    baseline_statistics, describe_results, discriminator_output, electric_logit_offset,
    get_fake_data, loss_denominators, metric_statistics, softmax_output, trivial_baselines)
