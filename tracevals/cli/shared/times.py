"""One time grammar for every command's `--since` / `--until` (sql, score, report, gate).

A time is an ISO date or date-time (UTC unless it names a zone), `now`, `today`, `yesterday`, or an
age such as `90m`, `24h`, `7d`, `2w` or `2 days` (that long before now). A range is `[since, until)`: since inclusive,
until exclusive, so `--since 2026-11-28 --until 2026-11-29` is the 28th, whole, in every command.
`score`, `report` and `gate` keep the sessions that start in it; `sql` reads the hour partitions that
overlap it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime, timedelta, timezone
from typing import Any, TypeVar

import click

from tracevals import env

F = TypeVar("F", bound=Callable[..., Any])

# An age: a number and a unit, as a letter or a word (`90m`, `24h`, `7d`, `2w`, `2 days`, `1 week`)
_RELATIVE = re.compile(
    r"^(\d+(?:\.\d+)?)\s*(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|w|wks?|weeks?)$", re.I
)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}  # by the unit's first letter
EXAMPLES = "2026-11-28, 2026-11-28T06:00, today, yesterday, 24h or 7d"


def parse_time(text: str, now: datetime | None = None) -> datetime:
    """A time of the grammar above, as an aware UTC datetime; `click.BadParameter` otherwise."""
    now = now or datetime.now(timezone.utc)
    word = text.strip().lower()
    midnight = datetime.combine(now.date(), datetime.min.time(), tzinfo=timezone.utc)
    named = {"now": now, "today": midnight, "yesterday": midnight - timedelta(days=1)}
    if word in named:
        return named[word]
    age = _RELATIVE.match(word)
    if age:
        return now - timedelta(**{_UNITS[age.group(2)[0].lower()]: float(age.group(1))})
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        try:
            value = datetime.combine(date.fromisoformat(text.strip()), datetime.min.time())
        except ValueError:
            raise click.BadParameter(f"{text!r} is not a time: use {EXAMPLES}") from None
    return value.astimezone(timezone.utc) if value.tzinfo else value.replace(tzinfo=timezone.utc)


class TimeType(click.ParamType):
    name = "TIME"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        if isinstance(value, datetime):
            return value
        try:
            return parse_time(str(value))
        except click.BadParameter as exc:  # one line, exit 1, as every bad input of every command
            raise click.ClickException(f"--{param.name if param else 'time'}: {exc.message}") from None


def time_range_options(what: str = "Sessions starting") -> Callable[[F], F]:
    """`--since` / `--until` (env TRACEVALS_SINCE / TRACEVALS_UNTIL) as UTC datetimes, checked in order."""

    def check(ctx: click.Context, param: click.Parameter, value: datetime | None) -> datetime | None:
        since = ctx.params.get("since")
        if param.name == "until" and value is not None and since is not None and since >= value:
            raise click.ClickException(f"--until {value.isoformat()} is not after --since {since.isoformat()}")
        return value

    def decorate(func: F) -> F:
        until = click.option(
            "--until", type=TimeType(), envvar=env.UNTIL, callback=check,
            help=f"{what} before this time (exclusive; same grammar as --since).",
        )  # fmt: skip
        since = click.option(
            "--since", type=TimeType(), envvar=env.SINCE, is_eager=True,
            help=f"{what} at or after this time: ISO (UTC unless zoned), today, yesterday, 24h, 7d ...",
        )  # fmt: skip
        return since(until(func))

    return decorate
