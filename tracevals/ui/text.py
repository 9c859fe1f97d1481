"""Span values as inert text: every string the lake holds is untrusted input wherever a page shows it.

`inert` escapes (a `<script>` attribute shows as the characters `<script>`), cuts a long value at a limit
and says how much is left out (a 1 MB attribute costs a page a few kilobytes), makes the characters that
change how text around them reads visible as their code points (bidirectional overrides and isolates,
zero-width spaces and joiners, the byte-order mark), isolates the value's direction (`<bdi>`: right-to-left
text shows right to left without reordering the page around it), and shows redaction markers
(`[REDACTED:kind]`, as `tracevals.lake.redaction` writes them) as markers, not as content.
No span value ever becomes a link: links are built from route names and quoted ids only.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any

from markupsafe import Markup, escape

from tracevals.model.display import HIDDEN_ON_A_PAGE, code_of
from tracevals.model.json_text import loads as json_loads

__all__ = ["CONTROL", "LIMIT", "REDACTED", "inert", "pretty"]

LIMIT = 2_000  # characters of one value shown on a page

# Characters that reorder or hide text, and the C0/C1 controls but tab and line endings: the one definition
# (`tracevals.model.display`) the command line's tables read too.
CONTROL = HIDDEN_ON_A_PAGE
# The marker `tracevals.lake.redaction` puts where it removed a secret (`[REDACTED:kind]`).
REDACTED = re.compile(r"\[REDACTED:([a-z_]+)\]")


def _visible(match: re.Match[str]) -> str:
    code = code_of(match.group(0))
    return f'<span class="cc" title="an invisible character, {code}, shown">{code}</span>'


def inert(value: Any, limit: int = LIMIT) -> Markup:
    """`value` as text safe to put in a page (see the module docstring); None shows as an em dash."""
    if value is None:
        return Markup('<span class="none">—</span>')
    text = value if isinstance(value, str) else str(value)
    rest = len(text) - limit
    shown = text[:limit] if rest > 0 else text
    html = str(escape(shown))
    html = CONTROL.sub(_visible, html)
    html = REDACTED.sub(
        lambda m: f'<mark class="redacted" title="removed by redaction">redacted: {m.group(1)}</mark>', html
    )
    more = f'<span class="cut"> … {rest:,} more characters not shown</span>' if rest > 0 else ""
    return Markup(f"<bdi>{html}</bdi>{more}")


def pretty(value: Any, limit: int = LIMIT) -> Markup:
    """A JSON text indented (keys as written), else the text as it is; then `inert`."""
    if isinstance(value, str) and value[:1] in ("{", "[") and len(value) <= 200_000:
        with contextlib.suppress(ValueError, RecursionError):  # RecursionError: json.dumps of a deep value
            value = json.dumps(json_loads(value), indent=2, ensure_ascii=False)
    return inert(value, limit)
