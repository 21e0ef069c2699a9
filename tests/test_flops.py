"""FLOPs counted the paper's way, against the figures of the official flops_computation.py.

Oracle: the numbers printed by `python3 flops_computation.py` of google-research/electra
(its MODEL_FLOPS table) and the paper's Table 1 inference FLOPs.
"""

import pytest

from electra_tf2.pretraining import flops
from electra_tf2.config.pretraining import resolve_pretraining_config


@pytest.mark.parametrize("name,value,want", [
    ("electra_small", flops.electra_train_flops(256, 12, 64, 12, 128, 1e6, True, s=128, e=128),
     1.29e18),
    ("bert_small", flops.TransformerShape(256, 12, e=128, s=128).train_flops(128, 1.45e6),
     1.42e18),
    ("electra_base", flops.electra_train_flops(768, 12, 256, 12, 256, 766000, True), 6.42e19),
    ("bert_base", flops.TransformerShape(768, 12).train_flops(256, 1e6), 6.43e19),
    ("bert_large", flops.TransformerShape(1024, 24).train_flops(256, 1e6), 1.92e20),
    ("electra_400k", flops.electra_train_flops(1024, 24, 256, 24, 2048, 400000, True), 7.12e20),
    ("electra_1.75M", flops.electra_train_flops(1024, 24, 256, 24, 2048, 1750000, True),
     3.11e21),
    ("gpt", flops.TransformerShape(768, 12, v=40000, output_frac=1.0).train_flops(128, 960800),
     3.97e19),
    ("roberta", flops.TransformerShape(1024, 24, v=50265).train_flops(8000, 500000), 3.19e21),
    ("small inference", flops.TransformerShape(256, 12, e=128, s=128).inference_flops(), 3.68e9),
    ("base inference", flops.TransformerShape(768, 12, s=128).inference_flops(), 2.86e10),
])
def test_official_table(name, value, want):
  # The official table is printed with three significant digits.
  assert value == pytest.approx(want, rel=0.005), name


def test_config_flops_per_step():
  """electra_small for 1M steps is the paper's 1.29e18 (the MLM softmax on 19 of 128
  tokens here, 20 in the official table); MLM-only BERT-Small 1.45M steps 1.42e18."""
  small = resolve_pretraining_config("electra_small")
  per_step = flops.pretraining_flops_per_step(small)
  assert per_step * 1e6 == pytest.approx(flops.electra_train_flops(
      256, 12, 64, 12, 128, 1e6, True, s=128, e=128, output_frac=19 / 128))
  assert per_step * 1e6 == pytest.approx(1.29e18, rel=0.01)
  bert = resolve_pretraining_config("electra_small", None, {
      "electra_objective": False, "untied_generator": False, "generator_hidden_size": 1.0})
  assert flops.pretraining_flops_per_step(bert) * 1.45e6 == pytest.approx(1.42e18, rel=0.01)
  # A bigger generator costs more; a uniform one nothing beyond the discriminator.
  half = resolve_pretraining_config("electra_small", None, {"generator_hidden_size": 0.5})
  uniform = resolve_pretraining_config("electra_small", None, {"uniform_generator": True})
  assert (flops.pretraining_flops_per_step(uniform) < per_step
          < flops.pretraining_flops_per_step(half))


def test_command_line(capsys):
  assert flops.main(["electra_small"]) == 0
  row = capsys.readouterr().out.splitlines()[1].split()
  assert row[0] == "electra_small" and float(row[-1]) == pytest.approx(1.29e18, rel=0.01)
  assert flops.main(["electra_tiny"]) == 2
  assert "unknown model name 'electra_tiny'" in capsys.readouterr().err


def test_matmul_flops_of_the_benches():
  """Hand count, length 4, embedding 2, hidden 4, intermediate 8, one layer: the projection
  2*4*2*4 = 64; q, k, v, output 2*4*4*16 = 512; scores and values 4*16*4 = 256; feed-forward
  4*4*4*8 = 512."""
  assert flops.encoder_matmul_flops(4, 2, 4, 8, 1) == 64 + 512 + 256 + 512
  assert flops.encoder_matmul_flops(4, 4, 4, 8, 2) == 2 * (512 + 256 + 512)
  small = resolve_pretraining_config("electra_small")
  one = flops.train_step_flops(small, 1)
  assert flops.train_step_flops(small, 128) == pytest.approx(128 * one)
  # 3 x forward of discriminator (256 wide, 12 layers, head 256x257 per token) and generator
  # (64 wide, 12 layers, MLM head on 19 positions: 64x128 + 128x30522).
  disc = 12 * (2 * 128 * 256 * 1024 + 4 * 128 * 128 * 256 + 4 * 128 * 256 * 1024) \
      + 2 * 128 * 128 * 256 + 2 * 128 * 256 * 257
  gen = 12 * (2 * 128 * 64 * 256 + 4 * 128 * 128 * 64 + 4 * 128 * 64 * 256) \
      + 2 * 128 * 128 * 64 + 2 * small.max_predictions_per_seq * (64 * 128 + 128 * 30522)
  assert one == pytest.approx(3 * (disc + gen))
