"""The exceptions of roastcoffea, importable without the native extension."""

from __future__ import annotations


class DecodeError(ValueError):
    """Bytes or text from outside (a snapshot, a worker payload, a state file, a record, a
    saved measurement) do not match their format."""


__all__ = ["DecodeError"]
