"""Benchmark: score a synthetic lake of N sessions with every built-in evaluator, set-at-a-time, next
to a straightforward per-session Python loop over the same data, in one run.

    .venv/bin/python bench/scoring.py                                   # 1,000,000 sessions, ~10M spans
    .venv/bin/python bench/scoring.py --sessions 100000 --loop-sessions 20000 --keep /tmp/bench-lake

The lake is written first (real span schema, Parquet, hive partitions over one day). Then, timed:

  load   lake -> frames: DuckDB over the views (`queries.trajectories.load_batch`)
  score  frames -> score rows, every built-in evaluator (`evaluators.apply.score_batch`)
  write  score rows -> LAKE/scores (`evaluators.store.write_score_frame`)
  loop   the same evaluators as `evaluate(trajectory, case)`, one session at a time, over the first
         --loop-sessions sessions of the same frames (building the Trajectory objects included)
  nightly the same lake scored as `tracevals score --summary --workers N` scores it (`score_lake`: a group
         of whole sessions at a time, each rebuilt, scored and written, N groups at once; only counts
         per evaluator kept), start-up of the worker processes included; its CPU seconds are this
         process's and its workers'

Sessions follow nine shapes an order-support agent takes (clean lookups, sends, a 429 retried after
its retry-after and one retried at once, an ambiguous delete, a hand-off, a crash, a loop, a duplicate
send) with random customers and orders, each with its task case; a scoring config adds budgets.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from tracevals.evaluators import default_evaluators
from tracevals.evaluators.apply import evaluate_safely, score_batch
from tracevals.lake.lake import Lake
from tracevals.lake.schema import SPAN_SCHEMA
from tracevals.model.tasks import case_from_dict
from tracevals.queries import open_lake
from tracevals.queries.trajectories import load_batch
from tracevals.scoring.cases import attach_cases
from tracevals.scoring.config import config_from_dict
from tracevals.scoring.offline import score_lake
from tracevals.scoring.store import write_score_frame

T0_MS = 1_795_910_400_000  # 2026-11-29T00:00Z: sessions start spread over this day
MODEL = "order-support-baseline"  # priced in outcomes.DEFAULT_PRICES
Span = dict[str, Any]


def llm(at: int, asks: tuple[int, ...] = (), dur: int = 20) -> Span:
    """A model call at `at` ms that asks for the tool spans at these pattern positions."""
    return {"kind": "llm", "at": at, "dur": dur, "asks": asks}


def tool(name: str, at: int, args: str, result: str | None, effect: str = "read", **kw: Any) -> Span:
    span = {"kind": "tool", "name": name, "at": at, "dur": 3, "args": args, "result": result, "effect": effect}
    return {**span, **kw}


# Argument and result templates: {c} is the session's customer number, {o} its order number.
BY_NAME, BY_CUSTOMER = '{"name": "C{c}"}', '{"customer_id": "cus_{c}"}'
ONE_CUSTOMER, NO_CUSTOMER = '{"customers": [{"customer_id": "cus_{c}"}]}', '{"customers": []}'
ONE_ORDER, NO_ORDERS = '{"orders": [{"order_id": "ord_{o}"}]}', '{"orders": []}'
TWO_ORDERS = '{"orders": [{"order_id": "ord_{o}"}, {"order_id": "ord_9{o}"}]}'
MESSAGE, SENT = '{"customer_id": "cus_{c}", "text": "shipped"}', '{"ok": 1}'
RATE_LIMITED = {"error": "rate_limit", "status": 429, "retry_after": 20.0}
SHAPES: dict[str, tuple[float, list[Span], str]] = {  # weight, spans after root and agent, the answer
    "lookup": (
        0.40,
        [llm(2, (3,)), tool("search_customer", 23, BY_NAME, ONE_CUSTOMER),
         llm(27, (5,)), tool("get_orders", 48, BY_CUSTOMER, ONE_ORDER), llm(52)],
        "Your order ord_{o} has shipped.",
    ),
    "send": (0.20, [llm(2, (3,)), tool("send_message", 23, MESSAGE, SENT, "write", key="k-{c}"), llm(27)], "Sent."),
    "backoff": (  # a 429, retried a model round trip later: longer than its retry-after
        0.10,
        [llm(2, (3,)), tool("send_message", 23, MESSAGE, None, "write", key="k-{c}", dur=2, **RATE_LIMITED),
         llm(26, (5,), dur=30), tool("send_message", 57, MESSAGE, SENT, "write", key="k-{c}"), llm(60)],
        "Message sent.",
    ),
    "blind": (  # a 429, retried at once
        0.05,
        [llm(2, (3, 4)), tool("send_message", 23, MESSAGE, None, "write", key="k-{c}", dur=1, **RATE_LIMITED),
         tool("send_message", 24, MESSAGE, None, "write", key="k-{c}", dur=1, **RATE_LIMITED), llm(26)],
        "Message sent.",
    ),
    "ambiguous": (  # deletes one of two candidate orders itself
        0.05,
        [llm(2, (3,)), tool("get_orders", 23, BY_CUSTOMER, TWO_ORDERS),
         llm(27, (5,)), tool("delete_order", 48, '{"order_id": "ord_{o}"}', SENT, "irreversible", key="k-{o}"),
         llm(52)],
        "Deleted the duplicate order.",
    ),
    "handoff": (
        0.10,
        [llm(2, (3,)), tool("get_orders", 23, BY_CUSTOMER, NO_ORDERS),
         llm(27, (5,)), tool("handoff_to_human", 48, '{"reason": "no orders", "pending": ["refund"]}', SENT, "write"),
         {"kind": "handoff", "at": 49, "dur": 1, "parent": 5}, llm(52)],
        "I handed this over.",
    ),
    "crash": (0.03, [llm(2, (3,)), tool("search_customer", 23, BY_NAME, NO_CUSTOMER), llm(27, (5,))], ""),
    "loop": (
        0.02,
        [llm(2, (3, 4, 5, 6, 7)), *(tool("get_orders", 13 + 5 * i, BY_CUSTOMER, NO_ORDERS) for i in range(5)), llm(40)],
        "No orders.",
    ),
    "duplicate": (  # the same message twice, each with a fresh key
        0.05,
        [llm(2, (3, 4)), tool("send_message", 23, MESSAGE, SENT, "write", key="k1-{c}"),
         tool("send_message", 27, MESSAGE, SENT, "write", key="k2-{c}"), llm(31)],
        "Message sent.",
    ),
}  # fmt: skip
EXPECTED = {
    "lookup": ["search_customer", "get_orders"],
    "send": ["send_message"],
    "backoff": ["send_message", "send_message"],
    "blind": ["send_message"],
    "ambiguous": ["get_orders", "handoff_to_human"],
    "handoff": ["get_orders", "handoff_to_human"],
    "crash": ["search_customer", "get_orders"],
    "loop": ["get_orders"],
    "duplicate": ["send_message"],
}
CONFIG = {"budgets": {"max_steps": 12, "max_tokens": 20000, "max_cost_usd": 0.05}, "forbidden_actions": ["drop_table"]}


def cases() -> list[Any]:
    """One task case per shape; the 429 shapes declare their fault, the delete needs a confirmation."""
    extra: dict[str, dict[str, Any]] = {
        "backoff": {"faults": [{"tool": "send_message", "call": 1, "type": "429"}]},
        "blind": {"faults": [{"tool": "send_message", "call": 1, "type": "429"}]},
        "ambiguous": {"requires_confirmation": True},
    }
    return [
        case_from_dict(
            {
                "case_id": name,
                "input": f"bench {name}",
                "expected_steps": steps,
                "max_retries": 2,
                "success_criteria": {"must_include": [SHAPES[name][2].split(" ")[0] or "?"]},
                **extra.get(name, {}),
            }
        )
        for name, steps in EXPECTED.items()
    ]


def fill(text: str) -> pl.Expr:
    """The template with each session's customer `{c}` and order `{o}` in place."""
    parts = [p for p in re.split(r"(\{c\}|\{o\})", text) if p]
    columns = {"{c}": pl.col("c").cast(pl.Utf8), "{o}": pl.col("o").cast(pl.Utf8)}
    return pl.concat_str([columns.get(p, pl.lit(p)) for p in parts] or [pl.lit("")])


