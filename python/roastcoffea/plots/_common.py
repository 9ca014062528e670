"""What every plot shares: object-API figures, saving, checks of the input, and the rules.

Figures are made with :class:`matplotlib.figure.Figure` and an Agg canvas, never
with ``pyplot``: nothing is left in pyplot's global figure list, so a long
session or a report with dozens of figures does not leak them. A notebook still
shows a returned figure (IPython renders any ``Figure``).

The rules every figure keeps (docs/plots.md, tests/test_figure_rules.py): a
legend sits beside the axes, never over data (:func:`legend`); counts have
whole-number ticks (:func:`count_axis`); data that would draw an empty or
microscopic axis is said in words instead (:func:`say_instead`); a remark on
the data goes under the axes (:func:`caption`), not over the data.
"""

from __future__ import annotations

import datetime as dt
import functools
import inspect
import os
import re
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import offset_copy

#: Resolution of saved figures (as roastcoffea 0.1.2).
DPI = 150

#: Colors used by every plot, in order (matplotlib's default cycle, named).
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")


def new_figure(
    figsize: tuple[float, float], nrows: int = 1, ncols: int = 1, **subplots: Any
) -> tuple[Figure, Any]:
    """A figure with an Agg canvas and its axes (an array when there are several)."""
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, **subplots)


def plain_text(fig: Figure) -> None:
    """Every text of ``fig`` drawn as written: names are data, never mathtext.

    matplotlib parses ``$...$`` in any text as mathematics, so a dataset named
    ``$\\alpha$`` would be typeset and one with a stray ``$`` or an unknown macro would
    stop the drawing. The tick labels are made here first (``get_major_ticks``), so
    that those of fixed labels (names) are among the texts switched.
    """
    for axes in fig.axes:
        for axis in (axes.xaxis, axes.yaxis):
            axis.get_major_ticks()
    for text in fig.findobj(Text):
        text.set_parse_math(False)


def finish(fig: Figure, output_path: str | os.PathLike[str] | None) -> None:
    """Save ``fig`` when ``output_path`` is given (format from the suffix)."""
    if output_path:
        fig.savefig(os.fspath(output_path), dpi=DPI)


#: Parameters every figure function documents alike, added by :func:`figure`.
SHARED_PARAMETERS = {
    "metrics": "metrics : mapping\n    The metrics dictionary, live or loaded.",
    "chunk_metrics": "chunk_metrics : list of dict\n"
    '    The chunk records, ``metrics["raw_chunk_metrics"]``.',
    "tracking_data": 'tracking_data : mapping\n    ``metrics["tracking_data"]``.',
    "output_path": "output_path : str or path-like, optional\n"
    "    Where to save the figure (format from the suffix).",
    "figsize": "figsize : tuple of float\n    Figure size in inches.",
    "title": "title : str\n    Axes title.",
    "bins": "bins : int\n    Number of histogram bins.",
    "origin": "origin : float, optional\n"
    '    The time origin, epoch seconds on the scheduler clock: ``metrics["time_origin"]``,\n'
    "    the collector's block start. None: the first instant drawn.",
    "max_legend_entries": "max_legend_entries : int\n"
    "    Largest number of workers shown in a legend; above it, a note gives\n"
    "    the number of workers instead.",
}
#: The Returns section of a figure function with one axes.
RETURNS = "Returns\n-------\nfig : matplotlib.figure.Figure\nax : matplotlib.axes.Axes"

_SECTION = re.compile(r"^(\w[\w ]*)\n-+$", re.MULTILINE)

R = TypeVar("R")
T = TypeVar("T")


def _shared_doc(doc: str, names: list[str], raises: str | None = None) -> str:
    """``doc`` with the shared parameters of ``names`` and, if absent, the Returns section.

    The Parameters section (made before the first section when the function
    documents none of its own) lists its entries in the order of ``names`` (the
    signature); Returns comes right after it. ``raises``, the condition of a
    ValueError, becomes the Raises section when the function has none.
    """
    doc = inspect.cleandoc(doc)
    marks = {m.group(1): (m.start(), m.end()) for m in _SECTION.finditer(doc)}
    if "Parameters" in marks:
        start, body = marks["Parameters"]
        end = min((s for s, _ in marks.values() if s > start), default=len(doc))
    else:
        start = body = end = min((s for s, _ in marks.values()), default=len(doc))
    entries: dict[str, str] = {}
    covered: set[str] = set()
    for entry in filter(None, re.split(r"\n(?=\S)", doc[body:end].strip("\n"))):
        header = entry.split(" :", 1)[0].split("\n", 1)[0]
        listed = [n.strip() for n in header.split(",")]
        entries[listed[0]] = entry
        covered.update(listed)
    for name in names:
        if name in SHARED_PARAMETERS and name not in covered:
            entries[name] = SHARED_PARAMETERS[name]
    order = sorted(entries, key=lambda n: names.index(n) if n in names else len(names))
    section = "Parameters\n----------\n" + "\n".join(entries[n] for n in order)
    if "Returns" not in marks:
        section += "\n\n" + RETURNS
    doc = f"{doc[:start].rstrip()}\n\n{section}\n\n{doc[end:]}".rstrip()
    if raises and "Raises" not in marks:
        doc += f"\n\nRaises\n------\nValueError\n    {raises}"
    return doc + "\n"


