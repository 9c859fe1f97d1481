"""The fault vocabulary: one set of names for what can go wrong with a tool call, wherever a fault is
written (a task file's `faults`, a `--faults` profile) or shown (span attributes, the fault table of a
report, the `injection` evaluator's details).

Canonical names are `FAULT_TYPES`; `FAULT_ALIASES` are accepted on input (`429` is `rate_limit`,
`5xx` is `server_error`, `slow` is `latency`) and never shown: a report groups `429` and `rate_limit`
under `rate_limit`.
"""

from __future__ import annotations

FAULT_TYPES = ("timeout", "rate_limit", "server_error", "empty", "malformed", "latency")
FAULT_ALIASES = {"429": "rate_limit", "5xx": "server_error", "slow": "latency"}
#: The fields of one fault rule, in a task file's `faults` or in a fault profile.
FAULT_RULE_KEYS = frozenset({"tool", "type", "call", "probability", "retry_after_ms", "latency_ms", "id"})


def canonical_fault(name: str) -> str:
    """The canonical name of a fault type (an alias mapped, anything else as it is)."""
    return FAULT_ALIASES.get(name, name)
