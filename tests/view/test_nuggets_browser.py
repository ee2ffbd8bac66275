"""Nuggets in a real browser (Playwright driving Debian's Chromium) over `ragmeter view --annotate`: five
assignment labels given on the nuggets page appear in `labels export` and in `judges validate --run RUN
--metric nugget_all_strict` with exactly those values; editing a nugget saves a new set version by the
person (history kept, `nuggets export --version V`); a run scored before the edit is refused by `runs
compare` against one rescored after it, for the nugget metrics only, and `rescore` brings it to the new
version. Runs are the constructed nugget case, judged over real HTTP by the rule-based assigner."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import browser, serve
from test_view_cli import ragmeter

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "nuggets"))
from nugget_fakes import Assigner, FixedSystem, dataset, write_set

from ragmeter.llm.scripted import ScriptedServer
from ragmeter.models import EvalConfig

pytestmark = pytest.mark.browser
pytest.importorskip("aiohttp")
# (query qa's nugget, the person's label); the judge says n1 support, n2 not_support, n3 partial, n4/n5 not
GIVEN = {"n1": "support", "n2": "partial_support", "n3": "not_support", "n4": "not_support", "n5": "support"}
CODE = {"not_support": 0, "partial_support": 1, "support": 2}
NUGGET_METRICS = ["nugget_all", "nugget_all_strict", "nugget_vital", "nugget_lost_context"]
JUDGE = {"n1": 2, "n2": 0, "n3": 1, "n4": 0, "n5": 0}


@pytest.fixture
def judge_url() -> Iterator[str]:
    """The scripted assigner on its own event loop in a thread (the CLI runs its own loops)."""
    loop = asyncio.new_event_loop()
    srv = ScriptedServer(Assigner())
    ready = threading.Event()

    def serve_forever() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(srv.start())
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=serve_forever, daemon=True)
    thread.start()
    assert ready.wait(10)
    yield srv.url
    asyncio.run_coroutine_threadsafe(srv.stop(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


def _run(data: Path, db: str, nuggets: Path, url: str) -> str:
    from ragmeter.run import run_evaluation

    config = EvalConfig(
        dataset=str(data),
        retrieval_top_k=[1, 3],
        use_llm_judge=True,
        judge_model=f"openai-compatible:judge@{url}",
        metrics=["ndcg@3", *NUGGET_METRICS],
        extra={"semantic": False, "context_k": 1, "nuggets": {"path": str(nuggets)}},
    )
    return run_evaluation(str(data), FixedSystem(), config, store=db, progress=False).run_id or ""


def _json(proc: Any) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout[proc.stdout.index("{") :] if "{" in proc.stdout else proc.stdout)


def test_labels_and_an_edit_in_the_browser(tmp_path: Path, judge_url: str) -> None:
    data = tmp_path / "case.json"
    data.write_text(dataset().model_dump_json())
    nuggets = write_set(tmp_path / "set.jsonl")
    db = str(tmp_path / "n.db")
    url = f"sqlite:///{db}"
    before, other = _run(data, url, nuggets, judge_url), _run(data, url, nuggets, judge_url)

    with serve(db, "--annotate", "--annotator", "alice") as base, browser() as b:
        page = b.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{base}/runs/{before}")  # the run page names the set version of its nugget scores
        assert "nugget metrics scored against nugget set " in page.locator("#nugget-set").inner_text()
        assert (
            page.locator("table.summary tr", has_text="nugget_all_strict").locator("td").nth(2).inner_text()
        )
        page.goto(f"{base}/runs/{before}/query?id=qa")
        page.locator("#nuggets-link").click()
        assert page.locator("tr[data-nugget='n2'] .lost").inner_text() == "ranking/context"
        assert page.locator("tr[data-nugget='n1'] .judge").inner_text() == "support"
        for nid, label in GIVEN.items():
            page.locator(f"form.assign[data-nugget='{nid}'] button[value='{label}']").click()
            assert page.locator(f"form.assign[data-nugget='{nid}'] .current").inner_text() == label
        assert page.locator("#set-version").inner_text() == "0"
        form = page.locator("form.edit-reword[data-nugget='n2']")
        form.locator("input[name=text]").fill("Paris lies on the river Seine")
        form.locator("button").click()
        assert page.locator("#set-version").inner_text() == "2"  # version 1 is the file as first edited
        assert page.locator("#stale").is_visible()
        authors = page.locator("#history .author").all_inner_texts()
        assert authors == ["file", "alice"]
        new_hash = page.locator("#set-hash").inner_text()
        old_hash = page.locator("#scored-hash").inner_text()
        page.goto(f"{base}/runs/{before}")
        assert f"nugget set {old_hash} " in page.locator("#nugget-set").inner_text()

    # the five labels, exactly, in labels export and judges validate
    out = tmp_path / "labels.json"
    assert ragmeter("labels", "export", "-o", str(out), "--db", db).returncode == 0
    got = {x["nugget_id"]: x["assignment"] for x in json.loads(out.read_text()) if x["kind"] == "assignment"}
    assert got == GIVEN
    report = _json(
        ragmeter(
            "judges",
            "validate",
            "--run",
            before,
            "--metric",
            "nugget_all_strict",
            "--db",
            db,
            "--format",
            "json",
        )
    )
    assert {i["id"]: (i["human"], i["judge"]) for i in report["items"]} == {
        f"qa/{n}": (CODE[v], JUDGE[n]) for n, v in GIVEN.items()
    }

    # version 2 exported; the other run rescored against it; compare refuses the nugget metrics only
    v2 = tmp_path / "v2.jsonl"
    proc = ragmeter("nuggets", "export", str(nuggets), "--version", "2", "-o", str(v2), "--db", db)
    assert proc.returncode == 0 and new_hash in proc.stdout, proc.stderr
    assert "Paris lies on the river Seine" in v2.read_text()
    assert ragmeter("rescore", other, "--nuggets", str(v2), "--db", db).returncode == 0
    proc = ragmeter("runs", "compare", before, other, "--db", db, "--resamples", "200")
    assert proc.returncode == 0, proc.stderr
    refused = [x for x in proc.stderr.splitlines() if x.startswith("not compared: ")]
    assert sorted(x.split()[2].rstrip(":") for x in refused) == sorted(NUGGET_METRICS)
    assert "ndcg@3" in proc.stdout
    # rescore brings the first run to the new version: the runs compare again
    assert ragmeter("rescore", before, "--nuggets", str(v2), "--db", db).returncode == 0
    proc = ragmeter("runs", "compare", before, other, "--db", db, "--resamples", "200")
    assert proc.returncode == 0 and "not compared" not in proc.stderr, proc.stderr
    assert all(name in proc.stdout for name in NUGGET_METRICS)
