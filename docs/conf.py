"""Sphinx configuration of the roastcoffea documentation (`make docs`)."""

from __future__ import annotations

from roastcoffea import __version__

project = "roastcoffea"
author = "the roastcoffea developers"
copyright = "2026, the roastcoffea developers"
release = __version__
version = ".".join(__version__.split(".")[:2])

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
]
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "notebooks/data", "notebooks/measurements"]

# The tutorial notebooks are shown with the outputs they were saved with (`make notebooks`
# refreshes them); the test suite executes them in a real kernel.
nb_execution_mode = "off"

# MyST: the Markdown pages link to their own sections by the heading's slug.
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]

# The API reference: numpydoc docstrings, signatures from the code.
autodoc_default_options = {"show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False

html_theme = "furo"
html_title = f"roastcoffea {version}"
