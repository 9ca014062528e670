"""Running a target of the project's Makefile from a test."""

from __future__ import annotations

import subprocess
from pathlib import Path

#: The repository root, where the Makefile is.
ROOT = Path(__file__).resolve().parents[1]


def make(target: str, timeout: float = 900) -> None:
    """Run ``make <target>`` at the root; fail the test with its output when it fails."""
    done = subprocess.run(
        ["make", "--no-print-directory", target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
