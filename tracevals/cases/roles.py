"""What each part of a session is, for desensitising: content, an identifier, or a structural name.

A value is desensitised by what it is, never by where it sits, and this module is the one place that
says what each part of a `groups.Session` is:

- **content** (the user's text, the answer, tool arguments and results, error messages, hand-off
  reasons, pending work and candidates): every personal value the field rules and text patterns find
  becomes a pseudonym, every credential is redacted (`pseudonyms.Desensitiser.apply`);
- **identifiers** (session id, service and agent names, error types, run / task / variant ids, tool
  call ids and idempotency keys): their personal parts (an email, a phone or account number, a
  customer id, a learned name) become the same pseudonyms as in content, the rest stays, so a random
  session id is still the one a person finds in the lake (`Desensitiser.identifier`);
- **structural names** (tool names, argument keys, evaluator names, effects, status codes, trace and
  span ids): kept as they are; they are the agent's code and the lake's keys, never a secret (a tool
  named `reset_password` is a name, not a password) and a replay calls the tools by them. Only an
  email or a `+` phone number in a tool name (a framework that names a tool call by its span's name:
  `lookup bob@example.com`) becomes its pseudonym (`Desensitiser.name`): no name a model API accepts
  holds either.

`learn(d, session)` and `desensitised(d, session)` walk the same map (`_mapped`), so a part that is
written is a part that was learned. Every file `tracevals cases extract` writes is drafted from the
desensitised sessions only; nothing drafted from an original is written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from tracevals.cases.groups import Session
from tracevals.cases.pseudonyms import Desensitiser

T = TypeVar("T")


def learn(d: Desensitiser, session: Session) -> None:
    """Note every personal value of `session` (its content and its identifiers)."""

    def content(value: T) -> T:
        d.learn(value)
        return value

    def identifier(value: str) -> str:
        d.learn_identifier(value)
        return value

    def name(value: str) -> str:
        d.learn_name(value)
        return value

    _mapped(session, content, identifier, name)


def desensitised(d: Desensitiser, session: Session) -> Session:
    """`session` with its content and identifiers desensitised (after `learn` saw every session)."""
    return _mapped(session, d.apply, d.identifier, d.name)


def _mapped(
    s: Session, content: Callable[[Any], Any], identifier: Callable[[str], str], name: Callable[[str], str]
) -> Session:
    def c(value: Any) -> Any:
        return None if value is None else content(value)

    def i(value: str | None) -> str | None:
        return None if value is None else identifier(value)

    t = s.trajectory
    calls = tuple(
        replace(
            call,
            name=name(call.name),
            args=c(call.args),
            result=c(call.result),
            error_type=i(call.error_type),
            call_id=i(call.call_id),
            idempotency_key=i(call.idempotency_key),
            injection_goal=c(call.injection_goal),
        )
        for call in t.tool_calls
    )
    handoffs = tuple(
        replace(
            h,
            reason=c(h.reason),
            completed=tuple(content(x) for x in h.completed),
            pending=tuple(content(x) for x in h.pending),
            candidates=tuple(content(x) for x in h.candidates),
        )
        for h in t.handoffs
    )
    trajectory = replace(
        t,
        tool_calls=calls,
        handoffs=handoffs,
        session_id=i(t.session_id),
        run_id=i(t.run_id),
        task_id=i(t.task_id),
        variant=i(t.variant),
        input=c(t.input),
        output=c(t.output),
        error_type=i(t.error_type),
    )
    spans = {call.span_id for call in t.tool_calls}
    return replace(
        s,
        session_id=identifier(s.session_id),
        trajectory=trajectory,
        input=content(s.input),
        output=c(s.output),
        service=identifier(s.service),
        agent=identifier(s.agent),
        error_messages={k: content(v) for k, v in s.error_messages.items() if k in spans},
    )
