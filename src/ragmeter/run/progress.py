"""The progress bar of a run: rich, on stderr, only when it is a terminal."""

from __future__ import annotations

from typing import Any


class Progress:
    """Done / failed / ETA on stderr; silent when disabled or not a terminal."""

    def __init__(self, total: int, done: int, failed: int, *, enabled: bool) -> None:
        self.total, self.done, self.failed = total, done, failed
        self._progress: Any = None
        self._task: Any = None
        if enabled:
            from rich.console import Console

            console = Console(stderr=True)
            if console.is_terminal:
                from rich.progress import (
                    BarColumn,
                    MofNCompleteColumn,
                    TextColumn,
                    TimeElapsedColumn,
                    TimeRemainingColumn,
                )
                from rich.progress import Progress as Bar

                self._progress = Bar(
                    TextColumn("evaluating"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TextColumn("[red]{task.fields[failed]} failed"),
                    TimeElapsedColumn(),
                    TextColumn("ETA"),
                    TimeRemainingColumn(),
                    console=console,
                    transient=False,
                )
                self._task = self._progress.add_task("run", total=total, completed=done, failed=failed)

    def __enter__(self) -> Progress:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def advance(self, *, failed: bool) -> None:
        self.done += 1
        self.failed += int(failed)
        if self._progress is not None:
            self._progress.update(self._task, advance=1, failed=self.failed)
