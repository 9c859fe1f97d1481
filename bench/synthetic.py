"""The synthetic lake of the scoring benchmarks: nine session shapes of an order-support agent, written as
today's writers write them.

Each span of a shape is first written out once as the attribute map an instrumented agent records (the
GenAI keys, tracevals' own), with placeholders for what varies from session to session (its number, its
ids, its customer and order). That one span goes through the lake's own normalizer
(`tracevals.spans.normalize.normalize`), so the canonical columns are whatever the current normalizer
makes of those attributes (its `NORMALIZER_VERSION`, its facts, its `tool_args_hash`); then every column,
attributes JSON included, is filled in for millions of sessions at once with Polars (the placeholders
replaced; the argument digest computed once per distinct argument text with the normalizer's own
function). `tests/test_bench_synthetic.py` holds every row to `normalize` of its own attributes.

    write_lake(Path("lake"), sessions=100_000, seed=7)   # hive-partitioned span files, one per shape and hour
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from tracevals.lake.schema import CANONICAL_FIELDS, SPAN_SCHEMA
from tracevals.spans.normalize import args_digest_of, normalize

T0_MS = 1_795_910_400_000  # 2026-11-29T00:00Z: sessions start spread over this day (live_scoring moves it)
MODEL = "order-support-baseline"
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

# Placeholders in a span's template (digits replace them, so JSON needs no escaping around them):
# @@N@@ the session number, @@C@@ its customer, @@O@@ its order, @@S<i>@@ the id of the span at position i.
_PLACEHOLDER = re.compile(r"@@(N|C|O|S\d+)@@")


def _filled(text: str) -> str:
    return text.replace("{c}", "@@C@@").replace("{o}", "@@O@@")


def _attributes(shape: str, i: int, span: Span, answer: str) -> dict[str, Any]:
    """The attributes an instrumented agent records on span `i` of a session of `shape` (placeholders in)."""
    attrs: dict[str, Any] = {"gen_ai.conversation.id": "sess-@@N@@"}
    kind = span["kind"]
    if kind == "other":  # the harness's root span of the attempt
        attrs.update({"tracevals.run.id": "bench", "tracevals.task.id": shape, "tracevals.attempt": 1})
        attrs.update({"tracevals.variant": "v", "tracevals.attempt.output": _filled(answer)})
    elif kind == "agent":
        attrs.update({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "order_support"})
    elif kind == "llm":
        attrs.update({"gen_ai.operation.name": "chat", "gen_ai.provider.name": "bench", "gen_ai.request.model": MODEL})
        attrs.update({"gen_ai.response.model": MODEL, "gen_ai.usage.input_tokens": 900})
        attrs.update({"gen_ai.usage.output_tokens": 60})
        attrs["tracevals.tool_calls.ids"] = [f"call_@@S{j}@@" for j in span["asks"]]
    elif kind == "tool":
        attrs.update({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": span["name"]})
        attrs.update({"gen_ai.tool.call.id": f"call_@@S{i}@@", "gen_ai.tool.call.arguments": _filled(span["args"])})
        if span["result"] is not None:
            attrs["gen_ai.tool.call.result"] = _filled(span["result"])
        attrs["tracevals.tool.effect"] = span["effect"]
        if span.get("key"):
            attrs["tracevals.idempotency_key"] = _filled(span["key"])
        if span.get("retry_after") is not None:
            attrs.update({"tracevals.retry_after_ms": span["retry_after"], "tracevals.retryable": True})
        if span.get("status") is not None:
            attrs["http.response.status_code"] = span["status"]
        if span.get("error"):
            attrs["error.type"] = span["error"]
    elif kind == "handoff":
        attrs.update({"tracevals.handoff.reason": "no orders", "tracevals.handoff.pending": ["refund"]})
    elif kind == "session_end":
        attrs.update({"tracevals.session.end": True, "tracevals.session.status": "finished"})
    return attrs


def _name(shape: str, span: Span) -> str:
    names = {"tool": f"execute_tool {span.get('name')}", "llm": f"chat {MODEL}", "other": f"attempt {shape}"}
    return str(names.get(span["kind"], span.get("name") or span["kind"]))


def _pattern(shape: str) -> list[Span]:
    """Every span of a session of `shape`, root first; a crash loses the root, the agent span and the end."""
    _, spans, _ = SHAPES[shape]
    pattern: list[Span] = [
        {"kind": "other", "at": 0, "dur": 80, "parent": None},
        {"kind": "agent", "name": "invoke_agent order_support", "at": 1, "dur": 78, "parent": 0},
        *spans,
        {"kind": "session_end", "name": "session.end", "at": 79, "dur": 0, "parent": 0},
    ]
    if shape == "crash":  # the process died: the root and the agent span never ended, no end marker
        return [s if s["kind"] not in ("other", "agent", "session_end") else {**s, "lost": True} for s in pattern]
    return pattern


@cache
def span_template(shape: str, i: int) -> tuple[str, str, dict[str, Any]]:
    """(name, attributes JSON, canonical columns) of span `i` of `shape`, placeholders in: the normalizer's
    answer for the attributes as an agent records them."""
    span = _pattern(shape)[i]
    attrs = _attributes(shape, i, span, SHAPES[shape][2])
    name = _name(shape, span)
    columns = normalize(attrs, name, "error" if span.get("error") else "unset")
    return name, json.dumps(attrs), columns


def _expr(text: str, values: dict[str, pl.Expr]) -> pl.Expr:
    """`text` with every placeholder replaced by its session's value."""
    parts = [p for p in _PLACEHOLDER.split(text) if p]
    tokens = set(_PLACEHOLDER.findall(text))
    return pl.concat_str([values[p] if p in tokens else pl.lit(p) for p in parts] or [pl.lit("")])


