"""The run's tool interceptor: record/replay, fault injection and prompt injection, in that order.

Installed per attempt through the instrumentation's interception seam (`intercept_tools`), so any
agent whose tools are `@tracevals.tool`, a `tracevals.wrap_tools` mapping or MCP `call_tool` gets all
three with no change. For each call: a replayed recording answers without running anything;
otherwise the fault injector may fail, slow or spoil the call around the real tool (and a recording
keeps what happened); then the attack payload, if any, is planted in the result.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracevals.harness.attacks import Injection, carry, mark, parse_injection
from tracevals.harness.cassettes import MODES, Cassette, CassettePlayer, cassette_name, replay
from tracevals.harness.faults import FaultInjector, FaultRule, delay_s, parse_rule, raise_if_failing, shape
from tracevals.harness.model_cassettes import (
    MODELS_FOLDER,
    ModelCassette,
    ModelCassetteInterceptor,
    model_cassette_path,
)
from tracevals.instrumentation.interception import ToolInvocation
from tracevals.model import attributes as tv
from tracevals.model.case import Case


@dataclass
class RunPlan:
    """What a run does to tool calls: faults, injections, cassettes (all optional); and to model calls:
    cassettes (`<cassette_dir>/models/`, see `model_cassettes`).

    `model_mode` None means "as `cassette_mode`", except that a `replay` of a cassette folder with no
    `models/` folder (tool cassettes only: from `tracevals cases extract`, or recorded before model calls
    were) runs the models live; `"off"`: models run live and unrecorded; else record | replay | record-new."""

    faults: tuple[FaultRule, ...] = ()
    injections: tuple[Injection, ...] = ()
    cassette_dir: Path | None = None
    cassette_mode: str | None = None  # record | replay | record-new
    model_mode: str | None = None  # None: as cassette_mode; "off"; record | replay | record-new
    _cassettes: dict[str, Cassette] = field(default_factory=dict)
    _model_cassettes: dict[str, ModelCassette] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _injectors: list[tuple[str, int, FaultInjector]] = field(default_factory=list)  # (case id, attempt, injector)
    misses: list[str] = field(default_factory=list)  # replay misses: the run is incomplete, not the agent

    def unfired_rules(self) -> list[tuple[FaultRule, str]]:
        """The rules that did not fire, each with why: a profile's rule (or a case's own fault) that no
        attempt's call matched (a tool never called, a call index never reached, a chance never drawn),
        and, attempt by attempt, a call-indexed rule that fired in some attempts but not in others (those
        attempts ran without the fault they were meant to meet). A fault that injected nothing must be
        said, not pass as a clean run."""
        with self._lock:
            injectors = list(self._injectors)
        out = []
        for rule in dict.fromkeys(r for _, _, injector in injectors for r in injector.rules):
            mine = [(case, attempt, inj) for case, attempt, inj in injectors if rule in inj.rules]
            missed = [(case, attempt, inj) for case, attempt, inj in mine if not _fired_or_replayed(rule, inj)]
            if not missed:
                continue
            if len(missed) == len(mine):  # never fired at all
                out.append((rule, _why(rule, [inj for _, _, inj in mine])))
            elif rule.call is not None:  # fired in some attempts, not in these
                listed = ", ".join(f"{case} #{attempt}" for case, attempt, _ in missed[:5])
                more = f" +{len(missed) - 5} more" if len(missed) > 5 else ""
                why = _why(rule, [inj for _, _, inj in missed])
                out.append((rule, f"in {len(missed)} of {len(mine)} attempts ({listed}{more}): {why}"))
        return out

    def note_miss(self, message: str) -> None:
        with self._lock:
            self.misses.append(message)

    @property
    def replay_mode(self) -> str:
        return self.cassette_mode or "live"

    def is_active(self, case: Case) -> bool:
        return bool(self.faults or self.injections or self.cassette_dir or _case_faults(case) or _case_injections(case))

    def cassette(self, task_id: str) -> Cassette | None:
        if self.cassette_dir is None or self.cassette_mode is None:
            return None
        with self._lock:
            if task_id not in self._cassettes:
                # a task whose model calls alone were recorded (it called no tool) is recorded too
                required = self.models is None or not model_cassette_path(self.cassette_dir, task_id).exists()
                self._cassettes[task_id] = Cassette.open(self.cassette_dir, task_id, self.cassette_mode, required)
            return self._cassettes[task_id]

    @property
    def models(self) -> str | None:
        """The model calls' cassette mode (None: models run live, unrecorded)."""
        if self.cassette_dir is None or self.model_mode == "off":
            return None
        if self.model_mode is not None:
            if self.model_mode not in MODES:
                raise ValueError(f"model mode {self.model_mode!r} is not one of off, {', '.join(MODES)}")
            return self.model_mode
        if self.cassette_mode == "replay" and not (Path(self.cassette_dir) / MODELS_FOLDER).is_dir():
            return None  # a tool-only cassette set: its models were never recorded
        return self.cassette_mode

    def model_cassette(self, task_id: str) -> ModelCassette | None:
        mode = self.models
        if self.cassette_dir is None or mode is None:
            return None
        with self._lock:
            if task_id not in self._model_cassettes:
                # ... and one that called no model, if its tool calls were recorded
                tools = self.cassette_mode is not None and (Path(self.cassette_dir) / cassette_name(task_id)).exists()
                self._model_cassettes[task_id] = ModelCassette.open_in(self.cassette_dir, task_id, mode, not tools)
            return self._model_cassettes[task_id]

    def model_interceptor(self, case: Case, attempt: int = 1) -> ModelCassetteInterceptor | None:
        """The attempt's model interceptor (for `intercept_models`); None when models run live."""
        cassette = self.model_cassette(case.case_id)
        if cassette is None:
            return None
        return ModelCassetteInterceptor(cassette, attempt=attempt, on_miss=self.note_miss)

    def check(self, case: Case) -> None:
        """Fail now, before a run starts, on a bad fault or injection of `case`, or a missing cassette."""
        _case_faults(case)
        _case_injections(case)
        self.cassette(case.case_id)
        self.model_cassette(case.case_id)

    def interceptor(self, case: Case, seed: int, attempt: int = 1) -> AttemptInterceptor:
        rules = (*_case_faults(case), *self.faults)  # on one call, the case's own fault before a profile's rule
        injections = (*self.injections, *_case_injections(case))
        cassette = self.cassette(case.case_id)
        self.model_cassette(case.case_id)  # a missing model cassette fails here too, before a run starts
        injector = FaultInjector(rules=rules, seed=seed) if rules else None
        if injector is not None:
            with self._lock:
                self._injectors.append((case.case_id, attempt, injector))
        return AttemptInterceptor(
            faults=injector,
            injections=injections,
            player=CassettePlayer(cassette, attempt=attempt, on_miss=self.note_miss) if cassette is not None else None,
            mode=self.replay_mode,
        )

    def save(self) -> None:
        with self._lock:
            cassettes = [*self._cassettes.values(), *self._model_cassettes.values()]
        for cassette in cassettes:
            cassette.save()


