"""The ``roastcoffea`` command line: demo, show, report, plot, compare.

A measurement that is missing or corrupt, or a command whose optional
packages are not installed, is reported on one line and the command exits
with status 2 (as argparse does for a bad command line); an output that
cannot be written exits with status 1. Never a traceback for either.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roastcoffea import __version__

#: Exit status for a bad command line or an unreadable measurement.
USAGE_ERROR = 2
#: Exit status when an output cannot be written.
OUTPUT_ERROR = 1
#: Exit status of ``compare --fail-above`` when a marked slow-down is above the limit.
REGRESSION = 3


class CommandError(Exception):
    """A one-line error of a command, with its exit status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Loaded:
    """A measurement read from disk."""

    path: Path
    metrics: dict[str, Any]
    metadata: dict[str, Any]
    t0: float
    t1: float

    @property
    def name(self) -> str:
        return str(self.metadata.get("name") or self.path.name)


#: What each optional part needs: (modules, the extra that installs them).
PLOTTING = (("matplotlib",), "plot")
STATISTICS = (("scipy",), "plot")
COFFEA = (("coffea", "uproot", "awkward", "matplotlib"), "coffea")
XROOTD = (("fsspec_xrootd", "XRootD"), "xrootd")


def _require(what: str, needs: tuple[tuple[str, ...], str]) -> None:
    """A :class:`CommandError` naming the extra to install when a module is missing."""
    modules, extra = needs
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise CommandError(
            f"{what} needs {', '.join(missing)}: pip install 'roastcoffea[{extra}]'",
            USAGE_ERROR,
        )


@contextmanager
def _figure_progress(what: str) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on stderr while figures are drawn; none when it is not a terminal."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(what, total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        yield advance


def distinct_names(paths: Sequence[Path], names: Sequence[str]) -> list[str]:
    """``names``, with a measurement's path added where two would read the same.

    Two measurements saved under one name (``a/demo`` and ``b/demo``) are told
    apart by the shortest ends of their paths that differ (``a/demo``,
    ``b/demo``); the same path given
    twice by its position (``demo (2)``).
    """
    shown = list(names)
    for i, name in enumerate(names):
        twins = [j for j, other in enumerate(names) if other == name]
        if len(twins) < 2:
            continue
        parts = [paths[j].resolve().parts for j in twins]
        for depth in range(1, max(map(len, parts)) + 1):
            ends = ["/".join(p[-depth:]) for p in parts]
            if len(set(ends)) == len(ends):
                end = ends[twins.index(i)]
                shown[i] = end if end.endswith(name) else f"{name} ({end})"
                break
        else:
            shown[i] = f"{name} ({twins.index(i) + 1})"
    return shown


def _load(path: Path) -> Loaded:
    """Read a measurement; a missing or corrupt one is a :class:`CommandError`."""
    from roastcoffea.measurement import load_measurement, load_metadata

    try:
        metrics, t0, t1 = load_measurement(path)
        metadata = load_metadata(path)
    except (OSError, ValueError) as exc:
        raise CommandError(f"cannot read measurement: {exc}", USAGE_ERROR) from None
    return Loaded(path, metrics, metadata, t0, t1)


def _positive(text: str) -> int:
    """An integer >= 1 (argparse type)."""
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _on_measurement(
    commands: Any, name: str, summary: str, description: str, output: str | None = None
) -> argparse.ArgumentParser:
    """A subcommand reading one saved measurement; ``-o/--output`` when ``output`` says what."""
    command = commands.add_parser(name, help=summary, description=description)
    command.add_argument("measurement", type=Path, help="the measurement directory")
    if output:
        command.add_argument("-o", "--output", type=Path, default=None, help=output)
    return command


