"""The Beam pipeline (DirectRunner) writes the single-machine builder's examples.

Same inputs, vocab, settings and seed: the same multiset of serialized
examples, whatever the shards, jobs or Beam workers (the draws are per
document); the parsed examples also equal the independent transcription of the
official script in tests/test_data_prep.py. Bad input is skipped and counted
or stopped with one line, and a failed job leaves the output directory as it
was.
"""

import os
import subprocess
import sys
import tarfile
import tempfile

import pytest

from conftest import REPO_ROOT

pytest.importorskip("apache_beam", reason="Apache Beam is not installed (bash scripts/setup.sh "
                                          "beam, or the test set: bash scripts/setup.sh test)")
tf = pytest.importorskip("tensorflow")

from test_data_prep import (build, random_line, read_records, read_shards,  # noqa: E402
                            reference_build, vocab_file, write_bad_files, write_corpus)
from electra_tf2.data_prep import beam_pretraining  # noqa: E402
from electra_tf2.data_prep.common import DataPrepError  # noqa: E402
from electra_tf2.data_prep.input_examples import InputExamples  # noqa: E402
from electra_tf2.data_prep.builder import BuildConfig, read_info  # noqa: E402
from electra_tf2.text.vocab import VocabError  # noqa: E402

assert vocab_file  # a fixture, used by name
SCRIPT = os.path.join(REPO_ROOT, "data_prep", "beam_pretraining.py")


def beam_build(files, vocab, out_dir, pipeline_args=(), **kwargs):
  kwargs.setdefault("num_shards", 4)
  kwargs.setdefault("seed", 0)
  lines = []
  cfg = BuildConfig(inputs=[str(f) for f in files], vocab_file=vocab, output_dir=str(out_dir),
                    progress=False, label="beam_pretraining", **kwargs)
  summary = beam_pretraining.build_with_beam(cfg, ["--runner", "DirectRunner", *pipeline_args],
                                             log=lines.append)
  return summary, lines


def parsed(out_dir):
  """The examples in out_dir as sorted (input_ids, input_mask, segment_ids) tuples."""
  return sorted(tuple(tuple(ex[k]) for k in ("input_ids", "input_mask", "segment_ids"))
                for shard in read_shards(out_dir).values() for ex in shard)


def test_examples_equal_the_single_machine_builder_and_the_reference(tmp_path, vocab_file):
  files = write_corpus(tmp_path / "corpus", seed=21, n_files=7)
  summary, lines = beam_build(files, vocab_file, tmp_path / "beam", num_shards=3, seed=8,
                              max_seq_length=24)
  build(files, vocab_file, tmp_path / "single", num_processes=3, num_shards=7, seed=8,
        max_seq_length=24)
  beam_records = read_records(tmp_path / "beam")
  assert len(beam_records) == summary.stats.examples > 20
  assert beam_records == read_records(tmp_path / "single")
  reference_build(files, vocab_file, str(tmp_path / "ref"), max_length=24, num_shards=2, seed=8)
  assert parsed(tmp_path / "beam") == parsed(tmp_path / "ref")
  assert sorted(n for n in os.listdir(tmp_path / "beam")) == ["pretrain_data.info.json"] + sorted(
      f"pretrain_data.tfrecord-{i}-of-3" for i in range(3))
  info = read_info(str(tmp_path / "beam"))
  assert info["settings"]["runner"] == "DirectRunner" and info["settings"]["seed"] == 8
  assert info["stats"]["examples"] == summary.stats.examples


def test_direct_runner_downloads_nothing_and_leaves_no_temporary_files(tmp_path, vocab_file,
                                                                       monkeypatch):
  """Beam 2.77's DirectRunner would fetch the Prism runner from GitHub first (offline: leave
  empty beam-temp directories); ours runs the FnApiRunner at once, as its fallback does."""
  from apache_beam.runners.portability import prism_runner
  tried = []
  monkeypatch.setattr(prism_runner.PrismRunner, "run_pipeline",
                      lambda *args, **kwargs: tried.append(1) or 1 / 0)
  temporary = tmp_path / "tmp"
  temporary.mkdir()
  monkeypatch.setattr(tempfile, "tempdir", str(temporary))
  files = write_corpus(tmp_path / "corpus", seed=3, n_files=2)
  summary, _ = beam_build(files, vocab_file, tmp_path / "beam")
  assert summary.stats.examples > 0
  assert not tried and not os.listdir(temporary)