def _fired_or_replayed(rule: FaultRule, injector: FaultInjector) -> bool:
    """The rule fired in this attempt, or its calls were answered by a cassette (which recorded what they met)."""
    replayed = injector.replayed and (rule.tool == "*" or rule.tool in injector.replayed)
    return rule.id in injector.fired_ids or bool(replayed)


def _why(rule: FaultRule, injectors: Sequence[FaultInjector]) -> str:
    """Why `rule` did not fire in these attempts: the tool never called, the call never reached, no draw."""
    most: dict[str, int] = {}
    for injector in injectors:
        for tool, n in injector.calls.items():
            most[tool] = max(most.get(tool, 0), n)
    calls = sum(most.values()) if rule.tool == "*" else most.get(rule.tool, 0)
    if calls == 0:
        called = ", ".join(sorted(most)) or "none"
        return f"no attempt called {rule.tool!r} (tools called: {called})"
    if rule.call is not None:
        return f"no attempt reached call {rule.call} of {rule.tool!r} (at most {calls})"
    return f"probability {rule.probability} drew none of the calls"


def _case_faults(case: Case) -> tuple[FaultRule, ...]:
    raw = case.raw.get("faults") or ()
    return tuple(parse_rule(r, f"case {case.case_id}: faults[{i}]") for i, r in enumerate(raw))


