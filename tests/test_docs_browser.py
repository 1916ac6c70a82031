"""/docs in a real browser (Debian's headless Chromium, driven through chromium-driver, which
`./run test` installs): Swagger UI renders the whole served document (OpenAPI 3.1) without a
rendering error, and "Try it out" on an operation calls this server and shows its answer;
also behind a gateway's path prefix. The documentation site, built, opens at its home and a
backend's page with its navigation and search. The browser loads nothing from the web."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as shown
from selenium.webdriver.support.wait import WebDriverWait

from app.openapi import openapi_document
from tests.support.adapter import running_server
from tests.test_docs_site import ROOT, build_site

WAIT_SECONDS = 60
METHODS = {"get", "put", "post", "delete", "head", "patch", "options"}


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    driver_path, chromium = shutil.which("chromedriver"), shutil.which("chromium")
    if driver_path is None or chromium is None:
        pytest.fail("chromium and chromium-driver are missing: `./run test` installs them")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--window-size=1280,1024"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options,
                              service=webdriver.ChromeService(executable_path=driver_path))
    driver.set_page_load_timeout(WAIT_SECONDS)
    try:
        yield driver
    finally:
        driver.quit()


def _wait(browser: WebDriver, css: str) -> WebElement:
    return WebDriverWait(browser, WAIT_SECONDS).until(
        shown.visibility_of_element_located((By.CSS_SELECTOR, css)))


def _rendered(browser: WebDriver, url: str) -> None:
    """Open /docs at `url`; every operation of the document rendered, no error shown."""
    browser.get(f"{url}/docs")
    _wait(browser, ".opblock")
    errors = browser.find_elements(By.CSS_SELECTOR, ".errors-wrapper, .swagger-ui .errors")
    assert not [error.text for error in errors if error.text.strip()]
    assert "Unable to render" not in browser.page_source
    served = {operation["operationId"] for item in openapi_document()["paths"].values()
              for method, operation in item.items() if method in METHODS}
    shown_ids = {block.get_attribute("id").rsplit("-", 1)[-1]
                 for block in browser.find_elements(By.CSS_SELECTOR, ".opblock")}
    assert shown_ids == served


def _parameter_name(row: WebElement) -> str | None:
    names = row.find_elements(By.CSS_SELECTOR, ".parameter__name")
    words = (names[0].get_attribute("textContent") or "").split() if names else []
    return words[0] if words else None


def _id_field(browser: WebDriver) -> WebElement | None:
    """The `id` parameter's field, once Swagger UI has resolved the parameter's reference."""
    rows = browser.find_elements(By.CSS_SELECTOR,
                                 "#operations-Namespace-ListNamespaces .parameters tbody tr")
    return next((row.find_element(By.CSS_SELECTOR, "input") for row in rows
                 if _parameter_name(row) == "id"), None)


def _try_list_namespaces(browser: WebDriver) -> str:
    """Expand ListNamespaces (GET /v1/namespace/{id}/list), try it with id `$` (the root) and
    return the answer's status as the page shows it."""
    block = _wait(browser, "#operations-Namespace-ListNamespaces")
    block.find_element(By.CSS_SELECTOR, ".opblock-summary").click()
    _wait(browser, "#operations-Namespace-ListNamespaces .try-out__btn").click()
    field = WebDriverWait(browser, WAIT_SECONDS).until(lambda _: _id_field(browser))
    field.clear()
    field.send_keys("$")
    _wait(browser, "#operations-Namespace-ListNamespaces .execute").click()
    status = _wait(browser, "#operations-Namespace-ListNamespaces .live-responses-table "
                            "tbody .response-col_status")
    return status.text.strip()


def test_the_docs_page_renders_and_tries_an_operation_on_this_server(
        browser: WebDriver, tmp_path: Path) -> None:
    with running_server("dir", {"root": str(tmp_path)}) as url:
        _rendered(browser, url)
        assert _try_list_namespaces(browser) == "200"
        body = _wait(browser, "#operations-Namespace-ListNamespaces .live-responses-table "
                              "tbody .response-col_description pre").text
        assert '"namespaces"' in body


def test_the_docs_page_renders_and_tries_behind_a_gateway_prefix(
        browser: WebDriver, tmp_path: Path) -> None:
    with running_server("dir", {"root": str(tmp_path)}, root_path="/lance") as url:
        _rendered(browser, f"{url}/lance")
        assert _try_list_namespaces(browser) == "200"


def test_the_docs_site_opens_at_its_home_and_a_backend_page(
        browser: WebDriver, tmp_path: Path) -> None:
    site = tmp_path / "site"
    built = build_site(ROOT / "mkdocs.yml", site)
    assert built.returncode == 0, built.stderr
    browser.get((site / "index.html").as_uri())
    assert "lance-namespace-adapter" in _wait(browser, "h1").text.lower() + browser.title.lower()
    navigation = [link.get_attribute("textContent").strip() for link in
                  browser.find_elements(By.CSS_SELECTOR, "nav.md-nav--primary a.md-nav__link")]
    assert "Getting started" in navigation
    browser.get((site / "backends" / "dir" / "index.html").as_uri())
    assert "dir" in _wait(browser, "article h1").text
    severe = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"
              and "file://" not in entry["message"]]
    assert not severe


def test_no_code_block_of_the_site_scrolls_sideways_at_1280_pixels(
        browser: WebDriver, tmp_path: Path) -> None:
    """Every page of the built site in a 1280-pixel-wide window: each code block's lines
    fit its width (they wrap), so no command is cut off behind a scroll bar."""
    site = tmp_path / "site"
    built = build_site(ROOT / "mkdocs.yml", site)
    assert built.returncode == 0, built.stderr
    assert browser.get_window_size()["width"] == 1280
    overflowing = []
    pages = sorted(site.rglob("index.html"))
    assert len(pages) > 10
    for page in pages:
        browser.get(page.as_uri())
        _wait(browser, "article")
        widths = browser.execute_script(
            "return [...document.querySelectorAll('article pre > code')]"
            ".map(code => [code.scrollWidth, code.clientWidth, code.textContent.slice(0, 60)])")
        overflowing += [f"{page.relative_to(site)}: {text!r}" for scroll, client, text in widths
                        if scroll > client + 1]
    assert overflowing == []
