from __future__ import annotations

import sys
from pathlib import Path

# The report's hostile-payload list applies to the viewer too.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