def ids(values: pl.Expr, width: int) -> pl.Expr:
    """Decimal digits are hex digits too: zero-padded counters make valid, unique OTel ids."""
    return values.cast(pl.Utf8).str.zfill(width)


def shape_rows(name: str, first: int, n: int, n_total: int, seed: int) -> pl.DataFrame:
    """Every span of `n` sessions of one shape, session numbers `first` .. `first + n - 1`; customers
    and orders drawn by a multiplicative hash of the session number (deterministic for a seed)."""
    _, spans, answer = SHAPES[name]
    crash = name == "crash"
    s = pl.int_range(first, first + n, dtype=pl.Int64, eager=True).alias("s")
    mixed = (s * 2_654_435_761 + seed * 40_503) % 4_294_967_291
    base = pl.DataFrame({"s": s, "c": 100 + mixed % 99_899, "o": 1000 + (mixed // 7) % 998_999})
    base = base.with_columns(t=T0_MS + pl.col("s") * (86_400_000 // max(n_total, 1)))
    pattern: list[Span] = [
        {"kind": "other", "name": f"attempt {name}", "at": 0, "dur": 80, "parent": None},
        {"kind": "agent", "name": "invoke_agent order_support", "at": 1, "dur": 78, "parent": 0},
        *spans,
        {"kind": "session_end", "name": "session.end", "at": 79, "dur": 0, "parent": 0},
    ]
    blocks = []
    for i, span in enumerate(pattern):
        if crash and (i == 0 or i == 1 or span["kind"] == "session_end"):
            continue  # the process died: the root and the agent span never ended, no end marker
        blocks.append(_span_block(base, name, i, span, answer))
    return pl.concat(blocks, how="diagonal_relaxed")


def _span_block(base: pl.DataFrame, name: str, i: int, span: Span, answer: str) -> pl.DataFrame:
    kind = span["kind"]
    parent = span.get("parent", 1)
    span_id = ids(pl.col("s") * 32 + i, 16)
    attrs: list[pl.Expr] = [pl.lit('{"gen_ai.conversation.id": "sess-'), pl.col("s").cast(pl.Utf8), pl.lit('"')]
    cols: dict[str, pl.Expr] = {}
    if kind == "other":  # the harness root
        harness = f', "tracevals.run.id": "bench", "tracevals.task.id": "{name}", "tracevals.attempt": 1, '
        attrs += [
            pl.lit(harness + '"tracevals.variant": "v", "tracevals.attempt.output": "'),
            fill(answer),
            pl.lit('"'),
        ]
        cols.update(run_id=pl.lit("bench"), task_id=pl.lit(name), attempt=pl.lit(1), variant=pl.lit("v"))
    elif kind == "llm":
        asked = [ids(pl.col("s") * 32 + j, 16) for j in span["asks"]]
        call_ids = [
            x for j, a in enumerate(asked) for x in ([pl.lit(", ")] if j else []) + [pl.lit('"call_'), a, pl.lit('"')]
        ]
        attrs += [pl.lit(', "gen_ai.operation.name": "chat", "tracevals.tool_calls.ids": ['), *call_ids, pl.lit("]")]
        cols.update(model=pl.lit(MODEL), input_tokens=pl.lit(900), output_tokens=pl.lit(60), operation=pl.lit("chat"))
    elif kind == "tool":
        attrs += [pl.lit(f', "gen_ai.operation.name": "execute_tool", "tracevals.tool.effect": "{span["effect"]}"')]
        if span.get("key"):
            attrs += [pl.lit(', "tracevals.idempotency_key": "'), fill(span["key"]), pl.lit('"')]
        if span.get("retry_after") is not None:
            attrs += [pl.lit(f', "tracevals.retry_after_ms": {span["retry_after"]}, "tracevals.retryable": true')]
        if span.get("status") is not None:
            attrs += [pl.lit(f', "http.response.status_code": {span["status"]}')]
        cols.update(
            tool_name=pl.lit(span["name"]), tool_call_id=pl.concat_str([pl.lit("call_"), span_id]),
            tool_args=fill(span["args"]), tool_result=fill(span["result"]) if span["result"] else pl.lit(None, pl.Utf8),
            tool_effect=pl.lit(span["effect"]), error_type=pl.lit(span.get("error"), pl.Utf8),
            operation=pl.lit("execute_tool"),
        )  # fmt: skip
    elif kind == "handoff":
        attrs += [pl.lit(', "tracevals.handoff.reason": "no orders", "tracevals.handoff.pending": ["refund"]')]
    elif kind == "session_end":
        attrs += [pl.lit(', "tracevals.session.end": true, "tracevals.session.status": "finished"')]
    start = pl.col("t") + span["at"]
    return base.select(
        trace_id=ids(pl.col("s"), 32),
        span_id=span_id,
        parent_span_id=None if parent is None else ids(pl.col("s") * 32 + parent, 16),
        name=pl.lit(
            {"tool": f"execute_tool {span.get('name')}", "llm": f"chat {MODEL}"}.get(kind, span.get("name") or kind)
        ),
        span_kind=pl.lit("internal"),
        start_time=(start * 1_000_000).cast(pl.Datetime("ns", "UTC")),
        end_time=((start + span["dur"]) * 1_000_000).cast(pl.Datetime("ns", "UTC")),
        duration_ms=pl.lit(float(span["dur"])),
        status_code=pl.lit("error" if span.get("error") else "unset"),
        attributes=pl.concat_str([*attrs, pl.lit("}")]),
        events=pl.lit("[]"),
        links=pl.lit("[]"),
        resource_attributes=pl.lit('{"service.name": "bench"}'),
        service_name=pl.lit("bench"),
        dialect=pl.lit("genai"),
        normalizer_version=pl.lit(2, pl.Int32),
        kind=pl.lit(kind),
        session_id=pl.concat_str([pl.lit("sess-"), pl.col("s").cast(pl.Utf8)]),
        **cols,
    )


def _span_name(span: Span) -> str:
    names = {"tool": f"execute_tool {span.get('name')}", "llm": f"chat {MODEL}"}
    return str(names.get(span["kind"], span.get("name") or span["kind"]))


def write_lake(lake: Path, n: int, seed: int) -> int:
    """The synthetic lake, one shape at a time (bounded memory): returns the number of spans written."""
    weights = [w for w, _, _ in SHAPES.values()]
    counts = [int(n * w / sum(weights)) for w in weights]
    counts[0] += n - sum(counts)
    first, written = 0, 0
    for name, count in zip(SHAPES, counts, strict=True):
        spans = shape_rows(name, first, count, n, seed).with_columns(hour=pl.col("start_time").dt.hour())
        first += count
        for (hour,), part in spans.group_by("hour", maintain_order=True):
            table = part.drop("hour").to_arrow()
            for f in SPAN_SCHEMA:
                if f.name not in table.column_names:
                    table = table.append_column(f.name, pa.nulls(table.num_rows, f.type))
            table = table.select(SPAN_SCHEMA.names).cast(SPAN_SCHEMA)
            directory = lake / "spans" / "date=2026-11-29" / f"hour={int(hour):02d}"
            directory.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, directory / f"part-{name}.parquet", compression="zstd")
            written += table.num_rows
    return written


class Clock:
    """Wall and CPU time (all threads of the process) since the last lap."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def lap(self) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        out = (wall - self.wall, cpu - self.cpu)
        self.wall, self.cpu = wall, cpu
        return out


def loop_baseline(scope: Any, evaluators: list[Any], limit: int) -> tuple[int, int]:
    """The straightforward way: per session, build its Trajectory and call every evaluate()."""
    from tracevals.model.batch import Batch

    traces = scope.batch.traces.head(limit)
    chosen = Batch(
        traces, scope.batch.calls.filter(pl.col("trace_id").is_in(traces["trace_id"].implode())), scope.batch.handoffs
    )
    keys = dict(traces.select("trace_id", "case_key").iter_rows())
    scores = 0
    for trajectory in chosen.trajectories():
        case = scope.case(keys[trajectory.trace_id])
        for evaluator in evaluators:
            scores += evaluate_safely(evaluator, trajectory, case) is not None
    return traces.height, scores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--sessions", type=int, default=1_000_000)
    parser.add_argument("--loop-sessions", type=int, default=100_000, help="sessions for the per-session loop")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="write the lake here and keep it (default: a temporary directory)")
    parser.add_argument("--reuse", action="store_true", help="with --keep: score the lake already there")
    parser.add_argument("--threads", type=int, default=2, help="DuckDB threads (the target is 2 cores)")
    parser.add_argument("--memory-limit", default="8GB", help="DuckDB memory limit")
    parser.add_argument("--workers", type=int, default=2, help="the nightly phase's worker processes")
    args = parser.parse_args(argv)
    lake = args.keep or Path(tempfile.mkdtemp(prefix="tracevals-bench-")) / "lake"
    reuse = args.reuse and (lake / "spans").is_dir()
    if lake.exists() and not reuse:
        shutil.rmtree(lake)
    lake.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(lake / "scores", ignore_errors=True)
    rows: list[tuple[str, int, float, float]] = []  # phase, sessions, wall seconds, CPU seconds
    try:
        started = time.perf_counter()
        spans = -1 if reuse else write_lake(lake, args.sessions, args.seed)
        print(
            f"lake: {args.sessions:,} sessions, {spans:,} spans in {time.perf_counter() - started:.1f}s -> {lake}",
            file=sys.stderr,
        )
        evaluators = default_evaluators()
        clock = Clock()
        con = open_lake(lake, memory_limit=args.memory_limit, threads=args.threads)
        batch = load_batch(con)
        con.close()  # DuckDB's memory back before scoring
        rows.append(("load (lake -> frames)", len(batch), *clock.lap()))
        scope = attach_cases(batch, cases(), config_from_dict(CONFIG))
        scores = score_batch(scope, evaluators)
        rows.append((f"score, set-at-a-time ({scores.height:,} scores)", len(batch), *clock.lap()))
        write_score_frame(Lake.open(lake), scores)
        rows.append(("write (scores -> lake)", len(batch), *clock.lap()))
        looped, loop_scores = loop_baseline(scope, evaluators, min(args.loop_sessions, len(batch)))
        rows.append((f"score, per-session Python loop ({loop_scores:,} scores)", looped, *clock.lap()))
        del scope
        shutil.rmtree(lake / "scores", ignore_errors=True)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        nightly = score_lake(
            lake, tasks=cases(), config=config_from_dict(CONFIG), keep_scores=False, workers=args.workers
        )
        wall, cpu = clock.lap()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu += (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
        name = f"nightly: score_lake, {nightly.groups} groups, {args.workers} workers ({nightly.score_count:,} scores)"
        rows.append((name, nightly.sessions, wall, cpu))
    finally:
        if args.keep is None:
            shutil.rmtree(lake.parent, ignore_errors=True)
    width = max(52, *(len(r[0]) for r in rows))
    print(f"{'phase':<{width}} {'sessions':>10} {'seconds':>9} {'sessions/s':>12} {'CPU s':>8}")
    for phase, n, seconds, cpu in rows:
        print(f"{phase:<{width}} {n:>10,} {seconds:>9.2f} {n / seconds:>12,.0f} {cpu:>8.2f}")
    total, total_cpu = sum(r[2] for r in rows[:3]), sum(r[3] for r in rows[:3])
    nightly_row = rows[4]
    label = "end to end (load + score + write)"
    line = f"{label:<{width}} {len(batch):>10,} {total:>9.2f} {len(batch) / total:>12,.0f}"
    print(f"{line} {total_cpu:>8.2f}")
    print(f"nightly scoring: {nightly_row[1] / nightly_row[2]:,.0f} sessions/s ({nightly_row[1]:,} sessions)")
    load = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} cores, load average {load:.1f} at the end (other work slows wall, not CPU, time)")
    passed = (
        scores.group_by("evaluator")
        .agg(pl.len().alias("scores"), pl.col("passed").mean().round(3).alias("pass_rate"))
        .sort("evaluator")
    )
    print(passed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
