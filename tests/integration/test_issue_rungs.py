"""The issue-reading and file-level rungs through ``rbench run`` on a tiny repository
(docs/stages.md#reading-an-issue, docs/stages.md#from-chunks-to-files).

Three bug reports in the shape of real ones: prose whose words belong to
another file, plus a traceback through site-packages naming the gold file, a
dotted ``Class.method`` whose definition is the gold, or a path in the text.
Raw ``bm25`` is drowned by the prose; the issue rungs rank each gold file
first or higher, and the file-level rung (and a fusion over it) returns
``file:<path>`` ids.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.conftest import write_jsonl

pytestmark = pytest.mark.integration

FILES = {
    "shop/report.py": (
        "def render_report(rows):\n"
        '    """Render the report of the order values: the output table of totals."""\n'
        "    value = sum(rows)\n"
        "    output = f'report {value}'\n"
        "    return output  # the report output value\n"
    ),
    "shop/ledger.py": (
        "class Ledger:\n"
        "    def post_entry(self, amount):\n"
        "        if amount < 0:\n"
        "            raise ValueError('negative amounts cannot be posted')\n"
        "        self.total += amount\n"
    ),
    "shop/checkout.py": (
        "from shop.ledger import Ledger\n\n"
        "def checkout(cart):\n"
        "    ledger = Ledger()\n"
        "    ledger.post_entry(cart.total)\n"
        "    return ledger\n"
    ),
    "shop/tax.py": (
        "class TaxTable:\n"
        "    def rate_for(self, region):\n"
        "        return RATES[region]\n\n"
        "RATES = {'eu': 0.2}\n"
    ),
    "shop/pricing.py": (
        "from shop.tax import TaxTable\n\n"
        "def price(item, region):\n"
        "    # TaxTable.rate_for gives the rate; the value of the report output\n"
        "    return item.value * (1 + TaxTable().rate_for(region))\n"
    ),
}

PROSE = (
    "When I look at the report, the value in the output is wrong. The report shows "
    "an output value that does not match the totals of the order report, and the "
    "output of the report changes every time I render it.\n"
)

QUESTIONS = [
    {
        "id": "traceback",
        "query": "Checkout crashes on refunds\n"
        + PROSE
        + "\n```\nTraceback (most recent call last):\n"
        '  File "/home/me/app/run.py", line 3, in <module>\n'
        '  File "/venv/lib/python3.11/site-packages/shop/checkout.py", line 5, in checkout\n'
        '  File "/venv/lib/python3.11/site-packages/shop/ledger.py", line 4, in post_entry\n'
        "ValueError: negative amounts cannot be posted\n```\n",
        "gold_files": ["shop/ledger.py"],
    },
    {
        "id": "dotted",
        "query": "`TaxTable.rate_for` raises KeyError for unknown regions\n" + PROSE,
        "gold_files": ["shop/tax.py"],
    },
    {
        "id": "named-path",
        "query": "Totals in shop/checkout.py are not rounded\n" + PROSE,
        "gold_files": ["shop/checkout.py"],
    },
]


@pytest.fixture
def config(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    for rel, text in FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")
    write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    cfg = {
        "name": "issue-rungs",
        "datasets": [{"name": "tiny", "questions": "q.jsonl", "snapshot": "repo"}],
        "chunker": {"name": "ast", "budget": 64},
        "retrievers": [
            {"name": "bm25"},
            {"name": "bm25", "id": "bm25-issue", "query": "issue", "path_boost": 0.5},
            {"name": "exact", "id": "exact-issue", "terms": "issue"},
            {"name": "bm25-files", "id": "files-mean", "doc": "chunks", "aggregate": "mean"},
            {  # the pipeline chosen on the dev splits (docs/stages.md#from-chunks-to-files)
                "name": "bm25-files",
                "id": "files-issue",
                "doc": "chunks",
                "aggregate": "mean",
                "test_weight": 0,
                "query": "issue",
                "path_boost": 0.5,
            },
        ],
        "fusions": [{"name": "rrf"}],
        "candidates": 20,
        "metrics": {"ks": [1, 3]},
    }
    path = tmp_path / "issue.yaml"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return path


def test_issue_rungs_find_what_raw_bm25_misses(config: Path, workspace: Path) -> None:
    from retrieval_bench.config import load_config
    from retrieval_bench.harness.run.runner import run_benchmark
    from retrieval_bench.workspace import Workspace

    result = run_benchmark(load_config(config), Workspace(workspace))
    (outcome,) = result.outcomes
    rank = {  # stage → question → rank of the gold file (0: not retrieved)
        stage: {q: round(1 / m["MRR"]) if m["MRR"] else 0 for q, m in per_q.items()}
        for stage, per_q in outcome.per_query.items()
    }
    # raw bm25 is drowned by the prose: report.py first every time
    assert rank["bm25"] == {"traceback": 2, "dotted": 3, "named-path": 3}
    # the traceback's deepest snapshot frame and its exception message
    for stage in ("bm25-issue", "exact-issue", "files-issue"):
        assert rank[stage]["traceback"] == 1, stage
    # a definition outranks the file that only calls it (pricing.py)
    assert rank["exact-issue"]["dotted"] == 1
    # a path named in prose: first for exact, lifted by the bonus for bm25
    assert rank["exact-issue"]["named-path"] == 1
    assert rank["bm25-issue"]["named-path"] == rank["files-issue"]["named-path"] == 2
    assert result.tables["all"]["files-issue"]["MRR"] > result.tables["all"]["files-mean"]["MRR"]

    runs = {s.name: s.run for s in outcome.stages}
    for stage in ("files-issue", "files-mean", "rrf"):  # rrf lifts its inputs to files
        ids = [d for docs in runs[stage].scores.values() for d in docs]
        assert ids and all(d.startswith("file:") for d in ids), stage
    assert not any(d.startswith("file:") for d in runs["bm25-issue"].scores["dotted"])
