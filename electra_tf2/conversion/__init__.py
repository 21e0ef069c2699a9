"""Checkpoint conversion (`electra convert`, `electra hf-export`): official TF1 checkpoints
<-> our model directories (`convert`), Hugging Face directories in (`hf_import`) and out
(`hf_export`). Reading what is at a path is checkpoints/.
"""