def _parser() -> argparse.ArgumentParser:
    from roastcoffea.report.tables import TABLE_NAMES

    parser = argparse.ArgumentParser(
        prog="roastcoffea", description="Performance monitoring for Coffea analyses on Dask."
    )
    parser.add_argument("--version", action="version", version=f"roastcoffea {__version__}")
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
    demo.add_argument(
        "--rntuple",
        action="store_true",
        help="write (and read) the files as RNTuple instead of TTree",
    )
    demo.add_argument(
        "--xrootd",
        action="store_true",
        help="serve the files from a local XRootD server (Debian's xrootd-server) and read "
        "them as root:// URLs (needs 'roastcoffea[xrootd]')",
    )
    demo.add_argument(
        "--no-report",
        action="store_true",
        help="do not write report.html next to the measurement",
    )

    show = _on_measurement(
        commands,
        "show",
        "print the answer of a saved measurement, or its tables",
        "Print the run's headline and what to change first (the top findings, the largest "
        "wall time at stake first), fitted to one screen; --all adds every table, --table "
        "prints the named ones.",
    )
    which = show.add_mutually_exclusive_group()
    which.add_argument("--all", action="store_true", help="the answer, then every table with data")
    which.add_argument(
        "--table",
        action="append",
        choices=list(TABLE_NAMES),
        metavar="NAME",
        help="print this table (repeatable): " + ", ".join(TABLE_NAMES),
    )
    _on_measurement(
        commands,
        "report",
        "write the self-contained HTML report of a measurement",
        "Write one HTML file with the summary and fine-metrics tables, every applicable "
        "figure (inline), chunk and section statistics, run metadata and the monitoring "
        "overhead. It needs no network and opens offline.",
        output="the HTML file (default MEASUREMENT/report.html)",
    )
    plot = _on_measurement(
        commands,
        "plot",
        "save every applicable figure of a measurement",
        "Draw every figure the measurement has data for and save one file each.",
        output="the directory of the figures (default MEASUREMENT/plots)",
    )
    plot.add_argument(
        "--format",
        choices=("png", "svg", "pdf"),
        default="png",
        help="image format (default png)",
    )

    compare = commands.add_parser(
        "compare",
        help="key metrics of several measurements side by side",
        usage="%(prog)s [-h] [--plot FILE] [--fail-above PCT] [--alpha A] "
        "BEFORE [BEFORE ...] [-- AFTER [AFTER ...]]",
        description="Print the key metrics of two or more measurements side by side; each "
        "measurement after the first shows its difference from and ratio to the first. The "
        "CPU cost per event of each dataset and phase is compared too: of each measurement "
        "against the first, or, with --, of the runs before it against the runs after it, "
        "their spread the noise (docs/guide.md, 'A regression gate in CI').",
    )
    compare.add_argument(
        "measurements", type=Path, nargs="+", metavar="BEFORE", help="one or more runs"
    )
    compare.add_argument(
        AFTER, type=Path, nargs="+", default=None, metavar="AFTER", help=argparse.SUPPRESS
    )
    compare.add_argument(
        "--plot", type=Path, default=None, metavar="FILE", help="also save the comparison figure"
    )
    compare.add_argument(
        "--fail-above",
        type=float,
        default=None,
        metavar="PCT",
        help=f"exit {REGRESSION} when the CPU cost per event of a dataset or phase is marked "
        "slower by more than PCT percent (a finite number >= 0)",
    )
    compare.add_argument(
        "--alpha",
        type=float,
        default=None,
        metavar="A",
        help="the comparison's family-wise false-alarm level, in (0, 1) (default 0.05)",
    )
    return parser


def _show(args: argparse.Namespace) -> int:
    from rich.console import Console

    from roastcoffea.report.summary import SCREEN, print_answer, print_summary, safe_text

    loaded = _load(args.measurement)
    console = Console()
    if args.all or args.table:
        print_summary(loaded.metrics, None, args.table)
        return 0
    width, height = (console.width, console.height) if console.is_terminal else SCREEN
    console = Console(width=width)
    start = str(loaded.metadata.get("start_utc", "?"))[:19].replace("T", " ")
    console.print(safe_text(f"{loaded.name}, started {start} UTC", style="cyan"))
    more = "Every table: --all; one of them: --table NAME (-h lists the names)."
    print_answer(loaded.metrics, console, height - 3)
    console.print()
    console.print(safe_text(more, style="dim"))
    return 0


def _written(what: str | os.PathLike[str], write: Callable[[], Any]) -> Any:
    """Run ``write()``; an OSError becomes a one-line :class:`CommandError`."""
    try:
        return write()
    except OSError as exc:
        raise CommandError(f"cannot write {what}: {exc}", OUTPUT_ERROR) from None


def _report(args: argparse.Namespace) -> int:
    from roastcoffea.report.html import write_report

    loaded = _load(args.measurement)
    output = args.output or loaded.path / "report.html"
    with _figure_progress("drawing the report's figures") as on_figure:
        path = _written(
            output,
            lambda: write_report(
                output,
                loaded.metrics,
                loaded.metadata,
                t0=loaded.t0,
                t1=loaded.t1,
                title=loaded.name,
                on_figure=on_figure,
            ),
        )
    print(f"report written to {path}")
    return 0


def _plot(args: argparse.Namespace) -> int:
    _require("roastcoffea plot", PLOTTING)
    from roastcoffea.plots.catalog import save_plots

    loaded = _load(args.measurement)
    output = args.output or loaded.path / "plots"
    with _figure_progress("drawing figures") as on_figure:
        paths = _written(
            output,
            lambda: save_plots(loaded.metrics, output, fmt=args.format, on_figure=on_figure),
        )
    print(f"{len(paths)} figures written to {output}")
    return 0


#: The option a bare ``--`` stands for in ``compare BEFORE... -- AFTER...``.
AFTER = "--after"


