#!/usr/bin/env python3
"""Cake under jax.jit over a mesh of every local GPU, rows sharded, against one GPU.

  1. A norm-gate training step (value and gradients) under plain jit with NamedSharding inputs:
     the compiled HLO has no all-gather or all-to-all (Cake's partitioning rules run each
     device's rows locally), y, dx and dz equal the one-GPU run bit for bit, dw and the loss
     within the cross-device FP32 sum's rounding;
  2. the same step written with jax.shard_map (examples/jax/shard_map_normgate.py) still matches.
Skips (exit 0, says so) with fewer than two GPUs; --min-gpus 1 runs it on one.

    PYTHONPATH=bindings/python:bindings/jax python3 tests/multigpu/jax_mesh.py [--json OUT]
"""

import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.join(ROOT, "bindings", "python"), os.path.join(ROOT, "bindings", "jax"),
                os.path.join(ROOT, "examples", "jax")]
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

import cake_jax  # noqa: E402

COLLECTIVES = re.compile(r"\b(all-gather|all-to-all)(-start)?\b")


def loss(x, z, w, t):
    return jnp.sum(cake_jax.normgate(x, z, w).astype(jnp.float32) * t)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rows-per-device", type=int, default=8192)
    p.add_argument("--d", type=int, default=128)
    p.add_argument("--min-gpus", type=int, default=2)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    gpus = [dev for dev in jax.devices() if dev.platform == "gpu"]
    if len(gpus) < max(args.min_gpus, 1):
        print(f"jax_mesh: skipped: needs {args.min_gpus} or more GPUs, found {len(gpus)}")
        return 0
    n, d = len(gpus), args.d
    rows = args.rows_per_device * n
    kx, kz, kw, kt = jax.random.split(jax.random.key(0), 4)
    x = jax.random.normal(kx, (rows, d)).astype(jnp.bfloat16)
    z = (2 * jax.random.normal(kz, (rows, d))).astype(jnp.bfloat16)
    w = 1 + 0.5 * jax.random.normal(kw, (d,), jnp.float32)
    t = jax.random.normal(kt, (rows, d), jnp.float32)
    step = jax.value_and_grad(loss, argnums=(0, 1, 2))

    one = [jax.device_put(a, gpus[0]) for a in (x, z, w, t)]
    loss1, (dx1, dz1, dw1) = jax.jit(step)(*one)
    y1 = jax.jit(cake_jax.normgate)(*one[:3])

    mesh = Mesh(np.array(gpus), ("data",))
    by_rows, whole = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())
    xs, zs, ts = (jax.device_put(a, by_rows) for a in (x, z, t))
    ws = jax.device_put(w, whole)
    jitted = jax.jit(step)
    hlo = jitted.lower(xs, zs, ws, ts).compile().as_text()
    lossn, (dxn, dzn, dwn) = jitted(xs, zs, ws, ts)
    yn = jax.jit(cake_jax.normgate)(xs, zs, ws)

    def same(a, b):
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))

    def rel(a, b):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        return float(np.linalg.norm(a - b) / np.linalg.norm(b))

    import shard_map_normgate
    res = {
        "gpus": n,
        "hlo_gathers": sorted(set(m.group(0) for m in COLLECTIVES.finditer(hlo))),
        "y_identical": same(yn, y1),
        "dx_identical": same(dxn, dx1),
        "dz_identical": same(dzn, dz1),
        "dw_rel": rel(dwn, dw1),
        "loss_rel": abs(float(lossn) - float(loss1)) / abs(float(loss1)),
        "dx_sharding_rows": str(dxn.sharding.spec),
        "shard_map_example": bool(shard_map_normgate.main(args.rows_per_device, d, verbose=False)),
    }
    ok = (not res["hlo_gathers"] and res["y_identical"] and res["dx_identical"]
          and res["dz_identical"] and res["dw_rel"] <= 1e-5 and res["loss_rel"] <= 1e-5
          and res["shard_map_example"])
    res["ok"] = ok
    print(json.dumps(res, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    print("jax_mesh:", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
