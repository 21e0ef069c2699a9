"""Every model variable has a home in the official checkpoint layout (spec section 4.2).

The oracle is the official variable list, written here from the spec's
template, independently of electra_tf2/networks/variable_names.py.
"""

from typing import Dict, Tuple

import pytest

from electra_tf2.networks import variable_names
from electra_tf2.config.pretraining import resolve_pretraining_config
from electra_tf2.models.pretrainer import ElectraPretrainer

Shapes = Dict[str, Tuple[int, ...]]


def official_embeddings(scope: str, V: int, E: int) -> Shapes:
  return {f"{scope}/embeddings/word_embeddings": (V, E),
          f"{scope}/embeddings/token_type_embeddings": (2, E),
          f"{scope}/embeddings/position_embeddings": (512, E),
          f"{scope}/embeddings/LayerNorm/beta": (E,),
          f"{scope}/embeddings/LayerNorm/gamma": (E,)}


def official_encoder(scope: str, E: int, H: int, I: int, L: int) -> Shapes:
  names: Shapes = {}
  if E != H:
    names[f"{scope}/embeddings_project/kernel"] = (E, H)
    names[f"{scope}/embeddings_project/bias"] = (H,)
  for k in range(L):
    p = f"{scope}/encoder/layer_{k}"
    for part in ("query", "key", "value"):
      names[f"{p}/attention/self/{part}/kernel"] = (H, H)
      names[f"{p}/attention/self/{part}/bias"] = (H,)
    names[f"{p}/attention/output/dense/kernel"] = (H, H)
    names[f"{p}/attention/output/dense/bias"] = (H,)
    names[f"{p}/attention/output/LayerNorm/beta"] = (H,)
    names[f"{p}/attention/output/LayerNorm/gamma"] = (H,)
    names[f"{p}/intermediate/dense/kernel"] = (H, I)
    names[f"{p}/intermediate/dense/bias"] = (I,)
    names[f"{p}/output/dense/kernel"] = (I, H)
    names[f"{p}/output/dense/bias"] = (H,)
    names[f"{p}/output/LayerNorm/beta"] = (H,)
    names[f"{p}/output/LayerNorm/gamma"] = (H,)
  return names


def official_mlm_head(scope: str, h: int, E: int, V: int) -> Shapes:
  return {f"{scope}/dense/kernel": (h, E), f"{scope}/dense/bias": (E,),
          f"{scope}/LayerNorm/beta": (E,), f"{scope}/LayerNorm/gamma": (E,),
          f"{scope}/output_bias": (V,)}


def official_discriminator(V, E, H, L) -> Shapes:
  """`electra/` (embeddings and encoder) and `discriminator_predictions/`."""
  names = official_embeddings("electra", V, E)
  names.update(official_encoder("electra", E, H, 4 * H, L))
  names.update({"discriminator_predictions/dense/kernel": (H, H),
                "discriminator_predictions/dense/bias": (H,),
                "discriminator_predictions/dense_1/kernel": (H, 1),
                "discriminator_predictions/dense_1/bias": (1,)})
  return names


def official_electra_checkpoint(V, E, H, L, h, Lg) -> Shapes:
  """The default-objective pre-training checkpoint (model/modeling.py, run_pretraining.py) (no global_step/adam)."""
  names = official_discriminator(V, E, H, L)
  names.update(official_encoder("generator", E, h, 4 * h, Lg))
  names.update(official_mlm_head("generator_predictions", h, E, V))
  return names


def model_shapes(model) -> Shapes:
  mapping = variable_names.pretrainer_variable_map(model)
  # Each trainable variable appears exactly once, under exactly one name.
  assert len({id(v) for v in mapping.values()}) == len(mapping)
  assert {id(v) for v in mapping.values()} == {id(v) for v in model.trainable_variables}
  return {name: tuple(v.shape) for name, v in mapping.items()}


@pytest.mark.parametrize("model_name,V,E,H,L,h", [
    ("electra_small", 30522, 128, 256, 12, 64),
    ("electra_base", 30522, 768, 768, 12, 256),
    ("electra_small_released", 30522, 128, 256, 12, 256),
])
def test_official_layout_names_and_shapes(model_name, V, E, H, L, h):
  model = ElectraPretrainer.from_pretraining_config(resolve_pretraining_config(model_name))
  expected = official_electra_checkpoint(V, E, H, L, h, L)
  got = model_shapes(model)
  assert sorted(set(got) - set(expected)) == []
  assert sorted(set(expected) - set(got)) == []
  assert {n: s for n, s in got.items() if expected[n] != s} == {}


def test_electric_layout():
  config = resolve_pretraining_config("electra_small", None,
                                      {"debug": True, "electric_objective": True})
  V, E, H, L, h = 30522, 128, 144, 3, 36
  expected = official_discriminator(V, E, H, L)
  expected.update(official_encoder("generator_ltr", E, h, 4 * h, L))
  expected.update(official_encoder("generator_rtl", E, h, 4 * h, L))
  expected.update(official_mlm_head("cloze_predictions", 2 * h, E, V))
  assert model_shapes(ElectraPretrainer.from_pretraining_config(config)) == expected


