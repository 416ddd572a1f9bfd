"""``python -m retrieval_bench.cli``: the same as ``rbench``."""

import sys

from retrieval_bench.cli import main

sys.exit(main())
