"""What the machine is: GPU, driver, TensorFlow (or JAX) and its CUDA build, PyTorch, Python.

    python -m bench.gpu.gpu_env [--backend tensorflow|jax] [--json FILE]

Prints one JSON object (and appends it to FILE): nvidia-smi's GPU name, driver,
memory and clocks as the machine reports them, TensorFlow's version, CUDA and
cuDNN build, the GPUs it sees and whether TF32 is on (with `--backend jax`
instead: the versions of jax, jaxlib, keras and the devices JAX sees; no
TensorFlow is imported), the torch version and its CUDA (and transformers'
version), and the Python and CPU count.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from typing import Any, Dict

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from bench import common  # noqa: E402
from bench.common import append_json  # noqa: E402

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


def jax_info() -> Dict[str, Any]:
  import jax
  import jaxlib
  import keras
  return {"version": jax.__version__, "jaxlib": jaxlib.__version__, "keras": keras.__version__,
          "keras_backend": keras.backend.backend(), "default_backend": jax.default_backend(),
          "devices": [f"{d.platform}: {d.device_kind}" for d in jax.devices()]}


def torch_info() -> Dict[str, Any]:
  try:
    import torch
  except ImportError:
    return {"error": "not installed"}
  try:
    import transformers
    transformers_version = transformers.__version__
  except ImportError:
    transformers_version = None
  return {"version": torch.__version__, "cuda": torch.version.cuda,
          "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
          "transformers": transformers_version}


def main(argv=None) -> Dict[str, Any]:
  parser = common.script_parser(__doc__, whole=False)
  parser.add_argument("--backend", choices=("tensorflow", "jax"), default="tensorflow")
  parser.add_argument("--json", default=None)
  args = parser.parse_args(argv)
  framework = ({"jax": jax_info()} if args.backend == "jax" else
               {"tensorflow": tensorflow_info()})
  record = {"nvidia_smi": nvidia_smi(), **framework, "torch": torch_info(),
            "python": sys.version.split()[0], "platform": platform.platform(),
            "cpus": os.cpu_count()}
  print(record, flush=True)
  append_json(args.json, record)
  return record


if __name__ == "__main__":
  common.block_tensorflow_if_asked()
  main()
