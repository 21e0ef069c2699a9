"""Shared test set-up: quiet TensorFlow, CPU only, the location of ../shared/data, and
(ELECTRA_BLOCK_TENSORFLOW=1, tests/block_tensorflow.py) TensorFlow made unimportable."""

import os
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
# XLA compiles with LLVM's optimisations off in the tests (TensorFlow's jit_compile paths,
# every JAX program and eager JAX op, here and in the subprocesses that inherit it): the same
# HLO and the same numbers, compiled in about two thirds of the CPU time (measured on the JAX
# and XLA test files: 82 -> 52 and 87 -> 56 CPU seconds); the suite compiles far more than it
# runs. An XLA_FLAGS of the caller's that sets the level is kept.
if "--xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
  os.environ["XLA_FLAGS"] = " ".join(
      filter(None, [os.environ.get("XLA_FLAGS"), "--xla_backend_optimization_level=0"]))



def at_xla_default_level(env: dict) -> dict:
  """`env` without an XLA optimisation level in XLA_FLAGS (the one set above included): XLA's
  default level, at which the few JAX tests that compare runs (parity, bit-identity, two
  devices) run once more, as users' programs compile."""
  flags = [flag for flag in env.get("XLA_FLAGS", "").split()
           if not flag.startswith("--xla_backend_optimization_level")]
  return {**env, "XLA_FLAGS": " ".join(flags)}


if os.environ.get("ELECTRA_BLOCK_TENSORFLOW") == "1":  # before anything imports TensorFlow
  sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
  import block_tensorflow  # noqa: E402,F401  pylint: disable=g-import-not-at-top,unused-import

import pytest  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DATA = os.environ.get("ELECTRA_SHARED_DATA",
                             os.path.join(os.path.dirname(REPO_ROOT), "shared", "data"))


def shared_data_path(*parts: str) -> str:
  """A path under ../shared/data; skips the test with a reason when it is missing."""
  path = os.path.join(SHARED_DATA, *parts)
  if not os.path.exists(path):
    pytest.skip(f"needs {path} (the project's shared test data, present in CI at ../shared; "
                "set ELECTRA_SHARED_DATA to point elsewhere)")
  return path


# The test files that take longest (measured: `pytest --durations=0`, summed per file, on 2
# cores), longest first. scripts/test.sh runs the suite with `--dist loadfile
# --no-loadscope-reorder`: xdist hands each worker whole files in collection order, so these
# start first and the short files fill in at the end, instead of a long file starting last.
LONGEST_FIRST = ("test_question_answerer.py", "test_faults.py", "test_export.py",
                 "test_jax_pretraining.py", "test_jax_multihost.py",
                 "test_xla_default_level.py", "test_pretraining.py", "test_litert.py",
                 "test_finetune_e2e.py", "test_pretraining_distributed.py",
                 "test_keras_models.py", "test_backends.py", "test_languages.py",
                 "test_litert_tokenizer.py", "test_keras_backends.py")


# The reasons a test may skip for (regular expressions matched at the start of the reason);
# a skip for any other reason fails the session (pytest_sessionfinish), so that a test
# that stopped running, in CI too, is seen.
ALLOWED_SKIPS = (
    # shared_data_path: a checkout without ../shared/data (CI has it)
    r"needs \S+ \(the project's shared test data",
    # an optional package that is not installed (an extra of pyproject.toml; TensorFlow and
    # its packages on the TensorFlow-blocked runs of tests/test_backends.py)
    r"could not import '(tensorflow|tensorflow_text|official\.nlp\.tools\.tokenization|"
    r"apache_beam|transformers|torch|jax|mediapipe)'",
    r"(Apache Beam|mediapipe) is not installed", r"needs (jax|torch) for KERAS_BACKEND=",
    # tests/backend_marks.py: a test of one Keras backend's own machinery, on another backend
    r"(TensorFlow|JAX)-specific",
    # a docs block marked `<!-- not run: REASON -->` (tests/test_docs.py checks the reason)
    r"\S+:\d+ is marked <!-- not run: ",
)
_UNALLOWED_SKIPS = []


def _record_skip(report) -> None:
  """Notes `report`'s skip if its reason is not in ALLOWED_SKIPS (an xfail is no skip)."""
  if not report.skipped or hasattr(report, "wasxfail"):
    return
  longrepr = report.longrepr
  reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
  reason = reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason
  if not any(re.match(allowed, reason) for allowed in ALLOWED_SKIPS):
    _UNALLOWED_SKIPS.append(f"{report.nodeid}: {reason}")


def pytest_runtest_logreport(report):
  _record_skip(report)


def pytest_collectreport(report):
  _record_skip(report)


def pytest_sessionfinish(session):
  """Fails the session on a skip that ALLOWED_SKIPS does not allow (under pytest-xdist, in
  the controller, which receives every worker's reports)."""
  if _UNALLOWED_SKIPS and not hasattr(session.config, "workerinput"):
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, config):
  if _UNALLOWED_SKIPS and not hasattr(config, "workerinput"):
    terminalreporter.section("skips for a reason not in tests/conftest.py ALLOWED_SKIPS",
                             red=True)
    for line in _UNALLOWED_SKIPS:
      terminalreporter.line(line, red=True)


def pytest_collection_modifyitems(items):
  """Collection order: LONGEST_FIRST's files first, the others as collected."""
  rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
  items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
