r"""Renderers: results document -> ``report.md``, self-contained ``report.html``, ``junit.xml``.

All three draw only on the results document (:mod:`verify.report.document`), so a
saved run re-renders identically. ``report.html`` embeds every PNG as base64 and
its CSS inline: it reads offline, with no external assets.

Every renderer first cleans every string of the document (:func:`verify.text.clean_tree`): text from code
under test -- an exception's message, a file name that is not UTF-8 -- has its control characters, lone
surrogates and noncharacters escaped (``\x1b``, ``\udcff``, ``\ufffe``), so ``junit.xml`` is valid XML 1.0
and no terminal sequence reaches a reader, whatever the document holds.
"""

from __future__ import annotations

import base64
import html
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any

from verify.report.figures import figure_empty_reason
from verify.text import clean_tree

__all__ = ["Md", "figure_key", "md_code", "md_escape", "render_html", "render_junit", "render_markdown"]

_ORDER = ("FAIL", "INCONCLUSIVE", "SKIPPED", "PASS")
_GREEK = (("alpha", "α"), ("beta", "β"), ("delta", "δ"))


def figure_key(claim_index: int | None, fig_index: int, claim_id: str = "run") -> str:
    """Relative PNG path of a figure inside the report folder."""
    if claim_index is None:
        return f"figures/run-{fig_index + 1}.png"
    return f"figures/{claim_id}-{fig_index + 1}.png"


def fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        if v == 0:
            return "0"
        return f"{v:.3g}" if (1e-3 <= abs(v) < 1e4) else f"{v:.2e}"
    return str(v)


def _stat_line(rec: Mapping[str, Any]) -> str:
    """``statistic comparison threshold``; a missing side is left out (never ``<= —``).

    A statistic without a threshold is a reported measurement: it prints alone, with a
    worded comparison (``grows``) in parentheses; a threshold without a statistic (the
    check did not measure) prints as ``not measured (threshold ...)``.
    """
    stat, thr = rec.get("statistic"), rec.get("threshold")
    cmp = str(rec.get("comparison") or "<=")
    if stat is None and thr is None:
        return "—"
    if thr is None:
        worded = cmp.replace(" ", "").isalpha()
        return f"{fmt(stat)} ({cmp})" if worded else fmt(stat)
    if stat is None:
        return f"not measured (threshold {cmp} {fmt(thr)})"
    a, b = fmt(stat), fmt(thr)
    if a == b and isinstance(stat, float) and isinstance(thr, float) and stat != thr:
        a, b = f"{stat:.6g}", f"{thr:.6g}"  # 0.01998 < 0.02 must not read "0.02 < 0.02"
    negated = _NEGATED.get(cmp)
    if negated is not None and _violates(stat, thr, cmp):
        # a FAIL must not print a false statement ("0.36 <= 3.20e-14"): it says what holds and what was allowed
        return f"{a} {negated[0]} {b} {negated[1]}"
    return f"{a} {cmp} {b}"


#: a comparison that does not hold, worded so the line reads true: (the negated operator, what the threshold was)
_NEGATED: dict[str, tuple[str, str]] = {
    "<=": (">", "allowed"),
    "<": (">=", "allowed"),
    ">=": ("<", "required"),
    ">": ("<=", "required"),
    "|z| <=": ("|z| >", "allowed"),
}


def _violates(stat: object, thr: object, cmp: str) -> bool:
    """Whether ``stat cmp thr`` is false for two real numbers (anything else: not decided here, False)."""
    if isinstance(stat, bool) or isinstance(thr, bool) or not isinstance(stat, (int, float)):
        return False
    if not isinstance(thr, (int, float)):
        return False
    s, t = float(stat), float(thr)
    if s != s or t != t:
        return False
    holds = {"<=": s <= t, "<": s < t, ">=": s >= t, ">": s > t, "|z| <=": abs(s) <= t}[cmp]
    return not holds


