"""roastcoffea 0.1.2's ``roastcoffea.export``: saving and loading measurements.

Part of the 0.1.2 compatibility layer; ``roastcoffea.export.measurements`` is
:mod:`roastcoffea.measurement` under its old name.
"""

import sys

import roastcoffea.measurement as measurement
from roastcoffea.measurement import load_measurement, save_measurement

sys.modules[f"{__name__}.measurements"] = measurement

__all__ = ["load_measurement", "save_measurement"]
