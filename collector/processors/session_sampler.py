"""The `session_sampler` processor: whole sessions kept or dropped by a seeded hash of the session id.

    processors:
      session_sampler:
        sampling_percentage: 10   # 0-100; 100 keeps everything
        hash_seed: 0

The rule is tracevals' one sampling rule (`tracevals.lake.sampling`), so `tracevals score --sample 0.1
--seed 0` keeps exactly the sessions this keeps. A filter: spans and log records are asked while converted.
"""

from __future__ import annotations

from dataclasses import dataclass

from tracevals.collector.config_schema import Key, integer, number, record
from tracevals.collector.processors.component import Hooks, Processor
from tracevals.lake.sampling import SessionSampler


@dataclass(frozen=True)
class SessionSamplerSettings:
    sampling_percentage: float
    hash_seed: int


def _build(settings: SessionSamplerSettings) -> Hooks:
    return Hooks(keep=SessionSampler(settings.sampling_percentage, settings.hash_seed).keep)


PROCESSOR = Processor(
    "session_sampler",
    record(
        SessionSamplerSettings,
        {"sampling_percentage": Key(number(0, 100), 100.0), "hash_seed": Key(integer(0, 2**32 - 1), 0)},
    ),
    _build,
)
