"""Run in a subprocess by tests/test_keras_hub.py on one Keras backend (KERAS_BACKEND):
keras-hub loads the exported presets; prints, as JSON, its token ids and sequence outputs
next to ours (electra_tf2's features and encoder of the same preset, from_pretrained)."""

import json
import sys

import keras
import keras_hub
import numpy as np

import electra_tf2

work = json.loads(sys.argv[1])
out = {"backend": keras.backend.backend()}
for name, (preset, texts) in work.items():
  backbone = keras_hub.models.ElectraBackbone.from_preset(preset)
  tokenizer = keras_hub.models.ElectraTokenizer.from_preset(preset)
  ours = electra_tf2.TextClassifier.from_pretrained(preset, num_classes=2)
  features = ours.featurize(texts)
  theirs = backbone({"token_ids": features["input_ids"], "segment_ids": features["segment_ids"],
                     "padding_mask": features["input_mask"]})["sequence_output"]
  mask = features["input_mask"].astype(bool)
  encoded = keras.ops.convert_to_numpy(ours.encode(features))
  ids_equal = all(
      np.asarray(tokenizer(text)).tolist() == row[1:int(row_mask.sum()) - 1].tolist()
      for text, row, row_mask in zip(texts, features["input_ids"], features["input_mask"]))
  out[name] = {"ids_equal": ids_equal, "input_ids": features["input_ids"].tolist(),
               "keras_hub": keras.ops.convert_to_numpy(theirs)[mask].tolist(),
               "from_pretrained_diff": float(np.abs(keras.ops.convert_to_numpy(theirs)
                                                    - encoded)[mask].max())}
print("RESULT " + json.dumps(out))
