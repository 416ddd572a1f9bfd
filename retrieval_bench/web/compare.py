"""The comparison page: a base run (or RUN:STAGE) against a candidate, per stage
and metric, with the p-values, intervals and Holm correction ``rbench compare``
prints for the same pair (docs/metrics.md#multiple-comparisons).
"""

from __future__ import annotations

from pathlib import Path

from retrieval_bench.web.html import esc, link, num, page, pval, table
from retrieval_bench.web.rundata import open_db, run_href
from retrieval_bench.workspace import Workspace

__all__ = ["compare_page"]


def _mark(significant: bool, direction: str) -> str:
    if not significant:
        return "<span class='same'>n.s.</span>"
    return (
        "<span class='better'>▲ better</span>"
        if direction == "better"
        else ("<span class='worse'>▼ worse</span>")
    )


def compare_page(ws: Workspace, base: str, cand: str) -> str:
    """Base vs candidate with the CLI's defaults (test, α, resamples, seed), so the page
    shows the p-values ``rbench compare BASE CAND`` prints."""
    from retrieval_bench.harness.compare import DEFAULT_RESAMPLES, compare_runs

    with open_db(ws) as db:
        db.get_run(base.split(":", 1)[0])  # both sides may be RUN or RUN:STAGE
        db.get_run(cand.split(":", 1)[0])
        comp = compare_runs(
            db, [base, cand], n_resamples=DEFAULT_RESAMPLES, results_dir=Path(ws.results_dir)
        )
    rows = [
        [
            esc(r.stage),
            esc(r.metric),
            num(r.baseline_mean),
            num(r.candidate_mean),
            ("+" if r.delta > 0 else "") + num(r.delta),
            f"[{num(r.ci_low)}, {num(r.ci_high)}]",
            pval(r.p_value),
            pval(r.p_holm),
            _mark(r.significant, r.direction),
            str(r.n_pairs),
        ]  # fmt: skip
        for r in comp.rows
    ]
    header = ["stage", "metric", "base", "cand", "Δ", f"{comp.confidence:.0%} CI", "p", "Holm p"]
    base_run = base.split(":", 1)[0]
    body = [
        f"<p>base {link(run_href(base_run), base)} vs candidate {esc(cand)}"
        f" · test {esc(comp.test)} · α = {comp.alpha} · {comp.n_resamples} resamples"
        f" (as <code>rbench compare {esc(base)} {esc(cand)}</code>)"
        f" · Holm family: {esc(comp.holm_family)}</p>",
        table([*header, "significance", "pairs"], rows, cls="num", id="comparison"),
    ]
    body += [f"<p class='warn'>{esc(w)}</p>" for w in comp.warnings]
    return page(f"Compare {base} vs {cand}", "".join(body))
