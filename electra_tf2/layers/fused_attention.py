"""The attention core by cuDNN's fused kernel with its dropout: a JAX-on-GPU option.

`electra pretrain --backend jax --attention-kernel cudnn` runs each `TransformerLayer`'s
attention (model/modeling.py:652-780: softmax(q k^T / sqrt(d) + bias), dropout, times v)
as one cuDNN kernel that draws the dropout mask inside it, through JAX's private
`jax._src.cudnn.fused_attention_stablehlo.dot_product_attention` (the public
`jax.nn.dot_product_attention` has no dropout). Checked on an H200 (JAX 0.11.2,
bench/gpu/cudnn_dropout.py, docs/benchmarks.md#gpu): the keep rate and the scaling are the
official ones (0.8976 kept at rate 0.1, kept values times 1.1111), the masks change from
call to call (18.4% of positions differ between two steps; independent masks: 18%), and
two call sites with the same seed draw the same masks, so each layer gets its own seed.

port: the official dropout draws from TensorFlow's stateful generator; our default draws
from the step's seed (`training.loop.step_seed`), so a resumed run repeats an uninterrupted
one bit for bit. With this kernel the masks come from cuDNN's Philox stream, keyed by the
layer's seed (a Python int fixed at compile time) and by an offset that XLA advances on
each run of the program: the same rate and scaling, other masks, and a resume is not
bit-identical. bfloat16 only (the kernel takes no float32), JAX on an NVIDIA GPU only.
"""

from __future__ import annotations


def cudnn_attention(qkv, bias, dropout_rate: float, seed: int):
  """softmax(q k^T / sqrt(head_size) + bias) v with dropout on the probabilities.

  Args:
    qkv: `[batch, seq_len, 3, heads, head_size]` bfloat16, q, k and v side by side.
    bias: `[batch, 1, 1, seq_len]` from `transformer.attention_bias` (bidirectional): 0
      at the real keys, -10000 at the padding; the inputs are right-padded, so the
      real keys are counted and the rest masked (every query attends, as under the bias).
    dropout_rate: the attention dropout (0 at inference).
    seed: this call site's seed: each layer its own.

  Returns:
    The context `[batch, seq_len, heads, head_size]`.
  """
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  from jax._src.cudnn import fused_attention_stablehlo as fused  # pylint: disable=g-import-not-at-top
  batch, seq_len, head_size = qkv.shape[0], qkv.shape[1], qkv.shape[-1]
  keys = jnp.sum(bias[:, 0, 0, :] == 0, axis=-1).astype(jnp.int32)  # [batch]
  return fused.dot_product_attention(
      qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2],
      q_seqlen=jnp.full((batch,), seq_len, jnp.int32), kv_seqlen=keys,
      scale=1.0 / head_size ** 0.5, mask_type=fused.MaskType.PADDING,
      dropout_rate=dropout_rate, seed=seed)
