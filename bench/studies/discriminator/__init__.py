"""The stages of bench/studies/discriminator_analysis.py: what an ELECTRA discriminator flags."""
