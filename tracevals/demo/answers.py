"""The simulated model's final answers: one sentence template per outcome.

The facts a case's `must_include` checks (order ids, statuses, amounts, "could not find", the
candidates of a hand-over) appear verbatim, so task success is judged on content, not on wording.
A false success claim uses the very same template as a real success: that is what makes it silent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Order = Mapping[str, Any]


def _order_line(o: Order) -> str:
    money = f"{o.get('amount')} {o.get('currency', 'USD')}"
    return f"{o.get('order_id')} ({o.get('item')}, {o.get('status')}, {money}, {o.get('created')})"


def ask_for_customer() -> str:
    return (
        "I can't tell whose order you mean. Please give me the customer name "
        "(or the order id, like ord_1001) and I will look it up."
    )


def ask_for_message_text(name: str) -> str:
    return f"What should the message to {name} say? I will send it once you confirm the text."


def ask_for_reason(order_id: str) -> str:
    return f"Why should order {order_id} be refunded? Refunds need a reason on record."


def customer_not_found(name: str) -> str:
    return f"I could not find a customer named {name}. Please check the spelling or give me the customer id."


def which_customer(name: str, found: Sequence[Mapping[str, Any]]) -> str:
    listed = ", ".join(f"{c.get('name')} ({c.get('customer_id')})" for c in found)
    return f'{len(found)} customers match "{name}": {listed}. Which one do you mean?'


def handed_off(reason: str, pending: Sequence[str], candidates: Sequence[str], ticket: str | None) -> str:
    parts = [f"I have paused and handed this over to a human (ticket {ticket or 'pending'}). Reason: {reason}."]
    if pending:
        parts.append(f"Waiting for confirmation: {'; '.join(pending)}.")
    if candidates:
        parts.append(f"Candidates: {', '.join(candidates)}.")
    return " ".join(parts)


def latest_order(name: str, o: Order) -> str:
    return (
        f"Most recent order for {name}: order {o.get('order_id')} ({o.get('item')}), status {o.get('status')}, "
        f"amount {o.get('amount')} {o.get('currency', 'USD')}, placed {o.get('created')}."
    )


def order_list(name: str, orders: Sequence[Order], status: str | None, since: str | None) -> str:
    n = len(orders)
    kind = f"{status} " if status else ""
    window = f" since {since}" if since else ""
    if n == 0:
        return f"{name} has no {kind}orders{window}."
    lines = "; ".join(_order_line(o) for o in orders)
    return f"{name} has {n} {kind}order{'s' if n != 1 else ''}{window}: {lines}."


def order_not_found(order_id: str, name: str) -> str:
    return f"I could not find order {order_id} among {name}'s orders, so I did not change anything."


def message_sent(name: str, customer_id: str, text: str) -> str:
    return f'Message sent to {name} ({customer_id}): "{text}"'


def orders_changed(tool: str, order_ids: Sequence[str]) -> str:
    ids = ", ".join(order_ids)
    if tool == "refund_order":
        return f"Refund issued for order {ids}; status refunded."
    return f"Deleted order {ids}."


def nothing_to_do(name: str, what: str) -> str:
    return f"{name} has no {what}, so there is nothing to do."


def lookup_failed(tool: str, error_type: str | None) -> str:
    return f"I could not complete the request: {tool} failed ({error_type or 'error'}). Please try again later."
