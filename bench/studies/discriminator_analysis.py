r"""What an ELECTRA discriminator flags: calibration, part of speech, grammaticality, re-ranking.

  python -m bench.studies.discriminator_analysis --model-dir DIR [--checkpoint DIR/ckpt-N] \
      [--shared-data ../shared/data] [--output-dir docs] \
      [--stages calibration,pos,cola,rerank] [--seed 0]

DIR is a pre-trained ELECTRA model directory (ours, or an official checkpoint
converted with `electra convert to-tf2`); its generator corrupts the
text and gives the pseudo-log-likelihood baseline. Nothing is fine-tuned.

  calibration  held-out WikiText-2 valid paragraphs cut into windows of the model's
               length; --replace-prob of the tokens replaced, once by the model's own
               generator (the tokens [MASK]ed, one sample each) and once uniformly from the
               vocabulary (no special or [unused] token); a replacement equal to the
               original counts as original, as in pre-training. Per-token reliability
               diagram and expected calibration error (ECE, --bins equal-width bins).
  pos          CoNLL-2000 test (WSJ, gold POS tags): every word replaced with the same
               probability --replace-prob whatever its tag (all its WordPieces, by the
               generator and, separately, uniformly). Per tag: detection rate (replaced
               words whose word probability, the max over its pieces, is >= 0.5) and
               false-alarm rate (the same for untouched words).
  cola         CoLA dev, zero-shot: AUC of each sentence score at telling unacceptable
               sentences (label 0) from acceptable ones, and the MCC at the best
               threshold (chosen on dev itself, so an upper bound), beside the length in
               WordPieces and the generator's pseudo-log-likelihood.
  rerank       --rerank-sentences held-out WikiText-2 sentences (8-30 words), each with k
               (--k) single-word substitutions sampled from the generator at a random
               one-WordPiece word; top-1 accuracy at ranking the original first
               (strictly best: a tie counts as a miss) and milliseconds per candidate,
               for the discriminator's sentence scores, the generator's
               pseudo-log-likelihood (one masked pass per WordPiece, Salazar et al. 2020)
               and a unigram-frequency score (add-one counts of the WordPieces of
               --unigram-corpus, by default the shared corpus without WikiText). Then
               the same with substitutes drawn uniformly from the whole words of the
               vocabulary, as a sanity check of the three scorers.

Writes <output-dir>/discriminator_analysis.json, discriminator_analysis.md (the
measured figures) and discriminator_{reliability,pos,cola}.png. Figures and
discussion: docs/scoring.md. The stages are the modules of bench/studies/discriminator/.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Dict, Optional, Sequence

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from bench.common import REPO, SHARED_DATA, log, script_parser  # noqa: E402
from bench.studies.discriminator import calibration, cola, pos, rerank  # noqa: E402
from bench.studies.discriminator.context import Context  # noqa: E402
from bench.studies.discriminator.figures import plot_cola, plot_pos, plot_reliability  # noqa: E402
from bench.studies.discriminator.report import markdown  # noqa: E402
from electra_tf2.utils.atomic_io import write_json_atomic, write_text_atomic  # noqa: E402

STAGES = {"calibration": calibration.calibration_stage, "pos": pos.pos_stage,
          "cola": cola.cola_stage, "rerank": rerank.rerank_stage}


def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = script_parser(__doc__)
  parser.add_argument("--model-dir", required=True)
  parser.add_argument("--checkpoint", default=None, help="a ckpt-N prefix (default the latest)")
  parser.add_argument("--shared-data", default=SHARED_DATA)
  parser.add_argument("--output-dir", default=os.path.join(REPO, "docs"))
  parser.add_argument("--stages", default=",".join(STAGES))
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--replace-prob", type=float, default=0.15)
  parser.add_argument("--bins", type=int, default=10)
  parser.add_argument("--calibration-rows", type=int, default=800)
  parser.add_argument("--rerank-sentences", type=int, default=200)
  parser.add_argument("--k", type=int, default=9, help="substitutions per sentence")
  parser.add_argument("--unigram-corpus", default=None,
                      help="glob of unigram-count text (default <shared-data>/corpus/**/*.txt; "
                           "WikiText files are always left out)")
  parser.add_argument("--min-pos-replaced", type=int, default=30,
                      help="tags with fewer replaced words are left out of the figure/table")
  args = parser.parse_args(argv)
  stages = [s for s in args.stages.split(",") if s]
  unknown = sorted(set(stages) - set(STAGES))
  if unknown:
    print(f"error: --stages: unknown {', '.join(unknown)} (use {', '.join(STAGES)})",
          file=sys.stderr)
    return 2
  args.unigram_corpus = args.unigram_corpus or os.path.join(args.shared_data, "corpus", "**",
                                                            "*.txt")
  if not os.path.isdir(args.shared_data):
    print(f"error: --shared-data {args.shared_data} does not exist", file=sys.stderr)
    return 2
  from electra_tf2.checkpoints import tf_checkpoint
  from electra_tf2 import scoring
  start = time.time()
  try:
    ctx = Context(args)
  except (tf_checkpoint.ModelDirectoryError, scoring.ScoringError, ValueError) as e:
    print(f"error: {e}", file=sys.stderr)
    return 2
  config = ctx.config
  checkpoint = args.checkpoint or tf_checkpoint.latest_checkpoint(args.model_dir)
  results: Dict[str, Any] = {"meta": {
      "model_dir": args.model_dir, "checkpoint": checkpoint,
      "model": f"{config.model_size}, {config.bert_config.num_hidden_layers} layers, hidden "
               f"{config.bert_config.hidden_size}, max_seq_length {config.max_seq_length}, "
               f"vocab {config.vocab_size}",
      "command": "python -m bench.studies.discriminator_analysis " + " ".join(
          a if " " not in a else repr(a) for a in (argv if argv is not None else sys.argv[1:])),
      "seed": args.seed, "host": f"{os.cpu_count()} CPU cores"}}
  for stage in stages:
    log(f"== {stage}")
    results[stage] = STAGES[stage](ctx, args)
  results["meta"]["seconds"] = time.time() - start
  os.makedirs(args.output_dir, exist_ok=True)
  pos_tags = None
  if "calibration" in results:
    plot_reliability(results["calibration"],
                     os.path.join(args.output_dir, "discriminator_reliability.png"))
  if "pos" in results:
    pos_tags = plot_pos(results["pos"], os.path.join(args.output_dir, "discriminator_pos.png"),
                        args.min_pos_replaced)
  if "cola" in results:
    plot_cola(results["cola"], os.path.join(args.output_dir, "discriminator_cola.png"))
  write_json_atomic(os.path.join(args.output_dir, "discriminator_analysis.json"), results)
  write_text_atomic(os.path.join(args.output_dir, "discriminator_analysis.md"),
                    markdown(results, pos_tags))
  log(f"wrote {args.output_dir}/discriminator_analysis.{{json,md}} and the figures in "
      f"{results['meta']['seconds'] / 60:.1f} min")
  return 0


if __name__ == "__main__":
  sys.exit(main())
