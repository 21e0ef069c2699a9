"""Data preparation: raw text -> WordPiece vocabulary -> pre-training TFRecords.

Commands (`electra <subcommand>`; from a clone also `python data_prep/<name>.py`):

- `build_vocab.py` (`electra build-vocab`): learn a WordPiece vocab.txt from a corpus.
- `build_pretraining_dataset.py` (`electra build-data`): text files -> `pretrain_data.tfrecord-*`
  shards, the same examples as the official builder (build_pretraining_dataset.py).
- `build_openwebtext_pretraining_dataset.py` (`electra build-openwebtext-data`): the same from archives of
  documents (the OpenWebText layout, build_openwebtext_pretraining_dataset.py).
- `default_corpus.py` (`electra default-data`): the embedded default corpus (docstrings of the Python
  standard library and of the installed dependencies) and
  `prepare_default_data_dir()`, which builds corpus, vocab and TFRecords.

The builder's modules, one concept each:

- `packing.py`: the official ExampleBuilder (token ids of lines -> segments A, B);
- `example_encoding.py`: segments -> serialized tf.train.Example bytes;
- `input_examples.py`: one input (text file, archive) -> its examples, counted;
- `jobs.py`: the official per-process jobs (inputs i % N == j, shards
  i % N == j), run here or in spawned workers;
- `summary.py`: the counters and the summary printed at the end;
- `builder.py`: the build (settings, output directory, shards put in
  place, `pretrain_data.info.json`);
- `beam_pretraining.py` (`electra build-data --runner ...`): the same examples
  with Apache Beam, on any runner.

See docs/data_prep.md.
"""
