"""Where spans go when tracevals' instrumentors are turned on without `tracevals.instrument()`.

That is the `opentelemetry-instrument python agent.py` case: the OTel distro (if one is installed)
configures the SDK first, then each instrumentor found under the `opentelemetry_instrumentor` entry
point is turned on, and each of ours calls `configure_from_env()` first:

- `TRACEVALS_LAKE` set: spans (and content log records) also go to that embedded lake, through
  `tracevals.instrument(lake=...)`, added to the distro's provider if there is one. This is how an
  unmodified script lands in the lake, with no collector.
- no SDK tracer provider (no distro) but `OTEL_EXPORTER_OTLP_ENDPOINT` set: an OTLP exporter, as
  `tracevals.instrument()` would configure it, since the spans would otherwise go nowhere.
- otherwise nothing: the distro's configuration (`OTEL_TRACES_EXPORTER` …) stands as it is.

It does nothing when an `instrument()` call's pipeline is already active (the explicit call wins),
and runs its set-up once per process.
"""

from __future__ import annotations

import logging
import os
import threading

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

_log = logging.getLogger(__name__)
_lock = threading.Lock()
_done = False


def configure_from_env() -> None:
    """Set up tracevals' export from the environment if nothing else has; never raises."""
    global _done
    try:
        from tracevals.instrumentation.configure import LAKE_ENV, _otlp_endpoint, instrument, pipeline_active

        with _lock:
            if _done or pipeline_active():
                return
            lake = os.environ.get(LAKE_ENV, "").strip()
            bare = not isinstance(trace.get_tracer_provider(), TracerProvider)
            if lake:
                instrument(lake=lake, instrumentors=False)
            elif bare and _otlp_endpoint():
                instrument(instrumentors=False)
            else:
                return
            _done = True
    except Exception:  # telemetry never raises into the host program
        _log.exception("tracevals: could not configure export from the environment")
