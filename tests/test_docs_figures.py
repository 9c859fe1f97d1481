"""The docs quote only figures `make bench` prints (issue 38): every measured figure in docs/ (a rate, a
time, a size, a ratio) is one that bench/RESULTS.md, the output of the latest `make bench`, holds. A
figure from a hand run goes stale the day the code changes and nobody can run it again; rerun `make bench`
and quote its output instead, or describe the finding in words and name the bench script that measures it.

Configuration defaults (`limit_mib` 512, 16 MB) are settings, not figures: they carry no thousands separator
or decimal point and are not checked. Numbers are compared without their thousands separators.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UNITS = r"spans/s|sessions/s|rows/s|records/s|CPU-s|CPU s|ms|µs|s|MiB|MB|GiB|GB|KB|×|x"
# a number with a thousands separator or a decimal point, followed by a unit
FIGURE = re.compile(rf"(?<![\w.^/-])(\d{{1,3}}(?:,\d{{3}})+|\d+\.\d+)(?= ?(?:{UNITS})(?![\w/]))")


def figures(text: str) -> list[tuple[int, str]]:
    return [(n, m.group(1)) for n, line in enumerate(text.splitlines(), 1) for m in FIGURE.finditer(line)]


def printed(results: str) -> set[str]:
    """Every number bench/RESULTS.md holds, without thousands separators."""
    return {m.replace(",", "") for m in re.findall(r"\d[\d,]*(?:\.\d+)?", results)}


def test_the_pattern_finds_figures_and_leaves_settings() -> None:
    text = "pinned 101,175 spans/s; 0.517 s wall; 2.10×; 625 MiB of limit_mib 512; 16 MB; 10^6 spans; v1.2.3 x"
    assert [f for _, f in figures(text)] == ["101,175", "0.517", "2.10"]


def test_every_figure_in_the_docs_is_one_make_bench_printed() -> None:
    have = printed((ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8"))
    pages = sorted((ROOT / "docs").glob("*.md"))
    assert pages, "no docs found"
    missing = [
        f"{page.relative_to(ROOT)}:{line}: {figure}"
        for page in pages
        for line, figure in figures(page.read_text(encoding="utf-8"))
        if figure.replace(",", "") not in have
    ]
    assert not missing, "figures not printed by make bench (bench/RESULTS.md):\n" + "\n".join(missing)
