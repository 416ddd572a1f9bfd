"""Reference extraction and path resolution (docs/stages.md#answerer) on realistic
answer snippets.

Each case is a snippet an LLM answer could contain and the references a reader
would check, as (path, start_line, end_line, symbol), hand-written.
"""

from __future__ import annotations

import pytest

from retrieval_bench.answering.paths import PathIndex, match_path, normalise_path, resolve_path
from retrieval_bench.answering.references import CodeReference, extract_references, looks_like_file

Ref = tuple[str | None, int | None, int | None, str | None]

POSITIVE: list[tuple[str, list[Ref]]] = [
    # plain paths, sentence-ending period
    (
        "The token check lives in src/shopapi/auth/tokens.py.",
        [("src/shopapi/auth/tokens.py", None, None, None)],
    ),
    (
        "See `src/shopapi/auth/tokens.py:67` for the signature check.",
        [("src/shopapi/auth/tokens.py", 67, 67, None)],
    ),
    ("Bulk discounts are computed in pricing.py:228-238.", [("pricing.py", 228, 238, None)]),
    ("See auth.py:42:7 for the column.", [("auth.py", 42, 42, None)]),
    ("Range with an en dash: auth.py:42–57.", [("auth.py", 42, 57, None)]),
    (
        "It is at src/shopapi/services/pricing.py#L228-L250 (GitHub-style anchor).",
        [("src/shopapi/services/pricing.py", 228, 250, None)],
    ),
    ("One-line anchor: http.py#L12.", [("http.py", 12, 12, None)]),
    (
        "Look at `pricing.py`, lines 228–238, and the tiers at the top.",
        [("pricing.py", 228, 238, None)],
    ),
    ("auth.py (lines 42-57) checks the header", [("auth.py", 42, 57, None)]),
    ("At http.py: line 12 the request is parsed.", [("http.py", 12, 12, None)]),
    ("(`tokens.py` L95-L100)", [("tokens.py", 95, 100, None)]),
    (
        "Lines 33 to 40 of src/shopapi/services/pricing.py define the tiers.",
        [("src/shopapi/services/pricing.py", 33, 40, None)],
    ),
    ("line 42 in `auth.py` raises", [("auth.py", 42, 42, None)]),
    ("Lines 57-42 of tokens.py are reversed.", [("tokens.py", 57, 42, None)]),
    # markdown links
    (
        "The routes are listed in [routes/__init__.py](src/shopapi/routes/__init__.py).",
        [("src/shopapi/routes/__init__.py", None, None, None)],
    ),
    (
        "See [`verify_access_token`](src/shopapi/auth/tokens.py#L67-L93).",
        [("src/shopapi/auth/tokens.py", 67, 93, "verify_access_token")],
    ),
    ("Notes are in [notes](docs/notes.adoc).", [("docs/notes.adoc", None, None, None)]),
    # symbol tied to a file
    (
        "Call `verify_access_token()` in `src/shopapi/auth/tokens.py` to validate.",
        [("src/shopapi/auth/tokens.py", None, None, "verify_access_token")],
    ),
    (
        "`PricingEngine.apply_coupon` (src/shopapi/services/pricing.py:293) rejects old codes.",
        [("src/shopapi/services/pricing.py", 293, 293, "PricingEngine.apply_coupon")],
    ),
    (
        "`hash_password` is defined in tokens.py, line 95.",
        [("tokens.py", 95, 95, "hash_password")],
    ),
    (
        "Test with tests/test_auth.py::test_expired_token_is_rejected.",
        [("tests/test_auth.py", None, None, "test_expired_token_is_rejected")],
    ),
    # normalisation: ./ prefix, Windows separators, drive letters
    (
        "On Windows the file is .\\src\\shopapi\\http.py and ./scripts/build.sh builds it.",
        [("src/shopapi/http.py", None, None, None), ("scripts/build.sh", None, None, None)],
    ),
    (
        "In C:\\work\\shopapi\\src\\shopapi\\app.py the app is created.",
        [("C:/work/shopapi/src/shopapi/app.py", None, None, None)],
    ),
    # several kinds of files, extension-less names
    (
        "Config is in pyproject.toml and settings in `settings.py`; see README.md.",
        [
            ("pyproject.toml", None, None, None),
            ("settings.py", None, None, None),
            ("README.md", None, None, None),
        ],
    ),
    (
        "Run `make build`, which calls scripts/build.sh from the Makefile.",
        [("scripts/build.sh", None, None, None), ("Makefile", None, None, None)],
    ),
    (
        "The `Dockerfile` and `.gitignore` matter.",
        [("Dockerfile", None, None, None), (".gitignore", None, None, None)],
    ),
    (
        "See the migrations/0001_initial_schema.sql file.",
        [("migrations/0001_initial_schema.sql", None, None, None)],
    ),
    (
        "Settings: config/app.yaml, data.json, setup.cfg, notes.txt.",
        [
            ("config/app.yaml", None, None, None),
            ("data.json", None, None, None),
            ("setup.cfg", None, None, None),
            ("notes.txt", None, None, None),
        ],
    ),
    # symbols
    (
        "The handler uses `Principal` and `TokenError`.",
        [(None, None, None, "Principal"), (None, None, None, "TokenError")],
    ),
    ("`TokenStore.get` returns the cached token.", [(None, None, None, "TokenStore.get")]),
    (
        "The class PricingEngine and def register_routes do the work.",
        [(None, None, None, "PricingEngine"), (None, None, None, "register_routes")],
    ),
    ("register_routes() imports every module.", [(None, None, None, "register_routes")]),
    (
        "`class TokenStore` and `def hash_password` and `fn parse_args`",
        [
            (None, None, None, "TokenStore"),
            (None, None, None, "hash_password"),
            (None, None, None, "parse_args"),
        ],
    ),
    (
        "function verifyToken and method apply_coupon",
        [(None, None, None, "verifyToken"), (None, None, None, "apply_coupon")],
    ),
    (
        "Check `self._sign` and `this.render()` in the code.",
        [(None, None, None, "_sign"), (None, None, None, "render")],
    ),
    (
        "Values like `admin` and `None` are not symbols; `ROUTE_MODULES` is.",
        [(None, None, None, "ROUTE_MODULES")],
    ),
    (
        "`verify_access_token(token, secret_key)` checks it",
        [(None, None, None, "verify_access_token")],
    ),
    ("the `Router::mount` function", [(None, None, None, "Router::mount")]),
    # duplicates keep the first occurrence; a different range is a different claim
    (
        "Mentioned twice: tokens.py and again tokens.py, then tokens.py:10.",
        [("tokens.py", None, None, None), ("tokens.py", 10, 10, None)],
    ),
    ("auth.py:42-57 and auth.py#L42-L57 are the same", [("auth.py", 42, 57, None)]),
    # code blocks: paths count, symbols in suggested code do not
    (
        "```python\ndef new_handler(request):\n    return check(request)\n```\n"
        "Put it in src/shopapi/routes/reviews.py.",
        [("src/shopapi/routes/reviews.py", None, None, None)],
    ),
    (
        "```python\n# src/shopapi/routes/health.py\nrouter = Blueprint('/health')\n```",
        [("src/shopapi/routes/health.py", None, None, None)],
    ),
]

