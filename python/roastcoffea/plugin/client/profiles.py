"""Dask's own profile of a run's tasks: its sampled call stacks, asked of every worker."""

from __future__ import annotations

import threading
from typing import Any

from roastcoffea.plugin.worker.profile import window_profile

#: ``{worker: {prefix: profile tree}}`` and ``{worker: "ExcType: message"}``.
Profiles = tuple[dict[str, dict[str, Any]], dict[str, str]]


def window_profiles(client: Any, start: float, stop: float, most: int) -> Profiles:
    """The workers' profiles of the window ``[start, stop]`` (scheduler clock), per prefix.

    One call to at most ``most`` workers (the first by address; ``Client.run``, in
    parallel), each reading its own profiler's cycles
    (:func:`~roastcoffea.plugin.worker.profile.window_profile`): a sample of the
    cluster bounds the exit's cost at any size. Runs from any thread.

    Returns
    -------
    profiles : dict
        ``{worker: {prefix: profile tree}}`` of the workers that answered.
    errors : dict
        ``{worker: "ExcType: message"}`` of those that failed.
    """
    workers = sorted(client.scheduler_info().get("workers", {}))[:most]
    reply = client.run(
        window_profile, start, stop, workers=workers, on_error="return", asynchronous=False
    )
    profiles = {str(w): r for w, r in reply.items() if isinstance(r, dict)}
    errors = {
        str(w): f"{type(r).__name__}: {r}" for w, r in reply.items() if not isinstance(r, dict)
    }
    return profiles, errors


class ProfileRequest:
    """:func:`window_profiles` running in a thread of its own, beside a collector's exit.

    The profile is asked for while the flush and the snapshot run, so the exit waits
    for the slower of the two, not for both.
    """

    def __init__(self, client: Any, start: float, stop: float, most: int) -> None:
        self._outcome: list[tuple[bool, Any]] = []
        self._thread = threading.Thread(
            target=self._run,
            args=(client, start, stop, most),
            name="roastcoffea-profile",
            daemon=True,
        )
        self._thread.start()

    def _run(self, client: Any, start: float, stop: float, most: int) -> None:
        try:
            self._outcome.append((True, window_profiles(client, start, stop, most)))
        except BaseException as exc:  # handed to the caller of result()
            self._outcome.append((False, exc))

    def result(self, timeout: float) -> Profiles:
        """The profiles, within ``timeout`` seconds.

        Raises
        ------
        RuntimeError
            When the workers did not answer in time (the call is left running).
        """
        self._thread.join(timeout)
        if not self._outcome:
            raise RuntimeError(f"the workers did not answer within {timeout:.3g} s")
        ok, value = self._outcome[0]
        if not ok:
            raise value
        return value
