"""The GPU run and the JAX step measurements it carries to a GPU machine."""
