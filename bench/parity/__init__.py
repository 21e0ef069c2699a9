"""Do we compute what the anchor computes: the official code, other tokenizers, other backends."""
