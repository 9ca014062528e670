"""Dask's own profile of a run's processor tasks: its sampled call stacks, per worker."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from roastcoffea.plugin.worker.profile import window_profile


def processor_profiles(
    client: Any, prefixes: Iterable[str], start: float, stop: float
) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """The profile of the window ``[start, stop]`` (scheduler clock) on every worker.

    One call to every worker (``Client.run``, in parallel), each reading its own
    profiler's cycles (:func:`~roastcoffea.plugin.worker.profile.window_profile`).
    Runs from any thread.

    Returns
    -------
    profiles : dict
        ``{worker: {prefix: profile tree}}`` of the workers that answered.
    errors : dict
        ``{worker: "ExcType: message"}`` of those that failed.
    """
    reply = client.run(
        window_profile, sorted(prefixes), start, stop, on_error="return", asynchronous=False
    )
    profiles = {str(w): r for w, r in reply.items() if isinstance(r, dict)}
    errors = {
        str(w): f"{type(r).__name__}: {r}" for w, r in reply.items() if not isinstance(r, dict)
    }
    return profiles, errors
