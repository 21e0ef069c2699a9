"""Primitives: embeddings, the Transformer block and the pre-training heads."""

from electra_tf2.layers.embeddings import EmbeddingBlock
from electra_tf2.layers.heads import DiscriminatorHead, MaskedLMHead
from electra_tf2.layers.transformer import TransformerLayer, attention_bias, gelu
