"""The names of a model directory's files (no TensorFlow needed to know them)."""

# The resolved pre-training config, saved next to the checkpoints of every model.
PRETRAIN_CONFIG_FILE = "pretrain_config.json"
# A fine-tuned model's FinetuningModel config and its fine-tuning config.
MODEL_CONFIG_FILE = "model_config.json"
FINETUNING_CONFIG_FILE = "finetuning_config.json"
# The vocabulary beside a model's checkpoints (ours, and the released official zips).
VOCAB_FILE = "vocab.txt"
