"""The `hypvl` command: every workflow step, runnable by hand.

Each package that offers commands registers them with `add_commands(subparsers)`. Several commands
can run in one process, separated by `::` (e.g. `hypvl train ... :: evaluate zeroshot ...`): the
workflow does this so that a job pays Python's and torch's start-up once; each command is the same
as when run alone, and the first that fails stops the rest. Under torchrun (`torchrun ... -m hypvl.cli train ...
:: evaluate ...`) every process trains, and only rank 0 goes on to the commands after `train`.
"""

import argparse
import logging
import os
import sys

from hypvl.runtime.warm import run_warm, serve

SEPARATOR = "::"


def command_modules() -> tuple:
    """The modules that register commands (imported here, not at the top: a client of a warm server imports none)."""
    from hypvl.workflow import coverage
    from hypvl.acquire import fetch
    from hypvl.data import check, probe_splits
    from hypvl.evaluate import commands as evaluate_commands
    from hypvl.grounding import calibration
    from hypvl.grounding import commands as grounding_commands
    from hypvl.outside import commands as outside_commands
    from hypvl.outside import pilot_weights
    from hypvl.replication import commands as replication_commands
    from hypvl.train import commands as train_commands
    from hypvl.worlds.pilot import commands as pilot_commands
    from hypvl.worlds.smoke import commands as smoke_commands

    return (smoke_commands, pilot_commands, check, fetch, probe_splits, grounding_commands, calibration, train_commands,
            outside_commands, pilot_weights, evaluate_commands, replication_commands, coverage)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hypvl", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"hypvl {_version()}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for module in command_modules():
        module.add_commands(subparsers)
    warm = subparsers.add_parser("serve", help="start a warm server that jobs are forked from (hypvl.runtime.warm)")
    warm.add_argument("--socket", required=True, help="the Unix socket to listen on")
    warm.add_argument("--code-path", required=True, help="the config's cpu_code_path, selected before torch loads")
    warm.set_defaults(func=_serve)
    return parser


def _version() -> str:
    """The installed distribution's version (pyproject.toml's), or "unknown" run from a source tree not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hypvl")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _serve(args) -> None:
    """`hypvl serve`: select the CPU code path, then preload and serve until the workflow ends."""
    from hypvl.runtime.cpu import ENVIRONMENT, use_code_path

    use_code_path(args.code_path)
    serve(args.socket, run, ENVIRONMENT[args.code_path])


def split_commands(argv: list[str]) -> list[list[str]]:
    """argv split at each `::` into one argument list per command."""
    commands: list[list[str]] = [[]]
    for arg in argv:
        if arg == SEPARATOR:
            commands.append([])
        else:
            commands[-1].append(arg)
    return commands


def main(argv=None) -> int:
    """The `hypvl` command: in a child of the warm server where one is named ($HYPVL_WARM_SOCKET), else here."""
    argv = sys.argv[1:] if argv is None else list(argv)
    status = run_warm(argv)
    return run(argv) if status is None else status


def run(argv: list[str]) -> int:
    """Run the `::`-separated commands of `argv` in this process."""
    from hypvl.config import config_from_args
    from hypvl.runtime.cpu import use_code_path
    from hypvl.errors import InputError, Stopped
    from hypvl.io import os_error_line

    logging.basicConfig(level=logging.WARNING, format="%(message)s")  # other libraries: warnings and errors
    logging.getLogger("hypvl").setLevel(logging.INFO)  # ours: progress too
    parser = build_parser()
    commands = split_commands(argv)
    parsed = [parser.parse_args(command) for command in commands]  # every usage error before any work
    configured = [args for args in parsed if hasattr(args, "config_json")]
    if configured:  # the config's CPU code path, chosen before any command imports torch
        try:
            use_code_path(config_from_args(configured[0])["cpu_code_path"])
        except InputError as exc:
            print(f"hypvl {configured[0].command}: {exc}", file=sys.stderr)
            return 1
    for args in parsed:
        try:
            result = args.func(args)
        except InputError as exc:
            print(f"hypvl {args.command}: {exc}", file=sys.stderr)
            return 1
        except Stopped as exc:  # a signal asked the run to stop; it saved what it needs to continue
            print(f"hypvl {args.command}: {exc}", file=sys.stderr)
            return exc.status
        except OSError as exc:  # a full or read-only disk, an input deleted mid-run: one line; anything else a bug
            line = os_error_line(exc)
            if line is None:
                raise
            print(f"hypvl {args.command}: {line}", file=sys.stderr)
            return 1
        if isinstance(result, int) and result != 0:
            return result
        if args.command == "train" and os.environ.get("RANK", "0") != "0":
            return 0  # under torchrun the other processes only train; what follows (evaluation) runs once, on rank 0
    return 0


if __name__ == "__main__":  # torchrun's ranks (`python -m hypvl.cli`) each run in their own process
    sys.exit(run(sys.argv[1:]))
