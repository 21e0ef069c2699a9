"""Atomic writes: a failed write leaves the old file and no temporary file behind."""

import json
import os

import pytest

from electra_tf2.utils import atomic_io


class Boom(Exception):
  pass


def test_temp_name_is_a_hidden_sibling(tmp_path):
  path = str(tmp_path / "results" / "sst_results.json")
  assert atomic_io.temp_name_for(path, "7") == str(tmp_path / "results" /
                                                   ".sst_results.json.tmp-7")
  assert atomic_io.temp_name_for(path).endswith(f".tmp-{os.getpid()}")


def test_write_text_and_json_create_directories_and_replace(tmp_path):
  path = str(tmp_path / "a" / "b" / "x.json")
  atomic_io.write_json_atomic(path, {"b": 1, "a": [1, 2]})
  assert open(path).read() == '{\n  "a": [\n    1,\n    2\n  ],\n  "b": 1\n}\n'
  atomic_io.write_json_atomic(path, {"b": 2, "a": 1}, indent=None, sort_keys=False)
  assert open(path).read() == '{"b": 2, "a": 1}\n'
  atomic_io.write_text_atomic(path, "line\n")
  assert open(path).read() == "line\n"
  assert os.listdir(os.path.dirname(path)) == ["x.json"]


def test_failed_write_keeps_the_old_file_and_removes_the_temp(tmp_path):
  path = str(tmp_path / "vocab.txt")
  atomic_io.write_text_atomic(path, "old\n")
  with pytest.raises(Boom):
    with atomic_io.atomic_path(path) as tmp:
      with open(tmp, "w") as f:
        f.write("half")
      raise Boom()
  assert open(path).read() == "old\n"
  assert os.listdir(tmp_path) == ["vocab.txt"]
  with pytest.raises(TypeError):
    atomic_io.write_json_atomic(path, {"not serialisable": object()})
  assert open(path).read() == "old\n"
  assert os.listdir(tmp_path) == ["vocab.txt"]


def test_copy_file_atomic(tmp_path):
  source = tmp_path / "src.txt"
  source.write_bytes(b"[PAD]\n[UNK]\n\xc3\xa9\n")
  target = str(tmp_path / "out" / "vocab.txt")
  atomic_io.copy_file_atomic(str(source), target)
  assert open(target, "rb").read() == source.read_bytes()


def test_atomic_directory_swaps_only_a_complete_directory(tmp_path):
  path = str(tmp_path / "export")
  with atomic_io.atomic_directory(path) as tmp:
    os.makedirs(os.path.join(tmp, "variables"))
    json.dump({"v": 1}, open(os.path.join(tmp, "model.json"), "w"))
  assert json.load(open(os.path.join(path, "model.json"))) == {"v": 1}
  # a failed re-export leaves the first one untouched and no temporary directory
  with pytest.raises(Boom):
    with atomic_io.atomic_directory(path) as tmp:
      os.makedirs(tmp)
      json.dump({"v": 2}, open(os.path.join(tmp, "model.json"), "w"))
      raise Boom()
  assert json.load(open(os.path.join(path, "model.json"))) == {"v": 1}
  assert os.listdir(tmp_path) == ["export"]
  # a successful one replaces it whole
  with atomic_io.atomic_directory(path) as tmp:
    os.makedirs(tmp)
    json.dump({"v": 3}, open(os.path.join(tmp, "model.json"), "w"))
  assert sorted(os.listdir(path)) == ["model.json"]
  assert json.load(open(os.path.join(path, "model.json"))) == {"v": 3}
  assert os.listdir(tmp_path) == ["export"]


def test_atomic_directory_accepts_a_trailing_slash_and_clears_leftovers(tmp_path):
  path = str(tmp_path / "export")
  stale = atomic_io.temp_name_for(path)  # an earlier process with the same id died here
  os.makedirs(os.path.join(stale, "junk"))
  with atomic_io.atomic_directory(path + os.sep) as tmp:
    os.makedirs(tmp)
    open(os.path.join(tmp, "saved_model.pb"), "w").close()
  assert os.listdir(path) == ["saved_model.pb"]
  assert os.listdir(tmp_path) == ["export"]
