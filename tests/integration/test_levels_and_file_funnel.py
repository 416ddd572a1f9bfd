"""A stored run with gold functions and file-level stages, as ``rbench show`` and the
web run page present it: the module- and function-level tables ``rbench run``
prints (docs/metrics.md#function-and-module-level), and the funnel of a stage
whose run holds ``file:``/``entity:`` ids (docs/metrics.md#lost-at-stage).

One tiny repository, three questions with gold functions; stages: ``bm25``, an
``external`` system's entities (``entity:`` ids, one of a file the snapshot
lacks) and ``code-graph`` reranking bm25 (``file:`` ids). A second run on the
same repository has no gold functions: it shows no level table.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pytest

from retrieval_bench.cli import EXIT_OK, main
from retrieval_bench.store.db import ResultsDB
from tests.integration.conftest import write_jsonl

if TYPE_CHECKING:
    from fastapi.testclient import TestClient

pytestmark = pytest.mark.integration

FILES = {
    "pkg/cart.py": "class Cart:\n    def add(self, item):\n        self.items.append(item)\n\n"
    "    def total(self):\n        return sum(i.price for i in self.items)\n",
    "pkg/pay.py": "from pkg.cart import Cart\n\n\ndef charge(card, cart: Cart):\n"
    "    return card.debit(cart.total())\n\n\ndef refund(card, amount):\n"
    "    return card.credit(amount)\n",
    "pkg/util.py": "def fmt_money(cents):\n    return f'{cents / 100:.2f} EUR'\n",
}
QUESTIONS = [
    {"id": "q1", "query": "How is the cart total computed?", "gold_files": ["pkg/cart.py"],
     "gold_functions": ["pkg/cart.py:Cart.total"]},
    {"id": "q2", "query": "How is a card charged for a cart?",
     "gold_files": ["pkg/pay.py", "pkg/cart.py"],
     "gold_functions": ["pkg/pay.py:charge", "pkg/cart.py:Cart.total"]},
    {"id": "q3", "query": "How is money formatted?", "gold_files": ["pkg/util.py"],
     "gold_functions": ["pkg/util.py:fmt_money"]},
]  # fmt: skip
ENTITIES = [  # another system's found_entities, best first
    {"instance_id": "q1", "found_entities": ["pkg/util.py:fmt_money", "pkg/cart.py:Cart.total"]},
    {"instance_id": "q2", "found_entities": ["pkg/pay.py:charge", "vendor/other.py:x"]},
    {"instance_id": "q3", "found_entities": ["pkg/cart.py:Cart.add"]},
]


@dataclass(frozen=True)
class Runs:
    home: Path
    with_functions: str
    without: str


def _run(tmp: Path, name: str, questions: Sequence[Mapping[str, object]]) -> str:
    cfg = {
        "name": name,
        "datasets": [{"name": "tiny", "questions": str(write_jsonl(tmp / f"{name}.jsonl",
                                                                   list(questions))),
                      "snapshot": str(tmp / "repo")}],
        "retrievers": [{"name": "bm25"},
                       {"name": "external", "id": "ext", "path": str(tmp / "ents.jsonl"),
                        "field": "found_entities"}],
        "rerankers": [{"name": "code-graph", "id": "graph", "inputs": ["bm25"]}],
        "table_k": 5,
    }  # fmt: skip
    path = tmp / f"{name}.yaml"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    assert main(["run", str(path), "--json"]) == EXIT_OK
    with ResultsDB(tmp / "home" / "rbench.sqlite") as db:
        return next(r.id for r in db.list_runs() if r.name == name)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    tmp = tmp_path_factory.mktemp("levels")
    for rel, text in FILES.items():
        (tmp / "repo" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / "repo" / rel).write_text(text, encoding="utf-8")
    write_jsonl(tmp / "ents.jsonl", list(ENTITIES))
    plain = [{k: v for k, v in q.items() if k != "gold_functions"} for q in QUESTIONS]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RBENCH_HOME", str(tmp / "home"))
        mp.setenv("RBENCH_CACHE", str(Path(__file__).resolve().parents[2] / ".rbench" /
                                      "test-cache"))  # fmt: skip
        return Runs(tmp / "home", _run(tmp, "fn", QUESTIONS), _run(tmp, "plain", plain))


def _show(runs: Runs, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RBENCH_HOME", str(runs.home))
        assert main(["show", *args]) == EXIT_OK
    return capsys.readouterr().out


def _row(text: str, title: str, stage: str) -> list[str]:
    """The cells of ``stage``'s row in the text table below the line holding ``title``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if title in line)
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        if line.split()[0] == stage:
            return line.split()[1:]
    raise AssertionError(f"no row {stage!r} under {title!r}:\n{text}")