NEGATIVE: list[str] = [
    "Docs: https://example.com/docs/setup.py and www.example.org/a.py",
    "Use [the docs](https://example.com/x.py) or [a folder](src/shopapi/).",
    "Mail support@shop.example.com or admin@docs.py if stuck.",
    "Requires Python 3.11 and version 1.2.3 of the lib; about 42.5 percent.",
    "e.g. the value is 3.14, i.e. roughly pi. Done.",
    "This function returns a value and the class is small; function main runs.",
    "It uses `json.loads` and `hmac.compare_digest` from the standard library.",
    "The frontend uses Node.js and React; see docs.rs for crates.",
    "Change lines 10 to 20 and rerun; it took 42 seconds.",
    "Backticked words `admin`, `True`, `print()`, `HTTP` and `--skip-tests` are not claims.",
    "Files like auth.pyc, notes.bak and archive.tar are not chunked sources.",
    "The config is read from ~/.config/logtool/config.yaml or $XDG_CONFIG_HOME/logtool/a.yaml.",
    "Hashes are stored as `pbkdf2$iters$salt$hash`; digits match `Nd` in Unicode.",
    "",
]


def _tuples(text: str) -> list[Ref]:
    return [(r.path, r.start_line, r.end_line, r.symbol) for r in extract_references(text)]


