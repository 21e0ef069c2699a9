"""Text to model features: tokenisation, packing and windows, in the graph and in Python."""