def test_show_prints_the_module_and_function_tables(
    runs: Runs, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _show(runs, capsys, runs.with_functions)
    scope = "LocAgent conventions; 3 of 3 queries with gold functions"  # the default rules
    module_title = f"fn [all] module level ({scope}, k=5)"
    function_title = f"fn [all] function level ({scope}, k=5)"
    assert module_title in out and function_title in out, out
    assert out.index("fn [all] run ") < out.index(module_title) < out.index(function_title)
    header = _row(out, function_title, "stage")
    assert header == ["function_Acc@1", "function_Acc@3", "function_Acc@5", "function_Acc@10",
                      "function_R@5", "function_MRR", "function_nDCG@5"]  # fmt: skip
    with ResultsDB(runs.home / "rbench.sqlite") as db:
        table = db.stage_table(runs.with_functions)
    # ext names q1's gold function 2nd, q2's charge 1st (1 of its 2), q3's none:
    # function_R@5 = (1 + 1/2 + 0) / 3, function_MRR = (1/2 + 1 + 0) / 3
    ext = table["ext"]
    assert ext["function_R@5"] == pytest.approx(0.5) and ext["function_MRR"] == pytest.approx(0.5)
    for stage in ("bm25", "ext", "graph"):
        row = _row(out, function_title, stage)
        want = [table[stage].get(c) for c in header]
        assert row == ["-" if v is None else f"{v:.3f}" for v in want], (stage, out)
        assert _row(out, module_title, stage)[-2] == f"{table[stage]['module_MRR']:.3f}"
    # markdown (a report, --out included) holds them too; a CSV stays the one stage table
    md = _show(runs, capsys, runs.with_functions, "--format", "markdown")
    assert f"**{function_title}**" in md and "| function_MRR |" in md
    csv = _show(runs, capsys, runs.with_functions, "--format", "csv")
    assert "function_" not in csv and "module level" not in csv


def test_show_prints_no_level_table_without_gold_functions(
    runs: Runs, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _show(runs, capsys, runs.without)
    assert "plain [all] run " in out
    assert "module level" not in out and "function level" not in out and "function_" not in out


def _funnel_rows(html: str) -> dict[str, list[str]]:
    """Step label → the cells of the funnel table (id ``funnel``)."""
    body = html.split('id="funnel"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr>(.*?)</tr>", body, flags=re.S)
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", r, flags=re.S) for r in rows]
    return {c[0]: c[1:] for c in cells if c}


@pytest.fixture(scope="module")
def client(runs: Runs) -> TestClient:
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")  # FastAPI's TestClient needs it
    from retrieval_bench.web.app import create_app
    from retrieval_bench.workspace import Workspace
    from tests.unit.web.conftest import web_client

    return web_client(create_app(Workspace(runs.home)))


def test_web_run_page_has_the_module_and_function_tables(client: TestClient, runs: Runs) -> None:
    with ResultsDB(runs.home / "rbench.sqlite") as db:
        table = db.stage_table(runs.with_functions)
    page = client.get(f"/runs/{runs.with_functions}")
    assert page.status_code == 200
    text = page.text
    assert 'id="module-level"' in text and 'id="function-level"' in text
    assert "<th>function_Acc@10</th>" in text and "<th>module_nDCG@5</th>" in text
    levels = text.split('id="function-level"', 1)[1].split("</table>", 1)[0]
    assert f"<td>ext</td><td>{table['ext']['function_Acc@1']:.3f}</td>" in levels
    # a run without gold functions: no level table
    plain = client.get(f"/runs/{runs.without}")
    assert plain.status_code == 200 and "<th>R@5</th>" in plain.text
    assert '-level"' not in plain.text and "function_" not in plain.text


def test_web_funnel_reads_the_files_of_file_level_stages(client: TestClient, runs: Runs) -> None:
    # ext's entities: q1's cart.py (1 of 1), q2's pay.py (1 of 2), q3 nothing (0 of 1)
    # and vendor/other.py, not in the snapshot: 2 of 4 gold files, 2 lost before it
    page = client.get(f"/runs/{runs.with_functions}?stage=ext")
    assert page.status_code == 200
    funnel = _funnel_rows(page.text)
    assert funnel["candidates (ext)"] == ["0.500", "2/4", "0.500", "2"], funnel
    assert funnel["context (top 5 files of ext)"] == ["0.500", "2/4", "0.500", "0"], funnel

    # code-graph on bm25 (file: ids): its step holds what its stored run scores
    with ResultsDB(runs.home / "rbench.sqlite") as db:
        stored = db.stage_table(runs.with_functions)["graph"]
        per_query = db.query_metrics(runs.with_functions, "graph")
    gold = {str(q["id"]): len(cast(list[str], q["gold_files"])) for q in QUESTIONS}
    found = round(sum(m["R@10"] * gold[q] for q, m in per_query.items()))
    assert found > 0  # three files in the repository: the whole list is its top 10
    page = client.get(f"/runs/{runs.with_functions}?stage=graph")
    assert page.status_code == 200
    funnel = _funnel_rows(page.text)
    assert funnel["reranked (graph)"][:2] == [f"{stored['R@10']:.3f}", f"{found}/4"], funnel
    assert funnel["context (top 5 files of graph)"][0] == f"{stored['R@5']:.3f}", funnel
