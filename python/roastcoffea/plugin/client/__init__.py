"""The client half: a collector's session with the plugin (entry, exit, the run's span)
and the small client API (:func:`snapshot`, :func:`flush`, :func:`stop`, :class:`LiveFeed`)."""

from __future__ import annotations
