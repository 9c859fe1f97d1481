"""What stands between the UI and everyone else on the machine: a token, the Host header, GET only, and
headers that keep a page inert whatever a span holds.

- **Token.** A random token is printed at start in the URL (`?token=...`). A request with it gets a cookie
  (HttpOnly, SameSite=Strict, named after the port) and is redirected to the same URL without the
  token, so that links, deep links and the back button work without it; a request with neither is
  refused (403). Other local users and web pages cannot guess it.
- **Host.** Only `127.0.0.1:PORT`, `localhost:PORT` and `[::1]:PORT` are answered: a page on another
  site that points a name of its own at 127.0.0.1 (DNS rebinding) sends its own name, and is refused.
- **GET only** (and HEAD): the UI reads; any other method is refused (405) before a route sees it.
- **Headers** on every answer: a strict Content-Security-Policy (scripts and styles from the UI itself
  only, no inline script, no eval, no frame, no request elsewhere), no sniffing, no referrer, no cache.
"""

from __future__ import annotations

import hmac
import secrets
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

__all__ = ["CSP", "Guard", "new_token"]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


def new_token() -> str:
    return secrets.token_urlsafe(24)


class Guard:
    """ASGI middleware: refuses what the module docstring says, adds the headers to every answer."""

    def __init__(self, app: Any, token: str, port: int) -> None:
        self.app = app
        self.token = token
        self.port = port
        self.cookie = f"tracevals_ui_{port}"
        self.hosts = {f"{h}:{port}" for h in ("127.0.0.1", "localhost", "[::1]")}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return  # websockets: not served
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        if host not in self.hosts:
            await _refuse(send, 403, f"refused: Host {host or '(none)'} is not this UI's address")
            return
        if scope["method"] not in ("GET", "HEAD"):
            await _refuse(send, 405, "refused: the UI is read-only (GET only)", [(b"allow", b"GET, HEAD")])
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = next((v for k, v in query if k == "token"), None)
        if given is not None:
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                await _refuse(send, 403, "refused: wrong token (use the URL `tracevals ui` printed)")
                return
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            location = scope.get("path", "/") + (f"?{rest}" if rest else "")
            cookie = f"{self.cookie}={self.token}; HttpOnly; SameSite=Strict; Path=/"
            await _answer(send, 303, b"", [(b"location", location.encode()), (b"set-cookie", cookie.encode())])
            return
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(headers.get("cookie", ""))
        except Exception:
            jar = SimpleCookie()
        held = jar.get(self.cookie)
        if held is None or not hmac.compare_digest(held.value.encode(), self.token.encode()):
            await _refuse(send, 403, "refused: no token (open the URL `tracevals ui` printed, with its ?token=)")
            return

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *HEADERS]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _answer(send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [*headers, *HEADERS,
               (b"content-length", str(len(body)).encode())]})  # fmt: skip
    await send({"type": "http.response.body", "body": body})


async def _refuse(send: Any, status: int, text: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = (text + "\n").encode()
    await _answer(send, status, body, [(b"content-type", b"text/plain; charset=utf-8"), *(headers or [])])
