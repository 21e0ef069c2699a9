"""Text to model features: tokenizers and packing."""
