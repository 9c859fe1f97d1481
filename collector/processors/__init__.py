"""The collector's processors, looked up by the names `otel-config.yaml` gives them.

    processors:
      redaction: {}
      session_sampler: {sampling_percentage: 10}
    service:
      pipelines:
        traces:
          processors: [memory_limiter, redaction, session_sampler, batch]

A processor is one module of this package declaring a `Processor` (`component.py`): its config name, its
settings (validated as the rest of the config is, errors naming `processors.<name>.<key>`), and its hooks
(a row filter while converting, a table transform before the sink). `PROCESSORS` is the one table: the
config parser reads it for which processors and settings exist, the pipeline (`chains`) for what runs on
each signal, in the order its pipeline lists them. Adding a processor: a module here, a row below.

`memory_limiter` and `batch` are not in it: they are the pipeline's admission and batching settings
(`collector/config.py`), written where the OTel Collector writes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tracevals.collector.processors import redaction, session_sampler
from tracevals.collector.processors.component import Chain, Hooks, Processor

__all__ = ["PROCESSORS", "Chain", "Hooks", "Processor", "chains"]

PROCESSORS: dict[str, Processor[Any]] = {
    processor.name: processor
    for processor in (
        session_sampler.PROCESSOR,
        redaction.PROCESSOR,
    )
}


def chains(pipelines: Mapping[str, Sequence[str]], settings: Mapping[str, Any]) -> dict[str, Chain]:
    """Each signal's `Chain`, from the processor names its pipeline lists and the settings of each (the
    names outside `PROCESSORS`, memory_limiter and batch, are the pipeline's own). One instance of a
    processor serves every signal that lists it."""
    built = {name: PROCESSORS[name].build(value) for name, value in settings.items()}
    return {signal: Chain(signal, [built[n] for n in names if n in built]) for signal, names in pipelines.items()}
