"""Benchmarks and studies, by the question each answers (bench/README.md lists them); every
script runs as `python -m bench.<group>.<name>` from the repository root."""
