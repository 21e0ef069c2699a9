"""The one naming rule of exported outputs (SavedModels, `.tflite` files, both paths).

An output is named as the Keras task models name it (`TextClassifier.serve_features`,
`TokenClassifier.serve_features`), whichever path wrote the file:

  classification  `logits` [batch, classes], `probabilities` [batch, classes] (softmax),
                  `label` [batch] (the label string of the argmax);
  regression      `score` [batch];
  tagging         `logits` [batch, seq_len, tags], `labels` [batch, seq_len] (strings).

`electra export --kind finetuned` of a model with several task heads prefixes each
head's names with `<task>_` (`mnli_logits`, `chunk_labels`), as they would collide.

Before this rule, `electra export --kind finetuned` named every output `<task>_<name>`
(`sst_logits`, `sst_predictions` (class ids), `sst_label`). A SavedModel keeps those
names as aliases (electra_tf2/serving/export.py `finetuned_outputs`); a `.tflite` has the rule's
names only, and `LiteRTModel` gives the rule's names to a file written before it as well
(`rule_aliases`). A question-answering head's outputs (`start_logits`, ...) follow the
same one-head / several-heads rule. No TensorFlow here: LiteRTModel reads it.
"""

from __future__ import annotations

from typing import Dict, Sequence

def output_name(task: str, name: str, num_heads: int) -> str:
  """`name` alone for a model with one head; `<task>_<name>` for several."""
  return name if num_heads == 1 else f"{task}_{name}"


def rule_aliases(names: Sequence[str]) -> Dict[str, str]:
  """{rule name: old name} for the outputs of a single-head `.tflite` written by
  `electra export --kind finetuned` before the rule (all of them `<task>_logits`,
  `<task>_predictions`, `<task>_label` of one task); {} for any other file.

  >>> rule_aliases(["input_ids", "sst_label", "sst_logits", "sst_predictions"])
  {'logits': 'sst_logits', 'label': 'sst_label'}
  >>> rule_aliases(["input_ids", "sts_predictions"])
  {'score': 'sts_predictions'}
  >>> rule_aliases(["label", "logits", "probabilities"])
  {}
  """
  suffixes = ("_logits", "_predictions", "_label")
  old = [n for n in names if n.endswith(suffixes)]
  tasks = {n[:n.rindex("_")] for n in old}
  if len(tasks) != 1 or any(n in names for n in ("logits", "label", "score")):
    return {}
  task = tasks.pop()
  aliases = {name: f"{task}_{name}" for name in ("logits", "label")
             if f"{task}_{name}" in names}
  if not aliases:  # a regression head's only output
    aliases["score"] = f"{task}_predictions"
  return aliases
