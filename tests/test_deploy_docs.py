"""docs/deploy.md's example runs: on a tiny random Hugging Face classifier built here."""

import os
import re

import numpy as np

from conftest import REPO_ROOT
from hf_models import save_hf_model  # noqa: E402  (sets USE_TF=0 first)


def test_deploy_page_example_runs(tmp_path, monkeypatch):
  with open(os.path.join(REPO_ROOT, "docs", "deploy.md"), encoding="utf-8") as f:
    example = re.search(r"```python\n(.*?)```", f.read(), re.S).group(1)
  assert len([line for line in example.splitlines() if line.strip()]) <= 10
  monkeypatch.chdir(tmp_path)
  save_hf_model(str(tmp_path / "electra-small-sst2"), "ElectraForSequenceClassification",
                num_labels=2)
  namespace = {}
  exec(compile(example, "docs/deploy.md", "exec"), namespace)  # pylint: disable=exec-used
  model, out = namespace["model"], namespace["out"]
  assert os.path.isfile("sst2.tflite") and namespace["lite"].settings["quantize"] == "dynamic-int8"
  expected = model.predict(["a fine film", "a dull , empty film"], verbose=0)
  probabilities = np.exp(expected) / np.exp(expected).sum(-1, keepdims=True)
  np.testing.assert_allclose(out["probabilities"], probabilities, atol=0.02)
  assert out["label"].tolist() == [model.label_list[i].encode() for i in expected.argmax(-1)]
