"""LightGBM as the LambdaMART rankers load it (docs/stages.md#learning-to-rank)."""

from __future__ import annotations

import subprocess
import sys


def test_lightgbm_imports_without_scikit_learn_which_still_imports_after() -> None:
    """LightGBM's estimator classes would load scikit-learn at every start (about two
    seconds); the native API the project uses does not need it."""
    code = (
        "import sys\n"
        "from retrieval_bench.rank_fusion.lambdamart import import_lightgbm\n"
        "lgb = import_lightgbm()\n"
        "assert hasattr(lgb, 'Booster') and 'sklearn' not in sys.modules\n"
        "import sklearn.linear_model\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
