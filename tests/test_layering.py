"""The rooms of the package keep to their walls (docs/architecture.md, "Layers").

Read from the source, so a new file is checked the day it is added:

- only ``plugin/`` imports ``distributed``'s modules or touches scheduler and
  worker objects;
- ``metrics/`` imports no Dask at all;
- ``report/`` and ``plots/`` import no plugin module, nor does ``instrument/``, which
  the plugin hands what it needs;
- nothing outside ``plugin/`` imports a private name of it;
- inside ``plugin/``, each role keeps to its room: the worker's code imports nothing of
  the scheduler's or the client's (a worker loads its own room only), the scheduler's
  nothing of the client's and of the worker's only the loader it sends, the client's of
  the scheduler's only :class:`RoastPlugin`, which it registers; the shared leaves
  (``protocol``, ``dask_versions``, ``task``) import no room;
- imports point one way: no module imports one that imports it back, ``formats/`` and
  ``metrics/`` import nothing of the rooms above them (the reports, the figures, the
  measurement directory, the collector), the reports and figures nothing of the
  collector; and a module imports a name from the module that defines it, not through
  the package root.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "roastcoffea"

#: Names that reach into a running scheduler or worker (or the client's private state).
DASK_OBJECTS = {
    "dask_scheduler",
    "dask_worker",
    "get_worker",
    "thread_state",
    "handlers",
    "plugins",
    "run_on_scheduler",
    "subscribe_topic",
    "unsubscribe_topic",
    "_event_handlers",
    "get_annotations",
}
#: What code outside plugin/ may take from distributed: its public client API.
PUBLIC_DISTRIBUTED = {"Client", "LocalCluster", "span"}


def modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(), str(path))


def imports(tree: ast.Module) -> Iterator[tuple[str, list[str]]]:
    """``(module, names)`` of every import statement, at any depth."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module, [alias.name for alias in node.names]


def outside(room: str) -> list[tuple[str, ast.Module]]:
    return [(name, tree) for name, tree in modules() if not name.startswith(room)]


def test_the_source_is_found() -> None:
    names = [name for name, _ in modules()]
    assert "collector.py" in names and "plugin/scheduler/plugin.py" in names and len(names) > 40


@pytest.mark.parametrize(("name", "tree"), outside("plugin/"), ids=lambda v: str(v)[:40])
def test_only_plugin_touches_dask_objects(name: str, tree: ast.Module) -> None:
    for module, names in imports(tree):
        if module.startswith("distributed."):
            pytest.fail(f"{name} imports {module}: Dask internals belong in plugin/")
        if module == "distributed":
            assert set(names) <= PUBLIC_DISTRIBUTED, f"{name} imports {names} from distributed"
    for node in ast.walk(tree):
        used = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
        used = used or getattr(node, "arg", None)
        assert used not in DASK_OBJECTS, f"{name}:{node.lineno} touches {used}"


@pytest.mark.parametrize(
    ("name", "tree"),
    [(n, t) for n, t in modules() if n.startswith("metrics/")],
    ids=lambda v: str(v)[:40],
)
def test_metrics_import_no_dask(name: str, tree: ast.Module) -> None:
    for module, _ in imports(tree):
        assert module.split(".")[0] not in {"dask", "distributed"}, f"{name} imports {module}"


@pytest.mark.parametrize(
    ("name", "tree"),
    [(n, t) for n, t in modules() if n.startswith(("report/", "plots/"))],
    ids=lambda v: str(v)[:40],
)
def test_report_and_plots_import_no_plugin(name: str, tree: ast.Module) -> None:
    for module, names in imports(tree):
        assert not module.startswith("roastcoffea.plugin"), f"{name} imports {module}"
        if module == "roastcoffea":
            assert "plugin" not in names and "RoastPlugin" not in names, name


