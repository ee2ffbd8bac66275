"""A run's nugget set: which set its nugget metrics are scored against, loaded and checked once.

The run keeps it in `EvalConfig.nuggets`: {"path", "hash", "prompt"} (the set's file, its hash when the
run was made, the assignment prompt style). A resume refuses a file whose hash changed; `rescore --nuggets`
names a new file and re-judges the nugget metrics against it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.errors import InputError
from ragmeter.nuggets.model import NuggetSet
from ragmeter.score.plan import MetricPlan

DEFAULT_STYLE = "nuggetizer"


@dataclass(frozen=True)
class NuggetPlan:
    nuggets: NuggetSet
    path: str
    style: str = DEFAULT_STYLE

    @property
    def hash(self) -> str:
        return self.nuggets.hash

    def extra(self) -> dict[str, str]:
        return {"path": self.path, "hash": self.hash, "prompt": self.style}


def is_nugget(name: str) -> bool:
    return name.startswith("nugget_")


def default_names(cutoffs: Sequence[int]) -> list[str]:
    """The nugget metrics a run with a set computes when it names none: the answer's scores, the contexts',
    the lost-at-stage counts and nugget_recall@k at each cut-off."""
    from ragmeter.judges.nugget_prompts import CONTEXT_METRICS, LOST_METRICS
    from ragmeter.nuggets.scores import SCORES

    at_k = [f"nugget_recall@{k}" for k in sorted(set(cutoffs or [10]))]
    return [*SCORES, *CONTEXT_METRICS, *at_k, *LOST_METRICS]


def load(spec: Mapping[str, Any], *, source: str = "--nuggets", check_hash: bool = True) -> NuggetPlan:
    from ragmeter.judges.nugget_prompts import STYLES
    from ragmeter.nuggets.files import read_nuggets

    path = str(spec.get("path") or "")
    if not path:
        raise InputError("names no nugget file", source=source)
    style = str(spec.get("prompt") or DEFAULT_STYLE)
    if style not in STYLES:
        raise InputError(f"prompt {style!r} is not one of {', '.join(STYLES)}", source=source)
    nuggets = read_nuggets(path)
    recorded = spec.get("hash")
    if check_hash and recorded and recorded != nuggets.hash:
        raise InputError(
            f"the nugget set {path} changed since the run was made (hash {recorded}, now {nuggets.hash}): "
            "`ragmeter rescore RUN --nuggets FILE` scores the run against a new set",
            source=source,
        )
    return NuggetPlan(nuggets, path, style)


def attach(
    plan: MetricPlan,
    spec: Mapping[str, Any] | None,
    cutoffs: Sequence[int],
    *,
    source: str = "--nuggets",
    dataset: str | None = None,
) -> tuple[MetricPlan, NuggetPlan | None]:
    """`plan` with its nugget set, and the default nugget metrics when it has a set and names none. A run of
    the demo dataset that names nugget metrics without a set gets the shipped one."""
    named = [n for n in plan.judges if is_nugget(n)]
    if spec is None and named and dataset == "demo":
        from ragmeter.nuggets.demo import demo_nuggets_path

        spec = {"path": str(demo_nuggets_path()), "prompt": DEFAULT_STYLE}
    if spec is None:
        if named:
            raise InputError(f"{named[0]} needs a nugget set: give --nuggets FILE", source=source)
        return plan, None
    nuggets = load(spec, source=source)
    if not plan.judges and not named:
        raise InputError("nugget metrics need a judge: give --judge MODEL", source=source)
    judges = plan.judges if named else (*plan.judges, *default_names(cutoffs))
    return dataclasses.replace(plan, judges=tuple(judges), nuggets=nuggets), nuggets


def absolute(path: str) -> str:
    return str(Path(path).expanduser().resolve())
