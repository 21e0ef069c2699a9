"""The JAX trainer's run comparisons at XLA's default optimisation level.

tests/conftest.py lowers XLA's optimisation level for the whole suite (the same programs,
compiled in less time); the JAX trainer's run comparisons run here at the level users'
programs compile at: a resume bit for bit (tests/test_jax_pretraining.py resumes after
SIGTERM and kill -9 at the lowered level) and two devices against one (here only). In a
file of its own, so that pytest-xdist runs it beside tests/test_jax_pretraining.py.
"""

import json
import os
import shutil

import pytest

from electra_tf2.checkpoints import portable
from tests.test_jax_pretraining import assert_same_checkpoint, metrics, train
from tests.test_pretraining import tiny_data


@pytest.mark.slow
def test_resume_and_two_devices_agree_at_xla_default_level(tmp_path):
  """A run resumed from its step-4 checkpoint ends bit for bit as the run straight through,
  and two devices give its losses (8 steps, a checkpoint every 2)."""
  data, cache = tiny_data(tmp_path), str(tmp_path / "jax_cache")
  # One micro-batch a step: half the program to compile at this level (accumulation's
  # resume is tests/test_jax_pretraining.py's, at the lowered level).
  short = {"num_train_steps": 8, "save_checkpoints_steps": 2, "gradient_accumulation_steps": 1}
  whole, parts, sharded = (str(tmp_path / name) for name in ("whole", "parts", "sharded"))
  train(data, whole, cache, xla_default=True, **short)
  shutil.copytree(whole, parts)
  for path in portable.all_checkpoints(parts):
    if portable.step_of(path) > 4:
      os.remove(path)
      os.remove(path[:-len(".npz")] + ".json")
  assert "resumed from" in train(data, parts, cache, xla_default=True, **short)
  assert_same_checkpoint(whole, parts)
  train(data, sharded, cache, devices=2, xla_default=True, **short)
  summary = json.load(open(os.path.join(sharded, "pretrain_summary.json")))
  assert summary["devices"] == 2
  # The step compiles once per device count (the cache holds the single-device program,
  # which the resumed run found there, and this one): the carried state keeps its
  # shardings from step to step.
  assert len([n for n in os.listdir(cache) if n.startswith("jit__train_step-")]) == 2
  for one, two in zip(metrics(whole), metrics(sharded)):
    for key in ("total_loss", "mlm_loss", "disc_loss"):
      assert two[key] == pytest.approx(one[key], rel=1e-5), (one["step"], key)
