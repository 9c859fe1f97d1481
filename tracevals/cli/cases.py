"""`tracevals cases`: build a replay test set from production traffic, and review it."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from tracevals.cases.groups import GROUPS
from tracevals.cli.shared.output import echo, echo_prose, format_option, lake_errors, lake_option, print_rows
from tracevals.cli.shared.times import time_range_options
from tracevals.model.json_text import json_text

if TYPE_CHECKING:
    from tracevals.lake.lake import Lake


@click.group()
def cases() -> None:
    """Build a replay test set from production traffic (extract), and review its drafts (review).

    \b
    Examples:
      tracevals cases extract --lake lake --since 2026-11-01 --out replay-set
      tracevals cases review replay-set
      tracevals cases review replay-set --accept clear_01 --drop vague_03
      tracevals run --agent my_agent:run --tasks replay-set/cases.jsonl \\
          --cassettes replay-set/cassettes --replay -k 5
    """


@cases.command()
@lake_option("The lake to read production sessions from.")
@time_range_options()
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="The folder to write (cases.jsonl, cassettes/, sources.jsonl, README.md, extraction.json).",
)
@click.option(
    "--per-group",
    type=click.IntRange(1, 1000),
    default=5,
    show_default=True,
    help="Cases per group, at most (a group with fewer sessions is reported, not padded).",
)
@click.option("--groups", default=",".join(GROUPS), show_default=True, help="The groups to build, comma-separated.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the choice and of the pseudonyms.")
@click.option(
    "--rules",
    "rules_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="Desensitisation rules (YAML/JSON): fields, patterns, names, keep; see docs/cases.md.",
)
@click.option(
    "--effect",
    "effects",
    multiple=True,
    metavar="TOOL=EFFECT",
    help="A tool's effect (read, write, irreversible) where its spans record none; repeatable.",
)
@click.option("--force", is_flag=True, help="Overwrite a folder that already holds a case set.")
@format_option()
def extract(
    lake: Lake,
    since: datetime | None,
    until: datetime | None,
    out: Path,
    per_group: int,
    groups: str,
    seed: int,
    rules_file: Path | None,
    effects: tuple[str, ...],
    force: bool,
    fmt: str,
) -> None:
    """Choose production sessions, stratified into four groups, and write them as draft cases with cassettes.

    Groups, from what each trace shows: faults (a 429, timeout, 5xx or empty result), high_risk (a
    write or irreversible call, or a hand-off of one), vague (a hand-off, a question back, a call
    refused for its arguments), clear (the rest). The choice is seeded and prefers diverse tools and
    outcomes. Every identifier, name, email, phone, address, internal URL and secret is replaced by a
    pseudonym of the same shape, the same everywhere. Needs captured content.

    \b
    Examples:
      tracevals cases extract --lake lake --out replay-set
      tracevals cases extract --lake lake --since 2026-11-01 --until 2026-11-08 --per-group 10 --out set
      tracevals cases extract --lake lake --groups faults,high_risk --rules pii.yaml --out set --format json
    """
    from tracevals.cases import ExtractError, extract_cases
    from tracevals.cases.rules import Rules
    from tracevals.lake.paths import LakeError
    from tracevals.model.documents import DocumentError, read_document
    from tracevals.queries.selection import SelectionError

    chosen = [g.strip() for g in groups.split(",") if g.strip()]
    unknown = [g for g in chosen if g not in GROUPS]
    if unknown or not chosen:
        raise click.BadParameter(
            f"{', '.join(unknown) or '(none)'}: choose from {', '.join(GROUPS)}", param_hint="--groups"
        )
    tool_effects = {}
    for item in effects:
        tool, sep, effect = item.partition("=")
        if not sep or effect not in ("read", "write", "irreversible"):
            raise click.BadParameter(f"{item!r}: write TOOL=read|write|irreversible", param_hint="--effect")
        tool_effects[tool.strip()] = effect
    if (out / "cases.jsonl").exists() and not force:
        raise click.ClickException(f"{out} already holds a case set; pass --force to overwrite it, or another --out")
    errors = (ExtractError, LakeError, SelectionError, DocumentError, ValueError)
    try:
        with lake_errors(lake, errors, first_line=True):
            document = read_document(rules_file, "rules file") or {} if rules_file else None
            rules = Rules.from_document(document, str(rules_file)) if document is not None else None
            result = extract_cases(lake, out, since=since, until=until, per_group=per_group, groups=chosen, seed=seed,
                                   rules=rules, effects=tool_effects)  # fmt: skip
    except OSError as exc:
        raise click.ClickException(f"cannot write {out}: {exc.strerror or exc}") from exc
    if fmt == "json":
        click.echo(json_text(result.as_dict()))
        return
    rows = [
        (c["case_id"], c["group"], c["review"]["group_reason"], c["review"]["source"]["session_id"])
        for c in result.cases
    ]
    print_rows(
        ("case", "group", "why", "source session"),
        rows,
        fmt,
        title=f"{len(result.cases)} draft cases from {result.sessions_read} sessions -> {out}",
    )
    if fmt == "table":
        for group, why in result.short.items():
            echo(f"warning: group {group} has {why}", err=True)
        for why, n in result.skipped.items():
            echo(f"note: {n} session(s) skipped: {why}", err=True)
        click.echo(f"next: tracevals cases review {out}", err=True)


@cases.command()
@click.argument("folder", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--accept", "accept", multiple=True, metavar="CASE_ID", help="Mark a draft confirmed; repeatable.")
@click.option("--drop", "drop", multiple=True, metavar="CASE_ID", help="Remove a case and its cassette; repeatable.")
@format_option()
def review(folder: Path, accept: tuple[str, ...], drop: tuple[str, ...], fmt: str) -> None:
    """Print each case of FOLDER beside the session it was drafted from; accept or drop cases.

    \b
    Examples:
      tracevals cases review replay-set
      tracevals cases review replay-set --accept clear_01 --accept faults_02
      tracevals cases review replay-set --drop vague_03 --format json
    """
    from tracevals.cases.review import ReviewError, as_json, decide, render
    from tracevals.model.tasks import TaskFileError

    try:
        kept = decide(folder, accept=accept, drop=drop)
    except (ReviewError, TaskFileError) as exc:
        raise click.ClickException(str(exc)) from None
    if fmt == "json":
        echo(json_text(as_json(kept), ensure_ascii=False))
        return
    if fmt == "csv":
        rows = [
            (
                r.case_id,
                r.case.get("group"),
                r.status,
                ((r.case.get("review") or {}).get("source") or {}).get("session_id"),
                r.case.get("input"),
                json.dumps(r.case.get("expected_steps"), ensure_ascii=False),
            )
            for r in kept
        ]
        print_rows(("case", "group", "status", "source_session", "input", "expected_steps"), rows, fmt)
        return
    for r in kept:
        echo_prose("\n".join(render(r)))
        echo("")
    drafts = sum(1 for r in kept if r.status == "draft")
    click.echo(
        f"{len(kept)} cases: {drafts} drafts, {len(kept) - drafts} confirmed"
        + (f"; accepted {len(accept)}" if accept else "")
        + (f"; dropped {len(drop)}" if drop else "")
    )
