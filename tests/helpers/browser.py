"""A real browser for the dashboard's tests: Debian's headless chromium driven through its
chromedriver by Selenium, with a fresh profile, bounded waits on elements and states (never a
sleep), and a screenshot of each page kept under `test-artifacts/dashboard/` (git-ignored).

`TOOLSCOUT_DOCS_SCREENSHOTS=1` also writes each named screenshot to `docs/images/`, for the README.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.wait import WebDriverWait

from tests.helpers.paths import ROOT

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTIFACTS = ROOT / "test-artifacts" / "dashboard"
DOCS_IMAGES = ROOT / "docs" / "images"
WAIT_SECONDS = 30.0
"""The longest a test waits for an element or a state (a loaded CI machine, two browsers at once)."""


class Browser:
    """One headless chromium window, with the waits and screenshots the tests use."""

    def __init__(self, driver: webdriver.Chrome, base_url: str) -> None:
        self.driver = driver
        self.base_url = base_url.rstrip("/")

    def open(self, path: str) -> None:
        """Load `path` (relative to the gateway, as `/dashboard/tools`) and wait for it to be ready."""
        self.driver.get(self.base_url + path)
        self.until(lambda d: d.execute_script("return document.readyState") == "complete", f"{path} to load")

    @property
    def path(self) -> str:
        """The path of the page shown."""
        return str(self.driver.current_url).removeprefix(self.base_url).split("?")[0]

    def cookies(self) -> list[dict[str, Any]]:
        """The cookies the browser holds for the page shown."""
        return cast(list[dict[str, Any]], self.driver.get_cookies())  # pyright: ignore[reportUnknownMemberType]

    def script(self, code: str) -> object:
        """What `code` (a function body) returns, run in the page."""
        return cast(object, self.driver.execute_script(code))  # pyright: ignore[reportUnknownMemberType]

    def until(self, state: Callable[[Any], Any], what: str) -> Any:
        """Wait (at most `WAIT_SECONDS`) for `state(driver)` to be truthy; its value."""
        try:
            return WebDriverWait(self.driver, WAIT_SECONDS).until(state)
        except TimeoutException:
            self.screenshot("timeout")
            raise AssertionError(f"waited {WAIT_SECONDS:g} s for {what}; page: {self.path}") from None

    def element(self, css: str) -> WebElement:
        """The visible element `css` selects, once there is one."""
        return self.until(expected_conditions.visibility_of_element_located((By.CSS_SELECTOR, css)), css)

    def elements(self, css: str) -> list[WebElement]:
        """Every element `css` selects now (no wait)."""
        return list(self.driver.find_elements(By.CSS_SELECTOR, css))

    def text(self, css: str) -> str:
        """The visible text of the element `css` selects."""
        return str(self.element(css).text)

    def wait_text(self, css: str, text: str) -> None:
        """Wait until the element `css` selects shows `text`."""
        self.until(
            expected_conditions.text_to_be_present_in_element((By.CSS_SELECTOR, css), text), f"{text!r} in {css}"
        )

    def fill(self, css: str, value: str) -> None:
        """Replace what the field `css` holds with `value`."""
        field = self.element(css)
        field.clear()
        field.send_keys(value)

    def click(self, css: str) -> None:
        """Click the element `css` selects once it can be clicked."""
        self.until(expected_conditions.element_to_be_clickable((By.CSS_SELECTOR, css)), f"{css} clickable").click()

    def submit(self, css: str, *, then: str) -> None:
        """Click `css` (a submit button) and wait until the page it loads shows `then` (a CSS selector)."""
        old = self.driver.find_element(By.TAG_NAME, "html")
        self.click(css)
        self.until(replaced(old), "the next page")
        self.element(then)

    def screenshot(self, name: str) -> Path:
        """Save the page as `test-artifacts/dashboard/NAME.png` (and in docs/images/ when asked)."""
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        path.write_bytes(self.driver.get_screenshot_as_png())
        if os.environ.get("TOOLSCOUT_DOCS_SCREENSHOTS") == "1" and name != "timeout":
            DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, DOCS_IMAGES / f"dashboard-{name}.png")
        return path


@contextmanager
def browser(base_url: str, profile: Path) -> Generator[Browser]:
    """A headless chromium for `base_url`, with its profile in `profile` (a fresh directory)."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        raise AssertionError(
            f"{', '.join(missing)} missing: install Debian's chromium and chromium-driver "
            "(`apt-get install -y chromium chromium-driver`; scripts/test does)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",  # as root (CI), chromium refuses its sandbox
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        "--window-size=1280,860",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    try:
        yield Browser(driver, base_url)
    finally:
        driver.quit()


def replaced(element: WebElement) -> Callable[[Any], bool]:
    """A wait condition: `element` belongs to a page that was replaced.

    Selenium's `staleness_of` knows only the stale-element error; while the old page is being torn
    down, chromium may answer instead that the node "does not belong to the document", which means
    the same and made the wait fail.
    """

    def gone(_: Any) -> bool:
        try:
            element.is_enabled()
        except StaleElementReferenceException:
            return True
        except WebDriverException as exc:
            if "does not belong to the document" in (exc.msg or ""):
                return True
            raise
        return False

    return gone
