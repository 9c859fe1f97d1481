"""Reading a support request: who, what action, which order, which filters (keyword rules).

The simulated model understands the controlled phrasing of the bundled cases ("Send Chen Jie a
message: \"...\"", "Refund order ord_1004 for Li Na because ...", "List Li Na's orders since last
month"), not English at large. That is enough for a stand-in whose job is to make the same, seeded
mistakes a real model makes on these tasks, and to be right when no mistake is drawn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

from tracevals.demo.world_data import STATUSES, TODAY

# Capitalised words that start a request or a sentence, never a customer's name.
_NOT_NAMES = frozenset(
    {
        *("Find", "List", "Send", "Refund", "Delete", "Show", "Check", "How", "What", "Which", "Give"),
        *("Please", "Look", "Tell", "Cancel", "Summarize", "Summarise", "Get", "Count", "The", "A", "An"),
        *("I", "My", "Your", "Our", "Order", "Orders", "Message", "Customer", "Can", "Could", "Is", "Are"),
        *("Do", "Does"),
    }
)
_QUOTED = re.compile(r"[\"“]([^\"”]+)[\"”]")
_ORDER_ID = re.compile(r"\bord_\d+\b")
_TODAY_IN_PROMPT = re.compile(r"[Tt]oday is (\d{4}-\d{2}-\d{2})")
_PAST_DAYS = re.compile(r"\b(?:past|last) (\d+) days\b")
WRITE_ACTIONS = ("send", "refund", "delete")


@dataclass(frozen=True)
class Intent:
    action: str  # latest | list | count | send | refund | delete
    customer: str | None = None
    order_id: str | None = None
    message: str | None = None
    status: str | None = None
    since_phrase: str | None = None  # the relative date as the user said it ("last month")
    since: str | None = None  # the same, resolved to an ISO date
    reason: str | None = None
    bulk: bool = False  # "all of ..."
    duplicate: bool = False  # "duplicate", "charged twice"

    @property
    def is_write(self) -> bool:
        return self.action in WRITE_ACTIONS

    @property
    def needs_orders(self) -> bool:
        return self.action != "send"


def today_from_prompt(system_text: str) -> date:
    """The date the agent's system prompt states, else the demo's fixed today (2026-11-02)."""
    found = _TODAY_IN_PROMPT.search(system_text)
    if found:
        try:
            return date.fromisoformat(found.group(1))
        except ValueError:
            pass
    return TODAY


def relative_date(text: str, today: date) -> tuple[str, str] | None:
    """(phrase, ISO date) for the relative dates the cases use, or None."""
    lower = text.lower()
    days = _PAST_DAYS.search(lower)
    if days:
        return days.group(0), (today - timedelta(days=int(days.group(1)))).isoformat()
    if "last month" in lower:
        first_of_this = today.replace(day=1)
        return "last month", (first_of_this - timedelta(days=1)).replace(day=1).isoformat()
    if "this month" in lower:
        return "this month", today.replace(day=1).isoformat()
    if "last week" in lower:
        return "last week", (today - timedelta(days=7)).isoformat()
    if "yesterday" in lower:
        return "yesterday", (today - timedelta(days=1)).isoformat()
    return None


def customer_name(text: str) -> str | None:
    """The first run of capitalised words that is not a sentence-starting verb or a stop word."""
    words = re.sub(r"['’]s\b", "", text).replace(",", " ").replace(".", " . ").replace("?", " . ").split()
    run: list[str] = []
    for word in [*words, "."]:
        if word[:1].isupper() and word.isalpha() and word not in _NOT_NAMES and len(run) < 3:
            run.append(word)
        elif run:
            return " ".join(run)
    return None


def _action(lower: str) -> str:
    if "delete" in lower:
        return "delete"
    if "refund" in lower:
        return "refund"
    if "message" in lower or lower.startswith(("send", "tell")):
        return "send"
    if "how many" in lower:
        return "count"
    if "most recent" in lower or "latest" in lower or "last order" in lower:
        return "latest"
    return "list"


def parse_intent(text: str, today: date = TODAY) -> Intent:
    quoted = _QUOTED.search(text)
    rest = _QUOTED.sub(" ", text)  # the message body must not be read as part of the request
    lower = rest.lower()
    order = _ORDER_ID.search(rest)
    when = relative_date(rest, today)
    because = re.search(r"\bbecause\s+(.+?)[.!]?\s*$", rest, flags=re.IGNORECASE)
    return Intent(
        action=_action(lower),
        customer=customer_name(rest),
        order_id=order.group(0) if order else None,
        message=quoted.group(1).strip() if quoted else None,
        status=next((s for s in STATUSES if re.search(rf"\b{s}\b", lower)), None),
        since_phrase=when[0] if when else None,
        since=when[1] if when else None,
        reason=because.group(1).strip() if because else None,
        bulk=bool(re.search(r"\ball\b", lower)),
        duplicate="duplicate" in lower or "charged twice" in lower,
    )
