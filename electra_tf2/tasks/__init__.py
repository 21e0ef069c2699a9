"""The fine-tuning tasks (official finetune/): GLUE, SQuAD 1.1/2.0, MRQA and chunking.

Each task reads its data, featurises it (`preprocessing`: the TFRecords) and scores the
predictions (`scorers`, `qa_decoding`, `qa_eval`); `registry` knows them by name
(`register_task`), `task_builder` registers the built-in ones (imported here, so that
any import of the package knows them) and makes them, and `config` is the fine-tuning
config (`FinetuningConfig`). The runner is training/finetuning.py; the heads are
layers/task_heads.py, registered by kind in models/heads.py, and the model
models/finetuning.py (docs/design.md#layers-which-module-may-import-which: adding a task).
"""

from electra_tf2.tasks import task_builder  # noqa: F401  (registers the built-in tasks)
