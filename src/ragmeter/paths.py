"""Where ragmeter keeps what it builds or downloads on this machine."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]


def cache_dir() -> Path:
    """RAGMETER_CACHE_DIR, else $XDG_CACHE_HOME/ragmeter, else ~/.cache/ragmeter."""
    env = os.environ.get("RAGMETER_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "ragmeter"
