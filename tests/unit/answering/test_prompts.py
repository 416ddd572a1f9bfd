"""Answer prompts (docs/stages.md#answerer): the four rungs, the context block and its token
budget, and the file tree of the common ancestor folder."""

from __future__ import annotations

import pytest

from retrieval_bench.answering.prompts import (
    NO_CONTEXT,
    RUNGS,
    build_context,
    common_ancestor,
    format_chunk,
    load_answer_prompt,
    render_prompt,
    tree_of,
)
from retrieval_bench.chunking.tokenizer import RegexTokenizer
from retrieval_bench.config import ANSWER_RUNGS
from retrieval_bench.errors import ConfigError
from retrieval_bench.types import Chunk

TOK = RegexTokenizer()


def chunk(
    cid: str, path: str = "a.py", text: str = "x = 1", lines: tuple[int, int] = (1, 2)
) -> Chunk:
    return Chunk(cid, path, lines[0], lines[1], "python", "function", None, text)


def test_config_and_prompts_name_the_same_rungs() -> None:
    assert ANSWER_RUNGS == RUNGS == ("bare", "instructions", "where_to_look", "file_tree")


def test_bare_rung_is_snippets_and_question_only() -> None:
    system, user = render_prompt("bare", "Where is X?", "CONTEXT")
    assert system is None
    assert user == "CONTEXT\n\nQuestion: Where is X?"


def test_instructions_rung_asks_for_citations_and_no_unseen_code() -> None:
    system, user = render_prompt("instructions", "Where is X?", "CONTEXT")
    assert system is not None
    assert "Use only the information given to you" in system
    assert "Cite the specific files and code snippets" in system and "path:start-end" in system
    assert "Do not discuss any code that was not shown to you" in system
    assert "not enough information" not in system  # that is the next rung
    assert "CONTEXT" in user and user.index("CONTEXT") < user.index("Question: Where is X?")


def test_where_to_look_rung_adds_the_not_enough_information_sentence() -> None:
    system, user = render_prompt("where_to_look", "Where is X?", "CONTEXT")
    instructions, _ = render_prompt("instructions", "Where is X?", "CONTEXT")
    assert system is not None and instructions is not None
    assert system.startswith(instructions)  # the previous rung, plus one sentence
    assert (
        "If there is not enough information to answer the question, say so and suggest where "
        "in the repository the user could look to learn more." in system
    )
    assert "say where to look" in user


def test_file_tree_rung_shows_the_tree_before_the_snippets() -> None:
    system, user = render_prompt(
        "file_tree", "Q?", "CONTEXT", tree_root="src/shop", tree="routes/\n  a.py"
    )
    assert system is not None and "suggest where in the repository" in system
    assert user.startswith("Files under src/shop/:\nroutes/\n  a.py\n\nCode snippets:\n\nCONTEXT")
    # the other rungs ignore the tree
    assert "routes/" not in render_prompt("where_to_look", "Q?", "C", tree="routes/")[1]


def test_unknown_rung_is_a_config_error_naming_the_choices() -> None:
    with pytest.raises(ConfigError, match="unknown rung 'fancy'; choose one of: bare, "):
        load_answer_prompt("fancy")


def test_chunk_block_is_header_and_fence() -> None:
    assert format_chunk(chunk("a", "src/a.py", "x = 1", (3, 4))) == (
        "src/a.py:3-4\n```python\nx = 1\n```"
    )
    text = "doc = '''\n```js\nalert(1)\n```\n'''"
    block = format_chunk(chunk("b", "b.py", text))
    assert block.startswith("b.py:1-2\n````python\n") and block.endswith("\n````")
    plain = Chunk("c", "NOTES", 1, 1, "text", "window", None, "hello")
    assert format_chunk(plain) == "NOTES:1-1\n```\nhello\n```"