def test_archives_equal_the_single_machine_builder(tmp_path, vocab_file):
  import random
  rng = random.Random(5)
  archives = []
  for a in range(3):
    docs = tmp_path / f"docs{a}"
    docs.mkdir()
    path = tmp_path / f"urlsf_subset0{a}-{a}_data.xz"
    with tarfile.open(path, "w:xz") as tar:
      for d in range(rng.randint(2, 6)):
        doc = docs / f"{a:02d}{d:03d}.txt"
        doc.write_text("\n\n".join(random_line(rng, rng.randint(1, 60))
                                   for _ in range(rng.randint(1, 8))))
        tar.add(doc, arcname=doc.name)
    archives.append(str(path))
  beam_build(archives, vocab_file, tmp_path / "beam", mode="archives", max_seq_length=20)
  build(archives, vocab_file, tmp_path / "single", mode="archives", max_seq_length=20,
        num_processes=2, num_shards=5)
  got = read_records(tmp_path / "beam")
  assert len(got) > 5 and got == read_records(tmp_path / "single")


def test_bad_inputs_are_skipped_and_counted(tmp_path, vocab_file):
  corpus = tmp_path / "corpus"
  write_corpus(corpus, seed=1, n_files=2)
  write_bad_files(corpus)
  files = sorted(str(p) for p in corpus.iterdir())
  summary, lines = beam_build(files, vocab_file, tmp_path / "beam", max_seq_length=16)
  s = summary.stats
  assert s.skipped == {"binary": [str(corpus / "image.png")], "UTF-16": [str(corpus / "utf16.txt")]}
  assert s.invalid_lines == 1 and s.files_read == len(files) - 2
  text = "\n".join(lines)
  assert "skipped 2 (UTF-16: 1; binary: 1)" in text and "1 not UTF-8, skipped" in text
  # The counters, printed on the DirectRunner, agree with the inputs' reports.
  counters, = [line for line in lines if line.startswith("  counters")]
  assert (f"documents {s.documents:,}, lines {s.lines:,}, tokens {s.tokens:,} ([UNK] 0.000%), "
          f"examples {s.examples:,}, files read {s.files_read}, skipped 2") in counters
  build(files, vocab_file, tmp_path / "single", max_seq_length=16)
  assert read_records(tmp_path / "beam") == read_records(tmp_path / "single")


def test_bad_settings_and_empty_inputs_are_one_line_and_change_nothing(tmp_path, vocab_file):
  out = tmp_path / "out"
  out.mkdir()
  (out / "pretrain_data.tfrecord-0-of-1").write_bytes(b"old")
  (tmp_path / "blank.txt").write_text("\n\n  \n")
  (tmp_path / "a.bin").write_bytes(b"\x00\x01")
  (tmp_path / "text.txt").write_text("the quick brown fox\n")
  bad_vocab = tmp_path / "vocab.txt"
  bad_vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n")
  with pytest.raises(DataPrepError, match=r"no examples were produced: 1 of 2 inputs were skipped"):
    beam_build([tmp_path / "blank.txt", tmp_path / "a.bin"], vocab_file, out, num_shards=1)
  with pytest.raises(VocabError, match=r"has \d+ tokens but the model config says vocab_size=7"):
    beam_build([tmp_path / "text.txt"], vocab_file, out, expected_vocab_size=7)
  with pytest.raises(VocabError, match=r"no MASK-like token"):
    beam_build([tmp_path / "text.txt"], str(bad_vocab), out)
  with pytest.raises(DataPrepError, match=r"unknown option\(s\) --num_shardz"):
    beam_build([tmp_path / "text.txt"], vocab_file, out, pipeline_args=["--num_shardz", "3"])
  with pytest.raises(DataPrepError, match="--max-seq-length 4: must be at least 5"):
    beam_build([tmp_path / "text.txt"], vocab_file, out, max_seq_length=4)
  assert os.listdir(out) == ["pretrain_data.tfrecord-0-of-1"]
  assert (out / "pretrain_data.tfrecord-0-of-1").read_bytes() == b"old"


