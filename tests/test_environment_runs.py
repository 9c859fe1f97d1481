"""Acceptance: the environment of every attempt is recorded, and a comparison names what differs between
baseline and candidate besides the variable under test; --strict-env makes it an error.

Real runs: `tracevals run` with an agent of this test's own (the real `openai` client against the
simulated model server on 127.0.0.1), two variants that differ in their system prompt, one that differs
in its model; then `tracevals report` and `tracevals gate` over the lake.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracevals.cli import main
from tracevals.simulator import SimulatedModelServer

AGENT = textwrap.dedent(
    """
    import openai

    from tracevals.demo.tool_schemas import TOOL_SCHEMAS


    def run(input, ctx):
        client = openai.OpenAI(base_url=ctx.settings["base_url"], api_key="sim", max_retries=0)
        response = client.chat.completions.create(
            model=ctx.settings["model"],
            messages=[{"role": "system", "content": ctx.settings["system"]}, {"role": "user", "content": input}],
            tools=TOOL_SCHEMAS,
            temperature=0.2,
            seed=ctx.seed,
        )
        message = response.choices[0].message
        return message.content or ", ".join(c.function.name for c in message.tool_calls or [])
    """
)
CASES = [
    {"case_id": "one", "input": "Summarize Liu Yang's most recent order."},
    {"case_id": "two", "input": "Where is order ord_1003 of Ana Costa?"},
]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    root = tmp_path_factory.mktemp("env-runs")
    (root / "env_agent.py").write_text(AGENT, encoding="utf-8")
    tasks = root / "cases.jsonl"
    tasks.write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    mp = pytest.MonkeyPatch()
    mp.syspath_prepend(str(root))
    runs = {
        "prompt-a": ("order-support-baseline", "You are an order-support agent."),
        "prompt-b": ("order-support-baseline", "You are a careful order-support agent. Never guess."),
        "model-b": ("order-support-candidate", "You are an order-support agent."),
    }
    try:
        with SimulatedModelServer() as server:
            for variant, (model, system) in runs.items():
                args = ["run", "--tasks", str(tasks), "--agent", "env_agent:run", "-k", "2", "--variant", variant,
                        "--run-id", f"run-{variant}", "--lake", str(root / "lake"), "--format", "json",
                        "--setting", f"base_url={server.base_url}", "--setting", f"model={model}",
                        "--setting", f"system={system}"]  # fmt: skip
                result = CliRunner().invoke(main, args)
                assert result.exit_code == 0, result.output
        yield root / "lake", tasks
    finally:
        mp.undo()


def _report(lake: Path, base: str, cand: str, *more: str) -> tuple[int, str, str]:
    out = str(lake.parent / f"{base}-{cand}.json")
    args = ["report", "--lake", str(lake), "--run", f"run-{base}", "--run", f"run-{cand}", "--baseline", base,
            "--candidate", cand, "--out", out, "--format", "json", *more]  # fmt: skip
    result = CliRunner().invoke(main, args)
    return result.exit_code, result.stdout, result.stderr


def test_every_attempt_records_its_environment(lake: tuple[Path, Path]) -> None:
    args = ["sql", "--lake", str(lake[0]), "--format", "json",
            "select variant, models_requested, models_served, temperature, system_sha256, tools_sha256, "
            "tasks_sha256, case_sha256, clock, locale, python_hash_seed, replay, request_seeds "
            "from environments order by variant, task_id, attempt"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    rows = rows["rows"] if isinstance(rows, dict) else rows
    assert len(rows) == 12  # 3 variants x 2 cases x 2 attempts
    for row in rows:
        assert row["temperature"] == "0.2" and row["replay"] == "live" and row["locale"] == "en_US"
        assert row["system_sha256"] and row["tools_sha256"] and row["tasks_sha256"].startswith("sha256:")
        assert row["clock"].startswith("2026-11-02T09:00:00")
    by_variant = {r["variant"]: r for r in rows}
    assert by_variant["model-b"]["models_requested"] == "order-support-candidate"
    assert by_variant["prompt-a"]["system_sha256"] != by_variant["prompt-b"]["system_sha256"]
    assert by_variant["prompt-a"]["system_sha256"] == by_variant["model-b"]["system_sha256"]
    assert by_variant["prompt-a"]["tools_sha256"] == by_variant["prompt-b"]["tools_sha256"]
    # each attempt sends its own seed: recorded, and never a difference
    assert len({r["request_seeds"] for r in rows if r["variant"] == "prompt-a"}) == 4


def test_a_changed_system_prompt_is_named_and_strict_env_fails_it(lake: tuple[Path, Path]) -> None:
    code, out, _ = _report(lake[0], "prompt-a", "prompt-b")
    assert code == 0
    cmp = json.loads(out)["reliability"]["environment_comparison"]
    assert [d["key"] for d in cmp["differences"]] == ["system_sha256"]
    assert not cmp["differences"][0]["declared"]
    code, _, err = _report(lake[0], "prompt-a", "prompt-b", "--strict-env")
    assert code == 1 and "--strict-env: prompt-a and prompt-b differ in system instructions (sha256)" in err
    code, _, err = _report(lake[0], "prompt-a", "prompt-b", "--strict-env", "--vary", "system")
    assert code == 0, err


def test_a_changed_model_is_named_and_the_gate_fails_it_under_strict_env(lake: tuple[Path, Path]) -> None:
    gate = ["gate", "--lake", str(lake[0]), "--run", "run-prompt-a", "--run", "run-model-b", "--baseline", "prompt-a",
            "--candidate", "model-b", "--forbid", "silent_failure", "--ignore-significant-regression"]  # fmt: skip
    plain = CliRunner().invoke(main, gate)
    assert "strict_env" not in plain.stdout
    strict = CliRunner().invoke(main, [*gate, "--strict-env"])
    assert strict.exit_code == 1
    assert (
        "FAIL strict_env: prompt-a and model-b differ in model requested: order-support-baseline -> " in strict.stdout
    )
    assert "model-b differ in model served: order-support-baseline -> order-support-candidate" in strict.stdout
    assert "system instructions" not in strict.stdout  # the same prompt: no difference
    declared = CliRunner().invoke(main, [*gate, "--strict-env", "--vary", "model"])
    assert "ok   strict_env" in declared.stdout, declared.stdout


def test_a_finished_run_leaves_one_file_per_hour_not_one_per_attempt(lake: tuple[Path, Path]) -> None:
    # each attempt is flushed as it finishes (a crash loses at most the attempts in flight); once the
    # run is done its files are merged, so later commands read a few files. The merged inputs stay for
    # readers that listed them (retention, tracevals.lake.retention); every one is named by a merged file
    # and its deletion is noted as pending
    from tracevals.lake.compact import compacted_from

    files = list((lake[0] / "spans").rglob("*.parquet"))
    hours = {p.parent for p in files}
    replaced = {name for p in files for name in compacted_from(p) or []}
    current = [p for p in files if p.name not in replaced]
    assert len(current) == len(hours) <= 2, [str(p) for p in current]
    assert all(compacted_from(p) for p in current)
    pending = list((lake[0] / "compaction" / "pending").glob("*.json"))
    assert len(pending) == len(hours) or not replaced
    count = CliRunner().invoke(main, ["sql", "--lake", str(lake[0]), "--format", "json",
                                      "select count(*) as n from runs"])  # fmt: skip
    doc = json.loads(count.stdout)
    rows = doc["rows"] if isinstance(doc, dict) else doc
    assert rows[0]["n"] == 12  # every attempt of the three runs, once


def test_attempts_in_one_environment_are_counted_together_as_one_by_one() -> None:
    """`summarize_environments` counts each distinct (variant, task, environment) once, by its attempts: the
    summary (values, their order, the per-task digests) is the one counting attempt by attempt gives."""
    import random
    from collections import Counter

    from tracevals.stats.environment import ENV_KEYS, NOT_RECORDED, PER_TASK, EnvSummary, summarize_environments

    def one_by_one(rows: list[tuple[str, str, dict[str, str | None]]]) -> dict[str, EnvSummary]:
        counts: dict[str, dict[str, Counter[str]]] = {}
        tasks: dict[str, dict[str, dict[str, Counter[str]]]] = {}
        attempts: Counter[str] = Counter()
        for variant, task_id, env in rows:
            attempts[variant] += 1
            for key in (*ENV_KEYS, *sorted(set(env) - set(ENV_KEYS))):
                value = env.get(key)
                text = NOT_RECORDED if value in (None, "") else str(value)
                counts.setdefault(variant, {}).setdefault(key, Counter())[text] += 1
                if key in PER_TASK:
                    tasks.setdefault(variant, {}).setdefault(key, {}).setdefault(task_id, Counter())[text] += 1
        return {
            v: EnvSummary(
                v, attempts[v],
                {k: dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))) for k, c in counts[v].items()
                 if set(c) != {NOT_RECORDED}},
                {k: {t: dict(c) for t, c in sorted(b.items())} for k, b in tasks.get(v, {}).items()},
            )
            for v in sorted(counts)
        }  # fmt: skip

    rng = random.Random(3)
    for _ in range(50):
        envs = [
            {k: rng.choice([None, "", "a", "b", "7"]) for k in rng.sample([*ENV_KEYS, "zz_extra", "aa_extra"], 5)}
            for _ in range(rng.randint(1, 6))
        ]
        rows = [(rng.choice("xy"), rng.choice(["t1", "t2", "t3"]), rng.choice(envs)) for _ in range(rng.randint(1, 80))]
        got, want = summarize_environments(rows), one_by_one(rows)
        assert got == want
        assert [list(s.values) for s in got.values()] == [list(s.values) for s in want.values()]  # keys' order too
