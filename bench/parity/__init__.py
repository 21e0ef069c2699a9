"""The stages of bench/official_parity.py: training-curve parity with the official TF1 code."""
