"""docs/architecture.md is true to the code: what it names exists, and "Layers" names it all.

Read from the document and the tree, so a module renamed, moved or added without its
line in the document fails here:

- every path it writes with a slash (``plugin/scheduler/totals.py``,
  ``native/src/phases.c``) is a file or directory of the repository (or of the package);
- every dotted name of ours (``roastcoffea.plugin.client.run``,
  ``plugin.worker.phases.digest_task_phases``) is a module, or a name in one;
- every file name in the "Layers" tree is a file of the room it is listed under, and
  every module of the rooms the tree enumerates is listed there;
- it stands alone: no path leads outside the repository.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "roastcoffea"
DOC = (ROOT / "docs" / "architecture.md").read_text()

#: Rooms whose every module the "Layers" tree names (generated and compatibility files aside).
ENUMERATED = (
    "",
    "plugin",
    "plugin/scheduler",
    "plugin/worker",
    "plugin/client",
    "instrument",
    "formats",
    "metrics",
    "report",
    "report/tables",
)
GENERATED = {"_version.py"}


def layers_block() -> str:
    section = DOC.split("\n## Layers\n", 1)[1]
    return section.split("```", 2)[1]


def rooms() -> list[tuple[Path, str]]:
    """``(directory, text)`` of each room of the tree, nested by indentation."""
    found: list[tuple[Path, str]] = []
    stack: list[tuple[int, Path]] = []
    for line in layers_block().splitlines():
        match = re.match(r"^( *)(\S+)", line)
        if match is None:
            continue
        indent, first = len(match.group(1)), match.group(2)
        if indent < 20 and (first.endswith("/") or re.fullmatch(r"[\w.]+\.py", first)):
            while stack and stack[-1][0] >= indent:
                stack.pop()
            parent = stack[-1][1] if stack else ROOT
            where = parent / first.rstrip("/")
            if first == "python/roastcoffea/":
                where = PACKAGE
            if first.endswith("/"):
                stack.append((indent, where))
                found.append((where, line))
            else:
                found.append((parent, line))
        elif found:
            found[-1] = (found[-1][0], found[-1][1] + "\n" + line)
    return found


def test_the_tree_is_read() -> None:
    directories = {where for where, _ in rooms()}
    assert {PACKAGE / "plugin" / "scheduler", PACKAGE / "formats", ROOT / "native"} <= directories


@pytest.mark.parametrize(("where", "text"), rooms(), ids=lambda v: str(v)[-40:])
def test_each_file_the_tree_names_is_in_its_room(where: Path, text: str) -> None:
    for name in re.findall(r"[\w./]+\.(?:py|c|j2|css)\b", text):
        candidates = [where / name, *where.rglob(name.rsplit("/", 1)[-1]), PACKAGE / name]
        assert any(c.exists() for c in candidates), f"{name} is not in {where}"


@pytest.mark.parametrize("room", ENUMERATED)
def test_the_tree_names_every_module_of_the_rooms_it_enumerates(room: str) -> None:
    named = set(re.findall(r"[\w]+\.py\b", layers_block()))
    modules = {p.name for p in (PACKAGE / room).glob("*.py")} - {"__init__.py"} - GENERATED
    assert modules <= named, f"{room or 'roastcoffea'}: not in the tree: {modules - named}"


def test_every_package_of_ours_is_a_room() -> None:
    named = set(re.findall(r"(\w+)/", layers_block()))
    packages = {p.parent.name for p in PACKAGE.rglob("__init__.py")} - {"roastcoffea"}
    assert packages <= named, packages - named


def paths() -> list[str]:
    found = re.findall(r"`([\w.\-]+(?:/[\w.\-]+)+/?)`", DOC)
    found += re.findall(r"(?<![\w/`])((?:native|plugin|python|tests|docs)/[\w./\-]+)", DOC)
    return sorted({p.rstrip(".,;:)") for p in found})


@pytest.mark.parametrize("path", paths())
def test_every_path_it_names_exists(path: str) -> None:
    assert not path.startswith(".."), path
    candidates = (ROOT / path, PACKAGE / path, PACKAGE / "plugin" / path)
    assert any(c.exists() for c in candidates), path


#: What a dotted name in backticks may also be: a file, or a setting (``roastcoffea.interval``).
FILE_SUFFIXES = (".py", ".pyi", ".json", ".txt", ".parquet", ".yaml", ".md", ".c", ".h")
SETTINGS = {
    f"roastcoffea.{line.split(':')[0].strip()}"
    for line in (PACKAGE / "roastcoffea.yaml").read_text().splitlines()
    if line.startswith("  ") and ":" in line
}


def dotted_names() -> list[str]:
    rooms_of_ours = ("roastcoffea.", "plugin.", "instrument.", "metrics.", "report.", "records.")
    names = re.findall(r"`([a-z_][\w]*(?:\.[\w]+)+)`", DOC)
    return sorted(
        {
            n
            for n in names
            if n.startswith(rooms_of_ours) and not n.endswith(FILE_SUFFIXES) and n not in SETTINGS
        }
    )


def resolves(name: str) -> bool:
    """Whether ``name`` is a module of ours, or a name in one."""
    full = name if name.startswith("roastcoffea") else f"roastcoffea.{name}"
    parts = full.split(".")
    for cut in range(len(parts), 1, -1):
        module = ".".join(parts[:cut])
        try:
            if importlib.util.find_spec(module) is None:
                continue
        except ModuleNotFoundError:  # a parent that is a module, not a package
            continue
        value = importlib.import_module(module)
        for attr in parts[cut:]:
            if not hasattr(value, attr):
                return False
            value = getattr(value, attr)
        return True
    return False


@pytest.mark.parametrize("name", dotted_names())
def test_every_dotted_name_it_writes_is_ours(name: str) -> None:
    assert resolves(name), name


def test_the_document_stands_alone() -> None:
    assert "DESIGN.md" not in DOC and "../" not in DOC and "shared/" not in DOC


def test_the_checks_catch_a_name_that_is_not_there() -> None:
    assert not resolves("plugin.scheduler.no_such_module")
    assert not resolves("plugin.worker.phases.no_such_function")
    assert resolves("plugin.worker.phases.digest_task_phases")