@pytest.mark.parametrize(
    ("name", "tree"),
    [(n, t) for n, t in modules() if n.startswith("instrument/")],
    ids=lambda v: str(v)[:40],
)
def test_instrumentation_imports_no_plugin(name: str, tree: ast.Module) -> None:
    """The plugin imports the instrumentation and hands it what it needs (the phase
    clock's sink, the running task's lookup); never the other way round."""
    for module, names in imports(tree):
        assert not module.startswith("roastcoffea.plugin"), f"{name} imports {module}"
        if module == "roastcoffea":
            assert "plugin" not in names, name


@pytest.mark.parametrize(("name", "tree"), outside("plugin/"), ids=lambda v: str(v)[:40])
def test_no_private_name_of_plugin_outside(name: str, tree: ast.Module) -> None:
    for module, names in imports(tree):
        if not module.startswith("roastcoffea.plugin"):
            continue
        parts = module.split(".")[2:] + names
        private = [part for part in parts if part.startswith("_")]
        assert not private, f"{name} imports {private} of {module}"


def test_the_checks_catch_a_leak() -> None:
    leak = ast.parse(
        "from distributed.worker import thread_state\n"
        "from roastcoffea.plugin._hidden import PLUGIN_NAME\n"
        "x = dask_scheduler.handlers\n"
    )
    with pytest.raises(pytest.fail.Exception):
        test_only_plugin_touches_dask_objects("leak.py", leak)
    with pytest.raises(AssertionError):
        test_no_private_name_of_plugin_outside("leak.py", leak)


#: The rooms of plugin/ and, per room, what it may import of the others.
ROOMS = ("scheduler", "worker", "client")
ALLOWED = {
    ("scheduler", "roastcoffea.plugin.worker.loader"),
    ("client", "roastcoffea.plugin.scheduler.plugin"),
    ("client", "roastcoffea.plugin.scheduler"),
    # The function a collector's exit runs on every worker (Client.run) to read its profile.
    ("client", "roastcoffea.plugin.worker.profile"),
}
SHARED = ("plugin/protocol.py", "plugin/dask_versions.py", "plugin/task.py", "plugin/__init__.py")


def room_of(name: str) -> str | None:
    parts = name.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "plugin" and parts[1] in ROOMS else None


@pytest.mark.parametrize(
    ("name", "tree"),
    [(n, t) for n, t in modules() if room_of(n) or n in SHARED],
    ids=lambda v: str(v)[:40],
)
def test_each_role_keeps_to_its_room(name: str, tree: ast.Module) -> None:
    room = room_of(name)
    for module, names in imports(tree):
        parts = module.split(".")
        if parts[:2] != ["roastcoffea", "plugin"] or len(parts) < 3 or parts[2] not in ROOMS:
            continue
        if parts[2] == room or name == "plugin/__init__.py":
            continue
        assert (room, module) in ALLOWED, f"{name} ({room or 'shared'}) imports {module}"
        if room == "client":
            sent = {"RoastPlugin", "window_profile"}  # registered, or run on the workers
            assert set(names) <= sent, f"{name} imports {names} of {module}"


def test_the_rooms_are_where_a_newcomer_looks() -> None:
    files = {name for name, _ in modules()}
    for room in ROOMS:
        assert f"plugin/{room}/__init__.py" in files
    assert "plugin/scheduler/plugin.py" in files and "plugin/worker/plugin.py" in files


# ---- imports point one way -------------------------------------------------------------

#: Packages whose ``__init__`` resolves names on first use: code inside roastcoffea
#: imports from the module that defines a name, never through these.
FACADES = {"roastcoffea": "__init__.py", "roastcoffea.plugin": "plugin/__init__.py"}


