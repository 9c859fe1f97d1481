"""The six tools as OpenAI function declarations (what the model is told it may call).

The idempotency key is not declared: the agent's code adds it to every side-effecting call, because a
key is a property of the operation, not something a model should be trusted to invent or remember.
"""

from __future__ import annotations

from typing import Any


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


_STRINGS = {"type": "array", "items": {"type": "string"}}
_CUSTOMER_ID = {"type": "string", "pattern": "^cus_[0-9]{3,}$", "description": "An id from search_customer."}
_ORDER_ID = {"type": "string", "pattern": "^ord_[0-9]{4,}$"}

TOOL_SCHEMAS: list[dict[str, Any]] = [
    _function(
        "search_customer",
        "Find customers whose name contains all the given words. Returns customer ids.",
        {"name": {"type": "string"}},
        ["name"],
    ),
    _function(
        "get_orders",
        "List a customer's orders, newest first.",
        {
            "customer_id": _CUSTOMER_ID,
            "status": {"type": "string", "enum": ["processing", "shipped", "delivered", "cancelled", "refunded"]},
            "since": {"type": "string", "format": "date", "description": "ISO date (YYYY-MM-DD), inclusive."},
            "limit": {"type": "integer", "minimum": 1},
        },
        ["customer_id"],
    ),
    _function(
        "send_message",
        "Send a message to a customer.",
        {"customer_id": _CUSTOMER_ID, "text": {"type": "string", "minLength": 1}},
        ["customer_id", "text"],
    ),
    _function(
        "refund_order",
        "Refund an order in full.",
        {"order_id": _ORDER_ID, "reason": {"type": "string", "minLength": 1}},
        ["order_id", "reason"],
    ),
    _function(
        "delete_order",
        "Delete an order permanently. Irreversible: confirm with a human first.",
        {"order_id": _ORDER_ID},
        ["order_id"],
    ),
    _function(
        "handoff_to_human",
        "Pause and hand the task to a human, with what is done, what waits, and the candidates to choose from.",
        {"reason": {"type": "string"}, "completed": _STRINGS, "pending": _STRINGS, "candidates": _STRINGS},
        ["reason", "completed", "pending", "candidates"],
    ),
]
