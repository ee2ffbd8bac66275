"""`ragmeter prices`: the LLM price table in use (ragmeter.llm.pricing), its version and date, the entries of
the RAGMETER_LLM_PRICES file marked."""

from __future__ import annotations

import click

from ragmeter.cli.options import console, echo_json, format_option


@click.command("prices")
@format_option("table", "json")
def prices_command(fmt: str) -> None:
    """The price table that costs, estimates and spend caps use (USD per million tokens)."""
    from ragmeter.llm.pricing import price_table

    table = price_table()
    if fmt == "json":
        echo_json(table)
        return
    from rich.table import Table

    from ragmeter.safety import console_text as t

    source = f"; file {t(str(table['file']))}" if table["file"] else "; no RAGMETER_LLM_PRICES file"
    out = Table(
        title=f"LLM prices, table {table['version']} of {table['date']} ({table['unit']}){source}",
        title_justify="left",
    )
    for col in ("model (prefix)", "input", "output", "source"):
        out.add_column(col, justify="right" if col in ("input", "output") else "left")
    rows = table["prices"]
    assert isinstance(rows, list)
    for row in rows:
        out.add_row(
            t(str(row["model"])),
            f"{row['input_per_mtok']:g}",
            f"{row['output_per_mtok']:g}",
            str(row["source"])
            + (f" (was {row['built_in'][0]:g} / {row['built_in'][1]:g})" if "built_in" in row else ""),
        )
    console().print(out)
    click.echo(f"which price wins: {table['precedence']}")
