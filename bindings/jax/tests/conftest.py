"""JAX tests: run from the checkout (no install), or with CAKE_TEST_INSTALLED=1 against the
installed cake and cake_jax packages (bindings/test-installed.sh). The test modules skip without
jax, the shim, or a GPU (a skip raised here, in a conftest, would be an error)."""

import os
import sys
from pathlib import Path

import pytest

JAX_DIR = Path(__file__).resolve().parents[1]  # bindings/jax
REPO = JAX_DIR.parents[1]
if os.environ.get("CAKE_TEST_INSTALLED") == "1":
    sys.path[:0] = [str(REPO / "examples" / "jax")]
else:
    sys.path[:0] = [str(REPO / "bindings" / "python"), str(JAX_DIR), str(REPO / "examples" / "jax")]
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # share the GPU politely
# Four CPU devices for the partitioning tests (test_sharding_host.py), before jax is imported.
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_force_host_platform_device_count=4").strip()


def require_op(op):
    import cake_jax

    if not cake_jax.has_op(op):
        pytest.skip(f"libcake.so does not export the {op} entry points yet")
