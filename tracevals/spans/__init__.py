"""What a span means, apart from where it is stored.

The dialect declarations (`dialects.py`: how each instrumentation's spans are recognised and where their
kind, names, messages, tool calls, tokens, session and agent live), the generic rules for stacks nobody
declared (`rules.py`), the one normalizer that turns a span's attributes into the lake's canonical columns
(`normalize.py`), and the one conversion of an OTLP span or log record into a lake row (`rows.py`), which
both writers call: the collector, and the embedded exporters (`exporters.py`). The views read the same
declarations (`views.py`).

The arrows: the collector, the instrumentation and the queries read this room; it reads the on-disk contract
(`tracevals.lake`: the schema and the writer) and the model, never the other way round (import-linter).
"""
