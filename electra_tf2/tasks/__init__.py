"""The fine-tuning tasks (official finetune/): GLUE, SQuAD 1.1/2.0, MRQA and chunking.

Each task reads its data, featurises it (`preprocessing`: the TFRecords) and scores the
predictions (`scorers`, `qa_decoding`, `qa_eval`); `task_builder` makes them by name and
`config` is the fine-tuning config (`FinetuningConfig`). The runner is training/finetuning.py;
the heads are layers/task_heads.py and the model models/finetuning.py
(docs/design.md#layers-which-module-may-import-which: where to add a task).
"""
