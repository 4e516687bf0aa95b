"""Cake from JAX: the norm-gate forward and backward under jax.jit / jax.grad, and the SwiGLU +
MXFP8 forward, each checked against plain JAX. Exits 0 when every check passes.

    PYTHONPATH=bindings/python:bindings/jax python3 examples/jax/cake_jax_demo.py
(needs libcake.so and libcake_jax.so from the CMake build, and a GPU visible to JAX).
"""

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

try:
    import cake_jax
except ImportError:  # run from a checkout without installing the packages
    _repo = Path(__file__).resolve().parents[2]
    sys.path[:0] = [str(_repo / "bindings" / "python"), str(_repo / "bindings" / "jax")]
    import cake_jax


def normgate_jax(x, z, w, eps=1e-6):
    """The same function in plain JAX (FP32 inside)."""
    xf, zf = x.astype(jnp.float32), z.astype(jnp.float32)
    rstd = jax.lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + eps)
    return (xf * rstd * w.astype(jnp.float32) * zf * jax.nn.sigmoid(zf)).astype(jnp.bfloat16)


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def main() -> bool:
    ok = True
    # Gated DeltaNet output norm: T tokens x H heads x D = 128, FP32 master weight.
    t, h, d = 4096, 16, 128
    kx, kz, kw, kg = jax.random.split(jax.random.key(0), 4)
    x = jax.random.normal(kx, (t, h, d)).astype(jnp.bfloat16)
    z = (2 * jax.random.normal(kz, (t, h, d))).astype(jnp.bfloat16)
    w = 1 + 0.5 * jax.random.normal(kw, (d,), jnp.float32)
    target = jax.random.normal(kg, (t, h, d))

    def loss(norm):
        return lambda x, z, w: jnp.mean((norm(x, z, w).astype(jnp.float32) - target) ** 2)

    y = jax.jit(cake_jax.normgate)(x, z, w)
    e = rel(y, jax.jit(normgate_jax)(x, z, w))
    print(f"normgate forward   {t}x{h}x{d}  rel. difference to plain JAX {e:.1e}")
    ok &= e < 5e-3
    if cake_jax.has_op("normgate_bwd"):
        grads = jax.jit(jax.grad(loss(cake_jax.normgate), argnums=(0, 1, 2)))(x, z, w)
        ref = jax.jit(jax.grad(loss(normgate_jax), argnums=(0, 1, 2)))(x, z, w)
        for name, a, b in zip(("dx", "dz", "dw"), grads, ref):
            e = rel(a, b)
            print(f"normgate backward  {name} ({a.dtype})  rel. difference {e:.1e}")
            ok &= e < 1e-2
    else:
        print("normgate backward  skipped: this libcake.so has no cake_normgate_backward yet")

    if cake_jax.has_op("swiglu_mxfp8_fwd"):
        m, k = 2048, 1024
        inp = (3 * jax.random.normal(kg, (m, 2 * k))).astype(jnp.bfloat16)
        q = jax.jit(cake_jax.swiglu_mxfp8, static_argnums=1)(inp, "both")
        yref = (jax.nn.silu(inp[:, :k].astype(jnp.float32)) * inp[:, k:].astype(jnp.float32))
        er = rel(cake_jax.dequantize_mxfp8(q.row_q, q.row_s), yref)
        ec = rel(cake_jax.dequantize_mxfp8(q.col_q, q.col_s, colwise=True), yref)
        print(f"swiglu+mxfp8 fwd   {m}x{2 * k} -> E4M3 {q.row_q.shape} + {q.col_q.shape}; "
              f"dequantized rel. error {er:.1e} / {ec:.1e}")
        ok &= er < 0.05 and ec < 0.05
    else:
        print("swiglu+mxfp8 fwd   skipped: this libcake.so has no cake_swiglu_mxfp8_forward yet")
    print("all checks passed" if ok else "CHECKS FAILED")
    return bool(ok)


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
