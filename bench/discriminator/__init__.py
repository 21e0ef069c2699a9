"""The stages of bench/discriminator_analysis.py: what an ELECTRA discriminator flags."""
