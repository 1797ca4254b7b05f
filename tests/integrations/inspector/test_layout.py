"""The inspector in a real browser: Debian's Chromium, headless, driven through its chromium-driver.

Each view loads with no console error (a script the Content-Security-Policy blocked would be one); a
search shows results and a click opens the memory with its history; the graph draws the walk's nodes
and lights a node's links; a memory whose every field is markup or script is shown as text and runs
nothing, on every page that shows it; forget and restore work from the page (so the browser's Origin
and the CSRF token pass the checks); off loopback the browser signs in with the token once, and out; a
page of another site cannot make the browser start work here (Fetch Metadata).

One browser and one server per module. The screenshots in docs/ui.md are taken here: set
``PERSEUS_VAULT_SCREENSHOTS=1`` to write them to docs/img/ (otherwise they go to the test's temporary
folder). Without Chromium the module skips (and fails under ``PERSEUS_VAULT_REQUIRE_BROWSER=1``).
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import Vault
from perseus_vault_integrations.inspector import Inspector
from perseus_vault_integrations.mcp.http import listen

from ...conftest import Clock, unavailable
from .conftest import TOKEN, Sample, Server, sample_store, served

ROOT = Path(__file__).resolve().parents[3]
CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,900",
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    missing = [p for p in (CHROMIUM, DRIVER) if not os.path.exists(p)]
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        unavailable("browser", "no selenium: pip install -e '.[dev]'")
    if missing:
        unavailable(
            "browser",
            f"no headless Chromium ({', '.join(missing)}): apt-get install chromium chromium-driver",
        )
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="perseus-vault-chromium-")
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(
        options=options, service=Service(DRIVER)
    )  # never a downloaded driver or browser
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, real_embedder: Any) -> Iterator[tuple[Vault, Sample]]:
    with sample_store(tmp_path_factory.mktemp("inspector-browser"), real_embedder) as store:
        yield store


@pytest.fixture(scope="module")
def server(store: tuple[Vault, Sample]) -> Iterator[Server]:
    with served(store[0]) as s:
        yield s


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if os.environ.get("PERSEUS_VAULT_SCREENSHOTS") == "1":
        return ROOT / "docs" / "img"
    return tmp_path_factory.mktemp("screenshots")


def errors(driver: Any) -> list[str]:
    """The console's errors since the last look (a blocked script, a failed load, an exception)."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def visit(driver: Any, url: str) -> None:
    driver.get_log("browser")  # start clean
    driver.get(url)


def screenshot(driver: Any, folder: Path, name: str) -> None:
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, max(700, min(int(height) + 20, 2200)))
    driver.save_screenshot(str(folder / f"ui-{name}.png"))
    driver.set_window_size(1280, 900)


