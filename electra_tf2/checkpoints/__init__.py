"""What is at a path, and its weights by official name
(docs/design.md#layers-which-module-may-import-which).

- `describe`: the one place that tells the kinds of ELECTRA checkpoint apart
  (ours pre-trained or fine-tuned, official TF1, Hugging Face, SavedModel) and
  describes one without building a model;
- `directories`, `official`, `huggingface`: each kind's files, read (and the
  official layout written) by official variable name;
- `report`: the one report type of every reader (`ConversionReport`).

Every tensor of any checkpoint under its official name, for the Keras models'
`from_pretrained`, is models/sources.py (it restores our own directories' models);
`source` here is its alias.
"""
