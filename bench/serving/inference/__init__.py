"""Raw-text inference, ours against PyTorch and ONNX Runtime: fixtures, sides, timing.

- texts.py: the inputs (SST-2 dev, MRPC dev pairs; the embedded corpus without ../shared);
- models.py: `ModelFixture`, random classifiers of the released shapes built by transformers;
- side.py: the interface every side implements, and the table of sides by name:
    build(fixture) -> Side(name, predict, reference, note), registered with
    `@register("name")`; `predict(texts)` takes columns of raw strings (`[texts]` or
    `[texts_a, texts_b]`) and returns float32 logits `[batch, num_labels]`;
- anchors.py: PyTorch eager, ONNX Runtime float32 (fused) and dynamic int8;
- ours.py: our SavedModel, Keras predict, `electra export --kind finetuned`, TextScorer;
- litert.py: our `.tflite` files (export_litert: float32, float16, dynamic int8, int8)
  run by LiteRTModel;
- timing.py: the alternating timer.

The command is bench/serving/inference_throughput.py. A new side (another runtime) is a module
here with its registered builders, imported below.
"""

from bench.serving.inference import anchors, litert, ours  # noqa: F401  (they register their sides)