def wait_for(driver: Any, test: Any, seconds: float = 60) -> None:
    """Poll `test` until it holds. While a submitted form navigates, an element the test just found can be
    replaced by the next page's (StaleElementReferenceException): that is "not yet", like an element not found."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(
        driver,
        seconds,
        poll_frequency=0.2,
        ignored_exceptions=(NoSuchElementException, StaleElementReferenceException),
    ).until(test)


def views(sample: Sample) -> dict[str, str]:
    storage = sample.themes["storage"]
    return {
        "overview": "/",
        "browse": "/browse?agent_id=ops&limit=25",
        "memory": f"/memory/{sample.ids['city']}",
        "recall": "/recall?q=where+do+backups+go&mode=hybrid&validity=1&agent_id=ops",
        "graph": f"/graph?id={storage[0]}&depth=2&agent_id=ops",
        "communities": "/graph?agent_id=ops",
        "time": "/time?at=2026-01-02T12:00:00Z",
        "writes": "/time",
        "hygiene": "/hygiene?agent_id=ops",
        "files": "/files?agent_id=ops",
        "file": "/files?agent_id=ops&file=Opinions",
    }


def test_each_view_loads_with_no_console_error(
    browser: Any, server: Server, store: tuple[Vault, Sample], shots: Path
) -> None:
    from selenium.webdriver.common.by import By

    for name, path in views(store[1]).items():
        visit(browser, server.url + path)
        if name == "hygiene":  # computed in the background; the page reloads itself until it is ready
            wait_for(browser, lambda d: "flagged" in d.find_element(By.TAG_NAME, "main").text)
        heading = browser.find_element(By.TAG_NAME, "h1").text
        assert heading and "Not found" not in heading and "Cannot" not in heading, (name, heading)
        assert not browser.find_elements(By.CSS_SELECTOR, ".message.error"), name
        assert errors(browser) == [], name
        if name in ("overview", "browse", "memory", "recall", "graph", "time", "hygiene", "file"):
            screenshot(browser, shots, name)


def test_a_search_shows_results_and_a_click_opens_the_memory_with_its_history(
    browser: Any, server: Server, store: tuple[Vault, Sample]
) -> None:
    from selenium.webdriver.common.by import By

    visit(browser, server.url + "/browse")
    box = browser.find_element(By.NAME, "q")
    box.send_keys("Alice Berlin")
    box.submit()
    wait_for(browser, lambda d: "Matches" in d.find_element(By.TAG_NAME, "main").text)
    rows = browser.find_elements(By.CSS_SELECTOR, "main table tbody tr")
    assert rows and "alice-city" in rows[0].text
    rows[0].find_element(By.PARTIAL_LINK_TEXT, "alice-city").click()
    wait_for(browser, lambda d: "alice-city" in d.find_element(By.TAG_NAME, "h1").text)
    history = browser.find_element(By.ID, "history")
    assert "History (2 versions)" in history.text and "Alice lives in Paris" in history.text
    assert len(history.find_elements(By.CSS_SELECTOR, "svg.timeline rect.bar")) == 2 * 2 + 2  # and the legend
    assert errors(browser) == []


def test_the_graph_draws_the_walk_and_lights_a_node_s_links(
    browser: Any, server: Server, store: tuple[Vault, Sample]
) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    vault, sample = store
    start = sample.themes["billing"][0]
    visit(browser, f"{server.url}/graph?id={start}&depth=1&agent_id=ops")
    walk = vault.traverse(start, depth=1, agent_id="ops")
    drawn = {
        int(a.get_attribute("data-node"))
        for a in browser.find_elements(By.CSS_SELECTOR, "svg.graph a[data-node]")
    }
    assert drawn == {n.entity.id for n in walk.nodes}
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.graph line.edge")) == len(walk.edges)
    billing = {c for c in browser.find_elements(By.CSS_SELECTOR, "svg.graph circle")}
    assert len({c.get_attribute("fill") for c in billing}) >= 1
    node = browser.find_element(By.CSS_SELECTOR, f'svg.graph a[data-node="{start}"] circle')
    ActionChains(browser).move_to_element(node).perform()
    lit = browser.find_elements(By.CSS_SELECTOR, "svg.graph line.edge.lit")
    assert len(lit) == sum(1 for e in walk.edges if start in (e.from_id, e.to_id)) > 0
    assert errors(browser) == []


def test_a_hostile_memory_is_shown_as_text_and_runs_nothing(
    browser: Any, server: Server, store: tuple[Vault, Sample]
) -> None:
    from selenium.webdriver.common.by import By

    vault, sample = store
    pages = [
        f"/memory/{sample.hostile}",
        "/browse?agent_id=ops&q=pwned+script",
        "/",
        "/recall?q=pwned&mode=fts5",
        f"/graph?id={sample.hostile}&agent_id=ops",
        "/files?agent_id=ops&file=Opinions",
        "/time",
        f"/graph?id={sample.themes['oncall'][0]}&agent_id=ops",
    ]
    for path in pages:
        visit(browser, server.url + path)
        assert browser.execute_script("return window.__pwned") is None, path
        scripts = [s.get_attribute("src") for s in browser.find_elements(By.TAG_NAME, "script")]
        assert scripts == [f"{server.url}/static/app.js"], path
        for tag in ("img", "iframe", "style", "object", "embed"):
            assert not browser.find_elements(By.CSS_SELECTOR, f"main {tag}"), (path, tag)
        assert not browser.find_elements(By.CSS_SELECTOR, "a[href^='javascript'], a[href^='JAVASCRIPT']"), (
            path
        )
        assert not browser.find_elements(By.CSS_SELECTOR, "[onerror], [onload], [onmouseover]"), path
        assert errors(browser) == [], path
    visit(browser, f"{server.url}/memory/{sample.hostile}")
    shown = browser.find_element(By.TAG_NAME, "main").text
    for text in (
        '<script>window.__pwned = "script"</script>',
        "javascript:window.__pwned='source'",
        "<svg onload=window.__pwned='topic'>",
        "<iframe src=\\\"javascript:window.__pwned='body'\\\">",
        "<style>body{display:none}</style>",
    ):
        assert text in shown, text
    assert browser.execute_script("return getComputedStyle(document.body).display") == "block"


def test_forget_and_restore_from_the_page(browser: Any, tmp_path: Path, clock: Clock) -> None:
    from selenium.webdriver.common.by import By

    with Vault(tmp_path / "edits.db", clock=clock, embedder=False) as vault:
        entity = vault.remember("decision", "db", "We chose SQLite")
        with served(vault, allow_edits=True) as server:
            visit(browser, f"{server.url}/memory/{entity.id}")
            clock.advance(1000)
            browser.find_element(By.XPATH, "//button[text()='Forget (archive)']").click()
            wait_for(browser, lambda d: d.find_elements(By.XPATH, "//button[text()='Restore']"))
            assert vault.get_entity(entity.id).status == "archived"
            clock.advance(1000)
            browser.find_element(By.XPATH, "//button[text()='Restore']").click()
            wait_for(browser, lambda d: d.find_elements(By.XPATH, "//button[text()='Forget (archive)']"))
            assert vault.get_entity(entity.id).status == "active"
            assert "History (3 versions)" in browser.find_element(By.ID, "history").text
            assert errors(browser) == []


def test_off_loopback_the_browser_signs_in_with_the_token_once(
    browser: Any, store: tuple[Vault, Sample]
) -> None:
    from selenium.webdriver.common.by import By

    with served(store[0], host="0.0.0.0", token=TOKEN) as server:
        visit(browser, f"{server.url}/browse?agent_id=ops")
        assert "Sign in" in browser.find_element(By.TAG_NAME, "h1").text
        assert "storage" not in browser.page_source
        browser.find_element(By.LINK_TEXT, "Sign in with it").click()
        wait_for(browser, lambda d: d.find_elements(By.NAME, "token"))
        field = browser.find_element(By.NAME, "token")
        field.send_keys(TOKEN)
        field.submit()
        wait_for(browser, lambda d: d.find_element(By.TAG_NAME, "h1").text == "Browse")
        assert "storage-0" in browser.find_element(By.TAG_NAME, "main").text
        cookies = {c["name"]: c for c in browser.get_cookies()}
        assert TOKEN not in str(cookies) and all(c["httpOnly"] for c in cookies.values())
        visit(browser, f"{server.url}/")
        assert browser.find_element(By.TAG_NAME, "h1").text == "Overview"
        assert errors(browser) == []
        browser.find_element(By.XPATH, "//button[text()='Sign out']").click()
        wait_for(browser, lambda d: d.find_elements(By.NAME, "token"))
        assert not browser.get_cookies()  # the session cookie is gone
        visit(browser, f"{server.url}/browse?agent_id=ops")
        assert (
            "Sign in" in browser.find_element(By.TAG_NAME, "h1").text
            and "storage-0" not in browser.page_source
        )
        browser.delete_all_cookies()


def test_a_page_of_another_site_cannot_start_work_here(
    browser: Any, store: tuple[Vault, Sample], tmp_path: Path
) -> None:
    """A page on another port of this host (same-site) or elsewhere loads the inspector's URLs as images: no
    Origin goes with such a GET, but Chromium's Sec-Fetch-Site does, and no report is started."""
    import http.server
    import threading

    from selenium.webdriver.common.by import By

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    sock = listen("127.0.0.1", 0)
    app = Inspector(store[0], "127.0.0.1", sock.getsockname()[1], None)
    with Server(app, sock) as server:
        targets = [f"{server.url}/hygiene?agent_id=ops&min_age_days={n}" for n in range(3)]
        (tmp_path / "attack.html").write_text(
            "<!doctype html>" + "".join(f'<img src="{t}">' for t in targets)
        )
        handler = functools.partial(Quiet, directory=str(tmp_path))
        with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as other:
            threading.Thread(target=other.serve_forever, daemon=True).start()
            try:
                for host in ("127.0.0.1", "localhost"):  # another port of this host; another site
                    browser.get(f"http://{host}:{other.server_address[1]}/attack.html")
                    wait_for(
                        browser,
                        lambda d: d.execute_script("return [...document.images].every(i => i.complete)"),
                    )
            finally:
                other.shutdown()
        assert not app.reports._jobs  # no report was started for those pages
        visit(browser, targets[0])  # the same address opened by the user: served
        wait_for(browser, lambda d: "flagged" in d.find_element(By.TAG_NAME, "main").text)
        assert len(app.reports._jobs) == 1
