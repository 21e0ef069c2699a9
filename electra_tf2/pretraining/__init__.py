"""Pre-training (official run_pretraining.py, pretrain/): its config (`config`), input
pipeline (`input_pipeline`), masking and sampling (`helpers`, official
pretrain_helpers.py), losses and metrics (`objectives`) and the model state of its
checkpoints (`state`). The training loops are training/ and jax_training/; the model is
models/pretrainer.py.
"""
