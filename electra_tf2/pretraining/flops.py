"""Pre-training and inference FLOPs, counted the way the paper does (flops_computation.py).

The official counter's conventions (flops_computation.py:1-41): a matrix
multiply costs 2mn, an elementwise operation 1 (dropout 4, LayerNorm 5, GELU 8,
softmax 5 per value), the backward pass as much as the forward one, embedding
lookups as dense one-hot multiplies, and the MLM softmax only on
`output_frac` of the tokens. Its quirks are kept so the paper's figures come
out (an attention-output LayerNorm counted as 5 FLOPs per token, not per value;
`s + 2` rows for the token-type and position embeddings).

    electra flops [MODEL_NAME ...] [--hparams JSON]
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Optional, Sequence

from electra_tf2.utils.errors import command

DROPOUT_FLOPS = 4
LAYER_NORM_FLOPS = 5
ACTIVATION_FLOPS = 8
SOFTMAX_FLOPS = 5
OFFICIAL_OUTPUT_FRAC = 0.15625  # 20 of 128 tokens: the official counter's default


@dataclasses.dataclass(frozen=True)
class TransformerShape:
  """One encoder: hidden h, layers l, length s, vocab v, embedding e, intermediate i."""
  h: int
  l: int
  s: int = 512
  v: int = 30522
  e: Optional[int] = None
  i: Optional[int] = None
  output_frac: float = OFFICIAL_OUTPUT_FRAC

  @property
  def embedding(self) -> int:
    return self.h if self.e is None else self.e

  @property
  def intermediate(self) -> int:
    return 4 * self.h if self.i is None else self.i

  @property
  def heads(self) -> int:
    return max(self.h // 64, 1)

  def block_flops(self) -> float:
    """Forward FLOPs of one Transformer block over the whole sequence."""
    h, s, i, heads = self.h, self.s, self.intermediate, self.heads
    per_token = (3 * 2 * h * h + 3 * h  # q, k, v and their biases
                 + 2 * h * s  # attention scores
                 + (SOFTMAX_FLOPS + DROPOUT_FLOPS + 1) * s * heads  # softmax, dropout, scale
                 + 2 * h * s  # weighted average of the values
                 + 2 * h * h + h + DROPOUT_FLOPS * h + h + LAYER_NORM_FLOPS  # attention output
                 + 2 * h * i + ACTIVATION_FLOPS * i + i  # intermediate
                 + 2 * h * i + h + DROPOUT_FLOPS * h + h + LAYER_NORM_FLOPS * h)  # output
    return per_token * s

  def embedding_flops(self, output: bool = False) -> float:
    """Forward FLOPs of the input embeddings (output=False) or of the MLM head."""
    e, h, v, s = self.embedding, self.h, self.v, self.s
    per_token = 2 * e * v  # a dense lookup, or the output softmax's matmul
    if not output:
      per_token += (2 * e * (s + 2) + 2 * e  # token-type and position rows, their sum
                    + LAYER_NORM_FLOPS * e + DROPOUT_FLOPS * e)
      if e != h:
        per_token += 2 * h * e + h  # embeddings_project
      return per_token * s
    per_token += (2 * h * e + e + ACTIVATION_FLOPS * e + LAYER_NORM_FLOPS * e  # head dense
                  + SOFTMAX_FLOPS * v + 2 * v)  # softmax, target
    return self.output_frac * per_token * s

  def binary_classification_flops(self) -> float:
    """Forward FLOPs of the discriminator head (dense h, gelu, one logit) per sequence."""
    return (2 * self.h * self.h + self.h + ACTIVATION_FLOPS * self.h + 2 * self.h) * self.s

  def train_flops(self, batch_size: int, train_steps: float,
                  discriminator: bool = False) -> float:
    """Forward plus backward FLOPs of training with the MLM or discriminator head."""
    head = self.binary_classification_flops() if discriminator else self.embedding_flops(True)
    return 2 * batch_size * train_steps * (self.l * self.block_flops()
                                           + self.embedding_flops() + head)

  def inference_flops(self) -> float:
    """Forward FLOPs of one sequence through the encoder and a binary classifier."""
    return (self.l * self.block_flops() + self.embedding_flops()
            + self.binary_classification_flops())


def electra_train_flops(h_d: int, l_d: int, h_g: int, l_g: int, batch_size: int,
                        train_steps: float, tied_embeddings: bool, e: Optional[int] = None,
                        s: int = 512, output_frac: float = OFFICIAL_OUTPUT_FRAC,
                        v: int = 30522) -> float:
  """The official `get_electra_train_flops`: discriminator plus generator."""
  e = h_d if e is None else e
  disc = TransformerShape(h_d, l_d, s=s, v=v, e=e, output_frac=output_frac)
  gen = TransformerShape(h_g, l_g, s=s, v=v, e=e if tied_embeddings else None,
                         output_frac=output_frac)
  return (disc.train_flops(batch_size, train_steps, discriminator=True)
          + gen.train_flops(batch_size, train_steps))


def pretraining_flops_per_step(config) -> float:
  """FLOPs of one optimizer step of a resolved `PretrainingConfig`, counted officially.

  The MLM softmax covers `max_predictions_per_seq / max_seq_length` of the tokens.
  ELECTRA and ELECTRIC: discriminator + generator (a two-tower generator counts
  both towers, their cloze head on every token; a uniform generator costs
  nothing); BERT (MLM only): the one encoder with its MLM head.
  """
  bert = config.bert_config
  s, v = config.max_seq_length, config.vocab_size
  e = config.resolved_embedding_size
  frac = config.max_predictions_per_seq / s
  disc = TransformerShape(bert.hidden_size, bert.num_hidden_layers, s=s, v=v, e=e,
                          i=bert.intermediate_size, output_frac=frac)
  batch = config.train_batch_size
  if not (config.electra_objective or config.electric_objective):
    return disc.train_flops(batch, 1)
  flops = disc.train_flops(batch, 1, discriminator=True)
  if config.uniform_generator:
    return flops
  if not config.uses_generator_encoder:  # tied: the discriminator's MLM pass
    return flops + disc.train_flops(batch, 1)
  gen_bert = config.generator_bert_config
  gen = TransformerShape(gen_bert.hidden_size, gen_bert.num_hidden_layers, s=s, v=v,
                         e=None if config.untied_generator_embeddings else e,
                         i=gen_bert.intermediate_size,
                         output_frac=1.0 if config.two_tower_generator else frac)
  towers = 2 if config.two_tower_generator else 1
  return flops + towers * gen.train_flops(batch, 1)


def encoder_matmul_flops(seq_len: int, embedding: int, hidden: int, inter: int,
                         layers: int) -> float:
  """Forward matmul FLOPs (2mn each) of one sequence through an encoder's projection and
  layers: the throughput benches' count, without the elementwise terms of the official one."""
  flops = 2.0 * seq_len * embedding * hidden if embedding != hidden else 0.0
  per_layer = (2.0 * seq_len * hidden * 4 * hidden      # q, k, v, attention output
               + 4.0 * seq_len * seq_len * hidden       # scores and weighted values
               + 4.0 * seq_len * hidden * inter)        # feed-forward
  return flops + layers * per_layer


