"""The `ragmeter` command: a thin front on the library.

Sub-commands live next to the code they drive and are imported only when invoked, so that
`ragmeter eval` does not pay for torch, SQLAlchemy or matplotlib.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from ragmeter._version import __version__
from ragmeter.cli.settings import log_options
from ragmeter.errors import RagmeterError

# name -> "module:attribute" of a click command or group. One line per command.
COMMANDS: dict[str, str] = {
    "eval": "ragmeter.cli.eval:eval_command",
    "judge-server": "ragmeter.cli.judge_server:judge_server",
    "run": "ragmeter.cli.run:run_command",
    "runs": "ragmeter.cli.runs:runs",
    "rescore": "ragmeter.cli.rescore:rescore_command",
    "diagnose": "ragmeter.cli.diagnose:diagnose_command",
    "ingest": "ragmeter.cli.ingest:ingest_command",
    "testcases": "ragmeter.cli.ingest:testcases",
    "demo": "ragmeter.cli.demo:demo_command",
    "datasets": "ragmeter.cli.datasets:datasets",
    "report": "ragmeter.cli.report:report_command",
    "experiment": "ragmeter.cli.experiment:experiment_command",
    "generate": "ragmeter.cli.generate:generate_command",
    "judges": "ragmeter.cli.judges:judges",
    "judge-qrels": "ragmeter.cli.judge_qrels:judge_qrels_command",
    "metrics": "ragmeter.cli.metrics:metrics",
    "view": "ragmeter.cli.view:view_command",
    "labels": "ragmeter.cli.labels:labels",
    "nuggets": "ragmeter.cli.nuggets:nuggets",
    "plan": "ragmeter.cli.plan:plan_command",
    "prices": "ragmeter.cli.prices:prices_command",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, _, attr = target.partition(":")
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ragmeter")
@log_options
def cli() -> None:
    """Measure retrieval and RAG systems."""


def fail(message: str, code: int = 2) -> None:
    """Print one line to stderr and exit: the house style for bad input."""
    from ragmeter.safety import printable  # a message may quote hostile data or a URL

    click.echo(f"ragmeter: error: {printable(message)}", err=True)
    sys.exit(code)


def main(argv: list[str] | None = None) -> Any:
    try:
        return cli.main(args=argv, prog_name="ragmeter", standalone_mode=True)
    except RagmeterError as exc:
        fail(str(exc))
    except BrokenPipeError:  # `ragmeter ... | head`: the reader left
        sys.exit(1)
    except (OSError, UnicodeError) as exc:  # a file problem no command named: still one line, exit 2
        from ragmeter.safety import describe_file_error

        fail(describe_file_error(exc))
    except KeyboardInterrupt:
        click.echo("ragmeter: interrupted", err=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
