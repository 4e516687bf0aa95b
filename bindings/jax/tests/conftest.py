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


def register_cpu_handlers(cake_jax):
    """The shim's handlers for the CPU platform too, so that XLA compiles (never runs) Cake's
    custom calls on the forced host devices: the partitioned HLO without a GPU."""
    import jax

    for name, symbol in cake_jax.TARGETS.items():
        if not hasattr(cake_jax._shim, symbol):  # a shim from before the op
            continue
        jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(cake_jax._shim, symbol)),
                                    platform="cpu")


def _cpu_mesh(axis_type):
    import jax

    return jax.make_mesh((4,), ("r",), devices=jax.devices("cpu")[:4],
                         axis_types=(getattr(jax.sharding.AxisType, axis_type),))


@pytest.fixture(scope="module", params=["Auto", "Explicit"])
def mesh(request):
    """Four CPU devices on one axis, of each axis type (jax.make_mesh's default is Explicit)."""
    return _cpu_mesh(request.param)


@pytest.fixture(scope="module")
def auto_mesh():
    return _cpu_mesh("Auto")
