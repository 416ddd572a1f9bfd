"""The prompt lab's default model: a local server ``rbench serve`` started on
demand for a prompt run is let go when the app shuts down (it stops unless the
user started it with ``rbench llm start``), as ``rbench run`` lets go of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")  # FastAPI's TestClient needs it

from retrieval_bench.llm import factory  # noqa: E402
from retrieval_bench.web.app import create_app  # noqa: E402
from retrieval_bench.workspace import Workspace  # noqa: E402
from tests.unit.web.conftest import web_client  # noqa: E402


class _Client:
    """A stand-in for the model client whose server hold counts releases."""

    def __init__(self) -> None:
        self.server_hold = self
        self.released = 0

    def release(self, keep: bool = False) -> bool:
        self.released += 1
        return True


def test_the_labs_model_server_is_let_go_when_the_app_shuts_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[_Client] = []

    def make_llm(*_args: Any, **_kwargs: Any) -> _Client:
        made.append(_Client())
        return made[-1]

    monkeypatch.setattr(factory, "make_llm", make_llm)
    app = create_app(Workspace(tmp_path / "ws"))
    with web_client(app) as client:  # startup … shutdown
        assert client.get("/").status_code == 200
    assert made == []  # no prompt run: no model made, nothing to let go
    app = create_app(Workspace(tmp_path / "ws"))
    with web_client(app):
        llm = app.state.llm()  # what a prompt run asks for
        assert llm is made[0] and llm.released == 0
    assert made[0].released == 1
