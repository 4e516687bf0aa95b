"""Data-parallel norm-gate with Cake under jax.shard_map, on every local GPU, checked against
the same step on one GPU.

Rows (tokens x heads) are split over a 1-D mesh "data"; w is replicated, so its gradient is the
sum of the shards' (shard_map's transpose inserts the psum). Each shard's forward and backward
run Cake's kernels through the XLA FFI on that GPU's stream. y, dx and dz must equal the one-GPU
run bit for bit (each row is computed alone); dw and the loss differ only by the order of the
cross-device sum.

    PYTHONPATH=bindings/python:bindings/jax python3 examples/jax/shard_map_normgate.py
(libcake_jax.so from the CMake build: cmake -DCAKE_BUILD_JAX_SHIM=ON ...). Works with 1 GPU.
"""

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

try:
    import cake_jax
except ImportError:  # run from a checkout without installing the packages
    _repo = Path(__file__).resolve().parents[2]
    sys.path[:0] = [str(_repo / "bindings" / "python"), str(_repo / "bindings" / "jax")]
    import cake_jax


def loss_one(x, z, w, t):
    return jnp.sum(cake_jax.normgate(x, z, w).astype(jnp.float32) * t)


def make_sharded_loss(mesh):
    def local(x, z, w, t):
        return jax.lax.psum(loss_one(x, z, w, t), "data")

    return jax.shard_map(local, mesh=mesh, in_specs=(P("data"), P("data"), P(), P("data")),
                         out_specs=P())


def main(rows_per_device: int = 8192, d: int = 128, verbose: bool = True) -> bool:
    gpus = [dev for dev in jax.devices() if dev.platform == "gpu"]
    if not gpus:
        print("shard_map_normgate: no GPU visible to JAX", file=sys.stderr)
        return False
    n = len(gpus)
    rows = rows_per_device * n
    kx, kz, kw, kt = jax.random.split(jax.random.key(0), 4)
    x = jax.random.normal(kx, (rows, d)).astype(jnp.bfloat16)
    z = (2 * jax.random.normal(kz, (rows, d))).astype(jnp.bfloat16)
    w = 1 + 0.5 * jax.random.normal(kw, (d,), jnp.float32)  # FP32 master weight: FP32 dw
    t = jax.random.normal(kt, (rows, d), jnp.float32)

    # One GPU.
    one = [jax.device_put(a, gpus[0]) for a in (x, z, w, t)]
    step_one = jax.jit(jax.value_and_grad(loss_one, argnums=(0, 1, 2)))
    loss1, (dx1, dz1, dw1) = step_one(*one)
    y1 = jax.jit(cake_jax.normgate)(*one[:3])

    # Every GPU, rows sharded.
    mesh = Mesh(np.array(gpus), ("data",))
    rows_sharding, repl = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())
    xs, zs, ts = (jax.device_put(a, rows_sharding) for a in (x, z, t))
    ws = jax.device_put(w, repl)
    step_n = jax.jit(jax.value_and_grad(make_sharded_loss(mesh), argnums=(0, 1, 2)))
    lossn, (dxn, dzn, dwn) = step_n(xs, zs, ws, ts)
    yn = jax.jit(jax.shard_map(lambda x, z, w: cake_jax.normgate(x, z, w), mesh=mesh,
                               in_specs=(P("data"), P("data"), P()), out_specs=P("data")))(
                                   xs, zs, ws)

    def same(a, b):
        return np.array_equal(np.asarray(a), np.asarray(b))

    def rel(a, b):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        return float(np.linalg.norm(a - b) / np.linalg.norm(b))

    checks = {
        "y identical": same(yn, y1),
        "dx identical": same(dxn, dx1),
        "dz identical": same(dzn, dz1),
        "dw (fp32) within 1e-5": rel(dwn, dw1) <= 1e-5,
        "loss within 1e-5": abs(float(lossn) - float(loss1)) <= 1e-5 * abs(float(loss1)),
    }
    if verbose:
        print(f"shard_map norm-gate: {n} GPU(s), {rows} x {d} rows, "
              f"loss {float(lossn):.6f} vs {float(loss1):.6f} on one GPU")
        for k, ok in checks.items():
            print(f"  {k:28s} {'OK' if ok else 'FAILED'}")
    return all(checks.values())


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
