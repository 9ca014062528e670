"""Where the user's code spent its time: the processor's hottest functions, at their lines.

Source: Dask's own profiler. Every worker samples the call stack of each
executing task every ``distributed.worker.profile.interval`` (10 ms) and keeps
the samples per task prefix and per cycle (1 s); the collector asks for the
processor prefixes' samples of its window (``Client.profile(key=, start=,
stop=)``), per worker. Dask keys the samples by function (name, file, first
line) along the call path, not by line: a hot line is a function's first line.
A sample counts for the innermost function of the user's code on its stack (a
file outside site-packages, the standard library and roastcoffea, or code
pickled by value), unless it is inside uproot or coffea's NanoEvents factory,
mappings or schemas below it (reading and building arrays: the data-input
phases). Native code without Python frames (numpy, awkward's kernels) counts for
the function that called it.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from roastcoffea.metrics._util import Metrics

if TYPE_CHECKING:
    from roastcoffea.metrics import MetricsInputs

KEYS = (
    "hot_lines",
    "hot_lines_per_worker",
    "profile_samples",
    "user_profile_samples",
    "profile_tree",
)
#: Functions listed; per worker.
TOP, TOP_PER_WORKER = 10, 5
#: The icicle keeps frames holding at least this share of the samples, this deep.
TREE_MIN_SHARE, TREE_DEPTH = 0.01, 40

_LIBRARY = re.compile(
    r"[/\\](site|dist)-packages[/\\]|[/\\]lib[/\\]python\d+(\.\d+)?[/\\]|[/\\]roastcoffea[/\\]"
)
#: Reading and building arrays: uproot, and coffea's NanoEvents factory, mappings and
#: schemas (its behaviours, e.g. a vector's sum, are the user's physics: a library).
_DATA_INPUT = re.compile(
    r"[/\\]uproot[/\\]|[/\\]coffea[/\\]nanoevents[/\\](factory|mapping|schemas)"
)
#: Code without a file of its own that is the user's: pickled by value (cloudpickle, as
#: notebooks' processors are) or typed at an IPython prompt.
_DYNAMIC_USER = ("<dynamic-code>", "<ipython-input")
#: roastcoffea's demo analysis is an analysis like the user's.
_DEMO = re.compile(r"[/\\]roastcoffea[/\\]demo[/\\]")

Function = tuple[str, int, str]  # file, first line, name


def kind(node: dict[str, Any]) -> str:
    """``"input"`` (uproot, coffea's NanoEvents reading), ``"user"`` (the analysis's own
    code) or ``"library"``."""
    filename = str(node.get("description", {}).get("filename", "<unknown>"))
    if filename.startswith(_DYNAMIC_USER) or _DEMO.search(filename):
        return "user"
    if filename.startswith("<"):
        return "library"
    if _DATA_INPUT.search(filename):
        return "input"
    return "library" if _LIBRARY.search(filename) else "user"


def merge(trees: list[dict[str, Any]]) -> dict[str, Any]:
    """One profile tree of several (Dask's layout: count, identifier, description, children)."""
    merged: dict[str, Any] = {"count": 0, "identifier": "root", "description": "root"}
    children: dict[str, list[dict[str, Any]]] = {}
    for tree in trees:
        merged["count"] += tree.get("count", 0)
        for ident, child in tree.get("children", {}).items():
            children.setdefault(ident, []).append(child)
    merged["children"] = {
        ident: {**merge(group), "identifier": ident, "description": group[0]["description"]}
        for ident, group in children.items()
    }
    return merged


def with_leaves(
    node: dict[str, Any], floor: float = 0.0, at: float | None = None
) -> dict[str, Any]:
    """The tree with ``at``: the samples with the frame on the stack, innermost included.

    Dask counts a sample in every frame of its stack but the innermost, so a
    frame's count exceeds its children's by the samples whose innermost frame
    was one of its children. Those go to the children that were never anything
    but innermost (count 0), evenly, else to all children in proportion to
    their counts. Frames of fewer than ``floor`` samples are left out (not built).
    """
    children = list(node.get("children", {}).values())
    residual = node["count"] - sum(c["count"] for c in children)
    innermost = [c for c in children if c["count"] == 0]
    weights = (
        [1.0 if c["count"] == 0 else 0.0 for c in children]
        if innermost
        else [float(c["count"]) for c in children]
    )
    total = sum(weights)
    kept = {}
    for child, weight in zip(children, weights, strict=True):
        child_at = child["count"] + (residual * weight / total if total else 0.0)
        if child_at >= floor:
            kept[child["identifier"]] = with_leaves(child, floor, child_at)
    return {**node, "at": node["count"] if at is None else at, "children": kept}


def _function(node: dict[str, Any]) -> Function:
    """File, first line and name, from Dask's identifier ``name;file;first line``."""
    name, _, rest = str(node["identifier"]).partition(";")
    file, _, first = rest.rpartition(";")
    return file, int(first) if first.isdigit() else 0, name


class _Tally:
    """Own and inclusive user samples per function of the user's code."""

    def __init__(self) -> None:
        self.own: Counter[Function] = Counter()
        self.inclusive: Counter[Function] = Counter()
        self.seen: dict[Function, str] = {}
        self.user = 0.0

    def add(self, other: _Tally) -> None:
        """Add another tree's counts (the counts of two trees add up)."""
        self.own.update(other.own)
        self.inclusive.update(other.inclusive)
        for function, line in other.seen.items():
            self.seen.setdefault(function, line)
        self.user += other.user

    def visit(self, node: dict[str, Any], inside: bool, path: frozenset[Function]) -> float:
        """Count the subtree of ``node``; return its user samples."""
        total = 0.0
        for child in node.get("children", {}).values():
            what = kind(child)
            if what == "input" and inside:
                continue  # reading and building arrays under the user's code
            if what != "user":
                total += self.visit(child, inside, path)
                continue
            function = _function(child)
            below = self.visit(child, True, path | {function})
            own = child["at"] - _claimed(child)
            self.own[function] += own
            self.seen.setdefault(function, str(child["description"].get("line", "")).strip())
            if function not in path:
                self.inclusive[function] += below + own
            total += below + own
        return total


def _claimed(node: dict[str, Any]) -> float:
    """Samples under ``node`` that a deeper user frame or a data-input frame takes."""
    taken = 0.0
    for child in node.get("children", {}).values():
        taken += child["at"] if kind(child) in ("user", "input") else _claimed(child)
    return taken


def tally(tree: dict[str, Any]) -> _Tally:
    """The user functions' samples of a tree with :func:`with_leaves`' ``at``."""
    counts = _Tally()
    counts.user = counts.visit(tree, False, frozenset())
    return counts


def _hot(counts: _Tally, top: int) -> list[dict[str, Any]]:
    user = counts.user
    ranked = sorted(counts.own.items(), key=lambda item: -item[1])[:top]
    return [
        {
            "file": file,
            "line": first,
            "function": name,
            "code": counts.seen[(file, first, name)],
            "samples": own,
            "share_percent": 100.0 * own / user,
            "inclusive_samples": counts.inclusive[(file, first, name)],
            "inclusive_percent": 100.0 * counts.inclusive[(file, first, name)] / user,
        }
        for (file, first, name), own in ranked
        if own > 0
    ]


def _merged_at(trees: list[dict[str, Any]]) -> dict[str, Any]:
    """:func:`merge` of trees with ``at``: their ``at`` add up (and become the count)."""
    return _at_from_count(merge([_count_from_at(t) for t in trees]))


def _count_from_at(node: dict[str, Any]) -> dict[str, Any]:
    children = {i: _count_from_at(c) for i, c in node["children"].items()}
    return {**node, "count": node["at"], "children": children}


def _at_from_count(node: dict[str, Any]) -> dict[str, Any]:
    children = {i: _at_from_count(c) for i, c in node["children"].items()}
    return {**node, "at": node["count"], "children": children}


def pruned(node: dict[str, Any], floor: float, depth: int = 0) -> dict[str, Any]:
    """A tree with ``at`` cut to the frames of at least ``floor`` samples, :data:`TREE_DEPTH`
    deep; ``count`` keeps Dask's count, ``at`` the samples with the frame on the stack."""
    children = {}
    if depth < TREE_DEPTH:
        for ident, child in node.get("children", {}).items():
            if child["at"] >= floor:
                children[ident] = pruned(child, floor, depth + 1)
    return {**node, "children": children}


def icicle(node: dict[str, Any], floor: float) -> dict[str, Any]:
    """The icicle graph's tree: ``{name, kind, count, children}``, frames of ``floor`` samples."""
    d = node.get("description")
    if isinstance(d, dict):
        file, first, name = _function(node)
        label, what = f"{name} ({file}:{first})", kind(node)
    else:
        label, what = "all samples", "root"
    children = [icicle(c, floor) for c in node["children"].values() if c["at"] >= floor]
    children.sort(key=lambda c: -c["count"])
    return {"name": label, "kind": what, "count": node["at"], "children": children}


def compute(inputs: MetricsInputs, out: Metrics) -> None:
    """Put the hot functions of the user's code, per worker and merged.

    Each worker's tree is counted alone (the counts add up over workers); the
    icicle merges the workers' trees cut to the frames that can reach its floor.
    """
    profiles = inputs.profiles
    if profiles is None:
        for key in KEYS:
            out.missing(key, inputs.profile_reason or "the profile was not taken")
        return
    trees = {}
    for worker, by_prefix in sorted(profiles.items()):
        found = list(by_prefix.values())
        if found:
            trees[worker] = found[0] if len(found) == 1 else _merged_at(found)
    samples = sum(tree["at"] for tree in trees.values())
    if samples == 0:
        reason = (
            "Dask's profiler recorded no sample of the processor tasks in the window: it is "
            "off (distributed.worker.profile.enabled), or its history (the last 3,600 cycles "
            "of distributed.worker.profile.cycle) no longer covers the window"
        )
        for key in KEYS:
            out.missing(key, reason)
        return
    per_worker = {worker: tally(tree) for worker, tree in trees.items()}
    counts = _Tally()
    for worker_counts in per_worker.values():
        counts.add(worker_counts)
    floor = TREE_MIN_SHARE * samples
    cut = [pruned(tree, floor / len(trees)) for tree in trees.values()]
    out.put("profile_samples", samples)
    out.put("user_profile_samples", counts.user)
    out.put("profile_tree", icicle(_merged_at(cut), floor))
    if counts.user == 0:
        for key in ("hot_lines", "hot_lines_per_worker"):
            out.missing(key, "no sample of the processor tasks was in the user's own code")
        return
    out.put("hot_lines", _hot(counts, TOP))
    out.put(
        "hot_lines_per_worker",
        {w: _hot(c, TOP_PER_WORKER) for w, c in per_worker.items() if c.user},
    )
