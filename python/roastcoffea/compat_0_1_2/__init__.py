"""Everything roastcoffea keeps for code and measurements of roastcoffea 0.1.2, in one place.

- :mod:`.names`: 0.1.2's metric names (put beside ours by the metrics), its measurement
  format and output key;
- :mod:`.measurements`: reading a measurement 0.1.2 saved;
- :mod:`.collector`: the collector members 0.1.2 had.

0.1.2's module paths (``roastcoffea.decorator``, ``instrumentation``, ``export``,
``visualization``, ``backends``) stay where 0.1.2 had them, each a thin alias; 0.1.2's off
switch ``processor._roastcoffea_collect_metrics = False`` is read by ``track_metrics``
(docs/compat.md).
"""
