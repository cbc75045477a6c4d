"""Shared fixtures: the repository's paths and the `bayesc` binary the CLI comparisons run."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

EIGHT_SCHOOLS = {
    "J": 8,
    "y": [28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0],
    "sigma": [15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0],
}


@pytest.fixture(scope="session")
def bayesc_bin() -> str:
    """The CLI: $BAYESC_BIN, else the repository's release build, else `bayesc` on PATH."""
    for cand in (os.environ.get("BAYESC_BIN"), str(ROOT / "target" / "release" / "bayesc")):
        if cand and Path(cand).is_file():
            return cand
    found = shutil.which("bayesc")
    if found is None:
        pytest.skip("no bayesc binary (build it with `cargo build --release` or set BAYESC_BIN)")
    return found
