"""Pieces of the HTML report that are not charts: the stylesheet, tables and the failure gallery."""

from __future__ import annotations

from collections.abc import Sequence

from tracevals.report.formatting import html_text as escape

__all__ = ["STYLE", "details", "nav", "table"]

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;color:#1b1b1b;margin:0 auto;max-width:1180px;padding:0 20px 60px}
header{border-bottom:2px solid #0072B2;margin-bottom:12px}
h1{font-size:24px;margin:18px 0 6px}h2{font-size:19px;margin:28px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:14px 0 6px}
dl#provenance{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:6px 0 10px}
dt{font-weight:600}dd{margin:0;word-break:break-all}
nav a{margin-right:12px}
figure{margin:10px 0 18px;overflow-x:auto}
figcaption.provenance{font-size:12px;color:#555;margin-top:4px}
table{border-collapse:collapse;font-size:13px;margin:4px 0 10px}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f2f4f7}tr.regression td{background:#fdecea}tr.improved td{background:#eaf7ef}
tr.cat-do_not_ship td:nth-child(2){color:#b00020;font-weight:600}
tr.cat-needs_confirmation td:nth-child(2){color:#8a5a00;font-weight:600}
tr.cat-canary td:nth-child(2){color:#005a8a}tr.cat-automatic td:nth-child(2){color:#006b3c}
.statement{font-weight:600}
article.failure{border:1px solid #ddd;border-left:4px solid #D55E00;padding:8px 12px;margin:10px 0}
article.failure h3{margin:0 0 6px}
.sides{display:grid;grid-template-columns:1fr 1fr;gap:14px}
.sides ol{margin:4px 0;padding-left:22px}.sides li{font-family:ui-monospace,monospace;font-size:12px}
li.failed{color:#b00020}.hazard{color:#b00020;font-weight:600}
blockquote{margin:6px 0;padding:4px 10px;border-left:3px solid #ccc;color:#333;white-space:pre-wrap}
.reasons{font-size:12px;color:#444}
details.group{border:1px solid #ddd;border-radius:4px;margin:6px 0;padding:0 10px}
details.group>summary{cursor:pointer;padding:6px 0;font-weight:600}
details.group>summary .count{font-weight:400;color:#555}
details.more>summary{cursor:pointer;color:#0072B2;margin:6px 0}
code.cmd{font-size:11px;background:#f4f4f4;padding:1px 4px;word-break:break-all}
figcaption.size{font-size:12px;color:#555;margin-top:4px}
table#provenance-variants td{word-break:normal}
tr.fell td{background:#fdecea}
.tables{display:grid;grid-template-columns:1fr 1fr;gap:4px 18px}
.tables>div{overflow-x:auto}.tables>div.wide{grid-column:1/-1}
"""


def table(
    head: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    table_id: str | None = None,
    row_classes: Sequence[str] | None = None,
) -> str:
    """An HTML table; every cell escaped."""
    ident = f' id="{escape(table_id)}"' if table_id else ""
    out = [f"<table{ident}><thead><tr>", *(f"<th>{escape(h)}</th>" for h in head), "</tr></thead><tbody>"]
    for i, row in enumerate(rows):
        cls = row_classes[i] if row_classes and row_classes[i] else ""
        out.append(f'<tr class="{escape(cls)}">' if cls else "<tr>")
        out += [f"<td>{escape(cell)}</td>" for cell in row]
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def details(summary: str, content: str, *, cls: str = "group", data: dict[str, str] | None = None) -> str:
    """A collapsed `<details>` (no script: the browser opens it); `summary` is trusted HTML."""
    attrs = "".join(f' data-{k}="{escape(v)}"' for k, v in (data or {}).items())
    return f'<details class="{escape(cls)}"{attrs}><summary>{summary}</summary>{content}</details>'


def nav(links: Sequence[tuple[str, str]]) -> str:
    """The page's table of contents: (section id, title) pairs."""
    return "<nav>" + "".join(f'<a href="#{escape(i)}">{escape(t)}</a>' for i, t in links) + "</nav>"


def page_header(
    title: str, rows: Sequence[tuple[str, str]], sections: Sequence[tuple[str, str]], extra: str = ""
) -> str:
    """A report page's header: its title, its provenance (label, value rows), `extra` (HTML made already),
    then its table of contents (`nav`)."""
    items = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows)
    return f'<header><h1>{escape(title)}</h1><dl id="provenance">{items}</dl>{extra}{nav(sections)}</header>'
