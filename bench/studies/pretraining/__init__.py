"""The stages of bench/studies/pretraining_study.py: ELECTRA against MLM and random initialisation."""
