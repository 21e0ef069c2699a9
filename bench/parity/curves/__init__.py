"""The stages of bench/parity/curves/official_parity.py (training-curve parity with the official TF1
code), and what bench/parity/curves/official_finetune_parity.py shares with it."""
