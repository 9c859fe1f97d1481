"""One retry rule: the SQL `retries` view and the Python retry chains (`tracevals.model.retries`, which
`retry_discipline`, `step_budget` and the statistics count by) name exactly the same retries, chains and
chain lengths on trajectories of any shape: failures and successes, the same operation with other calls
in between, idempotency keys in any position, arguments not captured (hash or nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fixtures.lake_rows import span_row
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tracevals.lake.writer import LakeWriter
from tracevals.model.retries import retry_chains
from tracevals.queries import open_lake
from tracevals.queries.trajectories import load_trajectories
from tracevals.spans.normalize import args_digest_of

# (arguments as recorded, argument hash): the same operation written several ways, others, and no content
ARGS = st.sampled_from(
    [
        ('{"order_id": "o1"}', None),
        ('{"order_id": "o1", "idempotency_key": "k1"}', None),
        ('{"idempotency_key": "k2", "order_id": "o1"}', None),
        ('{"Idempotency-Key": "k3", "order_id": "o1"}', None),
        ('{"order_id":"o1","idempotencyKey":"k4"}', None),  # another producer's spacing and key name
        ('{"n": 1.0, "order_id": "o2"}', None),
        ('{"order_id": "o2", "n": 1}', None),  # the same operation: 1 and 1.0 are one number
        ('{"order_id": "o2"}', None),
        (None, "h1"),
        (None, "h2"),
        (None, None),
    ]
)
CALL = st.tuples(st.sampled_from(["refund", "lookup"]), ARGS, st.sampled_from([None, None, "429", "timeout"]))
TRACE = st.lists(CALL, min_size=1, max_size=8)


def _rows(traces: list[list[tuple[str, tuple[str | None, str | None], str | None]]]) -> list[dict[str, Any]]:
    rows = []
    for t, calls in enumerate(traces):
        trace, root = f"{t + 1:032x}", f"{1:016x}"
        rows.append(span_row(trace, root, None, "agent", 0, 2))
        for i, (name, (args, args_hash), error) in enumerate(calls):
            # as every writer records it: the digest of the arguments where the span carried none
            digest = args_hash or (args_digest_of(args) if args else None)
            rows.append(
                span_row(
                    trace, f"{i + 2:016x}", root, "tool", 10 * i + 1, 2, tool_name=name, tool_args=args,
                    tool_args_hash=digest, error_type=error, status_code="error" if error else "unset",
                )
            )  # fmt: skip
    return rows


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(traces=st.lists(TRACE, min_size=1, max_size=20))
@example(  # a failed call, another call, then the first again: no retry (the old view counted one)
    traces=[[("refund", ('{"order_id": "o1"}', None), "429"), ("lookup", (None, None), None),
             ("refund", ('{"order_id": "o1"}', None), None)]]
)  # fmt: skip
@example(  # a fresh idempotency key on a re-sent call is still the same operation: a retry
    traces=[[("refund", ('{"order_id": "o1", "idempotency_key": "k1"}', None), "timeout"),
             ("refund", ('{"idempotency_key": "k2", "order_id": "o1"}', None), None)]]
)  # fmt: skip
def test_the_retries_view_follows_the_python_retry_chains(tmp_path_factory: Any, traces: Any) -> None:
    lake: Path = tmp_path_factory.mktemp("lake")
    LakeWriter(lake).write_rows(_rows(traces))
    con = open_lake(lake)
    sql = con.execute(
        "SELECT trace_id, span_id, chain_span_id, retry_number, chain_length FROM retries ORDER BY ALL"
    ).fetchall()
    python = []
    for trajectory in load_trajectories(con):
        calls = [c for c in trajectory.tool_calls if not c.gap]
        for chain in retry_chains(calls):
            for number, index in enumerate(chain[1:], start=1):
                python.append((trajectory.trace_id, calls[index].span_id, calls[chain[0]].span_id, number, len(chain)))
    assert sql == sorted(python)
