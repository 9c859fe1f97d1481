"""`tracevals ui`: a read-only local web UI over a lake (see docs/ui.md).

A reader, like the report: every figure comes from the report's own code (`figures`), computed in the
background when the lake changes; task and trace pages read one attempt's rows through the per-session
lookup (`trace`); one sandboxed connection per lake serves the pages, every query bounded in time and
rows (`reader`); a token, the Host header, GET only and a strict Content-Security-Policy guard it (`guard`).
"""

from __future__ import annotations

from tracevals.ui.app import UI, create_app

__all__ = ["UI", "create_app"]
