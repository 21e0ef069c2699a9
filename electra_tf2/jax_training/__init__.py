"""Pre-training on the JAX backend, with no TensorFlow on the machine (docs/pretraining_jax.md)."""