def _after_marker(argv: list[str]) -> list[str]:
    """``compare A1 A2 -- B1 B2`` as argparse reads it: the first bare ``--`` is --after."""
    if argv[:1] == ["compare"] and "--" in argv and AFTER not in argv:
        argv[argv.index("--")] = AFTER
    return argv


def _compare(args: argparse.Namespace) -> int:
    from rich.console import Console

    from roastcoffea.report.compare import compare_metrics, comparison_table

    before, after = args.measurements, args.after or []
    if len(before) + len(after) < 2:
        raise CommandError("compare needs at least two measurements", USAGE_ERROR)
    _check_gate(args)
    _require("roastcoffea compare", STATISTICS)
    if args.plot is not None:
        _require("roastcoffea compare --plot", PLOTTING)
    loaded = [_load(path) for path in (*before, *after)]
    names = distinct_names([item.path for item in loaded], [item.name for item in loaded])
    rows = compare_metrics([item.metrics for item in loaded])
    console = Console(width=None if sys.stdout.isatty() else 160)
    console.print(comparison_table(names, rows))
    sides = (
        [(loaded[: len(before)], loaded[len(before) :])]
        if after
        else [([loaded[0]], [item]) for item in loaded[1:]]
    )
    regressed = _compare_costs(console, sides, dict(zip(map(id, loaded), names, strict=True)), args)
    if args.plot is not None:
        from roastcoffea.plots.compare import plot_measurement_comparison

        _written(
            args.plot,
            lambda: plot_measurement_comparison(
                [(item.metrics, item.metadata) for item in loaded],
                labels=names,
                output_path=args.plot,
            ),
        )
        print(f"comparison figure written to {args.plot}")
    if regressed:
        print(f"slower by more than {args.fail_above:g}%: " + "; ".join(regressed))
        return REGRESSION
    return 0


def _check_gate(args: argparse.Namespace) -> None:
    """A threshold that is a finite number >= 0, a level in (0, 1): else exit 2."""
    import math

    if args.fail_above is not None and not (
        math.isfinite(args.fail_above) and args.fail_above >= 0
    ):
        raise CommandError(
            f"--fail-above takes a finite percent >= 0, not {args.fail_above!r}", USAGE_ERROR
        )
    if args.alpha is not None and not 0.0 < args.alpha < 1.0:
        raise CommandError(f"--alpha takes a level in (0, 1), not {args.alpha!r}", USAGE_ERROR)


def _compare_costs(
    console: Any,
    sides: list[tuple[list[Loaded], list[Loaded]]],
    names: dict[int, str],
    args: argparse.Namespace,
) -> list[str]:
    """Print the cost per event of each comparison of runs; the regressions above
    ``--fail-above`` (none without it). Nothing compared, with --fail-above: exit 2."""
    from roastcoffea.metrics.regression import ALPHA, compare_runs
    from roastcoffea.report.compare import cost_change_table

    regressed = []
    for before, after in sides:
        label = [" ".join(names[id(item)] for item in side) for side in (before, after)]
        try:
            comparison = compare_runs(
                [item.metrics for item in before],
                [item.metrics for item in after],
                alpha=ALPHA if args.alpha is None else args.alpha,
            )
        except ValueError as exc:
            if args.fail_above is not None:
                raise CommandError(f"--fail-above compared nothing: {exc}", USAGE_ERROR) from None
            print(f"cost per event not compared: {exc}")
            continue
        console.print(cost_change_table(label[0], label[1], comparison))
        if args.fail_above is not None:
            for c in comparison.regressions_above(args.fail_above):
                regressed.append(f"{label[1]}: {c.dataset} {c.phase} {c.change_percent:+.1f}%")
    return regressed


def _demo(args: argparse.Namespace) -> int:
    _require("roastcoffea demo", COFFEA)
    if args.xrootd:
        _require("roastcoffea demo --xrootd", XROOTD)
        if shutil.which("xrootd") is None:
            raise CommandError(
                "roastcoffea demo --xrootd needs the XRootD server: "
                "apt-get install xrootd-server (or make demo XROOTD=1)",
                USAGE_ERROR,
            )
    from roastcoffea.demo.analysis import main as demo_main

    return demo_main(
        args.data_dir,
        args.events,
        args.files,
        chunksize=args.chunksize,
        n_workers=args.workers,
        output_dir=args.output,
        report=not args.no_report,
        xrootd=args.xrootd,
        layout="rntuple" if args.rntuple else "ttree",
    )


_COMMANDS = {"demo": _demo, "show": _show, "report": _report, "plot": _plot, "compare": _compare}


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
    args = _parser().parse_args(_after_marker(list(sys.argv[1:] if argv is None else argv)))
    try:
        return _COMMANDS[args.command](args)
    except CommandError as exc:
        from roastcoffea.report.summary import printable

        print(printable(f"roastcoffea {args.command}: error: {exc}"), file=sys.stderr)
        return exc.status


if __name__ == "__main__":
    raise SystemExit(main())
