"""A five-commit repository for the ``history`` stage's tests, and its scores by hand
(docs/stages.md#history).

::

    c1  initial project layout                   A src/a.py, src/b.py, src/c.py, src/old.py
    c2  fix crash in parser when input is empty  M src/a.py, M src/b.py, D src/old.py
    c3  rename helpers module                    R src/c.py → src/helpers.py
    c4  fix parser crash on unicode input        M src/a.py
    c5  fix parser crash again                   M src/b.py, M src/helpers.py   (the future)

A question asked at c5 with ``commit_is: parent`` (or a snapshot at c4) sees c1..c4,
ages c4 = 0, c3 = 1, c2 = 2, c1 = 3. Message tokens (the code tokenizer, stopwords
dropped): c1 3, c2 5 (fix crash parser input empty), c3 3, c4 5 (fix parser crash
unicode input), so N = 4, avgdl = 4. For the question "parser crash" both terms are
in c2 and c4 (n = 2): idf = ln(1 + 2.5 / 2.5) = ln 2, and for a 5-token message
L = 1 - 0.75 + 0.75 · 5 / 4 = 1.1875, so sim = 2 · ln 2 / (1 + 1.5 · 1.1875).
Had c5 been read, N, n and avgdl would change, and src/b.py and src/helpers.py would
gain c5's similarity.
"""

from __future__ import annotations

import math
from pathlib import Path

from tests.unit.datasets.gitrepo import GitRepo

SIM = 2 * math.log(2) / (1 + 1.5 * (1 - 0.75 + 0.75 * 5 / 4))
"""sim("parser crash", c2) = sim("parser crash", c4) (module doc)."""


def history_repo(path: Path) -> tuple[GitRepo, list[str]]:
    """The repository of the module doc and its commits c1..c5."""
    repo = GitRepo(path)
    helper = "def helper():\n    return 1\n"
    shas = [
        repo.commit(
            "initial project layout",
            {
                "src/a.py": "A = 1\n",
                "src/b.py": "B = 1\n",
                "src/c.py": helper,
                "src/old.py": "OLD = 1\n",
            },
        ),  # fmt: skip
        repo.commit(
            "fix crash in parser when input is empty",
            {"src/a.py": "A = 2\n", "src/b.py": "B = 2\n", "src/old.py": None},
        ),
        repo.commit("rename helpers module", {"src/c.py": None, "src/helpers.py": helper}),
        repo.commit("fix parser crash on unicode input", {"src/a.py": "A = 3\n"}),
        repo.commit(
            "fix parser crash again",
            {"src/b.py": "B = 3\n", "src/helpers.py": helper + "VALUE = 2\n"},
        ),
    ]
    return repo, shas
