"""The code graph of a snapshot: module names, import resolution (absolute, relative,
``src/`` layout, re-exports), used names, definitions and rarity."""

from __future__ import annotations

import math
import pickle
from pathlib import Path

import pytest

from retrieval_bench.corpus import Corpus
from retrieval_bench.files import SourceFile
from retrieval_bench.retrieval.code_facts import cached_facts, parse_facts
from retrieval_bench.retrieval.code_graph_index import CodeGraphIndex, graph_index, module_names
from tests.unit.retrieval.conftest import window_chunks

# A tiny shop: a src/ layout package, a script folder without __init__.py, a test
# folder, a file that does not parse and one that only *calls* a name defined elsewhere.
REPO = {
    "src/shop/__init__.py": "from .cart import Cart\n",
    "src/shop/cart.py": (
        "from .pricing import total\n"
        "from shop.util.money import round_cents\n"
        "import shop.tax as tax\n"
        "\n"
        "class Cart:\n"
        "    def checkout(self):\n"
        "        return round_cents(total(self)) + tax.vat(self)\n"
    ),
    "src/shop/pricing.py": "def total(cart):\n    return sum(cart.items)\n",
    "src/shop/util/__init__.py": "",
    "src/shop/util/money.py": "def round_cents(x):\n    return round(x, 2)\n",
    "src/shop/tax.py": "def vat(cart):\n    return 0\n\nRATE = 0.2\n",
    "src/shop/report.py": (
        "from shop import Cart\n\ndef report(cart: Cart):\n    return cart.render_summary()\n"
    ),
    "src/shop/render.py": "def render_summary(x):\n    return str(x)\n",
    "src/shop/broken.py": "def oops(:\n    pass\n",
    "src/shop/mention.py": "def helper():\n    return apply_discount(1)\n",
    "src/shop/discount.py": (
        "try:\n    import fast\nexcept ImportError:\n    SPEED = 1\n\n"
        "def apply_discount(price):\n    return price\n"
    ),
    "scripts/run.py": "import helpers\nhelpers.main()\n",
    "scripts/helpers.py": "def main():\n    pass\n",
    "tests/test_cart.py": (
        "from shop.cart import Cart\n\ndef test_checkout():\n    Cart().checkout()\n"
    ),
    "README.md": "# shop\nCall apply_discount to lower a price.\n",
}


def write_repo(root: Path, files: dict[str, str] = REPO) -> Corpus:
    """``files`` written under ``root``, chunked in 3-line windows."""
    chunks = []
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        chunks += window_chunks(SourceFile(rel, text, "python"), 3)
    return Corpus(root, chunks)


def test_module_names_start_at_the_topmost_package() -> None:
    packages = {"src/shop", "src/shop/util"}
    assert module_names("src/shop/cart.py", packages) == ("shop.cart", "src.shop.cart")
    assert module_names("src/shop/util/__init__.py", packages) == ("shop.util", "src.shop.util")
    assert module_names("src/shop/__init__.py", packages) == ("shop", "src.shop")
    assert module_names("scripts/run.py", packages) == ("run", "scripts.run")
    assert module_names("setup.py", packages) == ("setup", "setup")


def test_parse_facts_reads_definitions_imports_and_uses() -> None:
    facts = parse_facts(REPO["src/shop/cart.py"])
    assert facts is not None
    assert facts.defines == {"Cart", "checkout"}
    assert {(r.level, r.module, r.name, r.alias) for r in facts.imports} == {
        (1, "pricing", "total", "total"),
        (0, "shop.util.money", "round_cents", "round_cents"),
        (0, "shop.tax", None, "tax"),
    }
    # imported names and own definitions are not "uses"; attribute reads are
    assert facts.uses == {"vat"}
    assert ("tax", "vat") in facts.module_attrs
    top = parse_facts(
        "X = 1\na, (b, c) = 1, (2, 3)\nif True:\n    Y: int = 2\ndef f():\n    z = 3\n"
    )
    assert top is not None and top.defines == {"X", "a", "b", "c", "Y", "f"}  # not z
    assert parse_facts("def oops(:\n") is None
    assert parse_facts("x = '\\d'\n") is not None  # a SyntaxWarning is not a failure


def test_imports_resolve_relative_absolute_src_layout_and_aliases(tmp_path: Path) -> None:
    index = CodeGraphIndex(write_repo(tmp_path))
    assert index.edges("src/shop/cart.py").imports == {
        "src/shop/pricing.py": 1.0,  # from .pricing import total
        "src/shop/util/money.py": 1.0,  # from shop.util.money import ... (src/ layout)
        "src/shop/tax.py": 1.0,  # import shop.tax as tax; tax.vat
    }
    # `from shop import Cart` follows the package's re-export to the defining file
    assert index.edges("src/shop/report.py").imports == {"src/shop/cart.py": 1.0}
    assert index.edges("tests/test_cart.py").imports == {"src/shop/cart.py": 1.0}
    # a script folder: `import helpers` is the sibling file
    assert index.edges("scripts/run.py").imports == {"scripts/helpers.py": 1.0}
    # a module outside the snapshot (`import fast`) resolves to nothing
    assert index.edges("src/shop/discount.py").imports == {}


