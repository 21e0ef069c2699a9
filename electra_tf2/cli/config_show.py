"""`electra config show [NAME]`: the presets and defaults packaged in electra_tf2/config/presets/.

  electra config show                        # every packaged config, with its path
  electra config show finetuning_defaults    # every fine-tuning hparam: default, type, doc
  electra config show electra_small          # a pre-training preset

What `--hparams` accepts is listed in `pretraining_defaults` and `finetuning_defaults`;
a pip-installed copy has no repository, so messages point here.
"""

from __future__ import annotations

import argparse
import importlib.resources
from typing import List, Optional, Sequence

from electra_tf2.utils.errors import command
from electra_tf2.config.hparams import ConfigError, config_path


def packaged_configs() -> List[str]:
  """The names of the packaged configs (electra_tf2/config/presets/<name>.json), sorted."""
  folder = importlib.resources.files("electra_tf2").joinpath("config", "presets")
  return sorted(entry.name[:-len(".json")] for entry in folder.iterdir()
                if entry.name.endswith(".json"))


@command
def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(
      prog="electra config", description="The packaged presets and defaults "
      "(electra_tf2/config/presets/): what --model-name and --hparams accept.")
  actions = parser.add_subparsers(dest="action", required=True)
  show = actions.add_parser("show", help="print a packaged config (without NAME: list them)")
  show.add_argument("name", nargs="?", default=None,
                    help="pretraining_defaults, finetuning_defaults, a preset (electra_small, "
                         "...), model_sizes, debug or finetuning_rules")
  args = parser.parse_args(argv)
  names = packaged_configs()
  if args.name is None:
    width = max(len(name) for name in names)
    for name in names:
      print(f"{name:<{width}}  {config_path(name + '.json')}")
    return 0
  name = args.name[:-len(".json")] if args.name.endswith(".json") else args.name
  if name not in names:
    raise ConfigError(f"electra config show: no packaged config {args.name!r}; use one of "
                      f"{', '.join(names)}")
  with open(config_path(name + ".json"), encoding="utf-8") as f:
    print(f.read(), end="")
  return 0
