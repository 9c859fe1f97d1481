"""Delta Lake (delta-rs) against plain Parquet files for a collector fleet's commits and compaction.

    .venv/bin/python bench/table_formats.py [--batches 20] [--writers 4] [--appends 5]

The spans are the lake's own rows (bench/scoring.py's synthetic sessions, the lake's span schema), cut
into batches of 10^5 rows: what one collector commits at a time. Measured on local disk, in
bench/.venvs/deltalake (deltalake 1.6, never in the project's environment):

- appends: `--batches` batches one after the other, each as a new Parquet file (what the collector does: a
  file of a unique name, written then renamed / PUT whole) and as a Delta append (`write_deltalake(mode=
  "append")`: the file, then a commit to `_delta_log`), rows/s;
- concurrent writers: `--writers` processes x `--appends` appends into one table at once, each way: the rows
  the table then holds against the rows sent (plain files cannot conflict: no shared state; Delta's writers
  race on the next log version and retry);
- compaction: the table of the appends merged into files of about a million rows (Delta: `optimize.compact`,
  Parquet: `tracevals compact`'s rule, one file per partition), seconds and files before / after.

The decision it informs is written in docs/scale.md ("Table format").
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import PROJECT_PYTHON, PeerUnavailable, peer_python

ROWS_PER_BATCH = 100_000

# Run in the deltalake venv: argv[1] = a JSON job; prints one JSON result.
WORKER = textwrap.dedent(
    """
    import json, os, subprocess, sys, time, uuid
    import pyarrow as pa, pyarrow.parquet as pq
    from deltalake import DeltaTable, write_deltalake

    job = json.loads(sys.argv[1])
    source = pq.read_table(job["source"])
    batches = [source.slice(i, job["rows"]) for i in range(0, source.num_rows, job["rows"])][: job["batches"]]

    def plain_append(folder, batch):
        os.makedirs(folder, exist_ok=True)
        final = os.path.join(folder, f"part-{uuid.uuid4().hex}.parquet")
        pq.write_table(batch, final + ".tmp", compression="zstd")
        os.replace(final + ".tmp", final)  # the collector's commit: written whole, then renamed (S3: one PUT)

    def delta_append(table, batch):
        write_deltalake(table, batch, mode="append")

    def appends(kind, where):
        started = time.perf_counter()
        for batch in batches:
            (plain_append if kind == "plain" else delta_append)(where, batch)
        return time.perf_counter() - started

    if job.get("writer"):  # one of the concurrent writers: a process of its own (delta-rs cannot fork)
        for i in range(job["appends"]):
            (plain_append if job["kind"] == "plain" else delta_append)(job["where"], batches[i % len(batches)])
        sys.exit(0)

    def count(kind, where):
        if kind == "plain":
            names = [f for f in os.listdir(where) if f.endswith(".parquet")]
            return sum(pq.read_metadata(os.path.join(where, f)).num_rows for f in names)
        return DeltaTable(where).to_pyarrow_dataset().count_rows()

    out = {"rows": sum(b.num_rows for b in batches), "batches": len(batches)}
    work = job["work"]
    for kind in ("plain", "delta"):
        where = os.path.join(work, kind)
        if kind == "delta":
            write_deltalake(where, batches[0].slice(0, 0), mode="append")  # created once (creating concurrently fails)
        out[f"{kind}_append_s"] = appends(kind, where)
        # concurrent writers into a table of their own
        shared = os.path.join(work, kind + "-shared")
        if kind == "delta":
            write_deltalake(shared, batches[0].slice(0, 0), mode="append")
        started = time.perf_counter()
        errors = []
        mine = json.dumps({**job, "writer": True, "kind": kind, "where": shared})
        code = "SCRIPT = " + repr(SCRIPT) + chr(10) + SCRIPT
        procs = [subprocess.Popen([sys.executable, "-c", code, mine], stderr=subprocess.PIPE, text=True)
                 for _ in range(job["writers"])]
        for proc in procs:
            _, err = proc.communicate()
            if proc.returncode != 0:  # a writer that lost a commit race for good
                errors.append(err.strip().splitlines()[-1][:200] if err.strip() else f"exit {proc.returncode}")
        out[f"{kind}_concurrent_s"] = time.perf_counter() - started
        out[f"{kind}_concurrent_sent"] = job["writers"] * job["appends"] * batches[0].num_rows
        out[f"{kind}_concurrent_kept"] = count(kind, shared)
        out[f"{kind}_concurrent_errors"] = errors
    # compaction of the appended table
    delta = DeltaTable(os.path.join(work, "delta"))
    out["delta_files_before"] = len(delta.file_uris())
    started = time.perf_counter()
    delta.optimize.compact(target_size=256 * 1024 * 1024)
    out["delta_compact_s"] = time.perf_counter() - started
    out["delta_files_after"] = len(DeltaTable(os.path.join(work, "delta")).file_uris())
    plain = os.path.join(work, "plain")
    files = sorted(f for f in os.listdir(plain) if f.endswith(".parquet"))
    out["plain_files_before"] = len(files)
    started = time.perf_counter()
    merged = pa.concat_tables(pq.read_table(os.path.join(plain, f)) for f in files)
    for i in range(0, merged.num_rows, 1_000_000):
        pq.write_table(merged.slice(i, 1_000_000), os.path.join(plain, f"merged-{i}.parquet.tmp"), compression="zstd")
        os.replace(os.path.join(plain, f"merged-{i}.parquet.tmp"), os.path.join(plain, f"merged-{i}.parquet"))
    for f in files:
        os.remove(os.path.join(plain, f))
    out["plain_compact_s"] = time.perf_counter() - started
    out["plain_files_after"] = len([f for f in os.listdir(plain) if f.endswith(".parquet")])
    print(json.dumps(out))
    """
)


def source_spans(work: Path, rows: int) -> Path:
    """A Parquet file of the lake's span rows (bench/scoring.py's synthetic sessions, SPAN_SCHEMA), `rows` or more."""
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
        from pathlib import Path
        import pyarrow.dataset as ds, pyarrow.parquet as pq
        from scoring import write_lake
        lake = Path({str(work / "lake")!r})
        write_lake(lake, {rows // 7 + 1}, 1)
        table = ds.dataset(lake / "spans", format="parquet", partitioning=None).to_table()
        pq.write_table(table, {str(work / "spans.parquet")!r})
        print(table.num_rows)
        """
    )
    done = subprocess.run([str(PROJECT_PYTHON), "-c", script], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"could not build the span rows: {done.stderr[-600:]}")
    return work / "spans.parquet"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--appends", type=int, default=5)
    args = parser.parse_args()
    try:
        python = peer_python("deltalake")
    except PeerUnavailable as exc:
        print(f"deltalake could not be installed: {exc}")
        return 2
    with tempfile.TemporaryDirectory(prefix="tracevals-formats-") as tmp:
        work = Path(tmp)
        source = source_spans(work, args.batches * ROWS_PER_BATCH)
        job = {"source": str(source), "rows": ROWS_PER_BATCH, "batches": args.batches, "work": str(work),
               "writers": args.writers, "appends": args.appends}  # fmt: skip
        script = "SCRIPT = " + repr(WORKER) + "\n" + WORKER  # the writers run the same text
        done = subprocess.run([str(python), "-c", script, json.dumps(job)], capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"the deltalake run failed: {done.stderr[-800:]}")
        r = json.loads(done.stdout.strip().splitlines()[-1])
    rows = r["rows"]
    print(f"span rows: {rows:,} in {r['batches']} batches of {ROWS_PER_BATCH:,} (the lake's span schema)")
    for kind, name in (("plain", "plain Parquet (a new file per batch)"), ("delta", "Delta Lake (delta-rs append)")):
        print(f"{name}: appends {rows / r[f'{kind}_append_s']:,.0f} rows/s ({r[f'{kind}_append_s']:.1f} s)")
        lost = r[f"{kind}_concurrent_sent"] - r[f"{kind}_concurrent_kept"]
        print(
            f"  {args.writers} concurrent writers x {args.appends} appends: {r[f'{kind}_concurrent_kept']:,} of "
            f"{r[f'{kind}_concurrent_sent']:,} rows kept ({lost:,} lost) in {r[f'{kind}_concurrent_s']:.1f} s; "
            f"writer errors: {len(r[f'{kind}_concurrent_errors'])} {r[f'{kind}_concurrent_errors'][:1]}"
        )
        print(
            f"  compaction: {r[f'{kind}_files_before']} -> {r[f'{kind}_files_after']} files in "
            f"{r[f'{kind}_compact_s']:.1f} s"
        )
    print(f"delta / plain append time: {r['delta_append_s'] / r['plain_append_s']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
