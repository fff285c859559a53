"""The `hypvl` command: every workflow step, runnable by hand.

Each module that offers commands registers them with `add_commands(subparsers)`.
"""

import argparse
import sys

from hypvl import commands
from hypvl.data import acquire, check
from hypvl.errors import InputError
from hypvl.evaluate import commands as evaluate_commands
from hypvl.grounding import commands as grounding_commands
from hypvl.replication import commands as replication_commands

COMMAND_MODULES = (commands, check, acquire, grounding_commands, evaluate_commands, replication_commands)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hypvl", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True)
    for module in COMMAND_MODULES:
        module.add_commands(subparsers)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result = args.func(args)
    except InputError as exc:
        print(f"hypvl {args.command}: {exc}", file=sys.stderr)
        return 1
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
