"""OTLP requests to lake rows: the one definition, and the fast paths held equal to it.

- `rows.py`: requests to tables and row dicts, a span (or log record) at a time, by the one conversion of
  `tracevals.spans.rows` (what a span becomes in the lake, with the normalizer of `tracevals.spans`; the
  embedded exporters convert the SDK's spans with it too); `tracevals ingest`'s slow path, the collector's
  fallback and the tests use it.
- `columnar.py`: the collector's fast path, a batch of requests decoded natively into Arrow (`native.py`) and
  converted column by column in named stages (`values.py` the kernels, `canonical.py` the normalizer's
  columns by the dialect declarations, `scopes.py` the resource and scope columns); equal to `rows.py` value
  for value (tests/test_otlp_columnar.py, tests/test_dialects.py).
- `json_columnar.py`: `tracevals ingest`'s fast path for OTLP/JSON files (`json_check.py` parses and checks a
  document, `json_values.py` its values, `json_logs.py` its log records), the same rows.

The OTLP/JSON decoder is `tracevals.collector.otlp_json`.
"""
