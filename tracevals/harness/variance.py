"""`tracevals run --attribute-variance`: the same tasks live, with the tools frozen, and with tools and
model frozen, so the flakiness left at each level says where it comes from (`tracevals.stats.variance`).

1. `live`: k attempts as a plain run does (variant `V@live`).
2. the reference: attempt 1 of each task once more, tools and model calls recorded (variant
   `V@reference`); the recording is then made the answer for every attempt (cassette slot 0, see
   `harness.cassettes.ANY_ATTEMPT`). Attempt 1 has the same seed in every level, so it is attempt 1 of
   the live level repeated.
3. `tools-frozen`: k attempts; every tool call the reference made is answered from its recording, the
   model runs live (`V@tools-frozen`).
4. `frozen`: k attempts; tool and model calls both answered from the reference (`V@frozen`).

In the frozen levels a call the reference never made (the attempt left its path) runs live and is
counted (`live_calls`). Each level copies the reference first, so what one level records never
answers another. Everything is one run id in the lake; the cassettes stay in `WORK/reference`.
"""

from __future__ import annotations

import functools
import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tracevals.harness.attempts import AgentFn, AttemptResult, run_cases
from tracevals.harness.cassettes import ANY_ATTEMPT
from tracevals.harness.interceptor import RunPlan
from tracevals.harness.stopping import StopRequest
from tracevals.model.attempt import AttemptKey
from tracevals.model.case import Case

__all__ = ["LEVELS", "REFERENCE", "freeze_reference", "level_variant", "run_levels"]

REFERENCE = "reference"
LEVELS = ("live", REFERENCE, "tools-frozen", "frozen")  # in the order they run
_MODES = {  # level -> (tool cassette mode, model mode); None: no cassettes
    "live": None,
    REFERENCE: ("record", "record"),
    "tools-frozen": ("record-new", "off"),
    "frozen": ("record-new", "record-new"),
}


def level_variant(variant: str, level: str) -> str:
    return f"{variant}@{level}"


def freeze_reference(folder: Path) -> int:
    """Make the recordings of attempt 1 the answer for every attempt (slot 0) in every cassette file of
    `folder` (tools and models); other attempts' recordings are dropped. Returns the interactions kept.
    Keys keep their order: a replayed result must be the recorded one byte for byte once serialised."""
    kept = 0
    for path in sorted(folder.rglob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        items = [dict(item, attempt=ANY_ATTEMPT) for item in doc.get("interactions", []) if item.get("attempt") == 1]
        kept += len(items)
        doc["interactions"] = items
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(path)
    return kept


def run_levels(
    agent: AgentFn,
    cases: Sequence[Case],
    *,
    k: int,
    run_id: str,
    variant: str,
    work: Path,
    base: RunPlan,
    seed: int = 0,
    concurrency: int = 4,
    settings: dict[str, Any] | None = None,
    skip: Sequence[AttemptKey] = (),
    flush: Callable[[], object] | None = None,
    on_done: Callable[[str, AttemptResult], None] | None = None,
    environment: Mapping[str, str] | None = None,
    stop: StopRequest | None = None,
) -> dict[str, RunPlan]:
    """Run the four passes of the module docstring; returns each level's plan (its misses, its faults).
    Once `stop` is requested no attempt is launched, and no level after the current one runs."""
    plans: dict[str, RunPlan] = {}
    reference = work / REFERENCE
    for level in LEVELS:
        modes = _MODES[level]
        folder = None
        if modes is not None:
            folder = reference if level == REFERENCE else work / level
            if level != REFERENCE:
                if folder.exists():
                    shutil.rmtree(folder)
                if reference.exists():
                    shutil.copytree(reference, folder)
                else:
                    folder.mkdir(parents=True)
        plan = RunPlan(
            faults=base.faults,
            injections=base.injections,
            cassette_dir=folder,
            cassette_mode=None if modes is None else modes[0],
            model_mode=None if modes is None else modes[1],
        )
        name = level_variant(variant, level)
        reference_done = level == REFERENCE and (reference / ".frozen").exists()
        if not reference_done:
            run_cases(
                agent,
                cases,
                k=1 if level == REFERENCE else k,
                run_id=run_id,
                variant=name,
                seed=seed,
                concurrency=concurrency,
                settings=settings,
                skip=skip,
                flush=flush,
                plan=plan,
                on_done=None if on_done is None else functools.partial(on_done, level),
                environment=environment,
                stop=stop,
            )
            plan.save()
            if stop is not None and stop.requested:  # a reference cut short is not frozen: resumed, it goes on
                plans[level] = plan
                break
        if level == REFERENCE and not reference_done:
            reference.mkdir(parents=True, exist_ok=True)
            freeze_reference(reference)
            (reference / ".frozen").write_text("attempt 1 serves every attempt\n", encoding="utf-8")
        plans[level] = plan
    return plans
