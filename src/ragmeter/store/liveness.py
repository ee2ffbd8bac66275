"""Is the process that owns a running run still alive? (host + pid + the pid's start time)."""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

# A run on another host counts as alive while its heartbeat is younger than this.
STALE_AFTER = timedelta(minutes=10)


def utcnow() -> datetime:
    return datetime.now(UTC)


def aware(value: datetime | None) -> datetime | None:
    """A datetime read back from a database that dropped its time zone (SQLite), as UTC."""
    if value is None:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def hostname() -> str:
    return socket.gethostname()


def pid_token(pid: int) -> str:
    """The start time of a process (Linux /proc), so that a recycled pid is not mistaken for the owner."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    # Field 22 (starttime); the command name in field 2 may hold spaces, so split after its ')'.
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else ""


def process_alive(pid: int, token: str) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    if token:
        current = pid_token(pid)
        if current and current != token:
            return False
        if not current and Path("/proc").is_dir():
            return False
    # A zombie (killed, not yet reaped by its parent) holds its pid but runs nothing.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def owner() -> dict[str, Any]:
    """This process as a run's owner: host, pid and a token that tells a reused pid apart."""
    pid = os.getpid()
    return {"host": hostname(), "pid": pid, "pid_token": pid_token(pid)}


def owner_alive(row: Any) -> bool:
    """Whether the process that owns a run row is alive: checked directly on this host, by its heartbeat
    on another."""
    if row.host == hostname():
        return process_alive(row.pid, row.pid_token)
    beat = aware(row.heartbeat_at)
    return beat is not None and utcnow() - beat <= STALE_AFTER
