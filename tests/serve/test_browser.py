"""End-to-end: the web page in headless Chromium (Debian's /usr/bin/chromium via Playwright).

Set RATIO_UPDATE_SCREENSHOT=1 to also refresh docs/img/serve.png from this run.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.serve.tinyrun import REPO_ROOT

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect, sync_playwright = sync_api.expect, sync_api.sync_playwright

CHROMIUM = Path(os.environ.get("RATIO_CHROMIUM", "/usr/bin/chromium"))
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
STATEMENT = "One-run auditing cannot recover the true privacy parameter of every algorithm."

pytestmark = [
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason=f"chromium not installed at {CHROMIUM} (apt-get install -y chromium)",
    ),
]


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture()
def page(browser, live_server):
    ctx = browser.new_context(viewport={"width": 1366, "height": 900}, accept_downloads=True)
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    external: list[str] = []
    pg.on("request", lambda r: None if r.url.startswith(live_server) else external.append(r.url))
    pg.goto(live_server + "/")
    expect(pg.locator("#pool-info")).to_contain_text("candidate sentences")
    yield pg
    assert errors == [], errors
    assert external == [], f"page reached outside the server: {external}"
    ctx.close()


def _cards(pg, move: str):
    return pg.locator(f'section.column[data-move="{move}"] li.hit')


def test_search_one_move_then_switch_with_keys(page):
    q = page.locator("#query")
    q.fill(STATEMENT)
    q.press("Enter")
    page.wait_for_selector('section.column[data-move="address"] li.hit')
    cards = _cards(page, "address")
    assert cards.count() == 10
    first = cards.first
    assert "How Well Can Differential Privacy Be Audited" in first.locator(".title").inner_text()
    assert "2025" in first.locator(".prov").inner_text()
    assert first.locator(".prov").inner_text().count("§") == 1  # section shown
    assert "results in" in page.locator("#status").inner_text()

    # keyboard: leave the text box, press 2 -> Broaden, A -> all three side by side
    page.locator("#go").focus()
    page.keyboard.press("2")
    page.wait_for_selector('section.column[data-move="broaden"] li.hit')
    assert page.locator('.move[data-move="broaden"]').get_attribute("aria-checked") == "true"
    page.keyboard.press("a")
    page.wait_for_selector(".columns section.column >> nth=2")
    assert [page.locator("section.column").nth(i).get_attribute("data-move") for i in range(3)] == [
        "address",
        "broaden",
        "specify",
    ]
    for move in ("address", "broaden", "specify"):
        assert _cards(page, move).count() == 10
    # context sentences are shown around the hit
    assert page.locator("li.hit .ctx p").count() > 0


def test_three_moves_screenshot_and_export(page, tmp_path):
    page.locator('.move[data-move="all"]').click()
    page.locator("#query").fill(
        "How can the privacy of machine learning algorithms be audited in a single training run?"
    )
    page.locator("details.options summary").click()
    page.locator("#k").select_option("5")
    page.locator(
        "details.options summary"
    ).click()  # fold the options again: more results on screen
    page.locator("#go").click()
    page.wait_for_selector(".columns section.column >> nth=2")
    shot = tmp_path / "serve.png"
    page.screenshot(path=str(shot), full_page=False)
    assert shot.stat().st_size > 20_000
    if os.environ.get("RATIO_UPDATE_SCREENSHOT"):
        dest = REPO_ROOT / "docs" / "img" / "serve.png"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, dest)

    with page.expect_download() as dl:
        page.locator('#export button[data-export="json"][data-action="download"]').click()
    data = json.loads(Path(dl.value.path()).read_text())
    assert set(data["moves"]) == {"address", "broaden", "specify"}
    with page.expect_download() as dl:
        page.locator('#export button[data-export="bib"][data-action="download"]').click()
    bib = Path(dl.value.path()).read_text()
    assert bib.count("@misc{") >= 1 and "title = {" in bib
    with page.expect_download() as dl:
        page.locator('#export button[data-export="md"][data-action="download"]').click()
    md = Path(dl.value.path()).read_text()
    assert md.startswith("# Inspirations for:") and "## Specify" in md


def test_user_text_is_escaped_and_errors_are_shown(page):
    attack = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script> privacy audit'
    page.locator("#query").fill(attack)
    page.locator("#query").press("Enter")
    page.wait_for_selector("li.hit")
    assert page.evaluate("window.__xss === undefined")
    assert page.locator("#results img, #results script").count() == 0
    # the page never echoes HTML: the markdown export carries the query as plain text
    assert attack in page.evaluate("asMarkdown(state.last)")

    page.locator("#query").fill("   ")
    page.locator("#go").click()
    assert "Type a research statement" in page.locator("#status").inner_text()
    page.locator("details.options summary").click()
    page.locator("#year_min").fill("99999")
    page.locator("#query").fill("privacy")
    page.locator("#go").click()
    expect(page.locator("#status")).to_contain_text(
        "year_min: Input should be less than or equal to 9999"
    )
    expect(page.locator("#status")).to_have_class("error")