def test_budget_keeps_the_best_chunks_that_fit_and_drops_the_rest() -> None:
    chunks = [chunk("c1"), chunk("c2"), chunk("c3")]
    # "a.py:1-2\n```python\nx = 1\n```" is 17 regex tokens: a . py : 1 - 2 ``` python x = 1 ```
    assert TOK.count(format_chunk(chunks[0])) == 17
    ctx = build_context(chunks, TOK, 34)
    assert [c.id for c in ctx.chunks] == ["c1", "c2"] and [c.id for c in ctx.dropped] == ["c3"]
    assert ctx.tokens == 34
    ctx = build_context(chunks, TOK, 33)
    assert [c.id for c in ctx.chunks] == ["c1"] and [c.id for c in ctx.dropped] == ["c2", "c3"]
    assert ctx.text == format_chunk(chunks[0])
    ctx = build_context(chunks, TOK, 51)
    assert len(ctx.chunks) == 3 and ctx.dropped == ()
    assert ctx.text.count("a.py:1-2") == 3 and "\n\n" in ctx.text


def test_a_lower_ranked_small_chunk_does_not_jump_the_queue() -> None:
    big = chunk("big", text="\n".join(f"y{i} = {i}" for i in range(20)))
    ctx = build_context([chunk("c1"), big, chunk("c3")], TOK, 40)
    assert [c.id for c in ctx.chunks] == ["c1"]
    assert [c.id for c in ctx.dropped] == ["big", "c3"]


def test_best_chunk_alone_over_budget_is_cut_not_dropped() -> None:
    text = "\n".join(f"value_{i} = compute({i})" for i in range(50))
    ctx = build_context([chunk("big", text=text), chunk("c2")], TOK, 60)
    (block,) = ctx.blocks
    assert block.truncated and block.tokens <= 60
    assert block.text.startswith("a.py:1-2\n```python\nvalue_0 = compute(0)\n")
    assert block.text.endswith("\n...\n```")
    assert [c.id for c in ctx.dropped] == ["c2"]


def test_no_chunks_says_so() -> None:
    ctx = build_context([], TOK, 100)
    assert ctx.blocks == () and ctx.text == NO_CONTEXT


def test_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_context_tokens"):
        build_context([chunk("a")], TOK, 0)


@pytest.mark.parametrize(
    ("paths", "ancestor"),
    [
        (["src/shop/routes/a.py", "src/shop/services/c.py"], "src/shop"),
        (["src/shop/routes/a.py", "src/shop/routes/b.py"], "src/shop/routes"),
        (["src/shop/routes/a.py"], "src/shop/routes"),
        (["src/a.py", "Makefile"], ""),
        (["src/a.py", "srcx/b.py"], ""),  # whole components, not string prefixes
        ([], ""),
    ],
)
def test_common_ancestor(paths: list[str], ancestor: str) -> None:
    assert common_ancestor(paths) == ancestor


FILES = [
    "README.md",
    "docs/guide.md",
    "src/shop/__init__.py",
    "src/shop/routes/a.py",
    "src/shop/routes/b.py",
    "src/shop/services/c.py",
    "src/shopx/other.py",
]


def test_tree_of_the_common_ancestor_lists_only_files_below_it() -> None:
    root, tree = tree_of(["src/shop/routes/a.py", "src/shop/services/c.py"], FILES)
    assert root == "src/shop"
    assert tree.splitlines() == ["__init__.py", "routes/", "  a.py", "  b.py", "services/c.py"]
    root, tree = tree_of(["README.md", "src/shop/routes/a.py"], FILES)
    assert root == "." and "docs/guide.md" in tree and "shopx/other.py" in tree


def test_tree_is_capped_in_lines() -> None:
    files = [f"pkg/mod{i:02d}/file{j}.py" for i in range(30) for j in range(3)]
    root, tree = tree_of(["pkg/mod00/file0.py", "pkg/mod29/file2.py"], files, max_lines=8)
    assert root == "pkg"
    lines = tree.splitlines()
    assert 1 < len(lines) <= 8
    root, tree = tree_of(["pkg/mod00/file0.py", "pkg/mod29/file2.py"], files, max_lines=200)
    assert len(tree.splitlines()) > 8  # the cap, not the renderer, limited it above


def test_tree_without_files() -> None:
    assert tree_of(["a/b.py"], []) == ("a", "(no files)")
