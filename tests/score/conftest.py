"""The score tests reuse the runner tests' hand-made dataset and systems (tests/runner/runner_fakes.py)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runner"))
