"""The comparison page: a base run (or RUN:STAGE) against a candidate, per stage
and metric, with the p-values, intervals and Holm correction ``rbench compare``
prints for the same pair (docs/metrics.md#multiple-comparisons).

Like the CLI it names each run's config and data, says which stages only one
run has (they are not compared) and refuses runs on different data
(:mod:`retrieval_bench.harness.compare.sides`): :func:`different_data_page` says
why, with a link that compares anyway (``allow_different_data=1``), and the page
then shows the warning above the table.
"""

from __future__ import annotations

from pathlib import Path

from retrieval_bench.harness.compare.comparison import Comparison
from retrieval_bench.web.html import esc, link, num, page, pval, table
from retrieval_bench.web.rundata import href, open_db, run_href
from retrieval_bench.workspace import Workspace

__all__ = ["compare_page", "different_data_page"]


def _mark(significant: bool, direction: str) -> str:
    if not significant:
        return "<span class='same'>n.s.</span>"
    return (
        "<span class='better'>▲ better</span>"
        if direction == "better"
        else ("<span class='worse'>▼ worse</span>")
    )


def _runs_table(comp: Comparison) -> str:
    """Each compared run: its role, config and data."""
    roles = [("base", comp.baseline), *(("candidate", c) for c in comp.candidates)]
    rows = []
    for role, rid in roles:
        side = comp.sides[rid]
        config = esc(side.name) + (
            f" <span class='hint'>({esc(side.config_fingerprint[:12])})</span>"
            if side.config_fingerprint else ""
        )  # fmt: skip
        data = esc(", ".join(side.datasets) or "?") + (
            f" <span class='hint'>({esc(side.dataset_fingerprint)})</span>"
            if side.dataset_fingerprint else ""
        )  # fmt: skip
        rows.append([role, link(run_href(rid), rid), config, data])
    return table(["", "run", "config (fingerprint)", "data (fingerprint)"], rows, id="compared")


def different_data_page(base: str, cand: str, detail: str) -> str:
    """The refusal of a comparison of runs on different data, with a link that
    compares them anyway."""
    anyway = href("/compare", base=base, cand=cand, allow_different_data="1")
    todo = (
        "<li>Compare runs measured on the same dataset.</li>"
        f"<li>Or {link(anyway, 'compare anyway')}, pairing queries by id (as "
        f"<code>rbench compare {esc(base)} {esc(cand)} --allow-different-data</code>).</li>"
    )
    return page(
        "Runs on different data",
        f"<div class='error'><p class='error-what'>{esc(detail)}</p>"
        f"<h2>What to do</h2><ul class='error-todo'>{todo}</ul></div>",
    )


def compare_page(ws: Workspace, base: str, cand: str, allow_different_data: bool = False) -> str:
    """Base vs candidate with the CLI's defaults (test, α, resamples, seed), so the page
    shows the p-values ``rbench compare BASE CAND`` prints; runs on different data
    raise ``DifferentDataError`` unless ``allow_different_data``."""
    from retrieval_bench.harness.compare.runs import DEFAULT_RESAMPLES, compare_runs

    with open_db(ws) as db:
        db.get_run(base.split(":", 1)[0])  # both sides may be RUN or RUN:STAGE
        db.get_run(cand.split(":", 1)[0])
        comp = compare_runs(
            db, [base, cand], n_resamples=DEFAULT_RESAMPLES, results_dir=Path(ws.results_dir),
            allow_different_data=allow_different_data,
        )  # fmt: skip
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
    flag = " --allow-different-data" if allow_different_data else ""
    body = [
        f"<p>base {link(run_href(base_run), base)} vs candidate {esc(cand)}"
        f" · test {esc(comp.test)} · α = {comp.alpha} · {comp.n_resamples} resamples"
        f" (as <code>rbench compare {esc(base)} {esc(cand)}{flag}</code>)"
        f" · Holm family: {esc(comp.holm_family)}</p>",
        _runs_table(comp),
        *(f"<p class='warn' id='data-warning'>warning: {esc(w)}</p>" for w in comp.data_warnings),
        *(f"<p class='hint stage-gap'>{esc(g.describe(comp.baseline))}</p>"
          for g in comp.stage_gaps),
        table([*header, "significance", "pairs"], rows, cls="num", id="comparison"),
    ]  # fmt: skip
    body += [f"<p class='warn'>{esc(w)}</p>" for w in comp.warnings]
    return page(f"Compare {base} vs {cand}", "".join(body))
