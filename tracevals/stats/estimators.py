"""The estimators: Wilson interval, pass^k, pass@k, percentile and the exact sign test.

Pure functions over integers, standard library only, so the same code scores a CI run, a nightly
sample or a distributed batch. Rates are computed from exact integer ratios (``math.comb``) before
they become floats: this keeps the orderings the metrics promise (pass^k <= pass@1 <= pass@k,
pass^k never rising with k) exact rather than "true up to rounding".
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["Z95", "confidence_level", "pass_at_k", "pass_hat_k", "pass_k_series", "percentile", "sign_test", "wilson"]

#: z of a two-sided 95% interval, the default of every Wilson interval.
Z95 = 1.96


def wilson(c: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for ``c`` successes in ``n`` trials (95% for the default ``z``).

    Unlike the normal approximation it stays inside [0, 1] and is sensible at 0/n and n/n, which is
    where small agent evals live. ``n == 0`` carries no evidence and returns ``(0.0, 1.0)``.

    >>> [round(x, 4) for x in wilson(4, 12)]
    [0.1381, 0.6094]
    """
    check_counts(c, n)
    if z <= 0 or not math.isfinite(z):
        raise ValueError(f"z must be a positive number, got {z}")
    if n == 0:
        return (0.0, 1.0)
    p = c / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    # At 0/n and n/n the bound is exactly 0 or 1 (centre == half); pin it instead of keeping float noise.
    lo = 0.0 if c == 0 else max(0.0, centre - half)
    hi = 1.0 if c == n else min(1.0, centre + half)
    return (lo, hi)


def confidence_level(z: float) -> float:
    """The two-sided coverage of ``z`` (0.95 for 1.96), for labelling intervals."""
    return math.erf(z / math.sqrt(2))


def pass_hat_k(c: int, n: int, k: int) -> float:
    """pass^k of one task: probability that k attempts drawn without replacement from n all pass.

    Unbiased estimator C(c, k) / C(n, k). NaN when ``n < k``: there are not k attempts to draw.
    """
    check_k(c, n, k)
    if n < k:
        return math.nan
    # int / int is correctly rounded in Python, so the float inherits the exact ordering.
    return math.comb(c, k) / math.comb(n, k)


def pass_at_k(c: int, n: int, k: int) -> float:
    """pass@k of one task: probability that at least one of k attempts (of n, c passing) passes.

    Unbiased estimator 1 - C(n - c, k) / C(n, k). NaN when ``n < k``.
    """
    check_k(c, n, k)
    if n < k:
        return math.nan
    total = math.comb(n, k)
    # One exact division instead of 1 - x, so pass@1 equals c / n bit for bit.
    return (total - math.comb(n - c, k)) / total


def pass_k_series(c: int, n: int, k_max: int) -> tuple[list[float], list[float]]:
    """pass^j and pass@j of one task for j = 1..k_max: the floats `pass_hat_k` and `pass_at_k` give, each
    (the same exact ratios, correctly rounded), with the binomials updated from one j to the next rather
    than computed again for each (a task of 50,000 attempts has binomials of thousands of digits). NaN from
    j = n + 1 on, as they."""
    check_k(c, n, k_max)
    hat: list[float] = []
    at: list[float] = []
    of_c, of_rest, of_n = 1, 1, 1  # C(c, j), C(n - c, j), C(n, j), from j = 0
    for j in range(1, min(k_max, n) + 1):
        if of_rest == 0 and (of_c == 0 or c == n):  # settled: pass^j stays 0 (or 1), pass@j 1
            hat.append(hat[-1])
            at.append(1.0)
            continue
        # C(m, j) = C(m, j - 1) (m - j + 1) / j, exactly; 0 from j = m + 1 on
        of_c, of_rest, of_n = of_c * (c - j + 1) // j, of_rest * (n - c - j + 1) // j, of_n * (n - j + 1) // j
        hat.append(of_c / of_n)
        at.append((of_n - of_rest) / of_n)
    missing = k_max - len(hat)
    return hat + [math.nan] * missing, at + [math.nan] * missing


def percentile(values: Iterable[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default) of the finite values; NaN if there are none."""
    xs = sorted(v for v in values if math.isfinite(v))
    if not xs:
        return math.nan
    pos = (len(xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def sign_test(improved: int, regressed: int) -> float:
    """Exact two-sided sign test p-value (binomial, p = 0.5) over the tasks whose rate changed."""
    n = improved + regressed
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(improved, regressed) + 1))
    return min(1.0, 2 * tail / 2**n)


def check_counts(c: int, n: int) -> None:
    """Raise ValueError unless 0 <= c <= n."""
    if n < 0 or c < 0 or c > n:
        raise ValueError(f"need 0 <= c <= n, got c={c}, n={n}")


def check_k(c: int, n: int, k: int) -> None:
    """Raise ValueError unless 0 <= c <= n and k >= 1."""
    check_counts(c, n)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