def _column(name: str, value: Any, dtype: pa.DataType, values: dict[str, pl.Expr]) -> pl.Expr:
    if isinstance(value, str) and "@@" in value:
        return _expr(value, values).alias(name)
    if isinstance(value, list):
        items = [_expr(v, values) if isinstance(v, str) else pl.lit(v, pl.Utf8) for v in value]
        return (pl.concat_list(items) if items else pl.lit([], pl.List(pl.Utf8))).alias(name)
    return pl.lit(value, pl.from_arrow(pa.array([], dtype)).dtype).alias(name)  # type: ignore[union-attr]


_CANONICAL = {f.name: f.type for f in CANONICAL_FIELDS}


def ids(values: pl.Expr, width: int) -> pl.Expr:
    """Decimal digits are hex digits too: zero-padded counters make valid, unique OTel ids."""
    return values.cast(pl.Utf8).str.zfill(width)


def shape_rows(name: str, first: int, n: int, n_total: int, seed: int) -> pl.DataFrame:
    """Every span of `n` sessions of one shape, session numbers `first` .. `first + n - 1`; customers
    and orders drawn by a multiplicative hash of the session number (deterministic for a seed)."""
    s = pl.int_range(first, first + n, dtype=pl.Int64, eager=True).alias("s")
    mixed = (s * 2_654_435_761 + seed * 40_503) % 4_294_967_291
    base = pl.DataFrame({"s": s, "c": 100 + mixed % 99_899, "o": 1000 + (mixed // 7) % 998_999})
    base = base.with_columns(t=T0_MS + pl.col("s") * (86_400_000 // max(n_total, 1)))
    pattern = _pattern(name)
    values = {"N": pl.col("s").cast(pl.Utf8), "C": pl.col("c").cast(pl.Utf8), "O": pl.col("o").cast(pl.Utf8)}
    values.update({f"S{j}": ids(pl.col("s") * 32 + j, 16) for j in range(len(pattern))})
    blocks = [_span_block(base, name, i, span, values) for i, span in enumerate(pattern) if not span.get("lost")]
    return _with_digests(pl.concat(blocks, how="vertical_relaxed"))


def _span_block(base: pl.DataFrame, shape: str, i: int, span: Span, values: dict[str, pl.Expr]) -> pl.DataFrame:
    span_name, attributes, canonical = span_template(shape, i)
    parent = span.get("parent", 1)
    start = pl.col("t") + span["at"]
    digest_later = canonical.get("tool_args") is not None
    columns = [
        _column(k, None if (k == "tool_args_hash" and digest_later) else v, _CANONICAL[k], values)
        for k, v in canonical.items()
    ]
    return base.select(
        pl.lit(None, pl.Utf8).alias("parent_span_id")
        if parent is None
        else ids(pl.col("s") * 32 + parent, 16).alias("parent_span_id"),
        ids(pl.col("s"), 32).alias("trace_id"),
        values[f"S{i}"].alias("span_id"),
        pl.lit(span_name).alias("name"),
        pl.lit("internal").alias("span_kind"),
        (start * 1_000_000).cast(pl.Datetime("ns", "UTC")).alias("start_time"),
        ((start + span["dur"]) * 1_000_000).cast(pl.Datetime("ns", "UTC")).alias("end_time"),
        pl.lit(float(span["dur"])).alias("duration_ms"),
        pl.lit("error" if span.get("error") else "unset").alias("status_code"),
        _expr(attributes, values).alias("attributes"),
        pl.lit("[]").alias("events"),
        pl.lit("[]").alias("links"),
        pl.lit('{"service.name": "bench"}').alias("resource_attributes"),
        pl.lit("bench").alias("service_name"),
        *columns,
    )


def _with_digests(rows: pl.DataFrame) -> pl.DataFrame:
    """`tool_args_hash` where the template left it to the arguments: the normalizer's own digest
    (`args_digest_of`), computed once per distinct argument text."""
    texts = rows.select(pl.col("tool_args").drop_nulls().unique()).to_series().to_list()
    digests = pl.DataFrame(
        {"tool_args": texts, "tv_digest": [args_digest_of(t) for t in texts]},
        schema={"tool_args": pl.Utf8, "tv_digest": pl.Utf8},
    )
    joined = rows.join(digests, on="tool_args", how="left", maintain_order="left")
    return joined.with_columns(tool_args_hash=pl.coalesce("tool_args_hash", "tv_digest")).drop("tv_digest")


def span_table(rows: pl.DataFrame) -> pa.Table:
    """Generated rows as the lake's span table (`SPAN_SCHEMA`: its columns, in order, of its types)."""
    table = rows.to_arrow()
    for f in SPAN_SCHEMA:
        if f.name not in table.column_names:
            table = table.append_column(f.name, pa.nulls(table.num_rows, f.type))
    return table.select(SPAN_SCHEMA.names).cast(SPAN_SCHEMA)


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
            table = span_table(part.drop("hour"))
            directory = lake / "spans" / "date=2026-11-29" / f"hour={int(hour):02d}"
            directory.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, directory / f"part-{name}.parquet", compression="zstd")
            written += table.num_rows
    return written
