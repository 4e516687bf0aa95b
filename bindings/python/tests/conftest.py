"""Test set-up: import the package from this checkout (no install needed) and locate the repo."""

import os
import sys
from pathlib import Path

import pytest

PYTHON_DIR = Path(__file__).resolve().parents[1]  # bindings/python
REPO = PYTHON_DIR.parents[1]
HEADER = REPO / "include" / "cake.h"

if os.environ.get("CAKE_TEST_INSTALLED") != "1":
    sys.path.insert(0, str(PYTHON_DIR))


@pytest.fixture(scope="session")
def header_text() -> str:
    return HEADER.read_text()


@pytest.fixture(scope="session")
def lib():
    import cake._lib

    return cake._lib.load()


def require_symbols(*names):
    """Skip the calling test (with the reason) while libcake.so lacks one of @p names."""
    import cake._lib

    library = cake._lib.load()
    missing = [n for n in names if not library.has(n)]
    if missing:
        pytest.skip(f"{library.path} does not export {', '.join(missing)} yet "
                    "(the op is declared in cake.h but not built into this libcake.so)")
