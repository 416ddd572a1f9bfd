"""The ``ast`` chunker on one small source per language (docs/stages.md#ast).

Each sample is chunked at a budget where the file is too big, its class (or
outer function) is collapsed and every member fits; the expected structure is
written out by hand from the sample's line numbers.
"""

from __future__ import annotations

import pytest

from tests.unit.chunking.helpers import ast_chunks, check_invariants, spans
from tests.unit.chunking.samples import ALL, BUDGETS

EXPECTED: dict[str, list[tuple[str, str | None, int, int]]] = {
    "pkg/index.py": [
        ("window", None, 1, 4),
        ("collapsed", "CodebaseIndex", 7, 26),
        ("method", "CodebaseIndex.__init__", 12, 15),
        ("method", "CodebaseIndex.exists", 17, 19),
        ("method", "CodebaseIndex.size", 21, 26),
        ("function", "helper", 29, 30),
    ],
    "src/loader.js": [
        ("window", None, 1, 3),
        ("collapsed", "Loader", 5, 26),
        ("method", "Loader.constructor", 8, 11),
        ("method", "Loader.load", 13, 20),
        ("method", "Loader.clear", 22, 25),  # a class field holding an arrow function
        ("function", "parse", 28, 30),  # export const parse = (...) => {...}
    ],
    "src/repo.ts": [
        ("window", None, 1, 1),
        ("class", "Repository", 3, 6),  # an interface that fits
        ("collapsed", "MemoryRepository", 8, 23),
        ("method", "MemoryRepository.get", 11, 17),
        ("method", "MemoryRepository.put", 19, 22),
        ("function", "makeRepository", 25, 27),
    ],
    "src/Counter.tsx": [
        ("window", None, 1, 1),
        ("class", "Props", 3, 3),  # a type alias
        ("collapsed", "Counter", 5, 19),  # a function hiding a big nested one
        ("function", "Counter.submit", 7, 17),
    ],
    "store/store.go": [
        ("window", None, 1, 9),
        ("class", "Store", 11, 15),  # type Store struct, with its doc comment
        ("method", "Store.Get", 17, 26),  # receiver type in the symbol
        ("function", "New", 28, 30),
    ],
    "src/lib.rs": [
        ("window", None, 1, 2),
        ("class", "Store", 4, 8),  # struct with doc comment and #[derive]
        ("collapsed", "Store", 10, 23),  # impl<T: Clone> Store<T>
        ("method", "Store.new", 11, 14),
        ("method", "Store.insert", 16, 22),
        ("function", "helper", 25, 27),
    ],
    "src/main/java/com/example/App.java": [
        ("window", None, 1, 3),
        ("collapsed", "App", 5, 22),
        ("method", "App.App", 9, 11),
        ("method", "App.greet", 13, 21),
    ],
}

LANGUAGES = {
    "pkg/index.py": "python",
    "src/loader.js": "javascript",
    "src/repo.ts": "typescript",
    "src/Counter.tsx": "tsx",
    "store/store.go": "go",
    "src/lib.rs": "rust",
    "src/main/java/com/example/App.java": "java",
}

# (collapsed text must contain, must not contain, method chunk header line)
COLLAPSE = {
    "pkg/index.py": (
        ["    def __init__(self, directory: str):\n        ...", '"""Returns whether'],
        ["self.files = []", "os.path.getsize"],
        "class CodebaseIndex(Base):",
    ),
    "src/loader.js": (
        ["  constructor(root) { ... }", "  clear = () => { ... };", "  cache = new Map();"],
        ["readFile(", "this.root = root"],
        "export class Loader extends Base {",
    ),
    "src/repo.ts": (
        ["  async get(id: string): Promise<Item | undefined> { ... }"],
        ["console.warn", "this.items.set"],
        "export class MemoryRepository implements Repository<Item> {",
    ),
    "src/Counter.tsx": (
        ["  const submit = async (event: React.FormEvent) => { ... };", "return <form"],
        ["preventDefault", "JSON.stringify"],
        "export function Counter({ label, initial = 0 }: Props) {",
    ),
    "src/lib.rs": (
        ["    pub fn new() -> Self { ... }", "    /// Make an empty store."],
        ["HashMap::new()", "println!"],
        "impl<T: Clone> Store<T> {",
    ),
    "src/main/java/com/example/App.java": (
        [
            "    public App(List<String> names) { ... }",
            "    @Override",
            "/** Application entry. */",
        ],
        ["StringBuilder", "this.names = names"],
        "public class App extends Base {",
    ),
}


@pytest.mark.parametrize("path", list(ALL))
def test_structure(path: str) -> None:
    chunks = ast_chunks(path, ALL[path], BUDGETS[path])
    assert spans(chunks) == EXPECTED[path]
    assert {c.language for c in chunks} == {LANGUAGES[path]}
    check_invariants(ALL[path], chunks, BUDGETS[path])


@pytest.mark.parametrize("path", list(COLLAPSE))
def test_collapsed_chunk_hides_bodies_and_methods_carry_the_class_header(path: str) -> None:
    chunks = ast_chunks(path, ALL[path], BUDGETS[path])
    (collapsed,) = [c for c in chunks if c.kind == "collapsed"]
    contains, hidden, header = COLLAPSE[path]
    assert "..." in collapsed.text
    for text in contains:
        assert text in collapsed.text
    for text in hidden:
        assert text not in collapsed.text
    lines = ALL[path].split("\n")
    nested = [c for c in chunks if c.symbol and "." in c.symbol]
    assert nested
    for c in nested:
        first, rest = c.text.split("\n", 1)
        assert first == header, c.symbol
        # the rest is exactly the definition's own lines, indentation preserved
        assert rest == "\n".join(lines[c.start_line - 1 : c.end_line])


@pytest.mark.parametrize("path", list(ALL))
def test_whole_file_that_fits_is_one_chunk(path: str) -> None:
    (c,) = ast_chunks(path, ALL[path], 512)
    assert (c.kind, c.start_line, c.symbol, c.text) == ("file", 1, None, ALL[path])
    assert c.end_line == len(ALL[path].splitlines())


def test_go_methods_and_doc_comments() -> None:
    chunks = ast_chunks("store/store.go", ALL["store/store.go"], BUDGETS["store/store.go"])
    get = next(c for c in chunks if c.symbol == "Store.Get")
    assert get.text.startswith("// Get returns the value stored under key.\nfunc (s *Store) Get(")
    store = next(c for c in chunks if c.symbol == "Store")
    assert store.text.startswith("// Store is a concurrent map.\ntype Store struct {")


def test_python_collapsed_text_is_the_seed_shape() -> None:
    """A collapsed Python class: signatures and docstrings kept, bodies ``...``."""
    chunks = ast_chunks("pkg/index.py", ALL["pkg/index.py"], BUDGETS["pkg/index.py"])
    (collapsed,) = [c for c in chunks if c.kind == "collapsed"]
    assert collapsed.text == (
        "class CodebaseIndex(Base):\n"
        '    """Index of a codebase."""\n'
        "\n"
        "    directory: str\n"
        "\n"
        "    def __init__(self, directory: str):\n"
        "        ...\n"
        "\n"
        "    async def exists(self) -> bool:\n"
        '        """Returns whether the index exists (has been built)"""\n'
        "        ...\n"
        "\n"
        "    @property\n"
        "    def size(self) -> int:\n"
        "        ..."
    )
