"""Arrow arrays of Python values without pyarrow's conversion (`lake.schema.python_array`).

`pa.array` imports pandas whenever it is installed and not yet imported (~0.4 s): in an agent's process on
its first export, in every `tracevals run` (its step reliability rows), in every score written row by row.
The lake's column types are built from their buffers instead; these tests hold the buffers to the array
`pa.array` gives, value for value, and the processes to importing no pandas.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tracevals.lake.schema import ARROW_TYPES, _from_buffers, python_array, python_table

pytest.importorskip("pandas")  # the Ray extra brings it; without it `pa.array` imports nothing


def _value(rng: random.Random, kind: str) -> Any:
    if rng.random() < 0.2:
        return None
    if kind == "string":
        return "".join(rng.choice(["a", "Z", "é", "€", "😀", "\x00", " "]) for _ in range(rng.randint(0, 6)))
    if kind in ("int64", "timestamp"):
        return rng.choice([0, -1, 2**63 - 1, -(2**63), rng.randint(-(2**62), 2**62)])
    if kind == "int32":
        return rng.choice([0, 2**31 - 1, -(2**31), rng.randint(-1000, 1000)])
    if kind == "float64":
        return rng.choice([rng.random() * 1e6, float("inf"), -0.0, 3, -(2**53), 1e-300])
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "date32":
        return rng.choice([dt.date(1970, 1, 1), dt.date(2026, 12, 8), dt.date(1, 1, 1), dt.date(9999, 12, 31)])
    assert kind == "strings"
    return rng.choice([[], ("x",), [rng.choice(["", "ü", None, "long " * 20]) for _ in range(rng.randint(0, 4))]])


TYPES = {**ARROW_TYPES, "date32": pa.date32()}  # and a partition's day (`date=`), which live scoring adds


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_the_buffers_hold_the_array_pa_array_gives(kind: str) -> None:
    """Every column type of the lake, nulls among the values or not, at sizes across a bitmap's byte edges:
    the same type, values, nulls and validity (a float64 compared by its values' representations: NaN and
    -0.0 as they are)."""
    rng = random.Random(kind)
    type_ = TYPES[kind]
    for size in (0, 1, 7, 8, 9, 63, 64, 65, 513):
        for _ in range(15):
            values = [_value(rng, kind) for _ in range(size)]
            if size and rng.random() < 0.3:
                values = [v for v in values if v is not None] or values  # no null: no validity bitmap
            built = _from_buffers(values, type_)
            assert built is not None, values
            built.validate(full=True)
            expected = pa.array(values, type=type_, from_pandas=False)
            assert built.type == expected.type and built.null_count == expected.null_count
            assert repr(built.to_pylist()) == repr(expected.to_pylist()), values
            assert built.equals(expected) or kind == "float64"


@pytest.mark.parametrize(
    ("values", "type_"),
    [
        ([1.0, None], pa.int64()),
        ([1.5], pa.int64()),
        ([True], pa.int64()),
        ([2**40], pa.int32()),
        ([b"bytes", None], pa.string()),
        (["\ud800"], pa.string()),
        ([2**60], pa.float64()),
        ([1], pa.bool_()),
        (["a"], pa.int64()),
        ([["a", 1]], pa.list_(pa.string())),
        (["not a list"], pa.list_(pa.string())),
        ([dt.datetime(2026, 1, 1, 12)], pa.date32()),
    ],
)
def test_a_value_of_another_type_is_pa_arrays_to_convert_or_refuse(values: list[Any], type_: pa.DataType) -> None:
    """Not built from buffers: `pa.array` converts it, or refuses it with its own error, as before."""
    with contextlib.suppress(OverflowError, UnicodeError):  # found while building: to `pa.array` as well
        assert _from_buffers(values, type_) is None
    try:
        expected: pa.Array | type[Exception] = pa.array(values, type=type_, from_pandas=False)
    except (pa.ArrowException, ValueError, TypeError) as exc:
        expected = type(exc)
    if isinstance(expected, type):
        with pytest.raises(expected):
            python_array(values, type_)
    else:
        assert python_array(values, type_).equals(expected)


def test_a_table_of_columns_is_the_schema_s() -> None:
    schema = pa.schema([("s", pa.string()), ("n", pa.int64()), ("l", pa.list_(pa.string()))])
    table = python_table([["a", None], [1, None], [["x"], None]], schema)
    assert table.schema == schema and table.to_pylist() == [
        {"s": "a", "n": 1, "l": ["x"]},
        {"s": None, "n": None, "l": None},
    ]


def _run_probe(probe: str, cwd: Path) -> str:
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=cwd, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_an_agent_that_exports_spans_imports_no_pandas(tmp_path: Path) -> None:
    """The in-process exporter (the embedded default) writes a tool span, a log record and a model span to
    the lake without importing pandas into the agent's process."""
    probe = (
        "import sys, logging\n"
        "import tracevals\n"
        f"telemetry = tracevals.instrument(lake={str(tmp_path / 'lake')!r}, instrumentors=False)\n"
        "@tracevals.tool(effect='read')\n"
        "def get_order(order_id): return {'id': order_id}\n"
        "with tracevals.session('s1'), tracevals.agent('a'):\n"
        "    get_order('o1')\n"
        "telemetry.force_flush()\n"
        "rows = telemetry.exporter.writer.rows_written\n"
        "telemetry.shutdown()\n"
        "print(rows, 'pandas' in sys.modules)\n"
    )
    assert _run_probe(probe, tmp_path) == "2 False"


