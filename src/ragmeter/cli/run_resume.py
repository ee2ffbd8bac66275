"""`ragmeter run --resume RUN_ID`: its options and their group (the pattern of cli/run_options.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from ragmeter.cli.run_options import Option, Params
from ragmeter.errors import InputError

if TYPE_CHECKING:
    from ragmeter.cli.run_options import SystemOptions
    from ragmeter.cli.settings import RunSettings


RESUME_OPTIONS: list[Option] = [
    click.option(
        "--resume", "resume", metavar="RUN_ID", help="Complete an interrupted run (skips finished queries)."
    ),
    click.option("--retry-failed", is_flag=True, help="With --resume: evaluate the failed queries again."),
]


@dataclass(frozen=True)
class ResumeOptions:
    """--resume RUN_ID: the run's dataset, system, config and settings come from its record."""

    run_id: str | None = None
    retry_failed: bool = False

    @classmethod
    def from_params(cls, p: Params, system: SystemOptions, settings: RunSettings) -> ResumeOptions:
        if p["resume"] and (p["sequential"] or p["alpha"] is not None):
            raise InputError(
                "a resumed run keeps how it was started (a stopped sequential run resumes to the full run)",
                source="--sequential" if p["sequential"] else "--alpha",
            )
        if p["resume"]:
            given = system.dataset or system.system or system.config_path or settings.sets
            if p["repeat"] is not None or p["repeat_temperature"] is not None:
                raise InputError(
                    "--resume judges as many repeats as the run records; leave --repeat out",
                    source="--resume",
                )
            if given or settings.pipeline or settings.judge or settings.extra or settings.cache is not None:
                raise InputError(
                    "--resume takes the dataset, system, config and settings stored with the run",
                    source="--resume",
                )
        return cls(run_id=p["resume"], retry_failed=p["retry_failed"])
