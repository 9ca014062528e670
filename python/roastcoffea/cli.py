"""The ``roastcoffea`` command line."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path


def _positive(text: str) -> int:
    """An integer >= 1 (argparse type)."""
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="roastcoffea", description="Performance monitoring for Coffea analyses on Dask."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo",
        help="run a dijet + dimuon coffea analysis of synthetic NanoAOD on a local cluster, "
        "measured by a MetricsCollector",
        description="Generate (once; cached) synthetic NanoAOD files, run a dijet + dimuon "
        "coffea processor with Runner + DaskExecutor on a LocalCluster inside a "
        "MetricsCollector, print the summary and save the measurement.",
    )
    demo.add_argument(
        "--events", type=_positive, default=2_000_000, help="events in total (default 2,000,000)"
    )
    demo.add_argument("--files", type=_positive, default=8, help="number of files (default 8)")
    demo.add_argument(
        "--chunksize", type=_positive, default=100_000, help="events per chunk (default 100,000)"
    )
    demo.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="cache directory of the files (default $ROASTCOFFEA_CACHE/demo, "
        "else ~/.cache/roastcoffea/demo)",
    )
    demo.add_argument(
        "--output",
        type=Path,
        default=Path("roastcoffea-demo"),
        help="directory of the saved measurement (default ./roastcoffea-demo)",
    )
    demo.add_argument("--workers", type=_positive, default=2, help="worker processes (default 2)")
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
        from roastcoffea.demo.analysis import main as demo_main

        return demo_main(
            args.data_dir, args.events, args.files, args.chunksize, args.workers, args.output
        )
    raise AssertionError(f"unhandled command {args.command!r}")


if __name__ == "__main__":
    raise SystemExit(main())
