"""Session-consistent sampling: whole sessions are kept or dropped, never single spans.

The decision is a seeded hash of the session (conversation) id, falling back to the trace id for
spans outside any session, so every collector process — and the nightly job sampling the lake — makes
the same decision for the same session with the same seed and percentage.

A span of a session that carries no session id itself (an HTTP child span, say) is sampled with its
trace's session when an earlier span of that trace told the sampler the session (a bounded memory of
recent traces); otherwise by its trace id. tracevals' own instrumentation puts the session id on every
span beneath `tracevals.session(...)`, so this fallback rarely matters there.
"""

from __future__ import annotations

import hashlib


def session_kept(key: str, percentage: float, seed: int = 0) -> bool:
    """Whether the session (or trace) `key` is in the sample: `percentage` of keys are, deterministically."""
    if percentage >= 100.0:
        return True
    if percentage <= 0.0:
        return False
    digest = hashlib.blake2b(key.encode(), digest_size=8, key=seed.to_bytes(8, "little")).digest()
    return int.from_bytes(digest, "little") < int(percentage / 100.0 * 2**64)


class SessionSampler:
    """Per-span decisions that agree across the spans of a session (see the module docstring)."""

    def __init__(self, percentage: float, seed: int = 0, remembered_traces: int = 65_536) -> None:
        self.percentage = percentage
        self.seed = seed
        self._limit = remembered_traces
        self._trace_session: dict[str, str] = {}  # insertion-ordered: the oldest entry is evicted first
        self._decisions: dict[str, bool] = {}

    def keep(self, session_id: str | None, trace_id: str) -> bool:
        if session_id:
            if trace_id not in self._trace_session:
                if len(self._trace_session) >= self._limit:
                    del self._trace_session[next(iter(self._trace_session))]
                self._trace_session[trace_id] = session_id
            key = session_id
        else:
            key = self._trace_session.get(trace_id, trace_id)
        decision = self._decisions.get(key)
        if decision is None:
            if len(self._decisions) >= self._limit:
                self._decisions.clear()  # a cache: recomputing a decision gives the same answer
            decision = self._decisions[key] = session_kept(key, self.percentage, self.seed)
        return decision
