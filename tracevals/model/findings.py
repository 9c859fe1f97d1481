"""What an evaluator found, as kinds: the structured part of a score's details (`details.findings`).

Each finding is `{"kind": <one of the constants below>, "call": "name#position" | None, "problem": <the
sentence the reason shows>}`. Consumers (the release categories in `tracevals.stats.outcomes`, a
user's SQL over `scores.details`) read the kind; the sentence is for people and may change wording.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

# retry_discipline
RETRY_BOUND_EXCEEDED = "retry_bound_exceeded"  # a chain held more retries than max_retries
NON_RETRYABLE_RETRIED = "non_retryable_retried"  # a retry of a failure that may not be retried
EARLY_RETRY = "early_retry"  # a retry sooner than the failure's retry-after (or min_backoff_ms)
BLIND_REPLAY = "blind_replay"  # a risky call repeated after a timeout with no read in between
MISSING_IDEMPOTENCY_KEY = "missing_idempotency_key"  # a write or irreversible call without a key
DUPLICATE_SIDE_EFFECT = "duplicate_side_effect"  # a successful risky operation done twice
LOOP = "loop"  # a block of calls repeated with the same outcome (no progress)

RETRY_KINDS = (
    RETRY_BOUND_EXCEEDED,
    NON_RETRYABLE_RETRIED,
    EARLY_RETRY,
    BLIND_REPLAY,
    MISSING_IDEMPOTENCY_KEY,
    DUPLICATE_SIDE_EFFECT,
    LOOP,
)


def finding(kind: str, problem: str, call: str | None = None) -> dict[str, Any]:
    return {"kind": kind, "call": call, "problem": problem}


def findings_of(details: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The well-formed findings of a score's details (none for details written before findings existed)."""
    items: Iterable[Any] = (details or {}).get("findings") or ()
    return [f for f in items if isinstance(f, dict) and isinstance(f.get("kind"), str)]


def failure_kinds(evaluator: str, details: Mapping[str, Any] | None) -> list[str]:
    """What kind of failure a failed score is, as short labels for grouping (the report's failure groups,
    its per-evaluator tables), read from the structured part of each built-in evaluator's details:

    - `findings[].kind` (retry_discipline);
    - `checks[]` not met: their `kind` (task_success: must_include, regex, json_schema ...);
    - `exceeded[].label` (step_budget: steps, tokens, calls of a tool ...);
    - `failed[]` (session_completeness: root, no_open_span, terminal_state ...);
    - `injections[].outcome` of failing outcomes, with the fault type or "prompt" (injection);
    - else `violations[]` / `invalid_args[]` / `problems[]` (tool_policy, trajectory_match): the label
      the evaluator puts before the call, e.g. `forbidden`, `unconfirmed write`, `missing`, `extra call`.

    An evaluator (a plugin) with none of these gives `["failed"]`. Labels are words (`early retry`, not
    `early_retry`), stable across calls and arguments: identifiers (`delete_order#3`, quoted values) are
    left out. They are for people; SQL reads `details.findings[].kind` itself."""
    d = details or {}
    kinds = [_words(f["kind"]) for f in findings_of(d)]
    kinds += [
        _words(c.get("kind") or "check") for c in d.get("checks") or () if isinstance(c, dict) and not c.get("met")
    ]
    kinds += [_label(str(e.get("label", "budget"))) for e in d.get("exceeded") or () if isinstance(e, dict)]
    kinds += [_words(name) for name in d.get("failed") or () if isinstance(name, str)]
    for item in d.get("injections") or ():
        if isinstance(item, dict) and item.get("outcome") in INJECTION_FAILING:
            what = item.get("type") if item.get("kind") == "fault" else "prompt injection"
            kinds.append(f"{_words(what)}: {_words(item['outcome'])}")
    if not kinds:  # only the sentences: their leading words (findings, where given, say it better)
        for key in ("violations", "invalid_args", "problems"):
            kinds += [_label(text) for text in d.get(key) or () if isinstance(text, str)]
    return list(dict.fromkeys(k for k in kinds if k)) or ["failed"]


# the injection outcomes that fail the `injection` evaluator (it reads them from here)
INJECTION_FAILING = ("escalated_without_context", "failed_claiming_success", "failed_silently", "attack_succeeded")
_IDENTIFIER = re.compile(r"""\S*[#_./:'"()\[\]{}0-9]\S*""")


def _words(kind: Any) -> str:
    """A kind identifier as words: `duplicate_side_effect` -> `duplicate side effect`."""
    return str(kind).replace("_", " ")


def _label(text: str) -> str:
    """The leading words of a problem sentence, without identifiers: "unconfirmed write: send_message#2
    (no handoff_to_human before it)" -> "unconfirmed write"; "extra call get_orders" -> "extra call"."""
    head = text.split("(")[0]
    head = head.split(":")[0] if ":" in head else head
    words = [w for w in head.split() if not _IDENTIFIER.fullmatch(w)]
    return " ".join(words[:4]).strip() or "failed"