def train_step_flops(config, batch: int) -> float:
  """Matmul FLOPs of one ELECTRA training step of `batch` sequences (training = 3 x forward):
  the discriminator with its head on every token, the generator with its MLM head on the
  `max_predictions_per_seq` masked positions. The benches' MFU numerator, on every backend."""
  d, g = config.bert_config, config.generator_bert_config
  L, E, V, N = (config.max_seq_length, config.resolved_embedding_size, d.vocab_size,
                config.max_predictions_per_seq)
  disc = encoder_matmul_flops(L, E, d.hidden_size, d.intermediate_size, d.num_hidden_layers)
  disc += 2.0 * L * d.hidden_size * (d.hidden_size + 1)
  gen = encoder_matmul_flops(L, E, g.hidden_size, g.intermediate_size, g.num_hidden_layers)
  gen += 2.0 * N * (g.hidden_size * E + E * V)
  return 3.0 * batch * (disc + gen)


@command
def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(
                                   description=__doc__.split("\n\n")[0])
  parser.add_argument("models", nargs="*", default=["electra_small", "electra_base",
                                                    "electra_large"])
  parser.add_argument("--hparams", default="{}", help="JSON hparams applied to every model")
  args = parser.parse_args(argv)
  from electra_tf2.config.pretraining import resolve_pretraining_config
  print(f"{'model':<24}{'FLOPs/step':>14}{'steps':>12}{'pre-training FLOPs':>22}")
  for name in args.models:
    config = resolve_pretraining_config(name, None, args.hparams)
    per_step = pretraining_flops_per_step(config)
    print(f"{name:<24}{per_step:>14.3e}{config.num_train_steps:>12,}"
          f"{per_step * config.num_train_steps:>22.3e}")
  return 0
