"""The order-support world: customers, orders and the six tools an agent uses on them.

One `OrderWorld` per attempt (state is never shared between attempts, so attempts are independent and
can run concurrently). The tools behave like a real API: arguments are validated (a name where a
`cus_...` id belongs, or "last month" where an ISO date belongs, is a 400), unknown ids are 404s,
conflicting writes are 409s, and side effects are kept in the world, so a message sent twice is two
messages here too. Writes honour idempotency keys the way payment APIs do: a repeated key returns the
first result and changes nothing.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import tracevals
from tracevals import ToolError
from tracevals.demo.world_data import CURRENCY, CUSTOMERS, STATUSES, TODAY, Customer, Order, initial_orders

TOOL_EFFECTS: dict[str, str] = {
    "search_customer": "read",
    "get_orders": "read",
    "send_message": "write",
    "refund_order": "write",
    "delete_order": "irreversible",
    "handoff_to_human": "write",
}
IDEMPOTENT_TOOLS = ("send_message", "refund_order", "delete_order")  # the tools taking an idempotency_key

_CUSTOMER_ID = re.compile(r"cus_\d{3,}")
_ORDER_ID = re.compile(r"ord_\d{4,}")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Invocation:
    """One tool call as the world saw it (the trajectory tests compare with `expected_steps`)."""

    tool: str
    arguments: dict[str, Any]
    error_type: str | None = None  # None: the call succeeded
    at: float = 0.0  # monotonic seconds

    @property
    def ok(self) -> bool:
        return self.error_type is None


@dataclass(frozen=True)
class SentMessage:
    message_id: str
    customer_id: str
    text: str
    idempotency_key: str | None


@dataclass(frozen=True)
class Refund:
    refund_id: str
    order_id: str
    amount: str
    reason: str
    idempotency_key: str | None


@dataclass(frozen=True)
class Handoff:
    ticket_id: str
    reason: str
    completed: tuple[str, ...]
    pending: tuple[str, ...]
    candidates: tuple[str, ...]


def _invalid(message: str) -> ToolError:
    return ToolError(message, error_type="invalid_argument", status_code=400)


def _not_found(message: str) -> ToolError:
    return ToolError(message, error_type="not_found", status_code=404)


def _conflict(message: str) -> ToolError:
    return ToolError(message, error_type="conflict", status_code=409)


def _reject_unknown(tool: str, extra: Mapping[str, Any]) -> None:
    if extra:
        raise _invalid(f"{tool}: unknown parameter(s): {', '.join(sorted(extra))}")


def _text_arg(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _invalid(f"'{name}' is required and must be a non-empty string")
    return value.strip()


def _strings(name: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _invalid(f"'{name}' must be an array of strings")
    return tuple(value)


@dataclass
class OrderWorld:
    today: date = TODAY
    clock: Callable[[], float] = time.monotonic
    customers: dict[str, Customer] = field(default_factory=lambda: {c.customer_id: c for c in CUSTOMERS})
    orders: dict[str, Order] = field(default_factory=initial_orders)
    messages: list[SentMessage] = field(default_factory=list)
    refunds: list[Refund] = field(default_factory=list)
    deletions: list[str] = field(default_factory=list)  # ids of deleted orders, in order
    handoffs: list[Handoff] = field(default_factory=list)
    log: list[Invocation] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._replies: dict[tuple[str, str], Any] = {}  # (tool, idempotency key) -> first result

    def tools(self) -> dict[str, Callable[..., Any]]:
        return {name: getattr(self, name) for name in TOOL_EFFECTS}

    @property
    def trajectory(self) -> list[str]:
        return [inv.tool for inv in self.log]

    # --- the tools ---------------------------------------------------------------------------

    def search_customer(self, name: Any = None, **extra: Any) -> Any:
        def run() -> dict[str, Any]:
            _reject_unknown("search_customer", extra)
            words = _text_arg("name", name).lower().split()
            found = [c for c in self.customers.values() if all(w in c.name.lower().split() for w in words)]
            return {"customers": [{"customer_id": c.customer_id, "name": c.name} for c in found]}

        return self._run("search_customer", {"name": name, **extra}, run)

    def get_orders(
        self, customer_id: Any = None, status: Any = None, since: Any = None, limit: Any = None, **extra: Any
    ) -> Any:
        def run() -> dict[str, Any]:
            _reject_unknown("get_orders", extra)
            cid = self._customer(customer_id)
            if status is not None and status not in STATUSES:
                raise _invalid(f"'status' must be one of {', '.join(STATUSES)}, got {status!r}")
            if since is not None and not (isinstance(since, str) and _ISO_DATE.fullmatch(since) and _is_date(since)):
                raise _invalid(f"'since' must be an ISO date (YYYY-MM-DD), got {since!r}")
            if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
                raise _invalid(f"'limit' must be a positive integer, got {limit!r}")
            rows = [o for o in self.orders.values() if o.customer_id == cid]
            rows = [o for o in rows if (status is None or o.status == status) and (since is None or o.created >= since)]
            rows.sort(key=lambda o: o.order_id)
            rows.sort(key=lambda o: o.created, reverse=True)  # newest first; same day: lower id first
            return {"customer_id": cid, "orders": [o.to_dict() for o in rows[:limit]]}

        args = {"customer_id": customer_id, "status": status, "since": since, "limit": limit, **extra}
        return self._run("get_orders", args, run)

    def send_message(self, customer_id: Any = None, text: Any = None, idempotency_key: Any = None, **extra: Any) -> Any:
        def run() -> dict[str, Any]:
            _reject_unknown("send_message", extra)
            cid = self._customer(customer_id)
            body = _text_arg("text", text)
            message = SentMessage(f"msg_{len(self.messages) + 1:03d}", cid, body, idempotency_key)
            self.messages.append(message)
            return {"message_id": message.message_id, "customer_id": cid, "status": "sent"}

        args = {"customer_id": customer_id, "text": text, "idempotency_key": idempotency_key, **extra}
        return self._run("send_message", args, run, idempotency_key)

    def refund_order(self, order_id: Any = None, reason: Any = None, idempotency_key: Any = None, **extra: Any) -> Any:
        def run() -> dict[str, Any]:
            _reject_unknown("refund_order", extra)
            order = self._order(order_id)
            why = _text_arg("reason", reason)
            if order.status in ("refunded", "cancelled"):
                raise _conflict(f"order {order.order_id} is {order.status} and cannot be refunded")
            order.status = "refunded"
            refund = Refund(f"rf_{len(self.refunds) + 1:03d}", order.order_id, order.amount, why, idempotency_key)
            self.refunds.append(refund)
            return {
                "refund_id": refund.refund_id,
                "order_id": order.order_id,
                "amount": order.amount,
                "currency": CURRENCY,
                "status": "refunded",
            }

        args = {"order_id": order_id, "reason": reason, "idempotency_key": idempotency_key, **extra}
        return self._run("refund_order", args, run, idempotency_key)

    def delete_order(self, order_id: Any = None, idempotency_key: Any = None, **extra: Any) -> Any:
        def run() -> dict[str, Any]:
            _reject_unknown("delete_order", extra)
            order = self._order(order_id)
            del self.orders[order.order_id]
            self.deletions.append(order.order_id)
            return {"order_id": order.order_id, "deleted": True}

        args = {"order_id": order_id, "idempotency_key": idempotency_key, **extra}
        return self._run("delete_order", args, run, idempotency_key)

    def handoff_to_human(
        self, reason: Any = None, completed: Any = None, pending: Any = None, candidates: Any = None, **extra: Any
    ) -> Any:
        def run() -> dict[str, Any]:
            _reject_unknown("handoff_to_human", extra)
            ticket = Handoff(
                f"hnd_{len(self.handoffs) + 1:03d}",
                _text_arg("reason", reason),
                _strings("completed", completed),
                _strings("pending", pending),
                _strings("candidates", candidates),
            )
            tracevals.handoff(ticket.reason, ticket.completed, ticket.pending, ticket.candidates)
            self.handoffs.append(ticket)
            return {"ticket_id": ticket.ticket_id, "status": "queued_for_human"}

        args = {"reason": reason, "completed": completed, "pending": pending, "candidates": candidates, **extra}
        return self._run("handoff_to_human", args, run)

    # --- machinery -----------------------------------------------------------------------------

    def _run(self, tool: str, arguments: dict[str, Any], action: Callable[[], Any], key: Any = None) -> Any:
        arguments = {k: v for k, v in arguments.items() if v is not None}
        try:
            replay_key = (tool, key) if isinstance(key, str) and key else None
            if replay_key is not None and replay_key in self._replies:
                result = self._replies[replay_key]
            else:
                result = action()
                if replay_key is not None:
                    self._replies[replay_key] = result
        except ToolError as exc:
            self.log.append(Invocation(tool, arguments, exc.error_type, self.clock()))
            raise
        self.log.append(Invocation(tool, arguments, None, self.clock()))
        return result

    def _customer(self, customer_id: Any) -> str:
        if customer_id is None:
            raise _invalid("'customer_id' is required (an id like 'cus_001' from search_customer)")
        if not isinstance(customer_id, str) or not _CUSTOMER_ID.fullmatch(customer_id):
            raise _invalid(f"'customer_id' must be an id like 'cus_001' from search_customer, got {customer_id!r}")
        if customer_id not in self.customers:
            raise _not_found(f"no customer {customer_id}")
        return customer_id

    def _order(self, order_id: Any) -> Order:
        if not isinstance(order_id, str) or not _ORDER_ID.fullmatch(order_id):
            raise _invalid(f"'order_id' must be an id like 'ord_1001', got {order_id!r}")
        order = self.orders.get(order_id)
        if order is None:
            raise _not_found(f"no order {order_id}")
        return order


def _is_date(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True
