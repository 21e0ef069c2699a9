"""What the machine is: GPU, driver, TensorFlow and its CUDA build, PyTorch, Python.

    python bench/gpu_env.py [--json FILE]

Prints one JSON object (and appends it to FILE): nvidia-smi's GPU name, driver,
memory and clocks as the machine reports them, TensorFlow's version, CUDA and
cuDNN build, the GPUs it sees and whether TF32 is on, the torch version and
its CUDA, and the Python and CPU count.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
from typing import Any, Dict

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from common import append_json  # noqa: E402

SMI_FIELDS = ("name", "driver_version", "memory.total", "clocks.max.sm", "clocks.max.memory",
              "power.limit", "compute_cap")


def nvidia_smi() -> Dict[str, Any]:
  try:
    out = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(SMI_FIELDS)}",
                          "--format=csv,noheader"], capture_output=True, text=True,
                         timeout=60, check=True).stdout
  except (OSError, subprocess.SubprocessError) as e:
    return {"error": f"nvidia-smi: {e}"}
  return {"gpus": [dict(zip(SMI_FIELDS, (v.strip() for v in line.split(","))))
                   for line in out.splitlines() if line.strip()]}


def tensorflow_info() -> Dict[str, Any]:
  import tensorflow as tf
  build = tf.sysconfig.get_build_info()
  gpus = tf.config.list_physical_devices("GPU")
  return {"version": tf.__version__, "cuda_build": build.get("cuda_version"),
          "cudnn_build": build.get("cudnn_version"),
          "gpus": [tf.config.experimental.get_device_details(g) for g in gpus],
          "tf32": tf.config.experimental.tensor_float_32_execution_enabled()}


def torch_info() -> Dict[str, Any]:
  try:
    import torch
  except ImportError:
    return {"error": "not installed"}
  return {"version": torch.__version__, "cuda": torch.version.cuda,
          "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}


def main(argv=None) -> Dict[str, Any]:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--json", default=None)
  args = parser.parse_args(argv)
  record = {"nvidia_smi": nvidia_smi(), "tensorflow": tensorflow_info(), "torch": torch_info(),
            "python": sys.version.split()[0], "platform": platform.platform(),
            "cpus": os.cpu_count()}
  print(record, flush=True)
  append_json(args.json, record)
  return record


if __name__ == "__main__":
  main()