def module_name(name: str) -> str:
    return ("roastcoffea/" + name).removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def type_checking_imports(tree: ast.Module) -> set[int]:
    """The ids of the nodes under ``if TYPE_CHECKING:`` (annotations only, never run)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside.update(id(child) for child in ast.walk(node))
    return inside


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports at run time (inside functions too)."""
    trees = {module_name(name): tree for name, tree in modules()}

    def known(name: str) -> str | None:
        while name and name not in trees:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, tree in trees.items():
        skip = type_checking_imports(tree)
        targets: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    targets.add(full if full in trees else known(node.module) or "")
            elif isinstance(node, ast.Import):
                targets.update(known(alias.name) or "" for alias in node.names)
        graph[module] = {t for t in targets if t.startswith("roastcoffea") and t != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), facades aside."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v] - set(FACADES):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(set(graph) - set(FACADES)):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_one_that_imports_it_back() -> None:
    assert cycles(import_graph()) == []


def test_the_cycle_check_finds_a_circle() -> None:
    graph = {"roastcoffea.a": {"roastcoffea.b"}, "roastcoffea.b": {"roastcoffea.a"}}
    assert cycles(graph) == [["roastcoffea.a", "roastcoffea.b"]]


#: Rooms and the rooms above them that they never import (the arrows point down).
BELOW = {
    "roastcoffea.formats": (
        "roastcoffea.metrics",
        "roastcoffea.report",
        "roastcoffea.plots",
        "roastcoffea.measurement",
        "roastcoffea.collector",
        "roastcoffea.plugin",
        "roastcoffea.records",
    ),
    "roastcoffea.metrics": (
        "roastcoffea.report",
        "roastcoffea.plots",
        "roastcoffea.measurement",
        "roastcoffea.collector",
        "roastcoffea.cli",
        "roastcoffea.plugin",
        "roastcoffea.formats",
        "roastcoffea.columnar",
    ),
    "roastcoffea.report": ("roastcoffea.measurement", "roastcoffea.collector", "roastcoffea.cli"),
    "roastcoffea.plots": ("roastcoffea.report", "roastcoffea.collector", "roastcoffea.cli"),
}


@pytest.mark.parametrize("room", sorted(BELOW))
def test_a_room_imports_nothing_above_it(room: str) -> None:
    for module, targets in import_graph().items():
        if module == room or module.startswith(room + "."):
            above = [t for t in targets if t.startswith(BELOW[room])]
            assert not above, f"{module} imports {above}"


def facade_imports(tree: ast.Module) -> list[str]:
    """What a module imports through the root or ``roastcoffea.plugin``: their names
    resolve on first use and would hide which module a name comes from
    (``__version__`` is the root's own)."""
    return [
        f"{alias.name} from {node.module}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module in FACADES
        for alias in node.names
        if alias.name != "__version__"
    ]


@pytest.mark.parametrize(
    ("name", "tree"),
    [(n, t) for n, t in modules() if n not in FACADES.values()],
    ids=lambda v: str(v)[:40],
)
def test_modules_import_what_they_use_from_where_it_is_defined(name: str, tree: ast.Module) -> None:
    assert facade_imports(tree) == [], name


def test_the_facade_check_catches_an_import_through_the_root() -> None:
    tree = ast.parse("from roastcoffea import _native\nfrom roastcoffea.plugin import LiveFeed\n")
    assert facade_imports(tree) == ["_native from roastcoffea", "LiveFeed from roastcoffea.plugin"]


# ---- rooms a newcomer can read --------------------------------------------------------

#: Longest module and class, in lines (the demo's generator aside: a file format spelled out).
MAX_MODULE_LINES, MAX_CLASS_LINES = 650, 350
LONG_BY_DESIGN = {"demo/nanoaod.py"}


@pytest.mark.parametrize(("name", "tree"), list(modules()), ids=lambda v: str(v)[:40])
def test_no_module_or_class_outgrows_a_room(name: str, tree: ast.Module) -> None:
    if name not in LONG_BY_DESIGN:
        lines = len((PACKAGE / name).read_text().splitlines())
        assert lines <= MAX_MODULE_LINES, f"{name}: {lines} lines"
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            size = node.end_lineno - node.lineno + 1 if node.end_lineno else 0
            assert size <= MAX_CLASS_LINES, f"{name}: class {node.name} of {size} lines"
