"""The ``roastcoffea`` command line."""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="roastcoffea", description="Performance monitoring for Coffea analyses on Dask."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo", help="run a small monitored computation on a local cluster and print tables"
    )
    demo.add_argument("--tasks", type=int, default=120, help="tasks of each kind (default 120)")
    demo.add_argument("--seconds", type=float, default=0.01, help="seconds per task (default 0.01)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``roastcoffea`` console script.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit code.
    """
    args = _parser().parse_args(argv)
    if args.command == "demo":
        from roastcoffea.demo import main as demo_main

        return demo_main(args.tasks, args.seconds)
    raise AssertionError(f"unhandled command {args.command!r}")


if __name__ == "__main__":
    raise SystemExit(main())
