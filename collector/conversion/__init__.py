"""OTLP requests to lake rows: the one definition, and the fast path held equal to it.

- `rows.py`: the reference conversion, a span (or log record) at a time, in Python. What a span becomes
  in the lake is defined here (with the normalizer of `tracevals.lake.normalize`); `tracevals ingest`'s
  slow path, the collector's fallback and the tests use it.
- `columnar.py`: the collector's fast path, a batch of requests decoded natively into Arrow
  (`native.py`) and converted column by column in named stages (`values.py` the kernels, `scopes.py`
  the resource and scope columns); equal to `rows.py` value for value (tests/test_otlp_columnar.py).

The OTLP/JSON decoder is `tracevals.collector.otlp_json`; the embedded exporters' conversion of SDK spans
is `tracevals.lake.exporters` (same rows, same normalizer).
"""
