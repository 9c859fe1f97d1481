"""The order-support behaviour profile: a deterministic stand-in for an LLM on the bundled tasks.

Each request, the "model" reads the task and everything its tool calls returned so far, and walks one
fixed procedure: find the customer, fetch the orders, act (answer, write, or hand over to a human).
Every step either finds its result in the conversation or decides the next turn: a tool call, a
retry, a clarifying question or the final answer. The disciplined procedure passes every bundled
case; the seeded mistakes of `FailureRates` bend it at the points where real models go wrong.

Disciplined behaviour, in short: ids come from search results; relative dates are resolved against
today; an empty read is checked once before it is believed; a 400 is fixed and re-sent; a transient
failure (timeout, 429, 5xx) is retried once in the next response (a model round trip being longer
than any retry-after asked for), a timed-out refund or deletion only after looking whether it
happened; a second failure goes to a human. Ambiguity (several customers or orders), irreversible
deletions and bulk writes are handed over with the candidates instead of being acted on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NoReturn

from tracevals.demo import answers
from tracevals.demo.history import History, Step
from tracevals.demo.injected import planted_calls
from tracevals.demo.intent import Intent, parse_intent, today_from_prompt
from tracevals.demo.rates import FailureRates
from tracevals.demo.world import TOOL_EFFECTS
from tracevals.simulator import Conversation, Decisions, ModelTurn, PlannedCall

MAX_TRANSIENT_RETRIES = 1
BLIND_COPIES = 3
REFUNDABLE = ("processing", "shipped", "delivered")
READ_ACTIONS = ("latest", "list", "count")


class _Decided(Exception):
    """Carries the next turn out of the procedure, so each step can read as straight-line code."""

    def __init__(self, turn: ModelTurn) -> None:
        super().__init__()
        self.turn = turn


def _say(text: str) -> NoReturn:
    raise _Decided(ModelTurn.say(text))


def _call(*calls: PlannedCall) -> NoReturn:
    raise _Decided(ModelTurn.call(*calls))


def _is_write(tool: str) -> bool:
    return TOOL_EFFECTS.get(tool, "write") != "read"


def _is_empty(step: Step) -> bool:
    return any(step.data.get(key) == [] for key in ("customers", "orders"))


@dataclass(frozen=True)
class OrderSupportPolicy:
    rates: FailureRates

    def respond(self, conversation: Conversation, decisions: Decisions) -> ModelTurn:
        intent = parse_intent(conversation.first_user_text(), today_from_prompt(conversation.system_text()))
        history = History.of_conversation(conversation)
        for instruction, planted in planted_calls(conversation):
            obeyed = any(s.name == planted.name and s.args == planted.arguments for s in history.steps)
            if not obeyed and decisions.chance(f"follow_injection:{instruction}", self.rates.follow_injection):
                return ModelTurn.call(planted)
        try:
            _Procedure(intent, history, decisions, self.rates).run()
        except _Decided as decided:
            return decided.turn


class _Procedure:
    def __init__(self, intent: Intent, history: History, decisions: Decisions, rates: FailureRates) -> None:
        self.it = intent
        self.h = history
        self.decisions = decisions
        self.rates = rates
        self.customer: dict[str, Any] = {}

    def fires(self, mistake: str) -> bool:
        return self.decisions.chance(mistake, float(getattr(self.rates, mistake)))

    # --- the procedure ---------------------------------------------------------------------------

    def run(self) -> NoReturn:
        it = self.it
        if it.needs_orders and not self.h.steps and self.fires("out_of_order"):
            # Reaches for the orders before knowing whose: the customer_id is simply missing.
            _call(PlannedCall("get_orders", {"status": it.status} if it.status else {}))
        if it.customer is None:
            _say(answers.ask_for_customer())
        if it.action == "send" and not it.message:
            _say(answers.ask_for_message_text(it.customer))
        after = self.resolve_customer(it.customer)
        if it.action == "send":
            self.send(after)
        # The orders the plan fetched, not a later status check made after a failed write.
        first_write = next((s.position for s in self.h.steps if s.position > after and _is_write(s.name)), None)
        step = self.obtain("get_orders", self.orders_query(), after, before=first_write)
        orders = [o for o in step.data.get("orders", []) if isinstance(o, dict)]
        self.act(orders, step.position)

    def resolve_customer(self, name: str) -> int:
        step = self.obtain("search_customer", {"name": name}, -1)
        found = [c for c in step.data.get("customers", []) if isinstance(c, dict)]
        if not found:
            if self.it.needs_orders and not self.h.of("get_orders", step.position) and self.fires("wrong_customer_arg"):
                _call(PlannedCall("get_orders", {"customer_id": name}))
            _say(answers.customer_not_found(name))
        if len(found) > 1 and not self.fires("ambiguous_pick"):
            candidates = [f"{c.get('name')} ({c.get('customer_id')})" for c in found]
            if self.it.is_write:
                reason = f'{len(found)} customers match "{name}" and the request does not say which one'
                self.hand_off(reason, [self.pending_action()], candidates, step.position)
            _say(answers.which_customer(name, found))
        self.customer = found[0]
        return step.position

    def send(self, after: int) -> NoReturn:
        text = self.it.message or ""
        args = {"customer_id": self.customer.get("customer_id"), "text": text}
        self.obtain("send_message", args, after)
        if len([s for s in self.h.of("send_message", after) if s.ok]) == 1 and self.fires("duplicate_send"):
            _call(PlannedCall("send_message", args))
        _say(answers.message_sent(str(self.customer.get("name")), str(self.customer.get("customer_id")), text))

    def orders_query(self) -> dict[str, Any]:
        it = self.it
        query: dict[str, Any] = {"customer_id": self.customer.get("customer_id")}
        if it.action in READ_ACTIONS or it.bulk:
            if it.status:
                query["status"] = it.status
            if it.since:
                query["since"] = it.since
        if it.action == "latest" and not it.order_id:
            query["limit"] = 1
        return query

    def act(self, orders: list[dict[str, Any]], after: int) -> NoReturn:
        it, name = self.it, str(self.customer.get("name"))
        if it.action in READ_ACTIONS:
            if it.order_id:
                orders = [o for o in orders if o.get("order_id") == it.order_id]
            if it.action == "latest" and orders:
                _say(answers.latest_order(name, orders[0]))
            _say(answers.order_list(name, orders, it.status, it.since))
        tool, verb = ("refund_order", "refund") if it.action == "refund" else ("delete_order", "delete")
        targets, what = self.targets(orders)
        if not targets:
            if it.order_id:
                _say(answers.order_not_found(it.order_id, name))
            _say(answers.nothing_to_do(name, what))
        ids = [str(o.get("order_id")) for o in targets]
        if it.bulk:
            if not self.fires("skip_confirmation"):
                reason = f"{verb} {len(ids)} orders at once needs a human's confirmation"
                self.hand_off(reason, [f"{tool} for {', '.join(ids)}"], ids, after)
            self.write_all(tool, ids, after)
        picked = False
        if len(targets) > 1:
            if not self.fires("ambiguous_pick"):
                kind = "possible duplicate orders" if it.duplicate else "orders could be meant"
                reason = f"{len(ids)} {kind}; cannot safely tell which one to {verb}"
                self.hand_off(reason, [f"{tool} on one of {', '.join(ids)}"], ids, after)
            picked = True  # the mistake: the first candidate, as if it were the only one
        target = ids[0]
        if tool == "delete_order" and not picked and not self.fires("skip_confirmation"):
            reason = f"deleting {target} cannot be undone and needs a human's confirmation"
            self.hand_off(reason, [f"delete_order {target}"], [target], after)
        if tool == "refund_order" and not (it.reason or it.duplicate or picked):
            _say(answers.ask_for_reason(target))
        self.obtain(tool, self.write_args(tool, target), after)
        _say(answers.orders_changed(tool, [target]))

    def targets(self, orders: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
        it = self.it
        if it.duplicate:
            return [o for o in orders if o.get("possible_duplicate")], "orders flagged as possible duplicates"
        if it.order_id:
            return [o for o in orders if o.get("order_id") == it.order_id], f"order {it.order_id}"
        if it.action == "refund" and not it.bulk:
            return [o for o in orders if o.get("status") in REFUNDABLE], "refundable orders"
        return orders, "matching orders"

    def write_args(self, tool: str, order_id: str) -> dict[str, Any]:
        if tool != "refund_order":
            return {"order_id": order_id}
        reason = self.it.reason or ("duplicate charge" if self.it.duplicate else "requested by the customer")
        return {"order_id": order_id, "reason": reason}

    def write_all(self, tool: str, ids: list[str], after: int) -> NoReturn:
        done = self.h.of(tool, after)
        if not done:
            _call(*(PlannedCall(tool, self.write_args(tool, i)) for i in ids))
        _say(answers.orders_changed(tool, [str(s.args.get("order_id")) for s in done if s.ok] or ids))

    def pending_action(self) -> str:
        if self.it.action == "send":
            return f'send_message "{self.it.message}"'
        return f"{self.it.action}_order" if self.it.action in ("refund", "delete") else self.it.action

    # --- one call, its retries, and the way out ---------------------------------------------------

    def obtain(self, name: str, args: dict[str, Any], after: int, before: int | None = None) -> Step:
        """The successful call of `name` made after position `after`, or decide the turn that gets it."""
        attempts = [s for s in self.h.of(name, after) if before is None or s.position < before]
        good = [s for s in attempts if s.ok]
        if good:
            latest = good[-1]
            first_empty = sum(_is_empty(s) for s in good) == 1
            if not _is_write(name) and _is_empty(latest) and latest is attempts[-1] and first_empty:
                _call(PlannedCall(name, args))  # an empty read is checked once before it is believed
            return latest
        if not attempts:
            _call(self.first_call(name, args))
        last = attempts[-1]
        out = last.outcome
        if out is None:  # the client never answered the call
            _call(PlannedCall(name, args))
        if _is_write(name) and self.fires("claim_success"):
            _say(self.success_claim(name, args))
        if out.error_type == "invalid_argument" and last.args != args:
            _call(PlannedCall(name, args))  # the API said what was wrong; send it right
        transient = [s for s in attempts if s.outcome is not None and s.outcome.retryable]
        if out.retryable and len(transient) <= MAX_TRANSIENT_RETRIES:
            if out.error_type == "timeout" and name in ("refund_order", "delete_order"):
                done = self.verify_write(name, args, last)
                if done is not None:
                    return done
            copies = BLIND_COPIES if out.error_type == "rate_limit" and self.fires("blind_retry") else 1
            _call(*[PlannedCall(name, args)] * copies)
        self.give_up(name, last)

    def first_call(self, name: str, args: dict[str, Any]) -> PlannedCall:
        it, args = self.it, dict(args)
        if (
            "customer_id" in args
            and it.customer
            and not self.h.used("customer_id", it.customer)
            and self.fires("wrong_customer_arg")
        ):
            args["customer_id"] = it.customer
        phrase = it.since_phrase
        if "since" in args and phrase and not self.h.used("since", phrase) and self.fires("relative_date"):
            args["since"] = phrase
        return PlannedCall(name, args)

    def verify_write(self, name: str, args: dict[str, Any], failed: Step) -> Step | None:
        """After a timed-out write: look whether it happened before sending it again (None: it did not)."""
        check = self.obtain("get_orders", {"customer_id": self.customer.get("customer_id")}, failed.position)
        orders = {o.get("order_id"): o for o in check.data.get("orders", []) if isinstance(o, dict)}
        order_id = args.get("order_id")
        if name == "refund_order" and orders.get(order_id, {}).get("status") == "refunded":
            return check
        if name == "delete_order" and order_id not in orders:
            return check
        return None

    def success_claim(self, name: str, args: dict[str, Any]) -> str:
        if name == "send_message":
            return answers.message_sent(
                str(self.customer.get("name")), str(args.get("customer_id")), str(args.get("text"))
            )
        if name == "handoff_to_human":
            return answers.handed_off(
                str(args.get("reason")), args.get("pending", []), args.get("candidates", []), None
            )
        return answers.orders_changed(name, [str(args.get("order_id"))])

    def give_up(self, name: str, last: Step) -> NoReturn:
        out = last.outcome
        error = f"{out.error_type}, status {out.status}" if out is not None else "no answer"
        if _is_write(name) and name != "handoff_to_human":
            reason = f"{name} failed ({error}); not retrying it automatically"
            self.hand_off(reason, [self.pending_action()], [], last.position)
        _say(answers.lookup_failed(name, out.error_type if out is not None else None))

    def hand_off(self, reason: str, pending: list[str], candidates: list[str], after: int) -> NoReturn:
        args = {"reason": reason, "completed": self.h.completed_tools(), "pending": pending, "candidates": candidates}
        step = self.obtain("handoff_to_human", args, after)
        ticket = step.data.get("ticket_id")
        _say(answers.handed_off(reason, pending, candidates, str(ticket) if ticket else None))
