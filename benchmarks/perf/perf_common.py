"""What every perf script records beside its numbers: the machine and the date."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any


def machine() -> dict[str, Any]:
    """Python, platform, CPU count and 1-minute load (timings are noisy when it is high)."""
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_1m": os.getloadavg()[0],
    }


def write_result(path: Path, result: dict[str, Any]) -> None:
    """Write ``result`` plus machine and date as indented JSON."""
    result = {**result, "machine": machine(), "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
