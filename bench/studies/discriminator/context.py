"""What every stage needs: the model, its passes, tokenizer, scorer and vocabulary facts."""

from __future__ import annotations

import numpy as np

from bench.studies.discriminator.passes import Passes


class Context:
  """What every stage needs: model, passes, tokenizer, scorer, vocabulary facts."""

  def __init__(self, args):
    from electra_tf2.checkpoints import directories
    from electra_tf2.models import model_directory
    from electra_tf2 import scoring
    from electra_tf2.text.tokenizer import FullTokenizer
    self.config = model_directory.load_pretraining_config(args.model_dir)
    self.model = model_directory.restore_pretrainer(args.model_dir, args.checkpoint, self.config)
    vocab_file = directories.find_vocab(args.model_dir, self.config)
    if vocab_file is None:
      raise scoring.ScoringError(f"{args.model_dir} has no vocab.txt")
    self.passes = Passes(self.model)
    self.scorer = scoring.TextScorer.from_pretrainer(
        self.model, vocab_file, self.config.do_lower_case, self.config.max_seq_length,
        name=args.model_dir)
    self.tokenizer = FullTokenizer(vocab_file, self.config.do_lower_case)
    self.tokens = self.scorer.vocab_tokens
    special = self.tokenizer.special_ids
    self.cls, self.sep, self.mask = special.cls, special.sep, special.mask
    self.max_len = self.config.max_seq_length
    # Replacements: any token but the special and [unused] ones.
    self.allowed = np.array([not (t.startswith("[") and t.endswith("]")) for t in self.tokens])
    # Re-ranking substitutes: whole alphabetic words.
    self.whole_words = self.allowed & np.array([t.isalpha() for t in self.tokens])
    self.rng = np.random.default_rng(args.seed)