def test_a_failing_worker_ends_the_job_with_one_line_and_no_output(tmp_path, vocab_file,
                                                                   monkeypatch):
  files = write_corpus(tmp_path / "corpus", seed=2, n_files=4)
  out = tmp_path / "out"
  beam_build(files, vocab_file, out, num_shards=2, seed=1)
  before = {n: (out / n).read_bytes() for n in os.listdir(out)}
  real = InputExamples.text_file

  def failing(self, path, *args):
    if path.endswith("doc2.txt"):
      raise MemoryError("the worker ran out of memory")
    return real(self, path, *args)

  monkeypatch.setattr(InputExamples, "text_file", failing)
  with pytest.raises(DataPrepError) as error:
    beam_build(files, vocab_file, out, num_shards=3, seed=2)
  message = str(error.value)
  assert "\n" not in message and message.startswith("the Beam job on the DirectRunner failed")
  assert "MemoryError: the worker ran out of memory" in message
  assert f"nothing in {out} was changed" in message
  assert {n: (out / n).read_bytes() for n in os.listdir(out)} == before  # no temporary folder


@pytest.mark.slow
def test_command_line_with_worker_processes(tmp_path, vocab_file):
  """The DirectRunner in multi_processing mode: two worker processes import the pipeline."""
  files = write_corpus(tmp_path / "corpus", seed=3, n_files=5)
  out = tmp_path / "out"
  (out / ".beam-tmp-1-dead").mkdir(parents=True)
  (out / ".beam-tmp-1-dead" / "pretrain_data.tfrecord-0-of-2").write_bytes(b"left by a killed job")
  result = subprocess.run(
      [sys.executable, SCRIPT, "--corpus-dir", str(tmp_path / "corpus"), "--vocab-file", vocab_file,
       "--output-dir", str(out), "--num-shards", "2", "--seed", "6", "--max-seq-length", "32",
       "--runner", "DirectRunner", "--direct_running_mode", "multi_processing",
       "--direct_num_workers", "2"],
      capture_output=True, text=True, timeout=300, cwd=str(tmp_path),
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=""))
  assert result.returncode == 0, result.stderr
  assert "Beam, DirectRunner" in result.stdout and "seed      6" in result.stdout
  assert "counters  documents" in result.stdout
  assert "removed 1 temporary folder(s)" in result.stdout
  assert sorted(os.listdir(out)) == ["pretrain_data.info.json", "pretrain_data.tfrecord-0-of-2",
                                     "pretrain_data.tfrecord-1-of-2"]
  build(files, vocab_file, tmp_path / "single", num_shards=3, seed=6, max_seq_length=32)
  assert read_records(out) == read_records(tmp_path / "single")


def test_command_line_errors_are_one_line(tmp_path, vocab_file, capsys):
  (tmp_path / "corpus").mkdir()
  cases = [
      (["--corpus-dir", str(tmp_path / "corpus")], "no input files found: --corpus-dir"),
      (["--corpus-glob", "nope://bucket/*"], "--corpus-glob nope://bucket/*: Beam has no file "
                                             "system for nope://"),
  ]
  for args, message in cases:
    code = beam_pretraining.main([*args, "--vocab-file", vocab_file,
                                  "--output-dir", str(tmp_path / "out")])
    err = capsys.readouterr().err
    errors = [line for line in err.strip().splitlines() if not line.startswith("note:")]
    assert code == 2 and len(errors) == 1 and errors[0].startswith("error: "), err
    assert message in errors[0], err
  assert not (tmp_path / "out").exists()
