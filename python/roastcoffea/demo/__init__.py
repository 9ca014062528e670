"""The ``roastcoffea demo`` command and what it runs.

- :mod:`roastcoffea.demo.nanoaod`: synthetic CMS NanoAOD files written with uproot;
- :mod:`roastcoffea.demo.analysis`: the dijet + dimuon coffea processor and
  :func:`~roastcoffea.demo.analysis.run_demo`;
- :mod:`roastcoffea.demo.tasks`: small Dask task functions used by the tests.

Nothing is imported here, so that workers importing :mod:`roastcoffea.demo.tasks`
do not load coffea.
"""
