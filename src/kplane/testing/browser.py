"""Headless Chromium for dashboard tests and measurements, driven by Selenium and ChromeDriver.

The system's Chromium and ChromeDriver are used (Debian's ``chromium`` and ``chromium-driver``:
``/usr/bin/chromium``, ``/usr/bin/chromedriver``); nothing is ever downloaded (Selenium Manager is
bypassed by naming the driver). Chromium runs with a fresh profile and every background service
off, so it opens no connection but those the page makes. ``missing()`` says why a browser cannot
run here (tests skip with that message).

Selenium is a development dependency, imported only when a ``Browser`` starts.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("KPLANE_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("KPLANE_CHROMEDRIVER", "/usr/bin/chromedriver")

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,1000",
    "--enable-precise-memory-info",
)


def missing() -> str | None:
    """Why no browser can run here, or None when Chromium, ChromeDriver and Selenium are present."""
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not (os.path.exists(path) and os.access(path, os.X_OK)):
            return f"{path} not found: install Debian's {package} (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    return None


class Browser:
    """One headless Chromium with its own profile; ``close`` (or ``with``) removes both.

    ``accept_insecure_certs`` lets it talk to a server whose CA it does not know (kplane's
    generated one). Console messages are collected for ``console(level)``.
    """

    def __init__(self, *, accept_insecure_certs: bool = True) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        self.profile = tempfile.mkdtemp(prefix="kplane-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={self.profile}")
        options.accept_insecure_certs = accept_insecure_certs
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        try:
            self.driver: Any = webdriver.Chrome(
                service=Service(executable_path=CHROMEDRIVER), options=options
            )
        except Exception:
            shutil.rmtree(self.profile, ignore_errors=True)
            raise
        self.driver.set_page_load_timeout(30)
        self.logs: list[dict[str, Any]] = []

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)

    def get(self, url: str) -> None:
        self.driver.get(url)

    def find(self, css: str) -> Any:
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, css)

    def find_all(self, css: str) -> list[Any]:
        from selenium.webdriver.common.by import By

        return list(self.driver.find_elements(By.CSS_SELECTOR, css))

    def wait(self, what: str, condition: Callable[[], Any], timeout: float = 30.0) -> Any:
        """Poll ``condition`` (exceptions count as not yet) until it returns a truthy value."""
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                value = condition()
                if value:
                    return value
            except Exception as err:  # a stale or missing element: the page is still drawing
                last = err
            time.sleep(0.1)
        raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last error: {last})")

    def script(self, source: str, *args: Any) -> Any:
        return self.driver.execute_script(source, *args)

    def console(self, level: str = "SEVERE") -> list[dict[str, Any]]:
        """Every console message so far (kept across calls) at ``level``."""
        self.logs.extend(self.driver.get_log("browser"))
        return [entry for entry in self.logs if entry.get("level") == level]

    def screenshot(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.driver.save_screenshot(str(path))
        return path

    def heap_used(self, *, collect: bool = True) -> int:
        """The page's JavaScript heap in use, in bytes (CDP ``Performance.getMetrics``
        JSHeapUsedSize), after a garbage collection when ``collect``."""
        if collect:
            self.driver.execute_cdp_cmd("HeapProfiler.collectGarbage", {})
        self.driver.execute_cdp_cmd("Performance.enable", {})
        metrics = self.driver.execute_cdp_cmd("Performance.getMetrics", {})["metrics"]
        return int(next(m["value"] for m in metrics if m["name"] == "JSHeapUsedSize"))

    def metrics(self) -> dict[str, float]:
        """Every CDP ``Performance.getMetrics`` figure (JSHeapTotalSize, Nodes, JSEventListeners...)."""
        self.driver.execute_cdp_cmd("Performance.enable", {})
        return {
            m["name"]: m["value"]
            for m in self.driver.execute_cdp_cmd("Performance.getMetrics", {})["metrics"]
        }
