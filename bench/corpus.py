"""How right tracevals reads real recordings: the own corpus (tests/corpus: frameworks and instrumentations,
Python and JavaScript, x their content modes) and the shared Google ADK corpus (../shared/otlp-corpus, when
present), each read through `tracevals ingest` and the `turns` view and compared with its hand-written truth
files.

    .venv/bin/python bench/corpus.py            # the table docs/dialects.md records
    .venv/bin/python bench/corpus.py --wrong    # and every wrong field
    .venv/bin/python bench/corpus.py --pin      # rewrite tests/corpus/KNOWN_GAPS.json from what is read

Prints, per stack (framework or instrumentation) and per content mode, recordings fully right / total, fields
right / fields the recordings hold, and how many truth fields the recordings do not hold (content not
captured ...), which are not counted as right. `--pin` is for a change meant to change what is read: review
the file's diff (every value in it is a value read wrong).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fixtures.corpus_check import check_all  # noqa: E402
from fixtures.otlp_lakes import CORPUS, corpus_recordings, ingest_doc, trace_ids  # noqa: E402


def adk() -> tuple[int, int] | None:
    """The shared ADK corpus: recordings whose every turn field matches (the reading tests/test_corpus.py does)."""
    if not CORPUS.is_dir():
        return None
    sys.path.insert(0, str(ROOT / "tests"))
    from test_corpus import TURN_KEYS, _turns

    from tracevals.queries import open_lake

    paths = corpus_recordings()
    with tempfile.TemporaryDirectory() as tmp:
        lake = Path(tmp) / "lake"
        for path in paths:
            ingest_doc(lake, json.loads(path.read_text()))
        con = open_lake(lake, materialize=True)
        right = 0
        for path in paths:
            truth = json.loads(path.with_name(path.stem + ".truth.json").read_text())
            got = _turns(con, trace_ids(json.loads(path.read_text())))
            want = [{k: t[k] for k in TURN_KEYS} for t in truth["turns"]]
            right += [{k: g[k] for k in TURN_KEYS} for g in got] == want
    return right, len(paths)


def _table(rows: dict[str, list[int]], title: str) -> None:
    print(f"{title:42} {'recordings right':>17} {'fields right':>14} {'not held':>9}")
    for key, (ok, n, right, fields, held_not) in sorted(rows.items()):
        print(f"{key:42} {ok:>9}/{n:<7} {right:>7}/{fields:<6} {held_not:>9}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wrong", action="store_true", help="print every wrong field")
    parser.add_argument("--pin", action="store_true", help="rewrite tests/corpus/KNOWN_GAPS.json from what is read")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = check_all(Path(tmp) / "lake")
    by_stack: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    by_mode: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for r in results:
        for row in (by_stack[r.recording.split("/")[0]], by_mode["/".join(r.recording.split("/")[:2])]):
            for i, value in enumerate((r.ok, 1, r.right, r.fields, len(r.not_held))):
                row[i] += value
    _table(by_stack, "stack")
    print()
    _table(by_mode, "stack / mode")
    ok, n = sum(r.ok for r in results), len(results)
    right, fields = sum(r.right for r in results), sum(r.fields for r in results)
    held_not = sum(len(r.not_held) for r in results)
    print(
        f"\nown corpus, {len(by_stack)} stacks: {ok}/{n} recordings fully right, {right}/{fields} fields right "
        f"({right / fields:.1%}), {held_not} truth fields not held by their recording"
    )
    shared = adk()
    if shared is not None:
        print(f"shared ADK corpus: {shared[0]}/{shared[1]} recordings fully right (target 32/32)")
    if args.wrong:
        for r in results:
            for w in r.wrong:
                print(f"{r.recording}: {w}")
    if args.pin:
        pins = {r.recording: json.loads(json.dumps(r.pins, default=str)) for r in results if r.pins}
        (ROOT / "tests" / "corpus" / "KNOWN_GAPS.json").write_text(json.dumps(pins, indent=1, sort_keys=True) + "\n")
        print(f"pinned {sum(len(p) for p in pins.values())} wrong values of {len(pins)} recordings")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
