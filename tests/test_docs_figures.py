"""The docs quote only figures `make bench` prints (issue 38): every measured figure in docs/ (a rate, a
time, a size, a ratio) is one that bench/RESULTS.md, the output of the latest `make bench`, holds. A
figure from a hand run goes stale the day the code changes and nobody can run it again; rerun `make bench`
and quote its output instead, or describe the finding in words and name the bench script that measures it.

Configuration defaults (`limit_mib` 512, 16 MB) are settings, not figures: they carry no thousands separator
or decimal point and are not checked, except in a paragraph that cites `make bench`, where a whole number
with a unit ("717 MiB") is a figure unless `SETTINGS` names it. Numbers are compared without their thousands
separators.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UNITS = r"spans/s|sessions/s|rows/s|records/s|CPU-s|CPU s|ms|µs|s|MiB|MB|GiB|GB|KB|×|x"
# a number with a thousands separator or a decimal point (not part of a word, a version or a path)
NUMBER = r"(?<![\w.^/-])(\d{1,3}(?:,\d{3})+|\d+\.\d+)"
# such a number followed by a unit
FIGURE = re.compile(rf"{NUMBER}(?= ?(?:{UNITS})(?![\w/]))")


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


# Numbers a paragraph that cites `make bench` may hold besides its figures: settings and the sizes of inputs,
# each named (a measured figure does not belong here: quote what the run printed).
SETTINGS = {
    "16": "TRACEVALS_SNAPSHOT_MB's default, in MB (queries/connection.py)",
    "160": "GROUP_MEMORY, in MB: a group's default DuckDB memory for its work (scoring/groups.py)",
    "8000": "GROUP_CHUNK_SESSIONS, the sessions a group scores at a time (scoring/groups.py)",
    "15000": "that chunk size before it was 8,000",
    "65536": "the size of a cache that no longer exists",
    "80000": "about how many spans TRACEVALS_SNAPSHOT_MB's default holds",
    "150000": "GROUP_ROWS, the rows of a group of files (queries/groups.py)",
    "450000": "the size of an experiment's groups (an hour file at 10^7 spans)",
}
ANY_NUMBER = re.compile(rf"{NUMBER}(?![\w.])")
# a whole number followed by a unit ("717 MiB", "502 MiB peak"): a figure too, though it has neither
WHOLE_FIGURE = re.compile(rf"(?<![\w.,^/-])(\d+)(?![\d,.])(?= ?(?:{UNITS})(?![\w/]))")


def test_a_paragraph_that_cites_make_bench_holds_only_numbers_it_printed() -> None:
    """A figure needs no unit after it to be one ("(53,452 without)", "free 76,823", "the floor's 8.23"): in a
    paragraph that cites `make bench` or bench/RESULTS.md, every number with a thousands separator or a decimal
    point, and every whole number with a unit ("717 MiB": a peak quoted from an older run), is one
    bench/RESULTS.md holds, or a setting named in `SETTINGS`."""
    have = printed((ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8"))
    missing = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        at = 0
        for paragraph in re.split(r"\n\s*\n", text):
            at = text.index(paragraph, at)
            if "make bench" in paragraph or "RESULTS.md" in paragraph:
                for m in [*ANY_NUMBER.finditer(paragraph), *WHOLE_FIGURE.finditer(paragraph)]:
                    number = m.group(1).replace(",", "")
                    if number not in have and number not in SETTINGS:
                        line = text.count("\n", 0, at + m.start()) + 1
                        missing.append(f"{page.relative_to(ROOT)}:{line}: {m.group(1)}")
            at += len(paragraph)
    assert not missing, "numbers beside make bench's figures that it did not print:\n" + "\n".join(missing)
