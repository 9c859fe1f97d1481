"""`tracevals ui` at scale: p50 / p95 of each screen on a 10^6- and a 10^7-span lake, and its cold start.

    .venv/bin/python bench/ui.py [--spans 1000000 10000000] [--requests 30] [--out bench/out/ui]

The lake is bench/scale_lake.py's (the same spans, `position_table`), shaped as a lake that size holds:
production traffic, and one harness run (`bench`: 64 tasks x 2 variants x 4 attempts, its first 512
sessions), its attempts scored (`tracevals score` over the run's first 50 seconds) as `tracevals run`
leaves them. The production screen is not timed: its report is computed in the background over the
last 7 days, and this lake's traffic is dated 2026-11-18.

`tracevals ui` runs as a user starts it (a subprocess on 127.0.0.1); each screen is requested
`--requests` times over one keep-alive connection once the figures are computed (a warm connection),
different tasks and traces in turn. Cold start: from starting the process to the first page served.
Targets (2 cores): runs overview <= 150/300 ms, a task's k attempts <= 300/600 ms, one trace
<= 200/400 ms, the funnel <= 100 ms, cold start <= 3 s. Results: `--out`/ui.json and stdout.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from scale_lake import SESSIONS_PER_HOUR, SPANS_PER_SESSION, T0_NS, position_table, session_name  # noqa: E402

from tracevals.lake.schema import SPANS_DIR  # noqa: E402
from tracevals.lake.writer import write_table_atomically  # noqa: E402

HARNESS = 512  # sessions 0..511: 64 tasks x 2 variants x attempts 1..4, each once (see scale_lake)
LAYOUT = "ui-1"
TARGETS = {
    "runs": (150, 300),
    "task": (300, 600),
    "trace": (200, 400),
    "trace_production": (200, 400),
    "funnel": (100, 100),
}
URL = re.compile(r"tracevals ui: (http://127\.0\.0\.1:(\d+)/\?token=(\S+))")


def build(lake: Path, spans: int) -> None:
    """scale_lake's spans, the harness keys kept on the first HARNESS sessions only (production beyond)."""
    import time as _time

    shutil.rmtree(lake, ignore_errors=True)
    sessions = max(HARNESS, spans // SPANS_PER_SESSION)
    for first in range(0, sessions, SESSIONS_PER_HOUR):
        session = pa.array(range(first, min(sessions, first + SESSIONS_PER_HOUR)), pa.int64())
        tables = [position_table(session, p) for p in range(SPANS_PER_SESSION)]
        root = tables[0]
        harness = pc.less(session, HARNESS)
        for name in ("run_id", "task_id", "variant", "attempt"):
            column = root.column(name)
            root = root.set_column(root.schema.get_field_index(name), name,
                                   pc.if_else(harness, column, pa.scalar(None, column.type)))  # fmt: skip
        tables[0] = root
        table = pa.concat_tables(tables)
        table = table.take(pc.sort_indices(table, [("end_time", "ascending"), ("span_id", "ascending")]))
        hour = _time.gmtime((T0_NS + (first // SESSIONS_PER_HOUR) * 3_600 * 10**9) / 1e9)
        directory = lake / SPANS_DIR / _time.strftime("date=%Y-%m-%d", hour) / f"hour={hour.tm_hour:02d}"
        write_table_atomically(table, directory)


def score_run(lake: Path) -> None:
    """The run's scores, as `tracevals run` stores them: `tracevals score` over the run's first 50 seconds,
    with a memory limit (on a 10^7-span lake the command's default of 160 MB runs out in its crossing pass)."""
    import datetime as dt

    from tracevals.queries.selection import Selection
    from tracevals.scoring.offline import score_lake

    since = dt.datetime(2026, 11, 18, 11, 6, tzinfo=dt.timezone.utc)
    score_lake(lake, selection=Selection(since=since, until=since + dt.timedelta(seconds=90)), memory_limit="2GB")


class Client:
    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.con = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        self.cookie = ""
        status, _ = self.get(f"/?token={token}")
        assert status == 303, status

    def get(self, path: str) -> tuple[int, str]:
        headers = {"Host": f"127.0.0.1:{self.port}", "Cookie": self.cookie}
        try:
            self.con.request("GET", path, headers=headers)
            response = self.con.getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError):  # idle past the server's keep-alive
            self.con = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
            self.con.request("GET", path, headers=headers)
            response = self.con.getresponse()
        body = response.read().decode("utf-8", "replace")
        cookie = response.getheader("set-cookie")
        if cookie:
            self.cookie = cookie.split(";")[0]
        return response.status, body


def timed(client: Client, paths: list[str]) -> dict[str, float]:
    times = []
    for path in paths:
        started = time.perf_counter()
        status, body = client.get(path)
        times.append((time.perf_counter() - started) * 1000)
        assert status == 200, (path, status, body[:300])
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50_ms": round(statistics.median(times), 1), "p95_ms": round(p95, 1), "n": len(times)}


def measure(lake: Path, requests: int) -> dict[str, Any]:
    traces = [f"/traces/{t}" for t in trace_ids(lake, requests)]
    attempts = [f"/traces/{t}" for t in trace_ids(lake, requests, harness=True)]
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "tracevals", "ui", "--lake", str(lake)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        found = None
        while found is None:
            line = proc.stdout.readline()
            if not line:
                raise SystemExit(f"tracevals ui stopped: {proc.stdout.read()}")
            found = URL.search(line)
        client = Client(int(found.group(2)), found.group(3))
        status, body = client.get("/")
        cold = time.perf_counter() - started
        assert status == 200
        while 'data-figure="pass_at_1"' not in body:  # the run's report, computed in the background
            time.sleep(0.5)
            status, body = client.get("/")
        figures = time.perf_counter() - started
        tasks = [f"/runs/bench/tasks/task_{i % 64:02d}?variant={'baseline' if i % 2 == 0 else 'candidate'}"
                 for i in range(requests)]  # fmt: skip
        client.get(tasks[0])  # the first request of a page pays for its template's compilation
        client.get(tasks[0].replace("?", "/funnel?"))
        client.get(traces[0])
        out = {
            "cold_start_s": round(cold, 2),
            "figures_ready_s": round(figures, 1),
            "runs": timed(client, ["/"] * requests),
            "run": timed(client, ["/runs/bench"] * requests),
            "task": timed(client, tasks),
            "funnel": timed(client, [t.replace("?", "/funnel?") for t in tasks]),
            "trace": timed(client, attempts),
            "trace_production": timed(client, traces),
        }
        return out
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def trace_ids(lake: Path, n: int, harness: bool = False) -> list[str]:
    """The trace ids of n sessions: the harness run's attempts, or production sessions spread over the lake."""
    import duckdb

    spans = sorted((lake / SPANS_DIR).rglob("*.parquet"))
    sessions = len(spans) * SESSIONS_PER_HOUR
    numbers = (
        [i * (HARNESS // n) for i in range(n)] if harness else [HARNESS + i * (sessions // n) + 7 for i in range(n)]
    )
    wanted = [session_name(i) for i in numbers]
    con = duckdb.connect()
    rows = con.execute(
        "SELECT session_id, any_value(trace_id) FROM read_parquet(?) WHERE session_id IN (SELECT unnest(?)) GROUP BY 1",
        [[str(p) for p in spans], wanted],
    ).fetchall()
    return [str(t) for _, t in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spans", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "ui")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    for spans in args.spans:
        lake = args.out / f"lake-{spans}"
        marker = lake / ".layout"
        if not marker.is_file() or marker.read_text() != LAYOUT:
            began = time.perf_counter()
            build(lake, spans)
            score_run(lake)
            marker.write_text(LAYOUT)
            print(f"built {spans:,} spans in {time.perf_counter() - began:.0f} s", flush=True)
        results[str(spans)] = measure(lake, args.requests)
        print(json.dumps({str(spans): results[str(spans)]}), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ui.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"{'screen':<12}" + "".join(f"{s:>26}" for s in results))
    for screen in ("runs", "run", "task", "funnel", "trace", "trace_production"):
        cells = []
        for spans in results:
            r = results[spans][screen]
            target = TARGETS.get(screen)
            mark = (
                "" if target is None else (" ok" if r["p50_ms"] <= target[0] and r["p95_ms"] <= target[1] else " MISS")
            )
            cells.append(f"{r['p50_ms']:>8.1f} / {r['p95_ms']:>8.1f} ms{mark:<5}")
        print(f"{screen:<12}" + "".join(f"{c:>26}" for c in cells))
    for key in ("cold_start_s", "figures_ready_s"):
        print(f"{key:<16}" + "".join(f"{results[s][key]:>22} s" for s in results))


if __name__ == "__main__":
    main()
