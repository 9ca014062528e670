"""roastcoffea's settings in ``dask.config``, under ``roastcoffea.*``.

The defaults live in ``roastcoffea.yaml`` next to this module and are added to
Dask's defaults on import, as distributed does with its own file; a user
overrides them as any Dask setting (YAML files, ``DASK_ROASTCOFFEA__*``
environment variables, ``dask.config.set``). An argument given in code wins.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any

import dask.config
import yaml
from dask.utils import parse_bytes, parse_timedelta

dask.config.update_defaults(
    yaml.safe_load((files("roastcoffea") / "roastcoffea.yaml").read_text(encoding="utf-8"))
)


def setting(name: str, given: Any = None) -> Any:
    """``given`` when it is not None, else the setting ``roastcoffea.<name>``."""
    return given if given is not None else dask.config.get(f"roastcoffea.{name}")


def seconds(name: str, given: Any = None) -> Any:
    """``given``, else the duration setting in seconds (``"10s"``, ``"500ms"``, a number).

    What is given is returned as is, for the caller's own checks.
    """
    value = setting(name, given)
    return parse_timedelta(value) if given is None and isinstance(value, str) else value


def byte_count(name: str, given: Any = None) -> Any:
    """``given``, else the size setting in bytes (``"64MiB"``, an int)."""
    value = setting(name, given)
    return parse_bytes(value) if given is None and isinstance(value, str) else value
