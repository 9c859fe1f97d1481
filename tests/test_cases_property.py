"""A property of `tracevals cases extract`: nothing personal or secret a production lake holds, wherever it
holds it, is left in any byte of the set; and the set still replays (its pseudonyms are consistent).

Hypothesis generates lakes: sessions of an agent of another framework (plain OpenTelemetry SDK spans in
the GenAI conventions, no capture-time redaction: tests/fixtures/scripted_agent.py), whose customers'
names, emails, phone numbers, customer ids, home directories and credentials are planted in the
request, tool arguments and results (as values and as JSON keys), error types and messages, hand-offs,
the answer, session ids, agent names and service names; tools named like credentials among them. The
set is extracted with the real CLI; the scripted agent reads the pseudonymised plan from each case's
input, and every call it makes must find its recording through the harness's own cassette player
(tests/test_cases_desensitise.py replays a set end to end with `tracevals run --replay`; here the
player alone keeps each example to the cost of one extraction).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from fixtures.scripted_agent import write_plain_session
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracevals.cli import main
from tracevals.harness.cassettes import Cassette, CassettePlayer, call_key
from tracevals.model.tasks import load_cases

T0 = dt.datetime(2026, 11, 2, 9, tzinfo=dt.timezone.utc)
# Names no pseudonym is made of (the pseudonyms' pool is Avery, Blake, ...), domains that are not example.com
FIRST = ("Quentin", "Ingrid", "Tobias", "Beatriz", "Oluwaseun", "Magdalena", "Rasmus", "Priyanka")
LAST = ("Marlowe", "Okafor", "Nakamura", "Lindqvist", "Castellanos", "Abernathy", "Szymanski", "Oyelaran")
DOMAINS = ("mailbox.test", "corp-mail.net", "shop.co.uk")
# Tools named like credentials (structure: kept) beside ordinary ones, with their effects
TOOLS = {
    "reset_password": "write", "rotate_api_key": "write", "get_access_token": "read", "set_cookie": "write",
    "send_message": "write", "delete_order": "irreversible", "get_orders": "read", "attach_file": "write",
}  # fmt: skip
CREDENTIAL_KEYS = ("password", "new_password", "api_key", "token", "cookie", "client_secret")


@dataclass(frozen=True)
class Person:
    first: str
    last: str
    domain: str
    digits: str  # 8 digits: the phone's, the customer id's are the last 5
    secret: str

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}"

    @property
    def email(self) -> str:
        return f"{self.first.lower()}.{self.last.lower()}@{self.domain}"

    @property
    def phone(self) -> str:  # as text holds it
        return f"+44 20 {self.digits[:4]} {self.digits[4:]}"

    @property
    def e164(self) -> str:  # as an identifier holds it
        return f"+4420{self.digits}"

    @property
    def customer_id(self) -> str:
        return f"cus_{self.digits[3:]}"

    @property
    def user(self) -> str:
        return f"{self.first[0].lower()}{self.last.lower()}"

    def planted(self) -> list[str]:
        return [
            self.first, self.last, self.email, self.phone, self.e164, self.digits, self.customer_id,
            self.user, self.secret, self.shaped,
        ]  # fmt: skip

    @property
    def shaped(self) -> str:  # a key of a known shape, found in any text
        return f"sk-proj-{self.secret[3:]}{self.digits}Zq"


people = st.builds(
    Person,
    first=st.sampled_from(FIRST),
    last=st.sampled_from(LAST),
    domain=st.sampled_from(DOMAINS),
    digits=st.text("0123456789", min_size=8, max_size=8).filter(lambda d: d[0] != "0"),
    secret=st.text("abcdefghijkmnopqrstuvwxyz23456789", min_size=12, max_size=12).map(lambda s: f"tk-{s}"),
)


@st.composite
def sessions(draw: st.DrawFn, n: int) -> tuple[str, str, dict[str, Any], Person]:
    """(session id, service name, plan, the person it is about): one production session."""
    p = draw(people)
    where = draw(st.sampled_from(("session", "agent", "service", "error", "none")))
    session_id = draw(
        st.sampled_from(
            (p.email, f"sess-{p.e164}", f"{p.customer_id}-2026-11-02", f"chat:{p.email}:{n}", f"tenant/{p.shaped}")
        )
        if where == "session"
        else st.just(f"s-{n:04x}a9f3")
    )
    agent = f"support-{p.e164}" if where == "agent" else "support"
    service = f"orders-api ({p.email})" if where == "service" else "orders-api"
    # the look-up that puts the person in structured fields: their name is findable wherever else it is
    calls: list[dict[str, Any]] = [
        {
            "tool": "get_orders",
            "args": {"customer_id": p.customer_id},
            "effect": "read",
            "result": {
                "customer": {"name": p.name, "email": p.email, "phone": p.phone, "customer_id": p.customer_id},
                "orders_by_contact": {p.email: draw(st.integers(1, 9))},
            },
        }
    ]
    for tool in draw(st.lists(st.sampled_from(sorted(TOOLS)), min_size=1, max_size=3)):
        args: dict[str, Any] = {"customer_id": p.customer_id}
        if tool in ("reset_password", "rotate_api_key", "set_cookie", "get_access_token"):
            args[draw(st.sampled_from(CREDENTIAL_KEYS))] = p.secret
        if tool == "attach_file":
            args["path"] = f"/home/{p.user}/invoices/{p.user}_march.pdf"
        if tool == "send_message":
            args["text"] = f"Hello {p.first}, we will call you at {p.phone}."
        call: dict[str, Any] = {"tool": tool, "args": args, "effect": TOOLS[tool], "result": {"ok": True}}
        if where == "error" and len(calls) == 1:
            call["error"] = {"type": f"NotFound({p.email})", "status": 404, "message": f"no account {p.customer_id}"}
        calls.append(call)
    # a credential field's value is a secret wherever else it is repeated; a key of a known shape anywhere
    credential = any(k in c["args"] for c in calls for k in CREDENTIAL_KEYS)
    said = f"my token is {p.secret}" if credential else "no token"
    plan: dict[str, Any] = {
        "agent": agent,
        "request": f"{p.name} here ({p.email}), key {p.shaped}. Request {n}: {said}, for {p.customer_id}.",
        "calls": calls,
        "answer": f"Done for {p.first} ({p.customer_id}); {p.phone} is on file. {said.capitalize()}.",
    }
    if draw(st.booleans()):
        plan["handoff"] = {
            "reason": f"{p.last} asked to delete an order of {p.email}",
            "pending": [f"delete_order {p.customer_id}"],
            "candidates": [p.name],
        }
    return session_id, service, plan, p


@st.composite
def lakes(draw: st.DrawFn) -> list[tuple[str, str, dict[str, Any], Person]]:
    drawn = [draw(sessions(n)) for n in range(draw(st.integers(3, 7)))]
    ids = [d[0] for d in drawn]
    return [d for i, d in enumerate(drawn) if d[0] not in ids[:i]]  # one session per id


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(lake=lakes())
def test_nothing_planted_is_left_and_the_set_replays(
    lake: list[tuple[str, str, dict[str, Any], Person]], tmp_path_factory: Any
) -> None:
    root = tmp_path_factory.mktemp("generated")
    for i, (session_id, service, plan, _) in enumerate(lake):
        write_plain_session(root / "lake", service, session_id, plan, T0 + dt.timedelta(minutes=i))
    out = root / "set"
    runner = CliRunner()
    extracted = runner.invoke(main, ["cases", "extract", "--lake", str(root / "lake"), "--out", str(out)])
    assert extracted.exit_code == 0, extracted.output
    planted = {value for *_, p in lake for value in p.planted()}
    for name, data in _files(out).items():
        text = data.decode("utf-8")
        left = sorted(v for v in planted if re.search(rf"(?<![A-Za-z]){re.escape(v)}(?![a-z])", text))
        assert not left, f"{left} left in {name}"
    cases = load_cases(out / "cases.jsonl")  # the shipped schema, as `run` reads it
    assert len(cases) == len(lake)  # every session a case: distinct requests, one turn each
    assert {t for c in cases for t in c.allowed_tools} >= {c["tool"] for *_, plan, _ in lake for c in plan["calls"]}
    for case in cases:  # every call the agent makes from the pseudonymised plan finds its recording
        plan = json.loads(case.input)
        player = CassettePlayer(Cassette.open(out / "cassettes", case.case_id, "replay"), attempt=1)
        for call in plan["calls"]:
            _, _, recorded = player.begin(call["tool"], call["args"])  # a miss raises CassetteMiss
            assert recorded is not None and recorded["tool"] == call["tool"]
        if "expected_steps" in case.raw:  # the drafted steps are calls the cassette holds
            keys = {call_key(c["tool"], c["args"]) for c in plan["calls"]}
            assert all(call_key(s.tool, s.args or {}) in keys for s in case.expected_steps if s.tool in TOOLS)
