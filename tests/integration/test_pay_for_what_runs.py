"""Pay only for what runs (docs/architecture.md#imports): a run whose stages need
no vector index, no statistics library beyond the paired randomisation test and
no model never imports LanceDB/pyarrow, scipy.stats/scipy.special, torch,
sentence-transformers, Ray or the OpenAI client. Checked in a fresh process (a real
``rbench run`` on the bundled fixture repo), by the modules it has loaded at the end.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.integration.conftest import FIXTURES, REPO_ROOT

HEAVY = (
    "lancedb", "pyarrow", "scipy.stats", "scipy.special", "torch",
    "sentence_transformers", "ray", "openai", "onnxruntime", "onnx",
)  # fmt: skip

SCRIPT = """
import json, sys
from retrieval_bench.cli import main
code = main(sys.argv[1:])
heavy = json.loads(HEAVY)
print(json.dumps({"code": code, "loaded": sorted(m for m in heavy if m in sys.modules)}))
"""


def test_a_lexical_run_imports_no_heavy_library(tmp_path: Path) -> None:
    config = {
        "name": "lexical",
        "datasets": [{"name": "shopapi",
                      "questions": str(FIXTURES / "shopapi" / "questions.jsonl"),
                      "snapshot": str(FIXTURES / "shopapi")}],
        "retrievers": [{"name": "bm25"}, {"name": "exact"}],
        "fusions": [{"name": "rrf"}],
        "table_k": 5,
    }  # fmt: skip
    path = tmp_path / "lexical.json"
    path.write_text(json.dumps(config))
    script = SCRIPT.replace("HEAVY", repr(json.dumps(HEAVY)))
    out = subprocess.run(
        [sys.executable, "-c", script, "--workspace", str(tmp_path / "ws"), "run", str(path)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"code": 0, "loaded": []}, out.stderr[-2000:]
