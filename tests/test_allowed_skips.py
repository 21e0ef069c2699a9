"""tests/conftest.py fails a session with a skip for a reason not in ALLOWED_SKIPS, with one
line per such skip, in one process and under pytest-xdist as CI runs the suite; allowed
skips, xfails and passing tests leave the session green. Oracle: pytest's exit status and
summary on hand-written test files, run in a subprocess beside a copy of the conftest."""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

ALLOWED = '''
import pytest

def test_passes():
  pass

def test_shared_data_missing():
  pytest.skip("needs /nowhere/shared/data/glue (the project's shared test data, ...)")

def test_optional_package_missing():
  pytest.skip("could not import 'mediapipe': No module named 'mediapipe'")

@pytest.mark.xfail(reason="a known failure, not a skip", strict=True)
def test_expected_to_fail():
  assert False
'''

NOT_ALLOWED = '''
import pytest

@pytest.mark.skipif(True, reason="too slow today")
def test_skipped_by_mark():
  pass

def test_skipped_in_the_body():
  pytest.skip("could not import 'some_other_package'")
'''

MODULE_SKIP = '''
import pytest

pytest.importorskip("no_such_package_anywhere")

def test_never_collected():
  pass
'''


def run(tmp_path, files, *flags):
  tmp_path.mkdir()
  for name, text in files.items():
    (tmp_path / name).write_text(text)
  shutil.copy(os.path.join(REPO_ROOT, "tests", "conftest.py"), tmp_path / "conftest.py")
  (tmp_path / "pytest.ini").write_text("[pytest]\n")
  return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                         *flags, str(tmp_path)], cwd=tmp_path, capture_output=True, text=True,
                        timeout=120)


@pytest.mark.parametrize("flags", [(), ("-n", "2", "--dist", "loadfile")],
                         ids=["one process", "xdist"])
def test_a_skip_for_a_reason_not_allowed_fails_the_session(tmp_path, flags):
  allowed = run(tmp_path / "allowed", {"test_allowed.py": ALLOWED}, *flags)
  assert allowed.returncode == 0, allowed.stdout[-3000:] + allowed.stderr[-3000:]
  assert "1 passed, 2 skipped, 1 xfailed" in allowed.stdout
  assert "ALLOWED_SKIPS" not in allowed.stdout
  refused = run(tmp_path / "not_allowed", {"test_allowed.py": ALLOWED,
                                           "test_not_allowed.py": NOT_ALLOWED,
                                           "test_module_skip.py": MODULE_SKIP}, *flags)
  assert refused.returncode == 1, refused.stdout[-3000:] + refused.stderr[-3000:]
  summary = refused.stdout[refused.stdout.index("ALLOWED_SKIPS"):]
  assert "test_not_allowed.py::test_skipped_by_mark: too slow today" in summary
  assert ("test_not_allowed.py::test_skipped_in_the_body: could not import "
          "'some_other_package'") in summary
  assert "test_module_skip.py: could not import 'no_such_package_anywhere'" in summary
  assert "shared test data" not in summary and "mediapipe" not in summary
