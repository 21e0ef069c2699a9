"""docs/keras.md's example runs: on a tiny random Hugging Face checkpoint built here."""

import os
import re

import numpy as np

from conftest import REPO_ROOT
from hf_models import save_hf_model  # noqa: E402  (sets USE_TF=0 first)


def test_keras_page_example_runs(tmp_path, monkeypatch, capsys):
  with open(os.path.join(REPO_ROOT, "docs", "keras.md"), encoding="utf-8") as f:
    example = re.search(r"```python\n(.*?)```", f.read(), re.S).group(1)
  assert 12 <= len([line for line in example.splitlines() if line.strip()]) <= 20
  monkeypatch.chdir(tmp_path)
  save_hf_model(str(tmp_path / "electra-small-discriminator"))
  namespace = {}
  exec(compile(example, "docs/keras.md", "exec"), namespace)  # pylint: disable=exec-used
  assert os.path.exists("classifier.keras") and os.path.isdir("classifier_savedmodel")
  model, serve, tf = namespace["model"], namespace["serve"], namespace["tf"]
  expected = model.predict(["what a fine film"], verbose=0)
  served = serve(text=tf.constant(["what a fine film"]))
  np.testing.assert_allclose(served["logits"], expected, atol=1e-6)
  assert int(model.optimizer.iterations) == 3  # 3 epochs of one batch
