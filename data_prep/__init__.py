"""Data preparation: raw text -> WordPiece vocabulary -> pre-training TFRecords.

Scripts (run from the repository root, or as `python -m data_prep.<name>`):

- `build_vocab.py`: learn a WordPiece vocab.txt from a corpus.
- `build_pretraining_dataset.py`: text files -> `pretrain_data.tfrecord-*`
  shards, the same examples as the official builder (spec section 5.1).
- `build_openwebtext_pretraining_dataset.py`: the same from archives of
  documents (the OpenWebText layout, spec 5.2).
- `default_corpus.py`: the embedded default corpus (docstrings of the Python
  standard library and of the installed dependencies) and
  `prepare_default_data_dir()`, which builds corpus, vocab and TFRecords.

See docs/data_prep.md.
"""
