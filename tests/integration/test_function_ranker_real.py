"""The ``function-ranker`` fusion end to end (docs/stages.md#function-ranker): a run
records the candidates' feature rows, ``rbench fit-functions`` fits a model file
cross-fitted by dataset from them, and a second run with ``model_file`` ranks each
question's functions with the fold model that did not see its dataset — the same
order as the stored model gives offline on the recorded rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from retrieval_bench.cli import main
from retrieval_bench.config import parse_config
from retrieval_bench.harness.run.runner import run_benchmark
from retrieval_bench.rank_fusion.function_model import FunctionModel
from retrieval_bench.store.trec import read_run
from retrieval_bench.workspace import Workspace

REPOS = {
    "shop": {
        "shop/cart.py": (
            "class Cart:\n    def add_item(self, item):\n        self.items.append(item)\n\n"
            "    def remove_item(self, item):\n        self.items.remove(item)\n\n\n"
            "def cart_total(cart):\n    return sum(i.price for i in cart.items)\n"
        ),
        "shop/pricing.py": (
            "def apply_discount(price, rate):\n    return price * (1 - rate)\n\n\n"
            "def round_price(price):\n    return round(price, 2)\n"
        ),
        "shop/email.py": "def send_receipt(order):\n    return f'receipt {order}'\n",
    },
    "bank": {
        "bank/account.py": (
            "class Account:\n    def deposit(self, amount):\n        self.balance += amount\n\n"
            "    def withdraw(self, amount):\n        self.balance -= amount\n"
        ),
        "bank/interest.py": (
            "def monthly_interest(balance, rate):\n    return balance * rate / 12\n\n\n"
            "def yearly_interest(balance, rate):\n    return balance * rate\n"
        ),
        "bank/audit.py": "def audit_log(event):\n    print(event)\n",
    },
}
QUESTIONS = {
    "shop": [
        ("add_item loses the item", "shop/cart.py:Cart.add_item"),
        ("remove_item raises when the cart is empty", "shop/cart.py:Cart.remove_item"),
        ("cart_total ignores the quantity", "shop/cart.py:cart_total"),
        ("apply_discount gives a negative price", "shop/pricing.py:apply_discount"),
        ("round_price rounds half down", "shop/pricing.py:round_price"),
        ("send_receipt has no order number", "shop/email.py:send_receipt"),
    ],
    "bank": [
        ("deposit of a negative amount is accepted", "bank/account.py:Account.deposit"),
        ("withdraw allows an overdraft", "bank/account.py:Account.withdraw"),
        ("monthly_interest divides by the wrong months", "bank/interest.py:monthly_interest"),
        ("yearly_interest is not compounded", "bank/interest.py:yearly_interest"),
        ("audit_log prints instead of logging", "bank/audit.py:audit_log"),
    ],
}


def _datasets(tmp_path: Path) -> list[dict[str, Any]]:
    out = []
    for name, files in REPOS.items():
        root = tmp_path / name
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        # the dataset's name is a token of every path: each input ranks every file
        asked = [(f"{name}: {q}", g) for q, g in QUESTIONS[name]]
        asked += [(f"{name}: since the last release {q.split()[0]} is broken", g)
                  for q, g in QUESTIONS[name]]  # fmt: skip
        rows = [{"id": f"{name}-{i}", "query": q, "gold_files": [g.split(":")[0]],
                 "gold_functions": [g]} for i, (q, g) in enumerate(asked)]  # fmt: skip
        questions = tmp_path / f"{name}.jsonl"
        questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
        out.append({"name": name, "questions": str(questions), "snapshot": str(root)})
    return out


def _run(tmp_path: Path, home: Path, fusion: dict[str, Any]) -> Path:
    cfg = {
        "name": "functions",
        "datasets": _datasets(tmp_path),
        "retrievers": [{"name": "bm25"}, {"name": "bm25-files", "id": "files"}],
        "fusions": [{"name": "function-ranker", "id": "fr", "inputs": ["bm25", "files"],
                     "top_n": 3, **fusion}],
        "candidates": 20,
        "metrics": {"levels": ["file", "module", "function"]},
    }  # fmt: skip
    result = run_benchmark(parse_config(cfg, base_dir=tmp_path), Workspace(home))
    assert result.out_dir is not None
    for outcome in result.outcomes:
        per_query = outcome.per_query["fr"]
        assert all("function_MRR" in m for m in per_query.values())
    return result.out_dir


def test_record_fit_then_rank_functions(tmp_path: Path, workspace: Path, capsys: Any) -> None:
    train_dir = _run(tmp_path, workspace, {"record_features": True})
    art = train_dir / "artifacts" / "shop" / "fr.jsonl"
    first = json.loads(art.read_text().splitlines()[0])
    assert first["query_id"] == "shop-0" and first["artifact"]["sources"] == ["bm25", "files"]
    model_file = tmp_path / "fr.json"
    code = main(["--workspace", str(workspace), "fit-functions", str(train_dir), "--stage", "fr",
                 "--cross-fit", "dataset", "--rounds", "20", "--out", str(model_file)])  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "function-ranker: 22 questions" in printed and "out of fold (22)" in printed
    model = FunctionModel.load(model_file)
    assert {f.dataset for f in model.folds} == {"shop", "bank"}
    assert model.meta["training"]["stage_params"]["top_n"] == 3
    # the file says how to rebuild it: the fitting command and the run's config
    assert model.meta["training"]["command"] == (
        f"rbench fit-functions {train_dir} --stage fr --cross-fit dataset --folds 5 "
        f"--rounds 20 --seed 0 --conventions locagent --out {model_file}"
    )
    assert [r["config"] for r in model.meta["training"]["runs"]] == ["functions"]

    eval_dir = _run(tmp_path, workspace, {"model_file": str(model_file)})
    for ds in ("shop", "bank"):
        live = read_run(eval_dir / "runs" / ds / "fr.trec")
        rows = [json.loads(line) for line in (train_dir / "artifacts" / ds / "fr.jsonl").open()]
        for rec in rows:
            q, cands = rec["query_id"], rec["artifact"]["candidates"]
            booster, held_out = model.model_for(q)
            assert held_out and booster is next(f.model for f in model.folds if f.dataset == ds)
            scores = booster.predict(np.asarray([r for _, r in cands], dtype=np.float64))
            offline = sorted(zip((-scores).tolist(), [e for e, _ in cands], strict=True))
            assert live.ids(q) == [f"entity:{e}" for _, e in offline][:20], q


def test_fit_functions_refuses_runs_it_cannot_learn_from(
    tmp_path: Path, workspace: Path, capsys: Any
) -> None:
    run_dir = _run(tmp_path, workspace, {})  # features not recorded
    ws = ["--workspace", str(workspace), "fit-functions", str(run_dir), "--out"]
    for stage, message in [
        ("fr", "has no recorded features of 'fr' for dataset shop"),
        ("bm25", "has no function-ranker stage 'bm25' (its fusions: ['fr'])"),
    ]:
        assert main([*ws, str(tmp_path / "m.json"), "--stage", stage]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err
    assert main([*ws, str(tmp_path), "--stage", "fr"]) == 2  # --out is a folder
    assert "is a folder" in capsys.readouterr().err
