"""What a value read from a lake may not carry onto a screen: one definition for every surface that shows
one (the command line's tables, reports and `cases review`; the UI's pages). Every such value is untrusted
input: a span's attribute, a session id, a tool's result, a model's answer."""

from __future__ import annotations

import re

# The C0 controls but tab, newline and carriage return (ESC starts every colour, cursor, clear-screen, title
# and clipboard sequence), DEL, and the C1 controls (0x9b is a CSI of its own).
_CONTROLS = r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
# What reorders or hides text: bidi embeddings, overrides, isolates and marks, the zero-width characters, the
# word joiner, the byte-order mark (two session ids that read the same need not be the same).
_INVISIBLE = r"\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff"

# On a page a carriage return is a line ending like any other; everything else here is shown as a code.
HIDDEN_ON_A_PAGE = re.compile(rf"[{_CONTROLS}{_INVISIBLE}]")
# On a terminal a carriage return also acts: it goes back to the line's start, and what follows overwrites it
# (but before a newline, CRLF, the line ending CSV writes, it overwrites nothing).
ACTS_ON_A_TERMINAL = re.compile(rf"[{_CONTROLS}{_INVISIBLE}]|\r(?!\n)")


def code_of(character: str) -> str:
    """How a page or a document names a character it does not show: its code point (`U+202E`)."""
    return f"U+{ord(character):04X}"


def visible(text: str) -> str:
    """`text` for a document a person reads (a report's HTML or Markdown): each character `HIDDEN_ON_A_PAGE`
    written as its code point, as the UI's pages show it."""
    return HIDDEN_ON_A_PAGE.sub(lambda m: code_of(m.group()), text)
