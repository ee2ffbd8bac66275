"""Nothing outside ragmeter.stats draws resamples (DESIGN.md: "nothing resamples outside stats/").

Every source line outside src/ragmeter/stats that makes a random generator or draws from one by index
(`default_rng`, `integers(`, `choice(`) must be one of the allowed draws below, each with its reason; a new one
fails here until it moves into stats/ or is added with a reason that it is not a resample."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "ragmeter"
DRAW = re.compile(r"default_rng|integers\(|choice\(")

# (file under src/ragmeter, the line stripped): why it is not a resample.
ALLOWED: dict[tuple[str, str], str] = {
    (
        "run/sequential.py",
        "return [int(i) for i in np.random.default_rng(seed).permutation(n)]",
    ): "the seeded query order of a sequential run (recorded as order_seed)",
    (
        "experiments/sequential.py",
        "order = np.random.default_rng(seed).permuted(np.tile(np.arange(n), (n_seq, 1)), axis=1)",
    ): "the seeded query orders of simulated sequential runs",
}


def draws_outside_stats(root: Path = SRC) -> list[tuple[str, str]]:
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("stats/"):
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if DRAW.search(line):
                found.append((rel, line.strip()))
    return found


def test_only_the_allowed_draws_happen_outside_stats() -> None:
    unexpected = [
        f"src/ragmeter/{f}: {line}" for f, line in draws_outside_stats() if (f, line) not in ALLOWED
    ]
    assert not unexpected, "random draws outside ragmeter.stats (move them there):\n" + "\n".join(unexpected)


def test_every_allowed_draw_is_still_there() -> None:
    assert set(ALLOWED) <= set(draws_outside_stats()), "an allowed draw is gone: drop it from ALLOWED"


def test_the_grep_sees_a_bootstrap_written_outside_stats(tmp_path: Path) -> None:
    (tmp_path / "diagnose").mkdir()
    (tmp_path / "stats").mkdir()
    (tmp_path / "diagnose" / "x.py").write_text("idx = rng.integers(0, n, size=(b, n))\n")
    (tmp_path / "stats" / "y.py").write_text("rng = np.random.default_rng(seed)\n")
    assert draws_outside_stats(tmp_path) == [("diagnose/x.py", "idx = rng.integers(0, n, size=(b, n))")]
