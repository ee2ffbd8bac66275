"""`ragmeter view --bundle DIR --run ID...`: the chosen runs as static pages that open from disk. The queries
table is built in the browser from JSON embedded in the page (sorting and filtering with no server)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter.report.selection import display_order
from ragmeter.safety import write_text_atomic
from ragmeter.store.pages import latencies
from ragmeter.view import data
from ragmeter.view.app import HERE, environment
from ragmeter.view.cards import card_panels

if TYPE_CHECKING:
    from markupsafe import Markup

    from ragmeter.models import EvalRunResult
    from ragmeter.store.api import Store

# A bundle opens from file:// with no server to send headers: the policy rides in a <meta> (frame-ancestors
# and reporting cannot; nothing else is lost). Only the bundle's own view.js and view.css load.
BUNDLE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'; connect-src 'none'"
)
_ABSOLUTE = re.compile(r"(?<![\w.\\~/])(?:~[/\\]|/(?!/)|[A-Za-z]:[/\\])[^\s:;,'\"]*")
_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(payload: Any) -> Markup:
    """JSON that is safe inside <script type="application/json">: no `<`, `>` or `&` survive, so stored
    text cannot close the element."""
    from markupsafe import Markup

    text = json.dumps(payload, ensure_ascii=False, allow_nan=False)
    return Markup(re.sub("[<>&\u2028\u2029]", lambda m: _UNSAFE[m.group(0)], text))


def shown_path(text: str, cwd: Path | None = None) -> str:
    """A --dataset or --system as a bundle shows it: each absolute path in it (a CI artifact travels) is
    relative when inside the working directory, else its file name alone; anything else as typed."""
    here = (cwd or Path.cwd()).resolve()

    def short(m: re.Match[str]) -> str:
        raw = m.group(0)
        if raw[0] in "/~":
            try:
                return Path(raw).expanduser().resolve().relative_to(here).as_posix() or "."
            except (ValueError, OSError, RuntimeError):
                pass  # outside the working directory
        return re.split(r"[/\\]", raw.rstrip("/\\"))[-1] or "(a folder)"

    return _ABSOLUTE.sub(short, re.sub(r"file://(?=/)", "", text))


def page_name(index: int) -> str:
    return f"run-{index + 1}.html"


def run_payload(run: EvalRunResult) -> dict[str, Any]:
    names = display_order(list(run.aggregate) or sorted({n for q in run.per_query for n in q.metrics}))
    rows = []
    for i, q in enumerate(run.per_query):
        detail = data.query_detail(run, q)
        rows.append(
            {
                "position": i,
                "query_id": q.query_id,
                "status": q.status,
                "question": q.question,
                "answer": q.answer,
                "reference": q.ground_truth_answer,
                "values": {n: (q.metrics[n].value if n in q.metrics else None) for n in names},
                "errors": {n: q.metrics[n].error for n in names if n in q.metrics and q.metrics[n].error},
                "docs": [{k: d[k] for k in ("rank", "doc_id", "score", "text")} for d in detail["docs"]],
                "judged": [
                    {k: j[k] for k in ("name", "value", "error", "reason")}
                    for j in detail["judged"] + detail["measures"]
                    if j["reason"] or j["error"]
                ],
            }
        )
    return {"run_id": run.run_id, "metrics": names, "rows": rows}


def write_bundle(store: Store, run_ids: Sequence[str], out: str | Path) -> list[Path]:
    """Write index.html, one page per run, and the stylesheet and script beside them. Returns the pages."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    env = environment()
    runs = [store.get_run(r) for r in run_ids]
    base = {
        "static": "",
        "home": "index.html",
        "readonly": True,
        "annotator": "",
        "db": "bundle",
        "csp_meta": BUNDLE_CSP,
    }
    pages = []
    for i, run in enumerate(runs):
        lat = latencies(store.engine, run.run_id or "")
        payload = run_payload(run)
        html = env.get_template("bundle_run.html.j2").render(
            **base,
            run=run,
            dataset=shown_path(run.config.dataset),
            summary=data.summary_rows(run),
            usage=data.usage_rows(run),
            ppi=data.ppi_rows(run),
            cards=card_panels(store, run),
            p50=data.fmt(data.percentile(lat, 0.5), 1) + " ms" if lat else "–",
            p95=data.fmt(data.percentile(lat, 0.95), 1) + " ms" if lat else "–",
            metrics=payload["metrics"],
            payload=script_json(payload),
        )
        pages.append(write_text_atomic(folder / page_name(i), html, source="--bundle"))
    rows = data.run_rows(runs)
    for i, row in enumerate(rows):
        row["href"] = page_name(i)
        row["dataset"], row["system"] = shown_path(row["dataset"]), shown_path(row["system"])
    index = env.get_template("bundle_index.html.j2").render(**base, rows=rows)
    pages.insert(0, write_text_atomic(folder / "index.html", index, source="--bundle"))
    for asset in ("view.css", "view.js"):
        shutil.copyfile(HERE / "static" / asset, folder / asset)
    return pages
