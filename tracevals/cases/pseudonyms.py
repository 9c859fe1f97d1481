"""Desensitisation that keeps structure: every identifier becomes a pseudonym of the same shape, the
same original the same pseudonym everywhere (input, arguments, results, answers, cassettes, session ids).

Two passes over the chosen sessions (which part of a session is content, which an identifier:
`roles.py`):

1. **learn** what is personal from the structure the tools exchange (a JSON field named like a name,
   email, phone, address, id or URL: `Rules.fields`), from patterns in any text and any JSON key
   (emails, phone numbers, id-shaped tokens such as `ord_1004` or `INV-20231`, internal URLs, the user
   of a home directory `/home/alice`, and the names a user lists), and in identifiers also from runs
   of 7 to 19 digits (`sess-+14155550123`); the value of a credential field (`password`, `api_key`,
   `token`, `authorization`, `cookie`, ...) is learned as a secret, whatever it looks like;
2. **replace** each learned value wherever it appears, longest first, as a word or between the
   separators of an id or a file name (`sess-alice`, `Zhang_Wei.pdf`), never inside a longer word or
   number: a secret by `[REDACTED:secret]` (where it stands and wherever it is repeated), the
   redactor's secret shapes in any text (API keys, bearer tokens, JWTs, `password=...`) by
   `[REDACTED:<kind>]`, anything else by its pseudonym. A key is data like any other value (a learned
   value in it is replaced) and never a secret itself. A bare number of fewer than 3 digits is no
   identifier.

Pseudonyms keep the shape a program may rely on: an id keeps its prefix, separators and length
(`cus_001` → `cus_417`, `INV-20231` → `INV-58302`) unless the prefix is personal itself
(`gwhite_2026` → `devon_8116`), a name stays capitalised words word by word (`Zhang Wei` → `Avery
Blake`, `Zhang Min` → `Avery Casey`: who shares a surname still does), an email stays an email, a
phone number keeps its punctuation. They are numbered in order of first appearance (seeded,
collision-free, never equal to an original), so an extraction is reproducible and two originals never
share a pseudonym. What is replaced is counted by kind; the originals are never written anywhere.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from tracevals.cases.rules import MIN_NUMERIC_ID, Rules
from tracevals.lake.redaction import EMAIL, PHONE, Redactor
from tracevals.model.json_text import loads as json_loads

# Id-shaped tokens: a lower-case prefix, `_`, digits (ord_1004, cus_001); an upper-case prefix, `-`,
# digits (INV-20231); a prefix with a long digit run (A123456).
_ID_TOKEN = re.compile(r"\b(?:[a-z][a-z0-9]{1,15}_\d{2,}|[A-Z][A-Z0-9]{1,9}-\d{3,}|[A-Z]{1,3}\d{6,})\b")
# URLs whose host is internal (private addresses, .internal / .local / .corp / .lan, localhost).
_INTERNAL_URL = re.compile(
    r"\bhttps?://(?:[A-Za-z0-9-]+\.)*(?:internal|local|corp|lan|intranet)(?::\d+)?(?:/[^\s\"'<>]*)?"
    r"|\bhttps?://(?:localhost|127\.\d+\.\d+\.\d+|10\.\d+\.\d+\.\d+|192\.168\.\d+\.\d+"
    r"|172\.(?:1[6-9]|2\d|3[01])\.\d+\.\d+)(?::\d+)?(?:/[^\s\"'<>]*)?"
)
# The user in a home directory (`/home/alice/...`, `/Users/alice/...`, `C:\\Users\\alice\\...`): a name.
_HOME_USER = re.compile(r"(?i)(?:^|(?<=[\s\"'(=:,;]))(?:[a-z]:)?[\\/]+(?:home|users)[\\/]+([^\\/\s\"'<>:]{2,})")
# In an identifier (a session id, a service or agent name, an error type), a run of digits of its own
# (a phone or account number: `sess-+14155550123`, `cust_84930211`); a UUID's groups are not one.
_DIGIT_RUN = re.compile(r"(?<![^\W_])\+?\d{7,19}(?![^\W_])")
_NAME_PHONE = re.compile(r"\+\d{7,15}(?!\d)")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_NUMBER = re.compile(r"\+?\d+")
_ID_HEAD = re.compile(r"^([A-Za-z]+)[_-]")
MIN_SECRET = 4  # characters: a shorter credential value is redacted where it stands, not looked for elsewhere
REDACTED_SECRET = "[REDACTED:secret]"

_POOL = (
    "Avery", "Blake", "Casey", "Devon", "Emery", "Finley", "Harper", "Jordan", "Kai", "Logan", "Morgan", "Noel",
    "Oakley", "Parker", "Quinn", "Reese", "Riley", "Rowan", "Sage", "Skyler", "Tatum", "Taylor", "Val", "Wren",
    "Alder", "Birch", "Cedar", "Dale", "Ellis", "Frost", "Grove", "Hale", "Ives", "Jarvis", "Kerr", "Lane", "Marsh",
    "North", "Oakes", "Pike", "Reed", "Shaw", "Thorne", "Vale", "Wade", "Yates",
)  # fmt: skip


class Desensitiser:
    """Learns the personal values of some documents, then replaces them consistently."""

    def __init__(self, rules: Rules | None = None, seed: int = 0) -> None:
        self.rules = rules or Rules()
        self.seed = seed
        self._values: dict[str, str] = {}  # original -> kind, in order of first appearance
        self._pseudonyms: dict[str, str] = {}
        self._words: dict[str, str] = {}  # name word -> pseudonym word
        # kept as values are learned and pseudonyms given, so each new pseudonym costs a lookup, not a scan
        self._taken: set[str] = set()  # pseudonyms given, and every original case-folded: never a pseudonym
        self._name_words: set[str] = set()  # the words of every original name
        self._words_given: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._secrets = Redactor(pii=False)
        self.replaced: Counter[str] = Counter()  # kind -> occurrences replaced
        self._protected: set[str] = set()

    def protect(self, words: Iterable[str]) -> None:
        """Never treat these as personal (tool names: a product field named `name` may hold one)."""
        self._protected.update(words)

    # --- learning ---------------------------------------------------------------------------------

    def learn(self, value: Any) -> None:
        """Note the personal values in `value` (text, JSON text, or parsed JSON)."""
        self._pattern = None
        self._walk(value, None)

    def learn_identifier(self, text: str | None) -> None:
        """Note the personal parts of an identifier (a session id, a service, agent or error type): what
        the text patterns find, and runs of 7 to 19 digits of their own (a phone or account number)."""
        if not text:
            return
        self._pattern = None
        self._scan(text)
        for m in _DIGIT_RUN.finditer(_UUID.sub(lambda u: "x" * len(u.group(0)), text)):
            self._note(m.group(0), "phone" if m.group(0).startswith("+") else "id")

    def learn_name(self, name: str) -> None:
        """Note the emails and `+` phone numbers in a structural name (a tool's, taken from a span name
        by some frameworks): nothing else of a name is personal, and no tool name a model API accepts
        holds either, so the names an agent's code gives its tools stay as they are."""
        for kind, m in _in_name(name):
            self._pattern = None
            self._note(m.group(0), kind)

    def name(self, name: str) -> str:
        """A structural name with the emails and phone numbers `learn_name` noted replaced; never redacted."""
        out = name
        for kind, m in reversed(list(_in_name(name))):
            if m.group(0) in self._values:
                self.replaced[kind] += 1
                out = out[: m.start()] + self._pseudonym(m.group(0), self._values[m.group(0)]) + out[m.end() :]
        return out

    def _walk(self, value: Any, kind: str | None) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                self._scan(str(k))  # a key can be data too: {"alice@example.com": 3}
                # under a credential field, everything is the credential, whatever its own keys say
                self._walk(v, "secret" if kind == "secret" else self.rules.kind_of_field(str(k)))
        elif isinstance(value, list):
            for v in value:
                self._walk(v, kind)
        elif isinstance(value, str):
            parsed = _json_container(value)
            if parsed is not None:
                self._walk(parsed, kind)
                return
            if kind == "secret":  # redacted where it stands (apply), and wherever else it is repeated
                if len(value.strip()) >= MIN_SECRET and not _is_plain_value(value):
                    self._note(value.strip(), "secret")
                return
            if kind is not None and value.strip() and not _is_plain_value(value) and _identifying(value.strip()):
                self._note(value.strip(), kind)
            self._scan(value)
        elif isinstance(value, int) and not isinstance(value, bool):
            if kind == "secret" and len(str(value)) >= MIN_SECRET:
                self._note(str(value), "secret")
            elif kind == "id" and _identifying(str(value)):
                self._note(str(value), "id")

    def _scan(self, text: str) -> None:
        for kind, pattern in (
            ("email", EMAIL),
            ("url", _INTERNAL_URL),
            ("phone", PHONE),
            ("id", _ID_TOKEN),
            *self.rules.patterns,
        ):
            for m in pattern.finditer(text):
                self._note(m.group(0), kind)
        for m in _HOME_USER.finditer(text):
            self._note(m.group(1), "name")
        for name in self.rules.names:
            if re.search(rf"(?i)\b{re.escape(name)}\b", text):
                self._note(name, "name")

    def _note(self, value: str, kind: str) -> None:
        if len(value) < 2 or value in self._values or value in self._protected:
            return
        self._learned(value, kind)
        if kind == "name":  # a name's parts are personal too ("Zhang" alone, in "Zhang's orders")
            parts = value.split()
            for part in parts if len(parts) > 1 else ():
                if len(part) > 2 and part[:1].isupper() and part not in self._values:
                    self._learned(part, "name")

    def _learned(self, value: str, kind: str) -> None:
        self._values[value] = kind
        self._taken.add(value.casefold())
        if kind == "name":
            self._name_words.update(value.split())

    # --- replacing --------------------------------------------------------------------------------

    def apply(self, value: Any) -> Any:
        """`value` (content: text, JSON text or parsed JSON) with every learned value replaced and every
        secret redacted; JSON text stays JSON. A key is data like any other (a learned value in it is
        replaced) and never a secret itself: a credential field's value is."""
        if isinstance(value, Mapping):
            return {
                self._text(str(k)): self._secret(v) if self.rules.kind_of_field(str(k)) == "secret" else self.apply(v)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self.apply(v) for v in value]
        if isinstance(value, str):
            parsed = _json_container(value)
            if parsed is not None:
                return json.dumps(self.apply(parsed), ensure_ascii=False)
            return self._text(value)
        if isinstance(value, int) and not isinstance(value, bool) and str(value) in self._values:
            out = self._text(str(value))
            return int(out) if out.isdigit() else out
        return value

    def identifier(self, text: str) -> str:
        """An identifier (learned with `learn_identifier`) with its personal parts replaced, its secrets
        redacted, the rest as it was: a random session id stays the id a person finds in the lake."""
        return self._text(text)

    def _secret(self, value: Any) -> Any:
        if value is None or value == "" or isinstance(value, bool):
            return value
        self.replaced["secret"] += 1
        return REDACTED_SECRET

    def _text(self, text: str) -> str:
        redacted = self._secrets.redact(text)
        self.replaced["secret"] += redacted.count("[REDACTED:") - text.count("[REDACTED:")
        text = redacted
        pattern = self._compiled()
        if pattern is None:
            return text

        def swap(m: re.Match[str]) -> str:
            original = m.group(0)
            kind = self._values[original]
            self.replaced[kind] += 1
            return REDACTED_SECRET if kind == "secret" else self._pseudonym(original, kind)

        return pattern.sub(swap, text)

    def _compiled(self) -> re.Pattern[str] | None:
        if self._pattern is None and self._values:
            longest = sorted(self._values, key=len, reverse=True)
            # A number is not cut out of a run of numbers (`2026` of the date `2026-11-02`, `1200` of the
            # amount `1200.50`).
            alternatives = "|".join(
                rf"(?<!\d[-/:.,]){re.escape(v)}(?![-/:.,]\d)" if _NUMBER.fullmatch(v) else re.escape(v) for v in longest
            )
            # Case-sensitive ("Min" the name, not "10 min") and never inside a longer word or number,
            # but anywhere else: between the separators of an id or a file name (`sess-alice`, `Zhang_Wei.pdf`).
            self._pattern = re.compile(rf"(?<![^\W_])(?:{alternatives})(?![^\W_])")
        return self._pattern

    def _pseudonym(self, original: str, kind: str) -> str:
        if original in self._pseudonyms:
            return self._pseudonyms[original]
        if kind == "name":  # word by word, so two people sharing a surname still share one
            candidate = " ".join(self._name_word(w) for w in original.split())
        else:
            for salt in range(1000):
                candidate = self._prefix(_shape(original, kind, len(self._pseudonyms), self.seed, salt), original)
                if candidate not in self._taken and candidate.casefold() not in self._taken:
                    break
        self._pseudonyms[original] = candidate
        self._taken.add(candidate)
        return candidate

    def _prefix(self, candidate: str, original: str) -> str:
        """An id keeps its prefix (`ord_`), unless the prefix is personal itself (`gwhite_2026`)."""
        head = _ID_HEAD.match(candidate)
        if head is None or head.group(1) == original or head.group(1) not in self._values:
            return candidate
        kind = self._values[head.group(1)]
        own = REDACTED_SECRET if kind == "secret" else self._pseudonym(head.group(1), kind)
        return own + candidate[len(head.group(1)) :]

    def _name_word(self, word: str) -> str:
        if word not in self._words:
            n = len(self._words)
            while True:
                candidate = _POOL[(n + self.seed) % len(_POOL)]
                if n >= len(_POOL):
                    candidate += _POOL[(n // len(_POOL) + self.seed) % len(_POOL)].lower()
                if candidate not in self._name_words and candidate not in self._words_given:
                    break
                n += 1
            self._words[word] = candidate if word[:1].isupper() else candidate.lower()
            self._words_given.add(self._words[word])
        return self._words[word]

    def summary(self) -> dict[str, Any]:
        """What was replaced, by kind: distinct values and occurrences (never the values)."""
        distinct = Counter(self._values[o] for o in self._pseudonyms)
        return {
            "distinct": {k: distinct[k] for k in sorted(distinct)},
            "occurrences": {k: self.replaced[k] for k in sorted(self.replaced) if self.replaced[k]},
        }

    def learned(self) -> Iterable[str]:
        """The originals (for a caller's own check that none is left; never write them)."""
        return iter(self._values)


def _in_name(name: str) -> list[tuple[str, re.Match[str]]]:
    found = [("email", m) for m in EMAIL.finditer(name)]
    taken = [m.span() for _, m in found]
    for m in _NAME_PHONE.finditer(name):
        if not any(a <= m.start() < b for a, b in taken):
            found.append(("phone", m))
    return sorted(found, key=lambda f: f[1].start())


def _json_container(text: str) -> Any:
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        parsed = json_loads(stripped)
    except ValueError:
        return None
    return parsed if isinstance(parsed, (dict, list)) else None


def _identifying(value: str) -> bool:
    """An id worth looking for everywhere: not a bare short number."""
    return not (value.isdigit() and len(value) < MIN_NUMERIC_ID)


def _is_plain_value(text: str) -> bool:
    """Values no field rule should pseudonymise: booleans, numbers that are not ids, dates, enums."""
    t = text.strip()
    return t.lower() in ("true", "false", "null", "none", "") or bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}.*", t))


def _digits(seed: int, original: str, salt: int) -> Iterator[int]:
    stream = hashlib.sha256(f"{seed}\x1f{salt}\x1f{original}".encode()).digest() * 4
    return iter(stream)


def _shape(original: str, kind: str, n: int, seed: int, salt: int) -> str:
    stream = _digits(seed, original, salt)
    if kind == "email":
        return f"user_{n + 1:03d}{'_' + str(salt) if salt else ''}@example.com"
    if kind == "url":
        return f"https://service-{n + 1:03d}.example.internal/path"
    if kind == "address":
        return f"{100 + n + salt} Example Street"
    if kind == "phone":
        return re.sub(r"\d", lambda _: str(next(stream) % 10), original)
    # an id: keep the leading letters and every separator, replace the digits (and later letters)
    head = re.match(r"^[A-Za-z]+[_-]?", original)
    keep = head.group(0) if head and len(head.group(0)) < len(original) else ""
    tail = original[len(keep) :]

    def swap(c: str) -> str:
        if c.isdigit():
            return str(next(stream) % 10)
        if c.isalpha():
            letter = chr(ord("a") + next(stream) % 26)
            return letter.upper() if c.isupper() else letter
        return c

    return keep + "".join(swap(c) for c in tail)
