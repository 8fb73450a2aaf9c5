"""Screenshot the web page of a running `ratio serve` with the three moves side by side.

Usage:
  .venv/bin/python scripts/screenshot_moves.py --url http://127.0.0.1:8000 \
      --query "Our model overfits small datasets." --out docs/img/moves.png

Drives Debian's Chromium with Playwright as tests/serve/test_browser.py does, and prints the
top-3 of each move so the picture can be checked against the text.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from playwright.sync_api import sync_playwright

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--query", required=True)
    ap.add_argument("--out", type=Path, default=Path("docs/img/moves.png"))
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=ARGS, headless=True)
        page = browser.new_context(viewport={"width": 1500, "height": 1000}).new_page()
        page.goto(args.url + "/")
        page.locator('.move[data-move="all"]').click()
        page.locator("#query").fill(args.query)
        page.locator("#go").click()
        page.wait_for_selector(".columns section.column >> nth=2")
        page.wait_for_selector('section.column[data-move="specify"] li.hit')
        for move in ("address", "broaden", "specify"):
            hits = page.locator(f'section.column[data-move="{move}"] li.hit')
            print(f"## {move}")
            for i in range(min(3, hits.count())):
                print("  -", hits.nth(i).locator(".text").first.inner_text()[:160])
        args.out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(args.out), full_page=False)
        browser.close()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
