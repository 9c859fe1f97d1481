"""Tool calls an agent runs on other threads stay in its session, under its spans, within reach of the harness's
interceptors (`instrumentation/threads.py`), and a span beneath a session's span is in that session."""

from __future__ import annotations

import asyncio
import contextvars
import json
import os
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from test_instrumentation_tools import Recorder, read_spans, send_message, tool_spans

import tracevals
from tracevals.instrumentation import intercept_tools


def test_tool_calls_on_other_threads_stay_in_their_session_under_their_agent(lake: Path, telemetry: Any) -> None:
    recorder = Recorder()
    with ThreadPoolExecutor(max_workers=2) as pool:
        with tracevals.session("s-parallel"), tracevals.agent("support"):
            assert list(pool.map(send_message, ["c1", "c2", "c3"], ["a", "b", "c"])) == [{"sent": True}] * 3
            worker = threading.Thread(target=send_message, args=("c4", "d"))
            worker.start()
            worker.join()

            async def in_executor() -> Any:
                return await asyncio.get_running_loop().run_in_executor(pool, send_message, "c5", "e")

            assert asyncio.run(in_executor()) == {"sent": True}
            with intercept_tools(recorder):  # the harness's seam reaches the pool's threads too
                assert pool.submit(send_message, "c6", "f").result() == {"sent": "recorded"}
        # the same workers, now for work submitted outside the session: nothing of it stays with them
        pool.submit(send_message, "c7", "g").result()

    spans = read_spans(lake)
    (agent,) = [s for s in spans if s["kind"] == "agent"]
    calls = tool_spans(lake)
    assert len(calls) == 7
    inside, outside = calls[:6], calls[6]
    for span in inside:
        assert (span["session_id"], span["trace_id"], span["parent_span_id"]) == (
            "s-parallel",
            agent["trace_id"],
            agent["span_id"],
        ), span["name"]
    assert outside["session_id"] is None and outside["parent_span_id"] is None
    assert [seen[2]["customer_id"] for seen in recorder.seen] == ["c6"]


def test_a_span_beneath_a_session_span_is_in_that_session(lake: Path, telemetry: Any) -> None:
    """A thread the context did not reach (started before the instrumentor, or by code that runs work in a
    fresh context) but handed the parent span the OpenTelemetry way: the session comes with the parent."""
    with tracevals.session("s-parent"), tracevals.agent("support"):
        parent = otel_context.get_current()

    def in_fresh_context() -> None:
        token = otel_context.attach(parent)
        try:
            with trace.get_tracer("test").start_as_current_span("retrieve"):
                send_message("c1", "hi")
        finally:
            otel_context.detach(token)

    contextvars.Context().run(in_fresh_context)  # nothing of the session's contextvars
    by_name = {s["name"]: s for s in read_spans(lake)}
    assert by_name["retrieve"]["session_id"] == "s-parent"
    assert by_name["execute_tool send_message"]["session_id"] == "s-parent"


def test_the_thread_instrumentor_turns_off_by_its_entry_point_name(tmp_path: Path) -> None:
    """`OTEL_PYTHON_DISABLED_INSTRUMENTATIONS` names it off in `instrument()`, as under `opentelemetry-instrument`."""
    script = textwrap.dedent(
        """
        import json, sys
        from concurrent.futures import ThreadPoolExecutor
        import pyarrow.parquet as pq
        import tracevals

        telemetry = tracevals.instrument(lake=sys.argv[1], batch=False)
        lookup = tracevals.tool(effect="read")(lambda word: word)
        with ThreadPoolExecutor(1) as pool, tracevals.session("s1"):
            pool.submit(lookup, "x").result()
        telemetry.shutdown()
        rows = pq.read_table(sys.argv[1] + "/spans").to_pylist()
        print(json.dumps([r["session_id"] for r in rows if r["kind"] == "tool"]))
        """
    )
    seen = {}
    for disabled in ("", "tracevals_openai, tracevals_threads", "*"):
        env = {**os.environ, "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": disabled}
        lake = tmp_path / f"lake{len(seen)}"
        done = subprocess.run(
            [sys.executable, "-c", script, str(lake)], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        seen[disabled] = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"": ["s1"], "tracevals_openai, tracevals_threads": [None], "*": [None]}


def test_tool_calls_in_a_process_pool_reach_the_lake(tmp_path: Path) -> None:
    """A process pool's worker (forked: Linux's default) ends with `os._exit`, or its pool's SIGTERM, which no
    batch queue survives: all ten tool spans of a `multiprocessing.Pool` and a `ProcessPoolExecutor` were lost,
    only the agent span of the parent reached the lake. A forked child now exports each span as it ends."""
    script = textwrap.dedent(
        """
        import json, sys, multiprocessing, concurrent.futures
        import pyarrow.parquet as pq
        import tracevals

        telemetry = tracevals.instrument(lake=sys.argv[1])  # batched, the default

        @tracevals.tool(effect="read")
        def double(x):
            return x * 2

        if __name__ == "__main__":
            multiprocessing.set_start_method("fork")
            with tracevals.session("s-pool"), tracevals.agent("a"):
                with multiprocessing.Pool(2) as pool:  # leaving the block terminates the workers (SIGTERM)
                    assert pool.map(double, range(6)) == [0, 2, 4, 6, 8, 10]
                with concurrent.futures.ProcessPoolExecutor(2) as executor:
                    assert list(executor.map(double, range(4))) == [0, 2, 4, 6]
            telemetry.shutdown()
            rows = pq.read_table(sys.argv[1] + "/spans").to_pylist()
            print(json.dumps(sorted((r["kind"], r["session_id"]) for r in rows)))
        """
    )
    path = tmp_path / "pool.py"
    path.write_text(script)
    done = subprocess.run(
        [sys.executable, str(path), str(tmp_path / "lake")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    kinds = json.loads(done.stdout.strip().splitlines()[-1])
    assert kinds == [["agent", "s-pool"]] + [["tool", "s-pool"]] * 10
