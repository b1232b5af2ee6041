"""What the browser tests of the form views (web/formview.py: network, target, governance, sensitivity)
share: open a view, read its answer, change an input and time the update, run the CLI on the same
inputs, upload an inputs file."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.web_support import LAUNCH_ARGS, ensure_chromium

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts"
RESULT = "[data-testid=result-json]"
# for page.add_init_script: notes when a form view's progress line was visible (a computation starts
# as the page loads, so the test cannot wait for it after)
WATCH_BUSY = """setInterval(() => { const b = document.querySelector('[data-testid=busy]');
  if (b && b.offsetParent !== null) window.__dt_busy_seen = true; }, 20);"""


@contextmanager
def browser_page(server: str) -> Iterator[tuple[Any, Any, set[str], list[str]]]:
    """(context, page, hosts requested, console errors) of a headless Chromium at laptop width."""
    from playwright.sync_api import sync_playwright

    chromium = ensure_chromium()
    ARTIFACTS.mkdir(exist_ok=True)
    hosts: set[str] = set()
    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=LAUNCH_ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
        context.on("request", lambda r: hosts.add(r.url.split("/")[2]))
        page = context.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        try:
            yield context, page, hosts, errors
        finally:
            browser.close()


def open_view(page: Any, url: str, timeout: float = 60_000) -> dict[str, Any]:
    page.goto(url)
    page.wait_for_function(
        f"document.querySelector({json.dumps(RESULT)})?.textContent.length > 2", timeout=timeout
    )
    return result(page)


def result(page: Any) -> dict[str, Any]:
    return json.loads(page.locator(RESULT).text_content())


def wait_changed(page: Any, before: str, timeout: float = 60_000) -> None:
    page.wait_for_function(
        "(b) => { const e = document.querySelector('[data-testid=result-json]'); "
        "return e && e.textContent.length > 2 && e.textContent !== b; }",
        arg=before,
        timeout=timeout,
    )


def change(page: Any, testid: str, value: str, timeout: float = 60_000) -> float:
    """Type `value` into an input and wait for the answer to change; the seconds it took, timed in the
    browser (performance.now() from the input event to the answer's change)."""
    before = page.locator(RESULT).text_content()
    started = time.perf_counter()
    page.fill(f"[data-testid={testid}]", value)
    wait_changed(page, before, timeout)
    return time.perf_counter() - started


# In the page: window.__dt_changed resolves to performance.now() when the answer's text next changes.
WATCH_ANSWER = """() => { window.__dt_changed = new Promise((resolve) => {
    const el = document.querySelector('[data-testid=result-json]');
    const before = el.textContent;
    const obs = new MutationObserver(() => {
        if (el.textContent !== before) { obs.disconnect(); resolve(performance.now()); }
    });
    obs.observe(el, {childList: true, characterData: true, subtree: true});
}); }"""


def browser_latency(page: Any, testid: str, values: list[str]) -> float:
    """Median seconds from an input's change to the answer's, measured with performance.now() inside
    the page (a MutationObserver on the answer), over the given successive values."""
    times = []
    for value in values:
        page.evaluate(WATCH_ANSWER)
        t0 = page.evaluate(
            """([sel, v]) => { const el = document.querySelector(sel);
                const setter = Object.getOwnPropertyDescriptor(window.HTMLInputElement.prototype, 'value').set;
                setter.call(el, v); const t = performance.now();
                el.dispatchEvent(new Event('input', {bubbles: true})); return t; }""",
            [f"[data-testid={testid}]", value],
        )
        t1 = page.evaluate("() => window.__dt_changed")
        times.append((t1 - t0) / 1e3)
    return statistics.median(times)


def browser_latency_of(page: Any, act: Any) -> float:
    """Seconds from the first input event `act()` causes (a click, a key, an input: whichever comes
    first) to the answer's change, both timed with performance.now() inside the page, as
    browser_latency times a typed value; Playwright's own round trips are not counted."""
    page.evaluate(
        """() => { window.__dt_t0 = null;
            const stop = new AbortController();  // the first event of any type ends all the listeners
            const start = () => { window.__dt_t0 = performance.now(); stop.abort(); };
            for (const type of ['pointerdown', 'mousedown', 'click', 'keydown', 'input'])
                document.addEventListener(type, start, {capture: true, signal: stop.signal});
        }"""
    )
    page.evaluate(WATCH_ANSWER)
    act()
    t1 = page.evaluate("() => window.__dt_changed")
    t0 = page.evaluate("() => window.__dt_t0")
    return (t1 - t0) / 1e3


def choose(page: Any, testid: str, option: str) -> None:
    """Pick `option` in a select and wait for the answer to change."""
    before = page.locator(RESULT).text_content()
    page.click(f"[data-testid={testid}]")
    page.get_by_role("option", name=option, exact=True).click()
    wait_changed(page, before)


def choose_llm_foundry(context: Any, url: str, settled: str, timeout: float = 60_000) -> Any:
    """A new page at `url` with the llm-foundry software profile chosen, once `settled` (a JavaScript
    condition on the answer, `answer`) holds; the form shows the profile's FP32 parameters and Triton
    kernel (checked here)."""
    page = context.new_page()
    open_view(page, url)
    choose(page, "software", "MosaicML llm-foundry (PyTorch FSDP)")
    page.wait_for_function(
        f"(() => {{ const answer = JSON.parse(document.querySelector({json.dumps(RESULT)}).textContent); "
        f"return {settled}; }})()",
        timeout=timeout,
    )
    assert page.get_attribute("[data-testid=fp32_params]", "aria-checked") == "true"
    assert "triton" in page.text_content("[data-testid=attention_kernel]")
    return page


def cli_json(argv: list[str]) -> dict[str, Any]:
    """`dtsim ARGV --json`, parsed (the command must succeed)."""
    from typer.testing import CliRunner

    from dtsim.interfaces.cli.main import app

    out = CliRunner().invoke(app, [*argv, "--json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def copied_link(page: Any) -> str:
    """Click the view's Copy share link button and return the link it copied (the copy is
    asynchronous: the server asks the page to write the clipboard, so it is read once written). The
    clipboard is the browser context's, shared by its pages: it is emptied first, or an earlier page's
    copy passed for this one's under load (a full-suite run's failure)."""
    page.evaluate("navigator.clipboard.writeText('')")
    page.click("[data-testid=copy-link]")
    page.wait_for_function("navigator.clipboard.readText().then((t) => t.length > 0)", timeout=10_000)
    return page.evaluate("navigator.clipboard.readText()")


def upload(page: Any, path: Path) -> None:
    page.set_input_files("input[type=file]", str(path))


def bad_upload_says_why(page: Any, path: Path, words: str) -> None:
    """An unusable inputs file: a visible error naming the problem, the answer unchanged."""
    before = page.locator(RESULT).text_content()
    upload(page, path)
    page.wait_for_function(
        "(w) => document.querySelector('[data-testid=import-error]')?.textContent.includes(w)",
        arg=words,
        timeout=10_000,
    )
    assert page.locator("[data-testid=import-error]").is_visible()
    assert page.locator(RESULT).text_content() == before


# The tables of a view that do not show every column inside their card, and whether the page itself
# runs past the window (document.documentElement.scrollWidth > clientWidth).
TABLES_CUT = """() => {
  const vw = document.documentElement.clientWidth;
  const cut = [...document.querySelectorAll('.q-table__middle')].filter(m => {
    const card = (m.closest('.q-card') || m).getBoundingClientRect();
    return m.scrollWidth > m.clientWidth + 1 || card.right > vw + 1;
  }).map(m => m.closest('[data-testid]')?.getAttribute('data-testid'));
  return {cut, page_overflow: document.documentElement.scrollWidth > vw};
}"""


def tables_fit(page: Any, width: int = 1400, height: int = 900) -> None:
    """At `width`×`height`, every table shows all its columns inside its card and the page does not
    run past the window (the wide tables' columns were cut at the card's edge)."""
    page.set_viewport_size({"width": width, "height": height})
    page.wait_for_timeout(300)  # the layout settles
    seen = page.evaluate(TABLES_CUT)
    assert seen == {"cut": [], "page_overflow": False}, seen


def untimed(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer without its wall-clock timing (`search.seconds`), which differs run to run."""
    out = dict(answer)
    if isinstance(out.get("search"), dict):
        out["search"] = {k: v for k, v in out["search"].items() if k != "seconds"}
    return out
