"""Where the user's code spent its time: the processor's hottest functions, at their lines.

Source: Dask's own profiler. Every worker samples the call stack of each
executing task every ``distributed.worker.profile.interval`` (10 ms) and keeps
the samples per task prefix and per cycle (1 s); the collector asks for the
processor prefixes' samples of its window (``Client.profile(key=, start=,
stop=)``), per worker. Dask keys the samples by function (name, file, first
line) along the call path, not by line: a hot line is a function's first line.
A sample counts for the innermost function of the user's code on its stack (a
file outside site-packages, the standard library and roastcoffea, or code
pickled by value), unless it is inside uproot or coffea below it (reading and
building arrays: the data-input phases). Native code without Python frames
(numpy, awkward's kernels) counts for the function that called it.
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
_DATA_INPUT = re.compile(r"[/\\](uproot|coffea)[/\\]")
#: Code without a file of its own that is the user's: pickled by value (cloudpickle, as
#: notebooks' processors are) or typed at an IPython prompt.
_DYNAMIC_USER = ("<dynamic-code>", "<ipython-input")

Function = tuple[str, int, str]  # file, first line, name


def kind(node: dict[str, Any]) -> str:
    """``"input"`` (uproot, coffea), ``"user"`` (the analysis's own code) or ``"library"``."""
    filename = str(node.get("description", {}).get("filename", "<unknown>"))
    if filename.startswith(_DYNAMIC_USER):
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


def with_leaves(node: dict[str, Any], at: float | None = None) -> dict[str, Any]:
    """The tree with ``at``: the samples with the frame on the stack, innermost included.

    Dask counts a sample in every frame of its stack but the innermost, so a
    frame's count exceeds its children's by the samples whose innermost frame
    was one of its children. Those go to the children that were never anything
    but innermost (count 0), evenly, else to all children in proportion to
    their counts.
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
    return {
        **node,
        "at": node["count"] if at is None else at,
        "children": {
            c["identifier"]: with_leaves(c, c["count"] + (residual * w / total if total else 0))
            for c, w in zip(children, weights, strict=True)
        },
    }


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


def tally(tree: dict[str, Any]) -> tuple[_Tally, float]:
    """The user functions' samples of a profile tree, and all the user samples."""
    counts = _Tally()
    return counts, counts.visit(with_leaves(tree), False, frozenset())


def _hot(counts: _Tally, user: float, top: int) -> list[dict[str, Any]]:
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


def icicle(node: dict[str, Any], total: int, depth: int = 0) -> dict[str, Any]:
    """The profile tree pruned to the frames holding :data:`TREE_MIN_SHARE` of ``total``."""
    d = node.get("description")
    if isinstance(d, dict):
        file, first, name = _function(node)
        label = f"{name} ({file}:{first})"
    else:
        label = "all samples"
    children = []
    if depth < TREE_DEPTH:
        for child in node.get("children", {}).values():
            if child["at"] >= TREE_MIN_SHARE * total:
                children.append(icicle(child, total, depth + 1))
    children.sort(key=lambda c: -c["count"])
    kind_of = "root" if not isinstance(d, dict) else kind(node)
    return {"name": label, "kind": kind_of, "count": node["at"], "children": children}


def compute(inputs: MetricsInputs, out: Metrics) -> None:
    """Put the hot functions of the user's code, per worker and merged."""
    profiles = inputs.profiles
    if profiles is None:
        for key in KEYS:
            out.missing(key, inputs.profile_reason or "the profile was not taken")
        return
    per_worker = {w: merge(list(by_prefix.values())) for w, by_prefix in sorted(profiles.items())}
    tree = merge(list(per_worker.values()))
    if tree["count"] == 0:
        reason = (
            "Dask's profiler recorded no sample of the processor tasks in the window: it is "
            "off (distributed.worker.profile.enabled), or its history (the last 3,600 cycles "
            "of distributed.worker.profile.cycle) no longer covers the window"
        )
        for key in KEYS:
            out.missing(key, reason)
        return
    counts, user = tally(tree)
    out.put("profile_samples", tree["count"])
    out.put("user_profile_samples", user)
    out.put("profile_tree", icicle(with_leaves(tree), tree["count"]))
    if user == 0:
        for key in ("hot_lines", "hot_lines_per_worker"):
            out.missing(key, "no sample of the processor tasks was in the user's own code")
        return
    out.put("hot_lines", _hot(counts, user, TOP))
    by_worker = {}
    for worker, worker_tree in per_worker.items():
        worker_counts, worker_user = tally(worker_tree)
        if worker_user:
            by_worker[worker] = _hot(worker_counts, worker_user, TOP_PER_WORKER)
    out.put("hot_lines_per_worker", by_worker)
