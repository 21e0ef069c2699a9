"""The study's tasks, presets and fine-tuning defaults."""

# GLUE tasks: directory in <shared-data>/glue, the official metric, the text columns of
# train.tsv and whether it has a header (the official readers, classification_tasks.py:152-322).
TASKS = {
    "sst": ("SST-2", "accuracy", (0,), True),
    "cola": ("CoLA", "mcc", (3,), False),
    "mrpc": ("MRPC", "accuracy", (3, 4), True),
    "sts": ("STS-B", "spearman", (7, 8), True),
    "rte": ("RTE", "accuracy", (1, 2), True),
}
# Fine-tuning length per task: the single-sentence tasks fit in 64 tokens.
TASK_MAX_SEQ_LENGTH = {"sst": 64, "cola": 64}
RANDOM = "random"
PRESETS = {
    # The debug encoder (3 layers, hidden 144) on two CPU cores.
    "debug": {"pretrain": {"debug": True, "train_batch_size": 32, "learning_rate": 1e-3,
                           "iterations_per_loop": 100, "seed": 0, "keep_checkpoint_max": 0},
              "warmup_fraction": 0.1, "budget": 1.6e14, "vocab": "corpus", "run_flags": []},
    # The paper's ELECTRA-Small (configs/electra_small.json) at 6.25% of its 1M steps.
    "paper-small": {"pretrain": {"train_batch_size": 128, "iterations_per_loop": 500,
                                 "seed": 0, "keep_checkpoint_max": 0},
                    "warmup_steps": 10000, "budget": 0.0625 * 1.29e18, "vocab": "bert",
                    "run_flags": ["--mixed-precision", "mixed_bfloat16", "--jit-compile"]},
}
# Paper Table 7 for Small: lr 3e-4, layer-wise decay 0.8, no weight decay, warm-up 10%,
# batch 32; epochs 3, 10 for RTE and STS-B (the official per-task defaults).
FINETUNE_DEFAULTS = {"learning_rate": 3e-4, "layerwise_lr_decay": 0.8,
                     "weight_decay_rate": 0.0, "iterations_per_loop": 100}