def test_untied_generator_embeddings_layout():
  # Official: the generator is built with embedding_size=None, so its own embeddings
  # are as wide as its hidden size (36) and it has no embeddings_project; the MLM
  # head's dense maps to that width (run_pretraining.py:80-86, 254-268).
  config = resolve_pretraining_config("electra_small", None,
                                      {"debug": True, "untied_generator_embeddings": True})
  V, E, H, L, h = 30522, 128, 144, 3, 36
  expected = official_discriminator(V, E, H, L)
  expected.update(official_embeddings("generator", V, h))
  expected.update(official_encoder("generator", h, h, 4 * h, L))
  expected.update(official_mlm_head("generator_predictions", h, h, V))
  assert "generator/embeddings_project/kernel" not in expected
  assert model_shapes(ElectraPretrainer.from_pretraining_config(config)) == expected


def test_electric_untied_embeddings_layout():
  # Each tower gets its own h-wide embeddings; the cloze head is tied to the ltr
  # tower's table (run_pretraining.py:291-309).
  config = resolve_pretraining_config("electra_small", None,
                                      {"debug": True, "electric_objective": True,
                                       "untied_generator_embeddings": True})
  V, E, H, L, h = 30522, 128, 144, 3, 36
  expected = official_discriminator(V, E, H, L)
  for tower in ("generator_ltr", "generator_rtl"):
    expected.update(official_embeddings(tower, V, h))
    expected.update(official_encoder(tower, h, h, 4 * h, L))
  expected.update(official_mlm_head("cloze_predictions", 2 * h, h, V))
  assert model_shapes(ElectraPretrainer.from_pretraining_config(config)) == expected


@pytest.mark.parametrize("model_name,h", [("electra_small", 64), ("electra_base", 256)])
def test_param_counts_follow_untied_generator_embeddings(model_name, h):
  from electra_tf2.models.param_counts import count_by_part
  config = resolve_pretraining_config(model_name, None, {"untied_generator_embeddings": True})
  got = count_by_part(model_shapes(ElectraPretrainer.from_pretraining_config(config)))
  bert = config.bert_config
  tied = count_by_part(model_shapes(ElectraPretrainer.from_pretraining_config(
      resolve_pretraining_config(model_name))))
  E, V = config.resolved_embedding_size, bert.vocab_size
  # Untying adds the generator's own h-wide embedding block; the E -> h projection
  # goes, and the MLM dense becomes h x h instead of h x E (its LayerNorm h-wide).
  own_embeddings = (V + 2 + 512) * h + 2 * h
  project = (E * h + h) if E != h else 0
  head_change = (h * h + h + 2 * h) - (h * E + E + 2 * E)
  assert got["discriminator"] == tied["discriminator"]
  assert got["generator"] == tied["generator"] + own_embeddings - project + head_change


def test_bert_objective_and_tied_generator_layouts():
  config = resolve_pretraining_config(
      "electra_small", None, {"debug": True, "electra_objective": False,
                              "untied_generator": False, "generator_hidden_size": 1.0})
  expected = official_embeddings("electra", 30522, 128)
  expected.update(official_encoder("electra", 128, 144, 576, 3))
  expected.update(official_mlm_head("generator_predictions", 144, 128, 30522))
  assert model_shapes(ElectraPretrainer.from_pretraining_config(config)) == expected


@pytest.mark.parametrize("model_name,V,E,H,L,h", [
    ("electra_small", 30522, 128, 256, 12, 64),
    ("electra_base", 30522, 768, 768, 12, 256),
])
def test_param_counts_match_official_shapes(model_name, V, E, H, L, h):
  from electra_tf2.models.param_counts import count_by_part, model_param_counts
  counts = model_param_counts(model_name)
  assert counts == count_by_part(official_electra_checkpoint(V, E, H, L, h, L))
  # The paper's rounded sizes: Small 14M, Base 110M discriminators.
  want_millions = {"electra_small": 14, "electra_base": 110}[model_name]
  assert round(counts["discriminator"] / 1e6) in (want_millions - 1, want_millions)


def test_param_counts_command_line(capsys):
  from electra_tf2.models.param_counts import count_by_part, main
  with pytest.raises(SystemExit) as exit_info:  # argparse's --help
    main(["--help"])
  assert exit_info.value.code == 0
  assert "Parameter counts of the pre-training models" in capsys.readouterr().out
  assert main(["electra_tiny"]) == 2
  assert "error: unknown model name 'electra_tiny'" in capsys.readouterr().err
  assert main(["electra_small"]) == 0
  name, disc, gen, total = capsys.readouterr().out.splitlines()[1].split()
  counts = count_by_part(official_electra_checkpoint(30522, 128, 256, 12, 64, 12))
  assert name == "electra_small"
  assert [int(v.replace(",", "")) for v in (disc, gen, total)] == [
      counts["discriminator"], counts["generator"], counts["total"]]
