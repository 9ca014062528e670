"""roastcoffea 0.1.2's ``roastcoffea.backends``: the backend interface (see :mod:`.base`)."""

__all__: list[str] = []
