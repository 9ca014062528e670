"""How a measurement's data is written and read back: tagged JSON, Parquet, the schema.

Three leaves that :mod:`roastcoffea.measurement` composes into a measurement
directory: :mod:`~roastcoffea.formats.tagged_json` (the metrics dictionary as JSON,
exactly), :mod:`~roastcoffea.formats.parquet` (the chunk records as columns, exactly)
and :mod:`~roastcoffea.formats.schema` (every loaded value held against its
documented shape before anything reads it). They know no metric's meaning and
import nothing of the rest of roastcoffea but its errors.
"""
