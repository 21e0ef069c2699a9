"""Text to model inputs, in one place (the bottom of the library's import order).

- `tokenizer`: the official WordPiece tokenizer (model/tokenization.py), in the
  graph (`TokenizerModule`) and batched from Python (`FullTokenizer`);
- `sentencepiece`: a SentencePiece `.model` with the same interface
  (`SentencePieceModule`, `SentencePieceTokenizer`); `kinds.load_tokenizer` picks
  one by the vocabulary file's kind;
- `description`: the tokenizer description (kind, vocabulary, casing, special
  tokens) saved beside data, model directories and exports;
- `packing`: pair truncation, `[CLS] a [SEP] (b [SEP])` and padding, on lists
  and on tensors; `TextFeaturizer` runs tokenizer and packing on raw strings;
- `windows`: windows over long texts (the scorer's) and over question/context
  pairs (SQuAD's);
- `qa_windows`: SQuAD's windows, training labels and answer text in the graph
  (the Keras `QuestionAnswerer` and its SavedModel);
- `tagging`: every word tokenised alone, its first WordPiece labelled;
- `litert_tokenizer`: tokenizer, packing and tagging features again, from ops with
  TFLite kernels (`litert_normalizer`: the official per-character rules as a
  FastBertNormalizer model, in the trie layout of `darts_trie`).

Export, the Keras layers, the scorer and fine-tuning featurisation call these;
none defines its own.
"""
