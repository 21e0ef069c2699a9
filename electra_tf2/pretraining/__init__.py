"""Pre-training (official pretrain/): masking and sampling (`pretrain_helpers`, official
pretrain_helpers.py), losses and metrics (`objectives`), the model state of its
checkpoints (`state`) and its FLOPs (`flops`). Its config is config/pretraining.py, its
input pipeline data_io/input_pipeline.py, the training loops training/, and the model
models/pretrainer.py.
"""
