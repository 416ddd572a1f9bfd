"""A tiny scripted git repository for tests (real git, isolated from user config)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


class GitRepo:
    """A repository in ``path`` whose commits get fixed authors and increasing dates."""

    def __init__(self, path: Path):
        self.path = path
        self._tick = 0
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def env(self, author: str = "Dev Person <dev@example.com>") -> dict[str, str]:
        name, email = author.split(" <", 1)
        date = f"{1_700_000_000 + self._tick * 3600} +0000"
        return {
            **os.environ,
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email.rstrip(">"),
            "GIT_COMMITTER_NAME": "Committer",
            "GIT_COMMITTER_EMAIL": "c@example.com",
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_DATE": date,
        }

    def git(self, *args: str, author: str | None = None) -> str:
        env = self.env(author) if author else self.env()
        proc = subprocess.run(
            ["git", *args], cwd=self.path, env=env, capture_output=True, text=True, check=True
        )
        return proc.stdout.strip()

    def write(self, files: Mapping[str, str | None]) -> None:
        """Write (or, with None, delete) files relative to the repository."""
        for rel, text in files.items():
            target = self.path / rel
            if text is None:
                target.unlink()
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)

    def commit(
        self, message: str, files: Mapping[str, str | None] | None = None, author: str | None = None
    ) -> str:
        """Write files, stage everything and commit; return the new sha."""
        self._tick += 1
        self.write(files or {})
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message, author=author)
        return self.git("rev-parse", "HEAD")
