"""Headless Chromium for the tests that read the suite's HTML pages in a browser."""

import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH: the pages are not read in a browser "
                                    "(.ci/run installs Debian's `chromium` where apt-get can)")


def browse(pages: list[Path], profile: Path, width: int = 1400) -> dict[Path, str]:
    """Each page's DOM after Chromium ran its scripts (2 s of virtual time) in a window `width` pixels wide, the pages
    side by side."""
    def run(index, page):
        return subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile / str(index)}", "--virtual-time-budget=2000", f"--window-size={width},900",
             "--dump-dom", page.as_uri()],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    runs = [run(index, page) for index, page in enumerate(pages)]
    return {page: process.communicate(timeout=120)[0] for page, process in zip(pages, runs)}