def test_used_names_link_to_their_definers_by_rarity(tmp_path: Path) -> None:
    files = dict(REPO)
    files["src/shop/alt_render.py"] = "def render_summary(x):\n    return repr(x)\n"
    index = CodeGraphIndex(write_repo(tmp_path, files))
    # `cart.render_summary()` is not imported: two definers share the edge
    assert index.edges("src/shop/report.py").uses == {
        "src/shop/render.py": 0.5,
        "src/shop/alt_render.py": 0.5,
    }
    assert index.edges("src/shop/mention.py").uses == {"src/shop/discount.py": 1.0}


def test_definitions_not_mentions_and_idf(tmp_path: Path) -> None:
    index = CodeGraphIndex(write_repo(tmp_path))
    assert index.definers["apply_discount"] == ("src/shop/discount.py",)
    assert index.definers["SPEED"] == ("src/shop/discount.py",)  # assigned in a module-level try
    assert "helper" in index.definers and "fast" not in index.definers
    n = len(index.facts)
    assert n == 12  # 14 Python files: an empty one has no chunks, one does not parse
    assert index.idf("apply_discount") == pytest.approx(1.0)
    assert index.idf("render_summary") == pytest.approx(1.0)
    assert index.idf("nowhere") == 0.0
    files = dict(REPO, **{"src/shop/alt.py": "def total(c):\n    return 0\n"})
    two = CodeGraphIndex(write_repo(tmp_path / "two", files))
    m = len(two.facts)
    assert two.idf("total") == pytest.approx(math.log(1 + m / 2) / math.log(1 + m))


def test_a_file_that_does_not_parse_is_skipped(tmp_path: Path) -> None:
    index = CodeGraphIndex(write_repo(tmp_path))
    assert index.unparsed == ["src/shop/broken.py"]
    assert "oops" not in index.definers
    assert index.edges("src/shop/broken.py").imports == {}
    assert index.edges("README.md").uses == {}


def test_ambiguous_modules_resolve_to_none_unless_local(tmp_path: Path) -> None:
    files = {f"tool{i}/common.py": "def c():\n    pass\n" for i in range(4)}
    files["tool0/main.py"] = "import common\n"
    files["other/main.py"] = "import common\n"
    index = CodeGraphIndex(write_repo(tmp_path, files))
    assert index.edges("tool0/main.py").imports == {"tool0/common.py": 1.0}
    assert index.edges("other/main.py").imports == {}


def test_an_empty_init_file_on_disk_still_makes_a_package(tmp_path: Path) -> None:
    corpus = write_repo(tmp_path)
    assert "src/shop/util/__init__.py" not in corpus.paths  # no text, no chunks
    index = CodeGraphIndex(corpus)
    assert index.module_files("x.py", 0, "shop.util.money") == ["src/shop/util/money.py"]
    assert index.module_files("x.py", 0, "shop.util") == []  # not a corpus file
    # the dotted path's tail also finds a module (here: without the package root)
    assert index.module_files("x.py", 0, "util.money") == ["src/shop/util/money.py"]


def test_text_comes_from_the_chunks_when_the_tree_is_gone(tmp_path: Path) -> None:
    corpus = write_repo(tmp_path / "tree")
    gone = Corpus(tmp_path / "nowhere", corpus.chunks)
    assert CodeGraphIndex(gone).edges("src/shop/cart.py").imports == (
        CodeGraphIndex(corpus).edges("src/shop/cart.py").imports
    )


def test_graph_index_is_built_once_per_corpus_object(tmp_path: Path) -> None:
    one = write_repo(tmp_path / "one")
    other = write_repo(tmp_path / "two", {"a.py": "def total():\n    pass\n"})
    assert graph_index(one) is graph_index(one)
    assert graph_index(other) is not graph_index(one)
    assert graph_index(other).definers["total"] == ("a.py",)
    assert graph_index(one).definers["total"] == ("src/shop/pricing.py",)
    copy = pickle.loads(pickle.dumps(one))  # another object, same tree: its own index
    assert graph_index(copy) is not graph_index(one)
    assert graph_index(copy).definers == graph_index(one).definers


def test_parsed_facts_are_remembered_by_content() -> None:
    text = "def remembered_once():\n    pass\n"
    assert cached_facts(text) is cached_facts(str(text))
    assert cached_facts(text + "\n") is not cached_facts(text)
    assert cached_facts("def broken(:\n") is None
