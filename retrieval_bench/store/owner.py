"""The process that owns a running run, and whether it is still alive.

A run killed with ``kill -9`` (or by a crash, a reboot, a closed laptop) never
gets to mark itself finished, so its database row would say ``running``
forever. Each run therefore records its owner when it starts: host name, pid
and a token of the process's identity — the kernel boot id plus the process
start time in clock ticks (``/proc/<pid>/stat`` field 22) — so that a pid
reused by another process after the run died, or after a reboot, is not
mistaken for the run. Only processes on this host can be checked; a run
owned by another host (a shared workspace) is left as it is.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["current_owner", "describe_owner", "owner_alive"]

_PROC = Path("/proc")


def _boot_id() -> str | None:
    try:
        return (_PROC / "sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def _proc_stat(pid: int) -> tuple[str, str] | None:
    """(state, start time in ticks) of a live-or-zombie process, None when there is none
    (or no /proc to read it from)."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()  # the command name may hold spaces or ')'
    if len(fields) < 20:
        return None
    return fields[0], fields[19]  # fields 3 and 22 of proc(5)


def _token(pid: int) -> str | None:
    boot, stat = _boot_id(), _proc_stat(pid)
    return f"{boot}:{stat[1]}" if boot and stat else None


def current_owner() -> dict[str, Any]:
    """This process as a run's owner: ``{"host", "pid", "token"}`` (token None off Linux)."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "token": _token(os.getpid())}


def owner_alive(owner: Mapping[str, Any] | None) -> bool | None:
    """Whether the owner process still runs: True, False, or None when this host cannot
    tell (no owner recorded, or the run belongs to another host)."""
    if not owner or owner.get("host") != socket.gethostname():
        return None
    pid = owner.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return None
    stat = _proc_stat(pid)
    if stat is not None:
        if stat[0] in ("Z", "X"):  # killed, not yet reaped by its parent
            return False
        token, boot = owner.get("token"), _boot_id()
        return not (token and boot) or token == f"{boot}:{stat[1]}"
    if (_PROC / "self" / "stat").exists():  # /proc works and has no such pid
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    except OSError:
        return None
    return True


def describe_owner(owner: Mapping[str, Any] | None) -> str:
    """``process 123 on host`` for messages."""
    if not owner:
        return "an unknown process"
    return f"process {owner.get('pid')} on {owner.get('host')}"
