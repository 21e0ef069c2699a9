"""Which ops can run in int8: SST-2 dev accuracy of a `.tflite` classifier with int8
activations for some op types and float32 for the others.

The classifier (a Hugging Face directory, e.g. the SST-2 model of
bench/serving/inference/finetuned.py) is converted once with calibration (100 SST-2 training
sentences, as `export_litert(quantize="int8")`); then quantized with
electra_tf2.litert.convert.quantize_int8 for each set of int8 op types:

- every op (what the converter's full-integer quantization does);
- FULLY_CONNECTED and BATCH_MATMUL only, then each with one more op type;
- INT8_OPS, the set `quantize="int8"` uses.

Prints dev accuracy and agreement with the float32 `.tflite` for each.

  python -m bench.serving.litert_int8_ops --model /tmp/infb/models/sst2_finetuned_0.3ep_seed0
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402

from bench.common import SHARED_DATA, log, script_parser  # noqa: E402

MATMULS = ("FULLY_CONNECTED", "BATCH_MATMUL")
ONE_MORE = ("ADD", "MUL", "SUB", "SOFTMAX", "GELU", "GATHER", "MEAN", "RESHAPE", "TRANSPOSE")


def sst2(data_dir, split):
  with open(os.path.join(data_dir, "glue", "SST-2", f"{split}.tsv"), encoding="utf-8") as f:
    rows = [line.split("\t") for line in f.read().splitlines()[1:]]
  return [r[0] for r in rows], np.array([int(r[1]) for r in rows])


def logits(model_bytes, texts):
  from electra_tf2.litert.model import make_interpreter
  from electra_tf2.text.litert_tokenizer import prepare_texts
  run = make_interpreter(model_content=model_bytes).get_signature_runner("serving_default")
  return np.concatenate([run(text=np.array(prepare_texts(texts[i:i + 32], True), dtype=object))
                         ["logits"] for i in range(0, len(texts), 32)])


def main():
  parser = script_parser(__doc__)
  parser.add_argument("--model", required=True, help="Hugging Face directory of the classifier")
  parser.add_argument("--data-dir", default=SHARED_DATA)
  args = parser.parse_args()
  from electra_tf2 import TextClassifier
  from electra_tf2.litert import convert
  from electra_tf2.text.litert_tokenizer import LiteRTFeaturizer
  model = TextClassifier.from_pretrained(args.model, max_seq_length=128)
  featurizer = LiteRTFeaturizer(model.text_inputs.vocab, model.text_inputs.do_lower_case,
                                max_seq_length=128)

  def serve(text):
    return model.serve_features(featurizer.features(text))
  variables = [v.value for v in model.variables]
  texts, labels = sst2(args.data_dir, "dev")
  calibration = sst2(args.data_dir, "train")[0][:convert.CALIBRATION_STEPS]
  reference = logits(convert.converter(serve, ["text"], variables).convert(), texts).argmax(-1)
  calibrated = convert.converter(serve, ["text"], variables, "int8", calibration).convert()
  log(f"float32: dev accuracy {100 * np.mean(reference == labels):.2f}", "int8")
  sets = {"every op": None, " + ".join(MATMULS): MATMULS}
  sets.update({f"{' + '.join(MATMULS)} + {op}": MATMULS + (op,) for op in ONE_MORE})
  sets["INT8_OPS (quantize='int8')"] = convert.INT8_OPS
  print("\n| int8 op types (the others float32) | dev accuracy | agreement with float32 |\n"
        "|---|---:|---:|")
  for name, ops in sets.items():
    if ops is None:
      from tensorflow.lite.python import convert as lite_convert
      quantized = lite_convert.mlir_quantize(calibrated)
    else:
      quantized = convert.quantize_int8(calibrated, ops)
    predicted = logits(quantized, texts).argmax(-1)
    print(f"| {name} | {100 * np.mean(predicted == labels):.2f} | "
          f"{100 * np.mean(predicted == reference):.2f} |", flush=True)


if __name__ == "__main__":
  main()