def findings(claims: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """Every (claim id, finding) of a run: where a paper as printed did not hold."""
    return [(r["id"], str(f)) for r in claims for f in (r.get("findings") or [])]


_FINDINGS_TITLE = "Where the papers do not hold as printed (measured in this run)"
#: said under that title: a finding is not a failure by itself
_FINDINGS_NOTE = (
    "Not failures by themselves: each is a paper's printed claim that differs from what holds; the claim checks "
    "the corrected version, and its verdict is the one in the summary."
)


def _samples(rec: Mapping[str, Any]) -> str:
    used, planned = rec.get("samples_used"), rec.get("samples_planned")
    if used is None and planned is None:
        return "—"
    return f"{fmt(used)} / {fmt(planned)} planned"


def _rates(rec: Mapping[str, Any]) -> str:
    parts = [f"{g} = {fmt(rec.get(k))}" for k, g in _GREEK if rec.get(k) is not None]
    return ", ".join(parts) if parts else "—"


def _run_line(run: Mapping[str, Any]) -> list[tuple[str, str]]:
    keys = (
        ("command", "command"),
        ("profile", "profile"),
        ("seed", "seed"),
        ("device", "device"),
        ("dtype", "dtype"),
        ("workers", "workers"),
        ("executor", "executor"),
        ("started", "started"),
        ("wall_time", "wall time (s)"),
        ("torch_version", "torch"),
        ("python_version", "python"),
        ("platform", "platform"),
    )
    out = [(label, fmt(run.get(k))) for k, label in keys if k in run]
    impls = run.get("implementations")
    if isinstance(impls, list):  # the implementations under test given with --impl (absent: the toolkit's own)
        out += [(f"implementation under test ({s.get('name', '?')})", _source_line(s)) for s in impls]
        if not impls:
            out.append(("implementation under test", "the toolkit's own (no --impl)"))
    return out


def _source_line(s: Mapping[str, Any]) -> str:
    """``spec (file F, sha256 H)`` of one ``run.implementations`` entry."""
    where = f" (file {s.get('file')}, sha256 {s.get('sha256')})" if s.get("file") else ""
    return f"{s.get('spec', '')}{where}"


def _impl_line(r: Mapping[str, Any]) -> str:
    """The implementation under test of a claim record (``family.field: what``, one per part it exercised)."""
    impl = r.get("implementation")
    if not isinstance(impl, Mapping):
        return ""
    return "; ".join(f"{k}: {v}" for k, v in impl.items())


def _run_figures_title(run: Mapping[str, Any]) -> str:
    """The heading of the run-level figures: the controls table, and a sweep's cell tables."""
    return "Negative controls and the sweep's cells" if run.get("sweep") else "Negative controls"


def _counts_line(summary: Mapping[str, Any]) -> str:
    return ", ".join(f"{summary.get(v, 0)} {v}" for v in ("PASS", "FAIL", "INCONCLUSIVE", "SKIPPED"))


# ------------------------------------------------------------------ markdown
class Md(str):
    """Text that is already markdown (links, code spans): table cells and lines keep it as it is."""


#: characters that change the meaning of inline markdown (emphasis, code, tables, links, HTML, GFM
#: strikethrough and math); every text field of a record is escaped before it goes into report.md
_MD_SPECIAL = re.compile(r"([\\`*_|\[\]~$]|<(?=[A-Za-z/!?])|^[#>+-](?=\s|#)|^\d+(?=[.)]\s))")


def md_escape(v: Any) -> str:
    """Plain text as inline markdown: special characters backslash-escaped, newlines as spaces.

    ``E||G||^2 <= 16*D*Delta/(3N)`` renders as written, not as a table break or italics.
    """
    text = v if isinstance(v, str) else fmt(v)
    text = " ".join(text.splitlines())
    return _MD_SPECIAL.sub(lambda m: "\\" + m.group(0) if not m.group(0)[0].isdigit() else m.group(0) + "\\", text)


def md_code(v: Any) -> Md:
    """An inline code span that survives backticks in the text (a longer fence, CommonMark §6.1)."""
    text = str(v).replace("\n", " ")
    runs = [len(m) for m in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if runs else ""
    return Md(f"{fence}{pad}{text}{pad}{fence}")


def _md_fence(text: str, info: str = "text") -> list[str]:
    runs = [len(m) for m in re.findall(r"`{3,}", text)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return [f"{fence}{info}", text.rstrip(), fence]


def _md_cell(v: Any) -> str:
    if isinstance(v, Md):
        return v.replace("|", "\\|").replace("\n", " ")  # a pipe breaks a GFM table even in a code span
    return md_escape(v)


def _md_table(columns: Sequence[Any], rows: Sequence[Sequence[Any]]) -> list[str]:
    out = ["| " + " | ".join(_md_cell(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    out += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in rows]
    return out


def _md_figure(fig: Mapping[str, Any], path: str, where: str) -> list[str]:
    title = md_escape(fig["title"])
    lines = [f"**{title}**", ""]
    if fig["kind"] == "table":
        lines += _md_table(fig["columns"], fig["rows"])
    else:
        empty = figure_empty_reason(fig)
        if empty:
            lines.append(f"> figure not drawn: {md_escape(empty)}")
        else:
            lines.append(f"![{title}]({path})")
    lines.append("")
    cap = md_escape(fig.get("caption", ""))
    data = f"Data: `results.json` → {md_code(where)}."
    lines += [f"*{cap} {data}*" if cap else f"*{data}*", ""]
    return lines


def _citations(rec: Mapping[str, Any]) -> list[str]:
    """Full citations of a record (catalog claims); the short ``paper`` for records without them."""
    refs = [str(x) for x in rec.get("references") or [] if x]
    if not refs and rec.get("citation"):
        refs = [str(rec["citation"])]
    return refs or ([str(rec["paper"])] if rec.get("paper") else [])


def render_markdown(doc: Mapping[str, Any]) -> str:
    """``report.md``: summary table, run-level figures, then one section per claim."""
    doc = clean_tree(doc)
    run, claims, summary = doc["run"], doc["claims"], doc.get("summary", {})
    lines = ["# rnn-verify theory-check report", ""]
    lines += [f"**{_counts_line(summary)}** ({summary.get('total', len(claims))} claims)", ""]
    lines += [f"- {k}: {md_code(v)}" if k == "command" else f"- {k}: {md_escape(v)}" for k, v in _run_line(run)]
    lines += ["", "## Summary", ""]
    lines += _md_summary(claims)
    found = findings(claims)
    if found:
        lines += ["", f"## {_FINDINGS_TITLE}", "", md_escape(_FINDINGS_NOTE), ""]
        lines += [f"- [{md_code(cid)}](#{_anchor(cid)}): {md_escape(f)}" for cid, f in found]
    figs = doc.get("figures") or []
    if figs:
        lines += ["", f"## {_run_figures_title(run)}", ""]
        for j, f in enumerate(figs):
            lines += _md_figure(f, figure_key(None, j), f"figures[{j}]")
    for i, r in enumerate(claims):
        lines += _md_claim(i, r)
    if _with_experiments(claims):
        from verify.report import experiments as _experiments  # late: python -m verify.report.experiments

        lines += ["", f"## {_experiments.TITLE}", "", md_escape(_experiments.NOTE + _experiments.papers_line()), ""]
        lines += _experiments.markdown_table(_verdicts(claims))
    lines.append("")
    return "\n".join(lines)


def _with_experiments(claims: Sequence[Mapping[str, Any]]) -> bool:
    """The table of the papers' experiments closes a report that ran catalog claims."""
    return any(r.get("source", "catalog") == "catalog" for r in claims)


def _verdicts(claims: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    return {str(r["id"]): str(r["verdict"]) for r in claims}


def _md_summary(claims: Sequence[Mapping[str, Any]]) -> list[str]:
    """The summary table (one row per claim) and a line for each claim that did not PASS."""
    rows = [
        [
            r["verdict"],
            Md(f"[{md_escape(r['id'])}](#{_anchor(r['id'])})"),
            r.get("paper", ""),
            r.get("equation", ""),
            _stat_line(r),
            _samples(r),
            fmt(r.get("wall_time")),
        ]
        for r in claims
    ]
    lines = _md_table(["verdict", "claim", "paper", "equation", "statistic vs threshold", "samples", "time (s)"], rows)
    lines.append("")
    for r in claims:
        if r["verdict"] in ("SKIPPED", "INCONCLUSIVE", "FAIL"):
            why = str(r.get("reason") or r["summary"]).split("\n")[0]
            lines.append(f"- **{r['verdict']}** {md_code(r['id'])}: {md_escape(why)}")
    return lines


def _facts(r: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """A claim's facts table (paper, where, statement, statistic, error rates, ...), rerun command excluded."""
    refs = _citations(r)
    return [
        ("paper", refs[0] if refs else ""),
        ("where", r.get("equation", "")),
        *(("also cites", ref) for ref in refs[1:]),
        ("statement", r.get("statement", "")),
        ("kind", r.get("kind", "")),
        ("implementation under test", _impl_line(r)),
        ("statistic vs threshold", _stat_line(r)),
        ("error rates", _rates(r)),
        ("samples used", _samples(r)),
        ("seed / dtype / device", f"{fmt(r.get('seed'))} / {r.get('dtype')} / {r.get('device')}"),
        ("torch", fmt(r.get("torch_version"))),
        ("wall time (s)", fmt(r.get("wall_time"))),
    ]


def _md_claim(i: int, r: Mapping[str, Any]) -> list[str]:
    """One claim's section of ``report.md``: summary, facts, math, notes, controls, figures."""
    lines = [
        "",
        f'<a id="{_anchor(r["id"])}"></a>',
        "",
        f"## {r['verdict']} · {md_code(r['id'])} — {md_escape(r.get('title', ''))}",
        "",
    ]
    lines += [md_escape(r["summary"]), ""]
    facts: list[tuple[str, Any]] = [
        *_facts(r),
        ("rerun", md_code(r.get("rerun", "")) if r.get("rerun") else ""),
    ]
    lines += _md_table(["", ""], [[k, v] for k, v in facts if v not in ("", ", ")])
    if r.get("math"):
        lines += ["", *_md_fence(str(r["math"]))]
    if r.get("assumptions"):
        lines += ["", "Assumptions:", ""] + [f"- {md_escape(a)}" for a in r["assumptions"]]
    if r.get("errata"):
        lines += ["", "Errata:", ""] + [f"- {md_escape(a)}" for a in r["errata"]]
    if r.get("findings"):
        lines += ["", "Measured in this run (the paper as printed):", ""]
        lines += [f"- {md_escape(a)}" for a in r["findings"]]
    if r.get("reason"):
        lines += ["", "Reason:", "", *_md_fence(str(r["reason"]))]
    if r.get("controls"):
        lines += ["", "Controls:", ""]
        lines += _md_table(
            ["control", "expected", "observed", "detail"],
            [[c.get("name"), c.get("expected"), c.get("observed"), c.get("detail", "")] for c in r["controls"]],
        )
    for j, f in enumerate(r.get("figures") or []):
        lines += ["", *_md_figure(f, figure_key(i, j, r["id"]), f"claims[{i}].figures[{j}]")]
    for p in r.get("figure_problems") or []:
        lines += ["", f"> figure not drawn: {md_escape(p)}"]
    return lines


def _anchor(claim_id: str) -> str:
    return "claim-" + claim_id.replace(".", "-")


# ---------------------------------------------------------------------- html
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1100px;padding:1em 2em;
color:#1b1b1b;line-height:1.45}
h1{margin-bottom:.2em} h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.6em 0;font-size:.92em} td,th{border:1px solid #ddd;padding:.25em .55em;
text-align:left;vertical-align:top} th{background:#f4f4f4}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.9em} pre{background:#f7f7f7;padding:.6em;
overflow-x:auto;white-space:pre-wrap}
.badge{display:inline-block;padding:.05em .5em;border-radius:.3em;color:#fff;font-weight:600;font-size:.85em}
.PASS{background:#2e7d32}.FAIL{background:#c62828}.INCONCLUSIVE{background:#ef6c00}.SKIPPED{background:#757575}
figure{margin:1em 0;padding:.5em;border:1px solid #eee} figure img{max-width:100%;height:auto}
figcaption{font-size:.85em;color:#444} .facts td:first-child{font-weight:600;white-space:nowrap}
.counts span{margin-right:.8em}
"""


def _e(v: Any) -> str:
    return html.escape(fmt(v) if not isinstance(v, str) else v)


def _html_table(columns: Sequence[Any], rows: Sequence[Sequence[Any]], cls: str = "") -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>" for r in rows)
    c = f' class="{cls}"' if cls else ""
    return f"<table{c}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _html_figure(fig: Mapping[str, Any], png: bytes | None, claim_id: str, index: int, where: str) -> str:
    attrs = (
        f'class="figure" data-claim-id="{html.escape(claim_id)}" data-figure-index="{index}" '
        f'data-kind="{html.escape(fig["kind"])}"'
    )
    empty = figure_empty_reason(fig)
    if fig["kind"] == "table":
        inner = _html_table(fig["columns"], fig["rows"], "figure-table")
    elif empty:
        inner = f'<p class="figure-problem">figure not drawn: {html.escape(empty)}</p>'
    elif png is not None:
        b64 = base64.b64encode(png).decode("ascii")
        inner = f'<img alt="{html.escape(fig["title"])}" src="data:image/png;base64,{b64}">'
    else:
        inner = "<p>(figure could not be drawn)</p>"
    cap = html.escape(fig.get("caption", ""))
    return (
        f"<figure {attrs}><div><strong>{html.escape(fig['title'])}</strong></div>{inner}"
        f"<figcaption>{cap} Data: <code>results.json</code> → <code>{html.escape(where)}</code>.</figcaption></figure>"
    )


def render_html(doc: Mapping[str, Any], pngs: Mapping[str, bytes]) -> str:
    """Self-contained ``report.html``; ``pngs`` maps :func:`figure_key` paths to PNG bytes."""
    doc = clean_tree(doc)
    run, claims, summary = doc["run"], doc["claims"], doc.get("summary", {})
    out = [
        '<!doctype html><html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>rnn-verify report ({html.escape(_counts_line(summary))})</title><style>{_CSS}</style></head><body>",
        "<h1>rnn-verify theory-check report</h1>",
        '<p class="counts">'
        + "".join(
            f'<span class="badge {v}">{summary.get(v, 0)} {v}</span>'
            for v in ("PASS", "FAIL", "INCONCLUSIVE", "SKIPPED")
        )
        + "</p>",
        _html_table(["run", ""], _run_line(run), "facts"),
        '<h2 id="summary">Summary</h2>',
    ]
    out += _html_summary(claims)
    found = findings(claims)
    if found:
        out.append(f'<h2 id="findings">{html.escape(_FINDINGS_TITLE)}</h2><p>{html.escape(_FINDINGS_NOTE)}</p>')
        out.append('<ul class="findings">')
        out += [
            f'<li><a href="#{_anchor(cid)}"><code>{html.escape(cid)}</code></a>: {html.escape(f)}</li>'
            for cid, f in found
        ]
        out.append("</ul>")
    figs = doc.get("figures") or []
    if figs:
        out.append(f'<h2 id="controls">{html.escape(_run_figures_title(run))}</h2>')
        for j, f in enumerate(figs):
            key = figure_key(None, j)
            out.append(_html_figure(f, pngs.get(key), "run", j, f"figures[{j}]"))
    for i, r in enumerate(claims):
        out += _html_claim(i, r, pngs)
    if _with_experiments(claims):
        from verify.report import experiments as _experiments  # late: python -m verify.report.experiments

        cols, rows = _experiments.html_rows(_verdicts(claims))
        out.append(f'<h2 id="experiments">{html.escape(_experiments.TITLE)}</h2>')
        out.append(f"<p>{html.escape(_experiments.NOTE + _experiments.papers_line())}</p>")
        out.append(_html_table(cols, rows, "experiments"))
        ccols, crows = _experiments.check_rows(_verdicts(claims))
        out.append(f"<p>{html.escape(_experiments.CHECKS_TITLE)}:</p>")
        out.append(_html_table(ccols, [[str(x).replace("`", "") for x in r] for r in crows], "experiments"))
    out.append(
        f"<footer><p>{html.escape(str(doc.get('tool', {}).get('name', 'rnn-verify')))} "
        f"{html.escape(str(doc.get('tool', {}).get('version', '')))}</p></footer></body></html>"
    )
    return "\n".join(out)


def _html_summary(claims: Sequence[Mapping[str, Any]]) -> list[str]:
    """The summary table (one row per claim) and a list item for each claim that did not PASS."""
    out = []
    rows = []
    for r in claims:
        rows.append(
            f'<tr><td><span class="badge {r["verdict"]}">{r["verdict"]}</span></td>'
            f'<td><a href="#{_anchor(r["id"])}"><code>{html.escape(r["id"])}</code></a></td>'
            f"<td>{_e(r.get('paper', ''))}</td><td>{_e(r.get('equation', ''))}</td><td>{_e(_stat_line(r))}</td>"
            f"<td>{_e(_samples(r))}</td><td>{_e(r.get('wall_time'))}</td></tr>"
        )
    out.append(
        "<table><thead><tr><th>verdict</th><th>claim</th><th>paper</th><th>equation</th>"
        "<th>statistic vs threshold</th><th>samples</th><th>time (s)</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )
    notes = [r for r in claims if r["verdict"] in ("FAIL", "INCONCLUSIVE", "SKIPPED")]
    if notes:
        out.append("<ul>")
        for r in notes:
            why = str(r.get("reason") or r["summary"]).split("\n")[0]
            badge = f'<span class="badge {r["verdict"]}">{r["verdict"]}</span>'
            out.append(f"<li>{badge} <code>{html.escape(r['id'])}</code>: {html.escape(why)}</li>")
        out.append("</ul>")
    return out


def _html_claim(i: int, r: Mapping[str, Any], pngs: Mapping[str, bytes]) -> list[str]:
    """One claim's ``<section>`` of ``report.html``: summary, facts, math, notes, controls, figures."""
    out = [
        f'<section class="claim" id="{_anchor(r["id"])}" data-claim-id="{html.escape(r["id"])}" '
        f'data-verdict="{r["verdict"]}">'
    ]
    out.append(
        f'<h2><span class="badge {r["verdict"]}">{r["verdict"]}</span> <code>{html.escape(r["id"])}</code> '
        f"— {html.escape(r.get('title', ''))}</h2>"
    )
    out.append(f'<p class="summary">{html.escape(r["summary"])}</p>')
    facts = _facts(r)
    body = "".join(f"<tr><td>{html.escape(k)}</td><td>{_e(v)}</td></tr>" for k, v in facts if v not in ("", ", "))
    body += f"<tr><td>rerun</td><td><code>{html.escape(str(r.get('rerun', '')))}</code></td></tr>"
    out.append(f'<table class="facts"><tbody>{body}</tbody></table>')
    if r.get("math"):
        out.append(f"<pre>{html.escape(str(r['math']))}</pre>")
    for key, label in (
        ("assumptions", "Assumptions"),
        ("errata", "Errata"),
        ("findings", "Measured in this run (the paper as printed)"),
    ):
        if r.get(key):
            out.append(f"<p><strong>{label}</strong></p><ul>")
            out += [f"<li>{html.escape(str(a))}</li>" for a in r[key]]
            out.append("</ul>")
    if r.get("reason"):
        out.append(f"<p><strong>Reason</strong></p><pre>{html.escape(str(r['reason']))}</pre>")
    if r.get("controls"):
        out.append("<p><strong>Controls</strong></p>")
        out.append(
            _html_table(
                ["control", "expected", "observed", "detail"],
                [[c.get("name"), c.get("expected"), c.get("observed"), c.get("detail", "")] for c in r["controls"]],
            )
        )
    for j, f in enumerate(r.get("figures") or []):
        key = figure_key(i, j, r["id"])
        out.append(_html_figure(f, pngs.get(key), r["id"], j, f"claims[{i}].figures[{j}]"))
    for p in r.get("figure_problems") or []:
        out.append(f'<p class="figure-problem">figure not drawn: {html.escape(p)}</p>')
    out.append("</section>")
    return out


# --------------------------------------------------------------------- junit
def render_junit(doc: Mapping[str, Any], fail_on: str = "fail") -> bytes:
    """``junit.xml``: one testcase per claim; FAIL -> failure, SKIPPED -> skipped,
    INCONCLUSIVE -> failure under ``fail_on="inconclusive"``, else skipped. Valid XML 1.0 whatever the
    document holds (its text is cleaned first: :func:`verify.text.clean`)."""
    doc = clean_tree(doc)
    claims = doc["claims"]
    summary = doc.get("summary", {})
    inconclusive_fails = fail_on == "inconclusive"
    failures = summary.get("FAIL", 0) + (summary.get("INCONCLUSIVE", 0) if inconclusive_fails else 0)
    skipped = summary.get("SKIPPED", 0) + (0 if inconclusive_fails else summary.get("INCONCLUSIVE", 0))
    total_time = sum(float(r.get("wall_time") or 0.0) for r in claims)
    suites = ET.Element("testsuites", name="rnn-verify")
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=f"rnn-verify {doc['run'].get('profile', '')}".strip(),
        tests=str(len(claims)),
        failures=str(failures),
        errors="0",
        skipped=str(skipped),
        time=f"{total_time:.3f}",
    )
    props = ET.SubElement(suite, "properties")
    for k in ("command", "profile", "seed", "device", "dtype", "torch_version"):
        if k in doc["run"]:
            ET.SubElement(props, "property", name=k, value=str(doc["run"][k]))
    for r in claims:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"rnn_verify.{r.get('family', r['id'].split('.')[0])}",
            name=r["id"],
            time=f"{float(r.get('wall_time') or 0.0):.3f}",
        )
        cprops = ET.SubElement(case, "properties")
        for k in ("verdict", "statistic", "threshold", "alpha", "beta", "delta", "samples_used", "seed", "rerun"):
            if r.get(k) is not None:
                ET.SubElement(cprops, "property", name=k, value=str(r[k]))
        v = r["verdict"]
        msg = f"{v}: {r['summary']}"
        if v == "FAIL" or (v == "INCONCLUSIVE" and inconclusive_fails):
            el = ET.SubElement(case, "failure", message=msg, type=v)
            el.text = str(r.get("reason") or r["summary"])
        elif v in ("SKIPPED", "INCONCLUSIVE"):
            ET.SubElement(case, "skipped", message=f"{v}: {r.get('reason') or r['summary']}")
        out = ET.SubElement(case, "system-out")
        out.text = f"{r['summary']}\nrerun: {r.get('rerun', '')}"
    ET.indent(suites)
    xml: bytes = ET.tostring(suites, encoding="utf-8", xml_declaration=True)
    return xml + b"\n"
