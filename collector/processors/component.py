"""What a collector processor is: a name, its settings, and the hooks it adds to a signal's pipeline.

A processor acts on rows at two points of the pipeline, and only there:

- `keep(session_id, trace_id) -> bool`, a row filter asked for every span and log record while a request
  is converted (by the columnar path and the per-request one alike), so that a dropped row is never built;
  a log record is asked with no session id. The session sampler is one.
- `transform(signal, table) -> table`, applied to the converted rows (`signal` is `traces` or `logs`)
  before they reach the Parquet sink, on every path to the lake (new data, a previous run's log, records
  written again after a failed write). Redaction is one.

Admission, the write-ahead log, batching and commits are the pipeline's, never a processor's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import pyarrow as pa

if TYPE_CHECKING:  # the conversion's imports (protobuf, the normalizer) are not needed to read a config
    from tracevals.collector.conversion.rows import Keep

S = TypeVar("S")
Transform = Callable[[str, pa.Table], pa.Table]


@dataclass(frozen=True)
class Hooks:
    """What one processor does to a signal's rows (either hook may be absent)."""

    keep: Keep | None = None
    # must not change what a filter reads (ids), so that filtering while converting is filtering first
    transform: Transform | None = None


@dataclass(frozen=True)
class Processor(Generic[S]):
    """A processor as the config names it.

    `settings(value, path)` parses and validates `processors.<name>` (`config_schema.record`, its errors
    naming `path`), `build(settings)` makes its hooks: once per collector, shared by every signal whose
    pipeline lists it (a sampler that learnt a trace's session from its spans applies it to its logs)."""

    name: str
    settings: Callable[[Any, str], S]
    build: Callable[[S], Hooks]


class Chain:
    """One signal's processors, in the order `service.pipelines.<signal>.processors` lists them: their
    filters asked in that order (a row one drops is not shown to the next), their transforms applied in
    that order."""

    def __init__(self, signal: str, hooks: Sequence[Hooks] = ()) -> None:
        self.signal = signal
        keeps = [h.keep for h in hooks if h.keep is not None]
        self._transforms = [h.transform for h in hooks if h.transform is not None]
        # asked once a span: one filter is called as it is, without a wrapper
        self.keep: Keep | None = keeps[0] if len(keeps) == 1 else _all(keeps) if keeps else None

    def transform(self, table: pa.Table) -> pa.Table:
        for transform in self._transforms:
            table = transform(self.signal, table)
        return table


def _all(keeps: list[Keep]) -> Keep:
    def keep(session_id: Any, trace_id: str) -> bool:
        return all(k(session_id, trace_id) for k in keeps)

    return keep
