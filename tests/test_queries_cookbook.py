"""Every query of docs/cookbook.md, checked against the rows it must give on a lake that has such cases.

The lake: a real `tracevals demo -k 2` run (the order-support cases on a simulated model with injected
429s, timeouts, bad arguments, hand-overs and an irreversible `delete_order`); a `tracevals run` of a
scripted agent (tests/fixtures/scripted_agent.py, the real `openai` client against the simulated model)
whose cases do what the demo does not: side effects done twice (and twice under one idempotency key),
writes that failed while the answer claims they worked (and failures admitted, made good, handed off),
calls a model asked for that never ran, deletions with and without a hand-off before them, a 429 waited
out; and two production sessions another framework recorded (plain OTel SDK), one never finished.

Each query has one check (`CHECKS`): its rows against rows computed another way (the trajectories the
evaluators read, or the view it aggregates, re-aggregated in Python). Where a query asks what an
evaluator's finding says (duplicate side effects, claimed successes, gaps), the check compares its rows
with the rows the stored findings give. `test_every_constant_of_every_query_is_pinned` changes each
constant of each query (a number, a string) and requires its check to fail.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner
from fixtures.scripted_agent import registry, write_plain_session

from tracevals.cli import main
from tracevals.evaluators.failures import FAILURE_MARKERS
from tracevals.model.findings import Finding, findings_of
from tracevals.model.prices import cost, default_prices, load_prices
from tracevals.model.trajectory import HANDOFF_TOOL, ToolCall, Trajectory
from tracevals.queries import open_lake
from tracevals.queries.trajectories import load_trajectories
from tracevals.simulator import SimulatedModelServer

COOKBOOK = Path(__file__).resolve().parents[1] / "docs" / "cookbook.md"
DEMO_TASKS = Path(__file__).resolve().parents[1] / "tracevals" / "demo" / "tasks.jsonl"
UNFINISHED, FINISHED = "prod-unfinished", "prod-finished"


def cookbook_queries() -> dict[str, str]:
    """{id: SQL} for every ```sql block of the cookbook (each names itself with `-- id: ...`)."""
    blocks = re.findall(r"```sql\n(.*?)```", COOKBOOK.read_text(encoding="utf-8"), re.S)
    queries = {}
    for block in blocks:
        match = re.search(r"^-- id: (\w+)$", block, re.M)
        assert match, f"a cookbook query has no `-- id:` line:\n{block}"
        queries[match.group(1)] = block
    return queries


QUERIES = cookbook_queries()


# --- the lake -------------------------------------------------------------------------------------


def _call(tool: str, args: dict[str, Any], effect: str, result: Any = None, **more: Any) -> dict[str, Any]:
    return {"tool": tool, "args": args, "effect": effect, "result": result, **more}


def _send(customer: str, text: str, **more: Any) -> dict[str, Any]:
    return _call("send_message", {"customer_id": customer, "text": text}, "write", {"sent": True}, **more)


def _keyed_send(key: str) -> dict[str, Any]:
    """Sent under an idempotency key: twice under one key is one operation, as the service saw it."""
    return _call("send_message", {"customer_id": "cus_22", "text": "Hi", "idempotency_key": key}, "write", {"sent": 1})


def _refund(order: str, **more: Any) -> dict[str, Any]:
    return _call("refund_order", {"order_id": order}, "irreversible", {"refunded": order}, **more)


def _delete(order: str, **more: Any) -> dict[str, Any]:
    return _call("delete_order", {"order_id": order}, "irreversible", {"deleted": order}, **more)


def _orders(customer: str, **more: Any) -> dict[str, Any]:
    return _call("get_orders", {"customer_id": customer}, "read", {"orders": []}, **more)


def _handoff_call(reason: str) -> dict[str, Any]:
    return _call(HANDOFF_TOOL, {"reason": reason, "pending": ["send_message cus_31"]}, "write", {"ok": True})


def _failed(status: int, kind: str = "server_error", **more: Any) -> dict[str, Any]:
    return {"error": {"type": kind, "status": status, "message": f"{kind} ({status})", **more}}


# case id -> the plan its input is (what the scripted model asks for, what each tool gives, the answer)
SCRIPTED: dict[str, dict[str, Any]] = {
    "dup_send": {"calls": [_send("cus_21", "Your parcel left."), _send("cus_21", "Your parcel left.")],
                 "answer": "I told you twice."},
    "dup_refund_x3": {"calls": [_refund("ord_901"), _refund("ord_901"), _refund("ord_901")], "answer": "Refunded."},
    "same_key_twice": {"calls": [_keyed_send("k-22"), _keyed_send("k-22")], "answer": "Sent once."},
    "double_handoff": {"calls": [_handoff_call("needs a person"), _handoff_call("needs a person")],
                       "answer": "A colleague will reply."},
    "claimed_refund": {"calls": [_refund("ord_907", **_failed(500))], "answer": "Your refund for ord_907 is done."},
    "claimed_send": {"calls": [_send("cus_23", "Done", **_failed(503))], "answer": "Message sent."},
    "admitted_refund": {"calls": [_refund("ord_908", **_failed(500))], "answer": "Sorry, I could not refund ord_908."},
    "recovered_refund": {"calls": [_refund("ord_906", **_failed(503)), _refund("ord_906")], "answer": "Refunded."},
    "handed_refund": {"calls": [_refund("ord_904", **_failed(500))], "answer": "A colleague will finish it.",
                      "handoff": {"reason": "the refund failed", "pending": ["refund_order ord_904"]}},
    "handoff_tool_after": {"calls": [_send("cus_24", "Hi", **_failed(500)), _handoff_call("send failed")],
                           "answer": "A colleague will send it."},
    "failed_handoff_call": {"calls": [{**_handoff_call("take over"), **_failed(500)}],
                            "answer": "A colleague will take over."},
    "read_failed": {"calls": [_orders("cus_25", **_failed(500))], "answer": "Here are your orders."},
    "earlier_success": {"calls": [_refund("ord_905"), _refund("ord_905", **_failed(409, "conflict"))],
                        "answer": "Done."},
    "gap_send": {"calls": [_orders("cus_26"), {**_send("cus_26", "Hello"), "drop": True}], "answer": ""},
    "gap_refund": {"calls": [{**_refund("ord_903"), "drop": True}], "answer": ""},
    "delete_alone": {"calls": [_delete("ord_911")], "answer": "Deleted ord_911."},
    "handoff_then_delete": {"calls": [_delete("ord_912")], "answer": "Deleted ord_912 as confirmed.",
                            "handoff": {"reason": "confirm the deletion", "candidates": ["ord_912"]}, "handoff_at": 0},
    "delete_then_handoff": {"calls": [_delete("ord_913")], "answer": "Deleted ord_913.",
                            "handoff": {"reason": "please double-check"}, "handoff_at": 1},
    "delete_failed": {"calls": [_delete("ord_914", **_failed(409, "conflict"))], "answer": "I could not delete it."},
    "lookup": {"calls": [_orders("cus_28")], "answer": "No orders."},  # 21 attempts: averages of 3+ decimals
    "waited_429": {"calls": [_orders("cus_27", **_failed(429, "rate_limit", retryable=True, retry_after_s=0.05)),
                             {**_orders("cus_27"), "wait_ms": 120}], "answer": "You have no orders."},
}  # fmt: skip
PRODUCTION = {
    FINISHED: {"request": "Any orders?", "calls": [_orders("cus_41")], "answer": "None yet."},
    UNFINISHED: {"request": "Where is my parcel?", "calls": [], "answer": "Let me look."},
}


@dataclass
class CookbookLake:
    path: Path
    con: duckdb.DuckDBPyConnection
    trajectories: list[Trajectory]
    findings: dict[tuple[str, str], list[Finding]]  # (trace id, evaluator) -> its stored findings
    details: dict[tuple[str, str], dict[str, Any]]
    inputs: dict[str, str]  # task id -> input
    _rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def rows(self, sql: str) -> list[dict[str, Any]]:
        """The rows of `sql` (read once per text: the checks read the same views for every mutant)."""
        if sql not in self._rows:
            relation = self.con.sql(sql)
            self._rows[sql] = [dict(zip(relation.columns, row, strict=True)) for row in relation.fetchall()]
        return [dict(r) for r in self._rows[sql]]

    def executed(self, t: Trajectory) -> list[ToolCall]:
        return [c for c in t.tool_calls if not c.gap]

    def found(self, kind: str, evaluator: str) -> Iterator[tuple[Trajectory, ToolCall | None, Finding]]:
        """Every stored finding of `kind`, with its trajectory and the call it blames."""
        for t in self.trajectories:
            for f in self.findings.get((t.trace_id, evaluator), []):
                if f.kind == kind:
                    calls = self.executed(t)
                    yield t, calls[f.step - 1] if f.step else None, f


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CookbookLake]:
    out = tmp_path_factory.mktemp("cookbook")
    runner = CliRunner()
    demo = runner.invoke(main, ["demo", "--out", str(out), "-k", "2", "--seed", "1"])
    assert demo.exit_code == 0, demo.output
    path = out / "lake"
    tasks = out / "scripted.jsonl"
    tasks.write_text("".join(json.dumps({"case_id": k, "input": json.dumps(p)}) + "\n" for k, p in SCRIPTED.items()))
    with SimulatedModelServer(registry=registry()) as server:
        scripted = runner.invoke(main, [
            "run", "--tasks", str(tasks), "--agent", "fixtures.scripted_agent:scripted_agent", "--variant", "scripted",
            "--setting", f"base_url={server.base_url}", "--lake", str(path), "-k", "1", "--run-id", "scripted",
        ])  # fmt: skip
    assert scripted.exit_code in (0, 1), scripted.output  # 1: some attempts fail, as they are meant to
    start = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    for i, (session_id, plan) in enumerate(PRODUCTION.items()):
        write_plain_session(
            path, "shop-api", session_id, plan, start + dt.timedelta(seconds=i), ended=session_id != UNFINISHED
        )
    con = open_lake(path, materialize=True)
    findings: dict[tuple[str, str], list[Finding]] = {}
    details: dict[tuple[str, str], dict[str, Any]] = {}
    for trace_id, evaluator, text in con.execute("SELECT trace_id, evaluator, details FROM scores").fetchall():
        details[(trace_id, evaluator)] = json.loads(text or "{}")
        findings[(trace_id, evaluator)] = findings_of(details[(trace_id, evaluator)], evaluator)
    inputs = {c["case_id"]: c["input"] for c in map(json.loads, DEMO_TASKS.read_text().splitlines()) if c}
    inputs.update({k: json.dumps(p) for k, p in SCRIPTED.items()})
    yield CookbookLake(path, con, load_trajectories(con), findings, details, inputs)


# --- how DuckDB computes, for the expected rows -----------------------------------------------------


def duck_round(x: float | None, digits: int) -> float | None:
    """DuckDB's round(DOUBLE, n): the double's exact decimal value rounded half away from zero
    (`round(2.775, 2)` is 2.77: the double is 2.77499999...)."""
    if x is None:
        return None
    return float(Decimal(x).quantize(Decimal(1).scaleb(-digits), ROUND_HALF_UP))


def quantile_cont(values: list[float], q: float) -> float:
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (pos - lo) * (ordered[hi] - ordered[lo])


def sorted_by(rows: list[dict[str, Any]], key: Callable[[dict[str, Any]], Any]) -> bool:
    return all(key(a) <= key(b) for a, b in itertools.pairwise(rows))


def same_rows(rows: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    """The same rows, in any order (the order is checked on its own where the query gives one)."""
    canon = lambda r: json.dumps(r, sort_keys=True, default=str)  # noqa: E731
    assert sorted(map(canon, rows)) == sorted(map(canon, expected))


def _ms(value: dt.datetime) -> float:
    return value.timestamp() * 1000.0


# --- one check per query --------------------------------------------------------------------------


def check_delete_without_handoff(lake: CookbookLake, sql: str) -> None:
    handed: dict[str | None, list[float]] = defaultdict(list)
    for t in lake.trajectories:
        handed[t.session_id] += [h.at_ms for h in t.handoffs]
    expected = sorted(
        (
            {"session_id": t.session_id, "task_id": t.task_id, "variant": t.variant, "at": c.start_ms}
            for t in lake.trajectories
            for c in lake.executed(t)
            if c.name == "delete_order" and not c.failed and not any(at <= c.start_ms for at in handed[t.session_id])
        ),
        key=lambda r: r["at"],
    )
    rows = lake.rows(sql)
    assert [{k: r[k] for k in ("session_id", "task_id", "variant")} for r in rows] == [
        {k: e[k] for k in ("session_id", "task_id", "variant")} for e in expected
    ]
    assert all(abs(_ms(r["deleted_at"]) - e["at"]) < 0.01 for r, e in zip(rows, expected, strict=True))
    # the lake has such cases: a deletion alone, one a hand-off followed; one after a hand-off, one failed
    assert {"delete_alone", "delete_then_handoff"} <= {e["task_id"] for e in expected}


def check_no_backoff_429(lake: CookbookLake, sql: str) -> None:
    retries = lake.rows("SELECT * FROM retries")
    expected = [
        {"session_id": r["session_id"], "task_id": r["task_id"], "tool": r["name"], "retry_number": r["retry_number"],
         "waited_ms": duck_round(r["wait_ms"], 1), "asked_ms": r["retry_after_ms"], "retry_failed": r["retry_failed"]}
        for r in retries
        if r["http_status_code"] == 429 and r["backoff_respected"] is False
    ]  # fmt: skip
    rows = lake.rows(sql)
    same_rows(rows, expected)
    assert rows and sorted_by(rows, lambda r: r["waited_ms"])
    # by the retry rule the evaluators read, these retries went at once after a 429 that asked for a wait
    at_once = set()
    for t in lake.trajectories:
        calls = lake.executed(t)
        for before, call in itertools.pairwise(calls):
            asked = before.retry_after_ms if before.failed and before.status_code == 429 else None
            if asked and before.name == call.name and call.start_ms - before.end_ms < asked:
                at_once.add((t.task_id, call.name))
    assert {(r["task_id"], r["tool"]) for r in rows} == at_once
    # left out: a 429 waited out, and retries of other failures
    assert any(r["task_id"] == "waited_429" and r["backoff_respected"] for r in retries)
    assert any(r["http_status_code"] == 503 for r in retries)


def check_cost_per_task_variant(lake: CookbookLake, sql: str) -> None:
    prices = {**default_prices(), **load_prices(lake.path / "prices.json")}  # the lake's own over the defaults
    groups: dict[tuple[str, str], list[Trajectory]] = defaultdict(list)
    for t in lake.trajectories:
        if t.run_id is not None:
            groups[(str(t.task_id), str(t.variant))].append(t)
    expected = [
        {"task_id": task, "variant": variant, "runs": len(ts),
         "input_tokens": sum(t.input_tokens for t in ts), "output_tokens": sum(t.output_tokens for t in ts),
         # a model with no price costs nothing here (`model_prices`): the demo's models are priced, `scripted` not
         "cost_per_run_usd": duck_round(sum(cost(t.model_usage, prices)[0] for t in ts) / len(ts), 6)}
        for (task, variant), ts in sorted(groups.items())
    ]  # fmt: skip
    rows = lake.rows(sql)
    assert [{k: r[k] for k in r if k != "cost_per_run_usd"} for r in rows] == [
        {k: e[k] for k in e if k != "cost_per_run_usd"} for e in expected
    ]
    assert [r["cost_per_run_usd"] for r in rows] == pytest.approx([e["cost_per_run_usd"] for e in expected], abs=1e-12)
    assert any(e["cost_per_run_usd"] > 0 for e in expected)
    assert {"baseline", "candidate", "scripted"} == {r["variant"] for r in rows}


def check_slowest_tool(lake: CookbookLake, sql: str) -> None:
    durations: dict[str, list[float]] = defaultdict(list)
    for r in lake.rows("SELECT tool_name, duration_ms FROM tool_calls"):
        durations[r["tool_name"]].append(r["duration_ms"])
    expected = [
        {"tool_name": tool, "calls": len(d), "avg_ms": duck_round(sum(d) / len(d), 2),
         "p95_ms": duck_round(quantile_cont(d, 0.95), 2), "max_ms": duck_round(max(d), 2)}
        for tool, d in durations.items()
    ]  # fmt: skip
    rows = lake.rows(sql)
    assert {r["tool_name"] for r in rows} == set(durations)
    for r in rows:
        e = next(e for e in expected if e["tool_name"] == r["tool_name"])
        assert r["calls"] == e["calls"]
        for k in ("avg_ms", "p95_ms", "max_ms"):
            assert r[k] == pytest.approx(e[k], abs=1e-9), (k, r, e)
    assert sorted_by(rows, lambda r: -r["p95_ms"])


def check_never_finished(lake: CookbookLake, sql: str) -> None:
    rows = lake.rows(sql)
    assert [(r["session_id"], r["turn_count"], r["terminal_state"]) for r in rows] == [(UNFINISHED, 1, "open")]
    assert all(r["end_time"] is None or r["end_time"] >= r["start_time"] for r in rows)


def check_terminal_states(lake: CookbookLake, sql: str) -> None:
    sessions = lake.rows("SELECT variant, terminal_state, finished_by FROM sessions")
    counts = Counter((s["variant"], s["terminal_state"], s["finished_by"]) for s in sessions)
    expected = [{"variant": v, "terminal_state": s, "finished_by": f, "sessions": n} for (v, s, f), n in counts.items()]
    rows = lake.rows(sql)
    same_rows(rows, expected)
    assert sorted_by(rows, lambda r: (r["variant"] is None, r["variant"] or "", -r["sessions"]))
    assert sum(r["sessions"] for r in rows) == len({t.session_id for t in lake.trajectories})


def check_tool_errors(lake: CookbookLake, sql: str) -> None:
    calls = lake.rows("SELECT tool_name, error_type, http_status_code, is_error FROM tool_calls")
    per_tool = Counter(c["tool_name"] for c in calls)
    failures = Counter((c["tool_name"], c["error_type"], c["http_status_code"]) for c in calls if c["is_error"])
    expected = [
        {"tool_name": t, "error_type": e, "http_status_code": h, "failures": n,
         "share_of_calls": duck_round(n / per_tool[t], 3)}
        for (t, e, h), n in failures.items()
    ]  # fmt: skip
    rows = lake.rows(sql)
    same_rows(rows, expected)
    assert sorted_by(rows, lambda r: -r["failures"])
    assert {"rate_limit", "timeout"} <= {r["error_type"] for r in rows}


def check_regressions(lake: CookbookLake, sql: str) -> None:
    rates: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in lake.rows("SELECT task_id, variant, passed FROM runs WHERE passed IS NOT NULL"):
        rates[(r["task_id"], r["variant"])].append(1.0 if r["passed"] else 0.0)
    rate = {k: sum(v) / len(v) for k, v in rates.items()}
    expected = sorted(
        (
            {"task_id": task, "baseline": b, "candidate": rate[(task, "candidate")],
             "delta": rate[(task, "candidate")] - b}
            for (task, variant), b in rate.items()
            if variant == "baseline" and (task, "candidate") in rate
        ),
        key=lambda r: (r["delta"], r["task_id"]),
    )  # fmt: skip
    assert lake.rows(sql) == expected and len(expected) == 20
    assert any(e["delta"] != 0 for e in expected)


def check_gaps(lake: CookbookLake, sql: str) -> None:
    rows = lake.rows(sql)
    assert sorted_by(rows, lambda r: r["asked_at"])
    # the rows session_completeness's findings give: a dangling_call finding on each trace, details.gaps of them
    flagged = {t.trace_id for t, _, _ in lake.found("dangling_call", "session_completeness")}
    counted = {
        trace: d["gaps"] for (trace, ev), d in lake.details.items() if ev == "session_completeness" and d.get("gaps")
    }
    assert Counter(r["trace_id"] for r in rows) == Counter(counted) and set(counted) == flagged
    by_task = {t.trace_id: t.task_id for t in lake.trajectories}
    assert sorted((by_task[r["trace_id"]], r["tool_name"]) for r in rows) == [
        ("gap_refund", "refund_order"), ("gap_send", "send_message"),
    ]  # fmt: skip


def check_duplicate_side_effects(lake: CookbookLake, sql: str) -> None:
    # the rows retry_discipline's findings give: each repeat is a finding on the call that repeats
    repeats: Counter[tuple[str, str, str | None]] = Counter()
    for t, call, _ in lake.found("duplicate_side_effect", "retry_discipline"):
        assert call is not None
        repeats[(t.trace_id, call.name, call.args_hash)] += 1
    rows = lake.rows(sql)
    assert {(r["trace_id"], r["tool_name"], r["arguments"]): r["times"] for r in rows} == {
        k: n + 1 for k, n in repeats.items()
    }
    assert sorted_by(rows, lambda r: (-r["times"], r["trace_id"], r["tool_name"]))
    by_task = {t.trace_id: t.task_id for t in lake.trajectories}
    assert sorted((by_task[r["trace_id"]], r["times"]) for r in rows) == [("dup_refund_x3", 3), ("dup_send", 2)]


def check_pending_handoffs(lake: CookbookLake, sql: str) -> None:
    expected = [
        {"session_id": t.session_id, "task_id": t.task_id, "reason": h.reason, "pending": list(h.pending),
         "candidates": list(h.candidates)}
        for t in lake.trajectories
        for h in t.handoffs
        if h.pending or h.candidates
    ]  # fmt: skip
    rows = [
        {**r, "pending": json.loads(r["pending"]), "candidates": json.loads(r["candidates"])} for r in lake.rows(sql)
    ]
    same_rows(rows, expected)
    assert sorted_by(rows, lambda r: r["session_id"])
    # such cases: one thing pending, one candidate; and a hand-off with neither, left out
    assert any(e["pending"] and not e["candidates"] and len(e["pending"]) == 1 for e in expected)
    assert any(e["candidates"] == ["ord_912"] and not e["pending"] for e in expected)
    assert any(h.reason == "please double-check" for t in lake.trajectories for h in t.handoffs)


def check_steps_per_variant(lake: CookbookLake, sql: str) -> None:
    per: dict[str, list[Trajectory]] = defaultdict(list)
    for t in lake.trajectories:
        if t.variant is not None:
            per[t.variant].append(t)
    expected = [
        {"variant": v, "attempts": len(ts),
         "avg_steps": duck_round(sum(t.model_calls + len(t.tool_calls) for t in ts) / len(ts), 2),
         "avg_tool_calls": duck_round(sum(len(lake.executed(t)) for t in ts) / len(ts), 2),
         "most_tool_calls": max(len(lake.executed(t)) for t in ts)}
        for v, ts in sorted(per.items())
    ]  # fmt: skip
    assert lake.rows(sql) == expected


def check_claimed_success(lake: CookbookLake, sql: str) -> None:
    # the words an answer admits a failure by are the evaluators' own
    [words] = re.findall(r"regexp_matches\(\s*lower\(r\.output\),\s*'((?:[^']|'')*)'", sql)
    assert tuple(words.replace("''", "'").split("|")) == FAILURE_MARKERS
    # the rows failure_handling's and injection's findings give: a silent failure claiming success, on a write
    claimed = {
        (t.trace_id, call.span_id)
        for evaluator in ("failure_handling", "injection")
        for t, call, f in lake.found("silent_failure", evaluator)
        if call is not None and f.evidence.get("outcome") == "failed_claiming_success" and call.failed
        and call.effect in ("write", "irreversible") and call.name != HANDOFF_TOOL
    }  # fmt: skip
    rows = lake.rows(sql)
    spans = {
        (r["trace_id"], r["call_index"]): r["span_id"]
        for r in lake.rows("SELECT trace_id, call_index, span_id FROM tool_calls")
    }
    assert {(r["trace_id"], spans[(r["trace_id"], r["call_index"])]) for r in rows} == claimed
    assert sorted_by(rows, lambda r: (r["trace_id"], r["call_index"]))
    by_task = {t.trace_id: t.task_id for t in lake.trajectories}
    assert sorted(by_task[r["trace_id"]] for r in rows) == ["claimed_refund", "claimed_send"]


def check_tool_sequences(lake: CookbookLake, sql: str) -> None:
    counts = Counter(
        (t.task_id, " > ".join(c.name for c in lake.executed(t))) for t in lake.trajectories if t.task_id is not None
    )
    expected = [{"task_id": k, "sequence": s, "attempts": n} for (k, s), n in counts.items()]
    rows = lake.rows(sql)
    same_rows(rows, expected)
    assert sorted_by(rows, lambda r: (r["task_id"], -r["attempts"]))
    assert any(r["sequence"].startswith("search_customer > ") for r in rows)


def check_conversation(lake: CookbookLake, sql: str) -> None:
    turns = lake.rows("SELECT * FROM turns ORDER BY session_id, turn_index")
    assert len(turns) > 20
    by_trace = {t.trace_id: t for t in lake.trajectories}
    expected = []
    for turn in turns[:20]:
        t = by_trace[turn["trace_id"]]
        if t.task_id is not None:  # the user's text is the case's input, as the harness gave it
            assert turn["user_text"] == lake.inputs[t.task_id]
        expected.append({
            "session_id": turn["session_id"], "turn_index": turn["turn_index"], "user_text": turn["user_text"],
            "final_text": turn["final_text"], "tool_calls": len(t.tool_calls), "input_tokens": t.input_tokens,
            "output_tokens": t.output_tokens,
        })  # fmt: skip
    assert lake.rows(sql) == expected


CHECKS: dict[str, Callable[[CookbookLake, str], None]] = {
    name.removeprefix("check_"): fn for name, fn in globals().items() if name.startswith("check_") and callable(fn)
}


# --- the tests ------------------------------------------------------------------------------------


def test_every_query_has_a_check_and_every_check_a_query() -> None:
    assert len(QUERIES) >= 15 and set(CHECKS) == set(QUERIES)


@pytest.mark.parametrize("query_id", sorted(QUERIES))
def test_the_query_gives_the_rows_it_must(lake: CookbookLake, query_id: str) -> None:
    CHECKS[query_id](lake, QUERIES[query_id])


# a number, or a string literal; comments are skipped, and so is the 1 of `EXISTS (SELECT 1 FROM ...)`
_LITERAL = re.compile(
    r"(?P<comment>--[^\n]*)|(?P<string>'(?:[^']|'')*')|(?P<select>SELECT 1 FROM)"
    r"|(?<![\w.])(?P<number>\d+(?:\.\d+)?)(?![\w.])"
)


def mutants(sql: str) -> Iterator[tuple[str, str]]:
    """(what changed, the query with one constant changed): each number + 1 and set to 100, each string
    with a character added."""
    for m in _LITERAL.finditer(sql):
        if m.group("comment") or m.group("select"):
            continue
        start, end = m.span()
        if m.group("string"):
            changes = [m.group(0)[:-1] + "_'"]
        else:
            n = m.group("number")
            plus = str(int(n) + 1) if n.isdigit() else repr(float(n) + 1)
            changes = [plus] + (["100"] if n != "100" else [])
        for change in changes:
            yield f"{m.group(0)} -> {change} at {start}", sql[:start] + change + sql[end:]


_ROUND_DIGITS = re.compile(r"round\((?:[^()]|\([^()]*\))*,\s*$")


def _rounding_digits(sql: str, what: str) -> bool:
    """Whether a mutant changed the digits of a `round(x, N)`: on real timings (the lake is a real run's) the
    rounded values can be the same at N + 1 digits by chance (1.302 -> 1.3 both ways)."""
    at = int(what.rsplit(" at ", 1)[1])
    return bool(_ROUND_DIGITS.search(sql[:at])) and sql[at:].lstrip("0123456789.").startswith(")")


def test_every_constant_of_every_query_is_pinned(lake: CookbookLake) -> None:
    survivors, tried = [], 0
    for query_id, sql in sorted(QUERIES.items()):
        for what, mutant in mutants(sql):
            tried += 1
            try:
                CHECKS[query_id](lake, mutant)
            except (AssertionError, duckdb.Error):
                continue
            if _rounding_digits(sql, what) and lake.rows(mutant) == lake.rows(sql):
                continue  # the same rows on this run's timings: nothing any check could tell apart
            survivors.append(f"{query_id}: {what}")
    assert tried > 30 and survivors == []
    # the issue's example: HAVING count(...) > 1 as > 100
    [duplicates] = [m for w, m in mutants(QUERIES["duplicate_side_effects"]) if w.startswith("1 -> 100")]
    with pytest.raises(AssertionError):
        check_duplicate_side_effects(lake, duplicates)


def test_the_cli_runs_a_cookbook_query_from_a_file(lake: CookbookLake, tmp_path: Path) -> None:
    path = tmp_path / "slowest_tool.sql"
    path.write_text(QUERIES["slowest_tool"])
    result = CliRunner().invoke(main, ["sql", "--lake", str(lake.path), "--format", "csv", str(path)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == "tool_name,calls,avg_ms,p95_ms,max_ms"
