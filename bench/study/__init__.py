"""The stages of bench/pretraining_study.py: ELECTRA against MLM and random initialisation."""
