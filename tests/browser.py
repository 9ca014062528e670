"""Headless Chromium for the tests that look at a page as a browser shows it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def chromium() -> str:
    """The Chromium binary; the test fails (never skips) without it."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail(
            "chromium is not installed (Debian package 'chromium'); it is a test dependency"
        )
    return found


def run_chromium(profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Headless Chromium, as root in a container: no sandbox, no GPU, its own profile."""
    command = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--no-first-run",
        f"--user-data-dir={profile}",
        *args,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    return result
