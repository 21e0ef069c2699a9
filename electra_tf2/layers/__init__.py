"""Primitives: GELU, LayerNorm, embeddings, the Transformer block and the pre-training heads."""

from electra_tf2.layers.activations import gelu, get_activation
from electra_tf2.layers.embeddings import EmbeddingBlock
from electra_tf2.layers.heads import DiscriminatorHead, MaskedLMHead
from electra_tf2.layers.layer_norm import layer_norm, LayerNorm
from electra_tf2.layers.transformer import attention_bias, TransformerLayer

__all__ = ["gelu", "get_activation", "EmbeddingBlock", "DiscriminatorHead", "MaskedLMHead",
           "layer_norm", "LayerNorm", "attention_bias", "TransformerLayer"]
