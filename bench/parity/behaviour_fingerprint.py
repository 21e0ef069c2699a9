"""The arrays of a behaviour fingerprint (bench/parity/behaviour_fingerprint.sh), and their
comparison.

  python -m bench.parity.behaviour_fingerprint dump OUT          # OUT/fingerprint.npz
  python -m bench.parity.behaviour_fingerprint compare A.npz B.npz

`compare` prints every array that differs (bit for bit; NaN equals NaN) and exits 1 if any does.
It imports nothing from this repository: behaviour_fingerprint.sh runs it as a file, with the
tree under test (which may predate bench/ as a package) on PYTHONPATH.
"""

import argparse
import glob
import os
import sys

import numpy as np

TEXTS = ["The chef cooked the meal.", "A dull, empty film with NO ideas at all!!",
         "naïve Café ß ǅ 東京 text", " ".join(["long"] * 300)]


def checkpoint_arrays(out):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  arrays = {}
  for index in sorted(glob.glob(f"{out}/data/models/**/ckpt-*.index", recursive=True)):
    reader = tf.train.load_checkpoint(index[:-len(".index")])
    for name in reader.get_variable_to_shape_map():
      try:
        value = reader.get_tensor(name)
      except Exception:  # pylint: disable=broad-except  (the data iterator's state)
        continue
      if isinstance(value, np.ndarray) and value.dtype != object:
        arrays[f"ckpt:{os.path.relpath(index, out)}:{name}"] = value
  return arrays


def export_arrays(out):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_text  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  arrays = {}
  for directory in sorted(glob.glob(f"{out}/exp_*")):
    for name, function in tf.saved_model.load(directory).signatures.items():
      inputs = set(function.structured_input_signature[1])
      if inputs == {"text"}:
        outputs = function(text=tf.constant(TEXTS))
      elif inputs == {"text", "text_b"}:
        outputs = function(text=tf.constant(TEXTS), text_b=tf.constant(TEXTS[::-1]))
      else:
        continue
      for key, value in outputs.items():
        arrays[f"pred:{os.path.basename(directory)}:{name}:{key}"] = value.numpy()
  return arrays


def dump(out):
  arrays = {**checkpoint_arrays(out), **export_arrays(out)}
  for path in sorted(glob.glob(f"{out}/data/models/**/results/**/*.json", recursive=True)):
    with open(path, "rb") as f:
      arrays[f"file:{os.path.relpath(path, out)}"] = np.frombuffer(f.read(), np.uint8)
  np.savez(os.path.join(out, "fingerprint.npz"), **arrays)
  print(f"{len(arrays)} arrays in {out}/fingerprint.npz")


def same(a, b):
  if a.shape != b.shape or a.dtype != b.dtype:
    return False
  return np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")


def compare(path_a, path_b):
  a, b = np.load(path_a, allow_pickle=True), np.load(path_b, allow_pickle=True)
  only = sorted(set(a.files) ^ set(b.files))
  differ = [k for k in sorted(set(a.files) & set(b.files)) if not same(a[k], b[k])]
  for key in differ:
    x, y = a[key], b[key]
    gap = (np.max(np.abs(x.astype(float) - y.astype(float)))
           if x.shape == y.shape and x.dtype.kind in "fiu" else "n/a")
    print(f"DIFF {key} {x.shape} {y.shape} max |difference| {gap}")
  print(f"{len(set(a.files) & set(b.files))} compared, {len(differ)} differ, "
        f"{len(only)} in one only{': ' + ', '.join(only[:5]) if only else ''}")
  return 1 if differ or only else 0


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  sub = parser.add_subparsers(dest="command", required=True)
  sub.add_parser("dump").add_argument("out")
  pair = sub.add_parser("compare")
  pair.add_argument("a")
  pair.add_argument("b")
  args = parser.parse_args()
  if args.command == "dump":
    dump(args.out)
    return 0
  return compare(args.a, args.b)


if __name__ == "__main__":
  sys.exit(main())
