"""The `redaction` processor: secrets out of every content column, whatever SDK sent them.

    processors:
      redaction:
        pii: false          # true: emails, phone numbers and `names` become stable pseudonyms
        names: []           # names to pseudonymise too (with pii: true)
        blocked_values: []  # more regexes whose matches become [REDACTED:blocked]

The rule is `tracevals.lake.redaction`, the one tracevals' own instrumentation applies. A transform: the
content columns of spans and log records, converted, before the sink (docs/collector.md says which).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from tracevals.collector.config_schema import Key, boolean, record, regexes, strings
from tracevals.collector.processors.component import Hooks, Processor
from tracevals.lake.redaction import LOG_CONTENT_COLUMNS, SPAN_CONTENT_COLUMNS, Redactor, redact_table

CONTENT_COLUMNS = {"traces": SPAN_CONTENT_COLUMNS, "logs": LOG_CONTENT_COLUMNS}


@dataclass(frozen=True)
class RedactionSettings:
    pii: bool  # also replace emails, phone numbers and `names` by stable pseudonyms
    names: tuple[str, ...]
    blocked_values: tuple[str, ...]  # more regular expressions whose matches are redacted


def _build(settings: RedactionSettings) -> Hooks:
    redactor = Redactor(pii=settings.pii, names=settings.names, extra=settings.blocked_values)

    def transform(signal: str, table: pa.Table) -> pa.Table:
        return redact_table(table, CONTENT_COLUMNS[signal], redactor)

    return Hooks(transform=transform)


PROCESSOR = Processor(
    "redaction",
    record(
        RedactionSettings,
        {"pii": Key(boolean, False), "names": Key(strings, ()), "blocked_values": Key(regexes, ())},
    ),
    _build,
)