def _case_injections(case: Case) -> tuple[Injection, ...]:
    raw = case.raw.get("injections") or ()
    return tuple(parse_injection(r, f"case {case.case_id}: injections[{i}]") for i, r in enumerate(raw))


@dataclass
class _Tape:
    """One tool call as the cassette has it: run live (its result set by the caller), or replayed."""

    live: bool
    result: Any = None


@dataclass
class AttemptInterceptor:
    """One attempt's interceptor (its fault counters and cassette occurrences are per attempt)."""

    faults: FaultInjector | None
    injections: Iterable[Injection]
    player: CassettePlayer | None
    mode: str = "live"
    _seen: dict[str, int] = field(default_factory=dict)

    def intercept(self, call: ToolInvocation, proceed: Callable[[], Any]) -> Any:
        """A call of a sync tool."""
        with self._taped(call) as tape:
            if tape.live:
                tape.result = self._live(call, proceed)
        return self._plant(call, tape.result)

    async def intercept_async(self, call: ToolInvocation, proceed: Callable[[], Awaitable[Any]]) -> Any:
        """A call of an async tool."""
        with self._taped(call) as tape:
            if tape.live:
                tape.result = await self._live_async(call, proceed)
        return self._plant(call, tape.result)

    @contextmanager
    def _taped(self, call: ToolInvocation) -> Iterator[_Tape]:
        """The call's cassette: its recorded result (`live` false) or a live run, recorded when the block
        ends (its result, or the exception that left the block); no cassette, a live run kept nowhere."""
        if self.player is None:
            yield _Tape(live=True)
            return
        key, n, recorded = self.player.begin(call.name, call.arguments)
        if recorded is not None:
            call.span.set_attribute(tv.REPLAY, "replay")
            if self.faults is not None:
                self.faults.replayed_call(call.name)
            yield _Tape(live=False, result=replay(recorded))
            return
        call.span.set_attribute(tv.REPLAY, "record")
        tape = _Tape(live=True)
        try:
            yield tape
        except BaseException as exc:
            self.player.recorded_error(key, n, call.name, call.arguments, exc)
            raise
        self.player.recorded_result(key, n, call.name, call.arguments, tape.result)

    def _live(self, call: ToolInvocation, proceed: Callable[[], Any]) -> Any:
        rule = self.faults.plan(call.name, call.span) if self.faults is not None else None
        if rule is None:
            return proceed()
        if delay_s(rule):
            time.sleep(delay_s(rule))
        raise_if_failing(rule, call.name)
        return shape(rule, proceed())

    async def _live_async(self, call: ToolInvocation, proceed: Callable[[], Awaitable[Any]]) -> Any:
        rule = self.faults.plan(call.name, call.span) if self.faults is not None else None
        if rule is None:
            return await proceed()
        if delay_s(rule):
            await asyncio.sleep(delay_s(rule))
        raise_if_failing(rule, call.name)
        return shape(rule, await proceed())

    # --- prompt injection -------------------------------------------------------------------------

    def _plant(self, call: ToolInvocation, result: Any) -> Any:
        n = self._seen[call.name] = self._seen.get(call.name, 0) + 1
        for injection in self.injections:
            if injection.tool == call.name and injection.call in (None, n):
                mark(call.span, injection)
                result = carry(result, injection.payload)
        return result


def plan_from_options(
    faults: Iterable[FaultRule] = (),
    injections: Iterable[Injection | Mapping[str, Any]] = (),
    cassette_dir: str | Path | None = None,
    cassette_mode: str | None = None,
    model_mode: str | None = None,
) -> RunPlan:
    parsed = tuple(i if isinstance(i, Injection) else parse_injection(i) for i in injections)
    return RunPlan(
        faults=tuple(faults),
        injections=parsed,
        cassette_dir=Path(cassette_dir) if cassette_dir is not None else None,
        cassette_mode=cassette_mode,
        model_mode=model_mode,
    )
