"""Session-consistent sampling, the one rule: whole sessions are kept or dropped, never single spans.

A session (a conversation id; a trace outside any session is its own) is in the sample when the first
32 bits of `md5(f"{seed}:{session}")`, as an integer, are below `fraction * 2**32`. The rule is written
once here, in Python (`session_sampled`) and in SQL (`sampled_sql`), and every component uses it: the
collector's sampler (`processors.session_sampler` of `otel-config.yaml`, whose
`sampling_percentage` is `fraction * 100`), `tracevals score --sample`, `score --follow`, `report
--sample` and the distributed engines (md5 is in every SQL engine). So with the same fraction and seed
they keep exactly the same sessions (tests/test_sampling_one_rule.py proves it).

A span of a session that carries no session id itself (an HTTP child span, say) is sampled with its
trace's session when an earlier span of that trace told the collector's sampler the session (a
bounded memory of recent traces); otherwise by its trace id. tracevals' own instrumentation puts the
session id on every span beneath `tracevals.session(...)`, so this fallback rarely matters there.
"""

from __future__ import annotations

import hashlib

from tracevals.model.quoting import sql_string

SCALE = 2**32


def bucket(salt: str, key: str) -> int:
    """The first 32 bits of md5(salt + key) as an integer: the hash behind the sample and the chunks."""
    return int(hashlib.md5(f"{salt}{key}".encode()).hexdigest()[:8], 16)


def bucket_sql(salt: str, column: str) -> str:
    """`bucket` in SQL (DuckDB, and any engine with `md5` and hex casts)."""
    return f"CAST(('0x' || left(md5({sql_string(salt)} || {column}), 8)) AS BIGINT)"


def threshold(fraction: float) -> int:
    return int(fraction * SCALE)


def session_sampled(session_id: str, fraction: float | None, seed: int = 0) -> bool:
    """Whether the session (or trace) `session_id` is in the `fraction` sample of seed `seed`."""
    if fraction is None or fraction >= 1:
        return True
    if fraction <= 0:
        return False
    return bucket(f"{int(seed)}:", session_id) < threshold(fraction)


def sampled_sql(column: str, fraction: float | None, seed: int = 0) -> str:
    """The SQL condition of `session_sampled` on a session-id column; `TRUE` for no sample."""
    if fraction is None or fraction >= 1:
        return "TRUE"
    if fraction <= 0:
        return "FALSE"
    return f"{bucket_sql(f'{int(seed)}:', column)} < {threshold(fraction)}"


class SessionSampler:
    """Per-span decisions that agree across the spans of a session (see the module docstring).

    `percentage` as the OTel Collector's probabilistic sampler takes it (0-100), `seed` its `hash_seed`.
    """

    def __init__(self, percentage: float, seed: int = 0, remembered_traces: int = 65_536) -> None:
        self.percentage = percentage
        self.fraction = percentage / 100.0
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
            decision = self._decisions[key] = session_sampled(key, self.fraction, self.seed)
        return decision


def session_kept(key: str, percentage: float, seed: int = 0) -> bool:
    """The collector's spelling of `session_sampled`: `percentage` in 0-100."""
    return session_sampled(key, percentage / 100.0, seed)
