"""Fine-tuning ELECTRA (official run_finetuning.py): the runner (`runner`). The tasks and
their config are electra_tf2/tasks/; the other modules here are aliases of moved modules.
"""
