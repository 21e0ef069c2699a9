"""`--attention-kernel cudnn` (electra_tf2/layers/fused_attention.py) on the CPU: cuDNN's
kernel is replaced by a stand-in, so these check what the layer hands it and what the run
sets up; bench/gpu/cudnn_dropout.py checks the kernel itself on a GPU."""

import numpy as np
import pytest

pytest.importorskip("jax")
# pylint: disable=g-import-not-at-top,wrong-import-position
import jax.numpy as jnp
from jax._src.cudnn import fused_attention_stablehlo as fused

from electra_tf2.config.pretraining import resolve_pretraining_config
from electra_tf2.layers.transformer import TransformerLayer, attention_bias
from electra_tf2.models.pretrainer import ElectraPretrainer
from electra_tf2.training import jax_pretraining
from electra_tf2.training.options import RunOptions


@pytest.fixture
def stand_in(monkeypatch):
  """cuDNN's kernel replaced by jnp attention over `[batch, seq, heads, size]` that masks
  the keys at and past kv_seqlen (every query kept); its calls' arguments are recorded."""
  calls = []

  def attention(q, k, v, q_seqlen, kv_seqlen, scale, mask_type, dropout_rate, seed):
    calls.append({"q_seqlen": np.asarray(q_seqlen).tolist(),
                  "kv_seqlen": np.asarray(kv_seqlen).tolist(), "scale": scale,
                  "mask_type": mask_type, "dropout_rate": dropout_rate, "seed": seed})
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) * scale
    keys = jnp.arange(k.shape[1])[None, :] < kv_seqlen[:, None]
    scores = jnp.where(keys[:, None, None, :], scores, -1e9)
    probs = jnp.exp(scores - scores.max(-1, keepdims=True))
    return jnp.einsum("bhqk,bkhd->bqhd", probs / probs.sum(-1, keepdims=True), v)
  monkeypatch.setattr(fused, "dot_product_attention", attention)
  return calls


def test_the_layer_hands_cudnn_the_layout_scale_key_counts_rate_and_its_seed(stand_in):
  """The context equals the official attention's (the layer's own ops, no seed set) on
  right-padded inputs of 16, 9 and 5 tokens: q, k, v in `[batch, seq, heads, size]`,
  1/sqrt(16), the real keys counted, every query attending; the layer's dropout rate when
  training and 0 otherwise; the layer's seed."""
  layer = TransformerLayer(64, 4, 128, attention_probs_dropout_prob=0.1)
  qkv = np.random.default_rng(0).normal(size=(3, 16, 3, 4, 16)).astype(np.float32)
  mask = (np.arange(16)[None, :] < np.array([[16], [9], [5]])).astype(np.int32)
  bias = np.asarray(attention_bias(mask, "bidirectional", "float32"))
  want = np.asarray(layer._attention(qkv, bias, training=False))  # pylint: disable=protected-access
  layer.cudnn_seed = 3
  got = np.asarray(layer._attention(jnp.asarray(qkv), jnp.asarray(bias), training=False))  # pylint: disable=protected-access
  layer._attention(jnp.asarray(qkv), jnp.asarray(bias), training=True)  # pylint: disable=protected-access
  np.testing.assert_allclose(got, want, atol=2e-6)
  assert stand_in == [
      {"q_seqlen": [16, 16, 16], "kv_seqlen": [16, 9, 5], "scale": 0.25,
       "mask_type": fused.MaskType.PADDING, "dropout_rate": rate, "seed": 3}
      for rate in (0.0, 0.1)]


def test_every_layer_of_both_encoders_gets_its_own_seed(monkeypatch):
  """electra_small's 12 discriminator and 12 generator layers: seeds 0-23, each once (one
  seed at two call sites drops the same positions in both: bench/gpu/cudnn_dropout.py)."""
  config = resolve_pretraining_config("electra_small", None, {})
  model = ElectraPretrainer.from_pretraining_config(config)
  assert jax_pretraining.use_cudnn_attention(model) == 24
  layers = [layer for encoder in (model.discriminator, model.generator)
            for layer in encoder._flatten_layers() if isinstance(layer, TransformerLayer)]  # pylint: disable=protected-access
  assert sorted(layer.cudnn_seed for layer in layers) == list(range(24))
  assert "cudnn_seed" not in layers[0].get_config()


def test_refused_in_one_line_without_a_gpu_or_bfloat16(monkeypatch):
  with pytest.raises(jax_pretraining.JaxTrainingError, match="^--attention-kernel cudnn needs "
                     "an NVIDIA GPU, but JAX runs on cpu: leave the flag out$"):
    jax_pretraining.check_cudnn_attention(RunOptions(backend="jax", attention_kernel="cudnn",
                                                     mixed_precision="mixed_bfloat16"))
  monkeypatch.setattr("jax.default_backend", lambda: "gpu")
  with pytest.raises(jax_pretraining.JaxTrainingError, match="add --mixed-precision "
                     r"mixed_bfloat16 \(not float32\)$"):
    jax_pretraining.check_cudnn_attention(RunOptions(backend="jax", attention_kernel="cudnn"))
