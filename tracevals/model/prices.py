"""Model prices and the one cost rule: tokens at the model's price, USD per million tokens.

The default table is a data file (`prices.json`, beside this module) of the providers' published
list prices; `TRACEVALS_PRICES` names a JSON or YAML file of the same shape that replaces it, and a
scoring config's or task case's `prices` add to it (theirs win). The demo prices its simulated models
in its own task cases, so nothing here knows about it.

>>> cost([("gpt-4o-mini", 1_000_000, 0)], default_prices())
(0.15, ())
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from functools import cache, lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from tracevals.env import PRICES as PRICES_ENV
from tracevals.model.errors import UserError

Prices = Mapping[str, tuple[float, float]]  # model -> (input, output) USD per million tokens
Usage = tuple[str | None, int, int]  # (model, input tokens, output tokens)
DATA_FILE = Path(__file__).with_name("prices.json")


class PricesError(UserError, ValueError):
    """A prices file that cannot be used; one line naming the file and what is wrong."""


def parse_prices(obj: Any, source: str) -> dict[str, tuple[float, float]]:
    """`{model: {"input": x, "output": y}}` (keys starting with `_` are comments) as a price table."""
    if not isinstance(obj, Mapping):
        raise PricesError(f"{source}: prices must be a mapping of model -> {{input, output}}")
    table: dict[str, tuple[float, float]] = {}
    for model, price in obj.items():
        if str(model).startswith("_"):
            continue
        try:
            table[str(model)] = (float(price["input"]), float(price["output"]))
        except (TypeError, KeyError, ValueError):
            raise PricesError(
                f"{source}: model {model!r}: expected {{input: USD per Mtok, output: USD per Mtok}}"
            ) from None
    return table


def load_prices(path: str | os.PathLike[str]) -> dict[str, tuple[float, float]]:
    """A price table from a JSON or YAML file (YAML is a superset of JSON, so one parser reads both)."""
    from tracevals.model.documents import DocumentError, read_document

    source = str(path)
    try:
        obj = read_document(path, "prices file")
    except DocumentError as exc:
        raise PricesError(str(exc)) from None
    return parse_prices(obj, source)


def prices_from_text(text: str, source: str) -> dict[str, tuple[float, float]]:
    """A price table from the text of a JSON or YAML document named `source` (a lake's `prices.json`)."""
    from tracevals.model.documents import DocumentError, parse_document

    try:
        obj = parse_document(text, source)
    except DocumentError as exc:
        raise PricesError(str(exc)) from None
    return parse_prices(obj, source)


@cache
def _defaults(override: str | None) -> Prices:
    if override:
        return load_prices(override)
    return parse_prices(json.loads(DATA_FILE.read_text(encoding="utf-8")), str(DATA_FILE))


def default_prices() -> Prices:
    """The price table every cost uses unless told otherwise (`TRACEVALS_PRICES`, else `prices.json`)."""
    return _defaults(os.environ.get(PRICES_ENV) or None)


def with_defaults(prices: Prices | None) -> Prices:
    """`prices` over the default table: a config's or case's own prices win. Resolved once per distinct
    table (a batch asks for each case's many times, once per trace): the result is shared, read-only."""
    own = tuple(sorted((str(model), (float(p[0]), float(p[1]))) for model, p in (prices or {}).items()))
    return _merged(os.environ.get(PRICES_ENV) or None, own)


@lru_cache(maxsize=256)
def _merged(override: str | None, own: tuple[tuple[str, tuple[float, float]], ...]) -> Prices:
    return MappingProxyType({**_defaults(override), **dict(own)})


def cost(usage: Iterable[Usage], prices: Prices) -> tuple[float, tuple[str | None, ...]]:
    """(USD, models without a price) of one model call's or several calls' token counts.

    A model without a price adds nothing to the total and is listed, so each caller states its own
    policy: a report counts it as 0, a cost budget calls the cost unknown.
    """
    total, unpriced = 0.0, []
    for model, tokens_in, tokens_out in usage:
        price = prices.get(model or "")
        if price is None:
            unpriced.append(model)
            continue
        total += (tokens_in * price[0] + tokens_out * price[1]) / 1_000_000
    return total, tuple(unpriced)
