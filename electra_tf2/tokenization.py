"""Moved to `electra_tf2.text.tokenizer`; this import path keeps working as an alias."""

from electra_tf2.text.tokenizer import (MAX_CHARS_PER_WORD, SPECIAL_TOKENS,  # noqa: F401
                                        BasicTokenizer, FullTokenizer, TokenizerModule,
                                        normalize_graph, resolve_strip_accents)
