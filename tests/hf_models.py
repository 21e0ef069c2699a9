"""Random Hugging Face ELECTRA directories, built with transformers in the test (no downloads).

Odd sizes (hidden 36 over 3 heads, intermediate 52, embedding 20 != hidden),
every parameter random (LayerNorms and biases too, so a swapped or transposed
tensor shows), a WordPiece vocabulary of real words, cased or uncased.
"""

import json
import os
from typing import List, Optional

os.environ.setdefault("USE_TF", "0")  # transformers: PyTorch classes only

import torch  # noqa: E402
import transformers  # noqa: E402

from fixtures import WORD_VOCAB  # noqa: E402

CASED_WORDS = ["The", "Cat", "Paris", "John", "##S"]
SHAPE = dict(hidden_size=36, num_hidden_layers=2, num_attention_heads=3, intermediate_size=52,
             embedding_size=20, max_position_embeddings=40, type_vocab_size=2)
TEXTS = ["the cat sat on the mat.", "John Smith was born in Paris, 1895!",
         "what is the capital of france?", "the big red house"]


def vocab_tokens(cased: bool):
  return WORD_VOCAB + (CASED_WORDS if cased else [])


def save_hf_model(path: str, architecture: str = "ElectraForPreTraining", cased: bool = False,
                  safe: bool = True, seed: int = 0, vocab: bool = True,
                  num_labels: Optional[int] = None, tokens: Optional[List[str]] = None,
                  **shape) -> str:
  """Saves a random `transformers.<architecture>` with `vocab.txt` (`tokens`, default the
  word vocabulary) to `path`; returns it."""
  torch.manual_seed(seed)
  tokens = tokens or vocab_tokens(cased)
  values = dict(SHAPE, vocab_size=len(tokens), pad_token_id=0)
  values.update(shape)  # vocab_size above len(tokens): a padded embedding table
  if num_labels is not None:
    values["num_labels"] = num_labels
  model = getattr(transformers, architecture)(transformers.ElectraConfig(**values)).eval()
  with torch.no_grad():
    for name, parameter in model.named_parameters():
      if name != "generator_lm_head.weight":  # tied to the word embeddings
        parameter.add_(torch.randn_like(parameter) * 0.2)
  model.save_pretrained(path, safe_serialization=safe)
  if vocab:
    with open(os.path.join(path, "vocab.txt"), "w", encoding="utf-8") as f:
      f.write("\n".join(tokens) + "\n")
    with open(os.path.join(path, "tokenizer_config.json"), "w", encoding="utf-8") as f:
      json.dump({"tokenizer_class": "ElectraTokenizer", "do_lower_case": not cased}, f)
  return path


def load_hf(path: str, architecture: str):
  return getattr(transformers, architecture).from_pretrained(path).eval()


def hf_tokenizer(path: str):
  return transformers.ElectraTokenizer.from_pretrained(path)
