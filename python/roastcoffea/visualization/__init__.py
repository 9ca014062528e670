"""roastcoffea 0.1.2's module path of the figures: an alias of :mod:`roastcoffea.plots`.

Part of the 0.1.2 compatibility layer (docs/compat.md); new code imports
``roastcoffea.plots``.
"""

from roastcoffea.plots import *  # noqa: F403
from roastcoffea.plots import __all__  # noqa: F401