def test_tracevals_run_imports_no_pandas(tmp_path: Path) -> None:
    """A whole `tracevals run` of the demo agent against the simulated model: its attempts exported, merged,
    scored and their step reliability written, and pandas never imported."""
    root = Path(__file__).resolve().parents[1]
    tasks = (root / "tracevals" / "demo" / "tasks.jsonl").read_text(encoding="utf-8").splitlines()[:2]
    (tmp_path / "tasks.jsonl").write_text("\n".join(tasks) + "\n", encoding="utf-8")
    from tracevals.demo import BASELINE
    from tracevals.simulator import SimulatedModelServer

    with SimulatedModelServer() as server:
        args = [
            "run", "--tasks", str(tmp_path / "tasks.jsonl"), "--agent", "tracevals.demo.agent:order_support_agent",
            "-k", "2", "--setting", f"base_url={server.base_url}", "--setting", f"model={BASELINE}",
            "--lake", str(tmp_path / "lake"), "--format", "json",
        ]  # fmt: skip
        probe = (
            "import sys\n"
            "from tracevals.cli import main\n"
            "try:\n"
            f"    main({args!r})\n"
            "except SystemExit as exc:\n"
            "    assert exc.code in (None, 0, 1), exc.code\n"
            "print('pandas' in sys.modules)\n"
        )
        assert _run_probe(probe, tmp_path) == "False"
    assert list((tmp_path / "lake" / "step_reliability").rglob("*.parquet"))


def test_live_scoring_reads_a_span_file_without_pandas(tmp_path: Path) -> None:
    """`score --follow` and the collector's live scoring read each new span file (`queries.live_source`):
    `pa.scalar` for its partition columns and `pq.read_table` (pyarrow.dataset) imported pandas."""
    _run_probe(
        "import tracevals\n"
        f"t = tracevals.instrument(lake={str(tmp_path / 'lake')!r}, instrumentors=False)\n"
        "with tracevals.session('s1'), tracevals.agent('a'):\n"
        "    pass\n"
        "t.shutdown()\n"
        "print('ok')\n",
        tmp_path,
    )
    [path] = (tmp_path / "lake" / "spans").rglob("*.parquet")
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "from tracevals.queries.live_source import read_span_files\n"
        f"table = read_span_files([Path({str(path)!r})])\n"
        "print(table.num_rows, table.column('hour')[0].as_py() >= 0, 'pandas' in sys.modules)\n"
    )
    assert _run_probe(probe, tmp_path) == "1 True False"
