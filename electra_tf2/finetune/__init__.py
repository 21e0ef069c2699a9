"""Fine-tuning ELECTRA on GLUE, SQuAD 1.1/2.0, MRQA and chunking (official finetune/)."""