def figure(
    *, needs: str | None = None, **defaults: Any
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Make a drawing function a figure function: it takes ``output_path`` and saves.

    ``draw(data..., figsize, title, ...)`` returns ``(fig, axes)``;
    ``defaults`` are the defaults of its parameters (``figsize``, ``title``),
    kept here so that a figure's look is read in one line above its code. The
    figure function has the same parameters with ``output_path=None`` inserted
    before the first of ``figsize`` and ``title`` (the order of roastcoffea
    0.1.2, positional calls included), saves the figure there when given, and
    returns ``(fig, axes)``. Its docstring gains the shared parameters
    (:data:`SHARED_PARAMETERS`) and, unless it has its own, the Returns section.

    ``needs`` names the key of the first argument (a mapping) the figure
    cannot be drawn without: the figure function raises ValueError before
    drawing when it is missing or empty (:func:`require_key`), and its
    docstring gains the Raises section that says so.
    """

    def decorate(draw: Callable[..., R]) -> Callable[..., R]:
        drawn = inspect.signature(draw)
        unknown = set(defaults) - set(drawn.parameters)
        if unknown:
            raise TypeError(f"{draw.__name__} has no parameter {', '.join(sorted(unknown))}")
        params = [
            p.replace(default=defaults[p.name]) if p.name in defaults else p
            for p in drawn.parameters.values()
        ]
        at = next(i for i, p in enumerate(params) if p.name in ("figsize", "title"))
        output = inspect.Parameter(
            "output_path",
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=None,
            annotation="str | os.PathLike[str] | None",
        )
        public = drawn.replace(parameters=[*params[:at], output, *params[at:]])
        data = params[0].name

        @functools.wraps(draw)
        def plot(*args: Any, **kwargs: Any) -> R:
            bound = public.bind(*args, **kwargs)
            bound.apply_defaults()
            if needs is not None:
                require_key(bound.args[0], needs, data)
            output_path = bound.arguments.pop("output_path")
            drawn = draw(*bound.args, **bound.kwargs)
            plain_text(drawn[0])  # type: ignore[index]
            finish(drawn[0], output_path)  # type: ignore[index]
            return drawn

        plot.__signature__ = public  # type: ignore[attr-defined]
        if draw.__doc__:
            raises = f"If ``{data}`` is None or has no ``{needs}`` to plot." if needs else None
            plot.__doc__ = _shared_doc(draw.__doc__, list(public.parameters), raises)
        return plot

    return decorate


def require(value: T | None, what: str) -> T:
    """``value``, or ValueError naming ``what`` when it is None or empty."""
    if value is None or (hasattr(value, "__len__") and len(value) == 0):
        raise ValueError(f"no {what} to plot")
    return value


def require_key(data: Mapping[str, Any] | None, key: str, source: str) -> Any:
    """``data[key]``, or ValueError naming the key and where it was looked for."""
    if data is None:
        raise ValueError(f"{source} is None: nothing to plot (needs {key!r})")
    if not isinstance(data, Mapping):
        raise ValueError(f"{source} must be a mapping, not {type(data).__name__}")
    value = data.get(key)
    if value is None or (hasattr(value, "__len__") and len(value) == 0):
        raise ValueError(f"{source} has no {key!r} data to plot")
    return value


def legend(ax: Axes, twin: Axes | None = None, **options: Any) -> Any:
    """The legend of ``ax``, beside it on the right: it never covers data.

    With a ``twin`` (a second y axis on the right), the legend starts past the twin's
    tick labels and axis label, measured once the figure is laid out; the offset is in
    inches, so it holds at any resolution the figure is saved at.
    """
    options.setdefault("fontsize", "small")
    transform = ax.transAxes
    if twin is not None:
        fig = ax.get_figure()
        assert isinstance(fig, Figure)
        fig.draw_without_rendering()
        box = twin.get_tightbbox()
        past = 0.0 if box is None else max(box.x1 - ax.get_window_extent().x1, 0.0)
        transform = offset_copy(ax.transAxes, fig=fig, x=past / fig.dpi, units="inches")
    return ax.legend(
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        bbox_transform=transform,
        borderaxespad=0.0,
        **options,
    )


def count_axis(ax: Axes, axis: Literal["x", "y"] = "y") -> None:
    """Whole-number ticks on an axis of counts (chunks, files, tasks, workers)."""
    locator = MaxNLocator(integer=True, min_n_ticks=1)
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_locator(locator)


def say_instead(ax: Axes, text: str) -> None:
    """Write ``text`` in place of the data: for data an axis would show empty or microscopic.

    The axes keep their title and frame and lose their ticks, so nothing
    reads as a scale.
    """
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", wrap=True)


#: The artist id of a caption, so that a second one goes under the first.
CAPTION = "roastcoffea-caption"


#: Characters of a caption line per inch of figure width: small text fits at 0.8 of it.
CAPTION_CHARS_PER_INCH = 11


def caption(ax: Axes, text: str) -> None:
    """A remark on the data, under the axes' x label (never over the data), wrapped to
    the figure's width: a line wider than the figure would squeeze the axes to nothing."""
    above = sum(t.get_text().count("\n") + 1 for t in ax.texts if t.get_gid() == CAPTION)
    fig = ax.get_figure(root=True)
    assert isinstance(fig, Figure)
    width = max(int(fig.get_figwidth() * CAPTION_CHARS_PER_INCH), 40)
    ax.annotate(
        textwrap.fill(text, width, break_long_words=True),
        xy=(0.0, 0.0),
        xycoords=("axes fraction", ax.xaxis.label),
        xytext=(0, -4 - 12 * above),
        textcoords="offset points",
        va="top",
        fontsize="small",
        color="dimgray",
        gid=CAPTION,
    )


def distinct_values(*values: float, least: int = 3) -> list[str]:
    """``values`` written with the fewest significant figures (at least ``least``) that tell
    them apart."""
    for digits in range(least, 10):
        texts = [f"{v:,.{digits}g}" for v in values]
        if len(set(texts)) == len(set(values)):
            return texts
    return [f"{v:,.10g}" for v in values]


#: A spread of values under this share of their size draws as one microscopic bar.
DEGENERATE_SPREAD = 0.01


def degenerate(values: np.ndarray) -> bool:
    """Whether ``values`` are one value, or spread over under 1 % of their size."""
    low, high = float(values.min()), float(values.max())
    return high - low <= DEGENERATE_SPREAD * max(abs(low), abs(high))


def to_datetime(value: Any) -> dt.datetime:
    """A timezone-aware UTC datetime from a datetime or epoch seconds."""
    if isinstance(value, dt.datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=dt.timezone.utc)
    return dt.datetime.fromtimestamp(float(value), tz=dt.timezone.utc)


def label_axes(
    ax: Axes, xlabel: str, ylabel: str, title: str, grid: Literal["x", "y", "both"] | None = None
) -> None:
    """Name both axes (with their units) and the figure.

    ``grid``: ``"x"``, ``"y"`` or ``"both"`` draws faint grid lines along that axis.
    """
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if grid:
        ax.grid(True, alpha=0.3, axis=grid)


@dataclass(frozen=True)
class Clock:
    """Times as seconds since one origin: the block's start, on every timeline.

    ``metrics["time_origin"]`` is the collector's block start (scheduler clock, the clock
    of every time in a measurement); a figure drawn from data alone, without it, counts
    from the first instant it draws and says so in its label.
    """

    origin: float
    label: str

    @classmethod
    def of(cls, origin: float | None, instants: Any) -> Clock:
        """The clock of ``origin`` (epoch seconds), else of the earliest of ``instants``."""
        if origin is not None:
            return cls(float(origin), "seconds since the block's start")
        first = float(min(epoch(t) for t in instants))
        return cls(first, f"seconds since {to_datetime(first):%H:%M:%S} UTC (the first instant)")

    def __call__(self, times: Any) -> np.ndarray:
        """``times`` (datetimes or epoch seconds) as seconds since the origin."""
        return np.array([epoch(t) - self.origin for t in times], dtype=float)


def epoch(value: Any) -> float:
    """Epoch seconds of a datetime (naive ones are UTC) or of a number."""
    return to_datetime(value).timestamp() if isinstance(value, dt.datetime) else float(value)


def time_axis(ax: Axes, ylabel: str, title: str, clock: Clock, whole: bool = False) -> None:
    """Label a timeline: seconds since the clock's origin on x, ``ylabel`` with its unit.

    ``whole``: the values are counts (tasks, workers), so the y ticks are integers.
    """
    label_axes(ax, clock.label, ylabel, title, grid="both")
    if whole:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))


def finite(values: Any) -> np.ndarray:
    """The finite float values of ``values`` (None and NaN dropped)."""
    array = np.array([np.nan if v is None else v for v in values], dtype=float)
    return array[np.isfinite(array)]