@pytest.mark.parametrize(("text", "expected"), POSITIVE, ids=[t[:40] for t, _ in POSITIVE])
def test_extracts_expected_references(text: str, expected: list[Ref]) -> None:
    assert _tuples(text) == expected


@pytest.mark.parametrize("text", NEGATIVE, ids=[t[:40] for t in NEGATIVE])
def test_no_false_positives(text: str) -> None:
    assert _tuples(text) == []


def test_table_is_large_enough() -> None:
    assert len(POSITIVE) + len(NEGATIVE) >= 30


def test_text_and_offset_point_at_the_match() -> None:
    answer = "First see `verify_access_token()` in tokens.py:67, then README.md."
    refs = extract_references(answer)
    assert [r.text for r in refs] == ["`verify_access_token()` in tokens.py:67", "README.md"]
    for ref in refs:
        assert answer[ref.offset : ref.offset + len(ref.text)] == ref.text


def test_references_are_frozen_and_describe_themselves() -> None:
    ref = CodeReference("auth.py", 42, 57, "verify", "auth.py:42-57", 0)
    with pytest.raises(AttributeError):
        ref.path = "x.py"  # type: ignore[misc]
    assert ref.describe() == "auth.py:42-57 `verify`"
    assert CodeReference(None, None, None, "f", "`f`", 3).describe() == "`f`"


def test_non_string_answer_is_rejected() -> None:
    with pytest.raises(TypeError, match="text must be a string"):
        extract_references(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("./src/a.py", "src/a.py"),
        (".\\src\\a.py", "src/a.py"),
        ("src//pkg/./a.py", "src/pkg/a.py"),
        ("/abs/a.py", "/abs/a.py"),
        (".", ""),
    ],
)
def test_normalise_path(raw: str, expected: str) -> None:
    assert normalise_path(raw) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("auth.py", True),
        ("x.tsx", True),
        ("Makefile", True),
        ("0001_init.sql", True),
        ("1.2.3", False),
        ("node.js", False),
        ("web/node.js", True),
        ("archive.tar", False),
    ],
)
def test_looks_like_file(name: str, expected: bool) -> None:
    assert looks_like_file(name) is expected


REPO = [
    "src/shopapi/auth/tokens.py",
    "src/shopapi/routes/__init__.py",
    "src/shopapi/db/__init__.py",
    "src/shopapi/http.py",
    "tests/test_auth.py",
    "README.md",
    "Makefile",
]


@pytest.mark.parametrize(
    ("cited", "expected"),
    [
        ("src/shopapi/auth/tokens.py", "src/shopapi/auth/tokens.py"),
        ("tokens.py", "src/shopapi/auth/tokens.py"),
        ("auth/tokens.py", "src/shopapi/auth/tokens.py"),
        ("./shopapi/auth/tokens.py", "src/shopapi/auth/tokens.py"),
        ("shopapi\\http.py", "src/shopapi/http.py"),
        ("readme.md", "README.md"),  # case-insensitive fallback
        ("/home/me/clone/src/shopapi/http.py", "src/shopapi/http.py"),
        ("C:/work/clone/Makefile", "Makefile"),
        ("okens.py", None),  # whole components only
        ("lib/auth/tokens.py", None),  # wrong folder
        ("sessions.py", None),
    ],
)
def test_resolve_path(cited: str, expected: str | None) -> None:
    assert resolve_path(cited, REPO) == expected
    assert resolve_path(cited, PathIndex(REPO)) == expected


def test_ambiguous_path_reports_candidates() -> None:
    match = match_path("__init__.py", REPO)
    assert match.path is None and match.found and match.ambiguous
    assert match.candidates == ("src/shopapi/db/__init__.py", "src/shopapi/routes/__init__.py")
    assert resolve_path("__init__.py", REPO) is None
    assert resolve_path("routes/__init__.py", REPO) == "src/shopapi/routes/__init__.py"


def test_resolve_accepts_references_and_symbol_only_ones() -> None:
    path_ref, symbol_ref = extract_references("see `tokens.py:3` and `TokenError`")
    assert resolve_path(path_ref, REPO) == "src/shopapi/auth/tokens.py"
    assert resolve_path(symbol_ref, REPO) is None
    assert not match_path(symbol_ref, REPO).found


def test_path_index_membership() -> None:
    index = PathIndex(["./a/b.py", "c.md"])
    assert "a/b.py" in index and "./c.md" in index and "b.py" not in index
    assert index.files == ("a/b.py", "c.md")
