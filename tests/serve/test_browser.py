"""End-to-end: the web page in headless Chromium (Debian's /usr/bin/chromium via Playwright).

Set RATIO_UPDATE_SCREENSHOT=1 to also refresh docs/img/serve.png and docs/img/chain.png from
this run.
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
    _save_screenshot(page, tmp_path, "serve.png")

    with page.expect_download() as dl:
        page.locator('#export button[data-export="json"][data-action="download"]').click()
    data = json.loads(Path(dl.value.path()).read_text())
    assert set(data["moves"]) == {"address", "broaden", "specify"}
    with page.expect_download() as dl:
        page.locator('#export button[data-export="bib"][data-action="download"]').click()
    bib = Path(dl.value.path()).read_text()
    assert bib.count("@misc{") >= 1 and "title = {" in bib
    assert bib.count("url = {https://openreview.net/forum?id=") == bib.count("@misc{")
    with page.expect_download() as dl:
        page.locator('#export button[data-export="md"][data-action="download"]').click()
    md = Path(dl.value.path()).read_text()
    assert md.startswith("# Inspirations for:") and "## Specify" in md
    assert "](https://openreview.net/forum?id=" in md  # the paper id links to its page
    # and in the page itself
    link = page.locator("li.hit .prov a.paper").first
    assert link.get_attribute("href") == f"https://openreview.net/forum?id={link.inner_text()}"
    assert link.get_attribute("rel") == "noopener noreferrer"


def _save_screenshot(pg, tmp_path, name: str) -> None:
    shot = tmp_path / name
    pg.screenshot(path=str(shot), full_page=False)
    assert shot.stat().st_size > 20_000
    if os.environ.get("RATIO_UPDATE_SCREENSHOT"):
        dest = REPO_ROOT / "docs" / "img" / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, dest)


def test_two_step_chain_in_the_page(page, tmp_path):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.locator("#query").fill(STATEMENT)
    page.locator('.move[data-move="broaden"]').click()  # a statement is there: it searches
    page.wait_for_selector('section.column[data-move="broaden"] li.hit')
    expect(page.locator("#chain")).to_be_hidden()
    # step 1: click the second result, take Specify from it
    second = _cards(page, "broaden").nth(1)
    chosen = second.get_attribute("data-candidate")
    chosen_text = page.evaluate(
        "(id) => state.last.moves.broaden.results.find((h) => h.candidate_id === id).text", chosen
    )
    second.locator(".text").click()
    second.locator('.next button[data-move="specify"]').click()
    page.wait_for_selector('section.column[data-move="specify"] li.hit')
    path = page.locator("#path > li")
    expect(path).to_have_count(3)  # the statement, step 1 with its chosen sentence, step 2
    assert STATEMENT in path.nth(0).inner_text()
    assert "1. Broaden" in path.nth(1).inner_text() and chosen_text in path.nth(1).inner_text()
    assert (
        path.nth(1)
        .locator("a.paper")
        .get_attribute("href")
        .startswith("https://openreview.net/forum?id=")
    )
    assert "2. Specify" in path.nth(2).inner_text() and "results below" in path.nth(2).inner_text()
    result = page.evaluate("state.chainResult")
    assert result["moves"] == ["broaden", "specify"]
    assert result["steps"][0]["chosen"]["candidate_id"] == chosen
    assert result["steps"][1]["query"] == chosen_text
    step1_paper = result["steps"][0]["chosen"]["paper_id"]
    assert step1_paper not in {h["paper_id"] for h in result["steps"][1]["results"]}
    assert "Step 2:" in page.locator("#status").inner_text()
    # step 3 is offered from step 2's results; the screenshot shows the path of two moves
    _cards(page, "specify").first.locator(".text").click()
    expect(_cards(page, "specify").first.locator(".next button")).to_have_count(3)
    _save_screenshot(page, tmp_path, "chain.png")

    # the path copies as text and as JSON
    page.locator('#chain button[data-path="text"]').click()
    expect(page.locator("#status")).to_contain_text("Copied the path as text")
    text = page.evaluate("navigator.clipboard.readText()")
    assert text.startswith(f"Statement: {STATEMENT}\n1. Broaden [bm25] -> {chosen_text}\n")
    assert "2. Specify [bm25] -> " in text and "https://openreview.net/forum?id=" in text
    page.locator('#chain button[data-path="json"]').click()
    expect(page.locator("#status")).to_contain_text("Copied the path as JSON")
    assert json.loads(page.evaluate("navigator.clipboard.readText()")) == result
    # a new search leaves the path
    page.locator("#query").press("Enter")
    page.wait_for_selector('section.column[data-move="broaden"] li.hit')
    expect(page.locator("#chain")).to_be_hidden()


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
