"""cake.torch without a GPU: which operator implementation loads, and both implementations'
shapes, dtypes, autograd wiring and errors on meta and CPU tensors (skips without torch)."""

import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

from conftest import PYTHON_DIR  # noqa: E402

PROBE = textwrap.dedent("""
    import json, torch, cake.torch as ct
    out = {"backend": ct.backend()}
    m = "meta"
    x = torch.empty(6, 64, dtype=torch.bfloat16, device=m, requires_grad=True)
    z = torch.empty(6, 64, dtype=torch.float32, device=m, requires_grad=True)
    w = torch.empty(64, dtype=torch.float32, device=m, requires_grad=True)
    y = ct.normgate(x, z, w, gate="sigmoid", gate_before_norm=True, group_size=16)
    y.sum().backward()
    out["y"] = [list(y.shape), str(y.dtype)]
    out["grads"] = [str(t.grad.dtype) for t in (x, z, w)]
    x.grad = w.grad = None
    ct.normgate(x, None, w).sum().backward()
    out["nogate"] = [str(x.grad.dtype), list(w.grad.shape)]
    q = ct.swiglu_mxfp8(torch.empty(256, 512, dtype=torch.bfloat16, device=m), "both")
    out["swiglu"] = [list(t.shape) for t in q]
    errs = []
    cx, cw = torch.randn(6, 64).to(torch.bfloat16), torch.randn(64).to(torch.bfloat16)
    for call in (lambda: ct.normgate(cx, None, cw),
                 lambda: ct.normgate(x, z, w, group_size=24),
                 lambda: ct.normgate(x, z, w, gate="relu"),
                 lambda: ct.swiglu_mxfp8(torch.empty(100, 192, dtype=torch.bfloat16, device=m))):
        try:
            call()
            errs.append(None)
        except Exception as e:
            errs.append(type(e).__name__ + ": " + str(e).splitlines()[0])
    out["errors"] = errs
    print(json.dumps(out))
""")


def _probe(**env):
    r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(PYTHON_DIR), **env})
    assert r.returncode == 0, r.stderr[-3000:]
    import json
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


def test_both_implementations_agree_without_a_gpu():
    native, _ = _probe()
    python, notice = _probe(CAKE_TORCH_NATIVE="0")
    assert python["backend"] == "python"
    if native["backend"] != "native":
        pytest.skip("libcake_torch is not built here (no torch headers at configure time)")
    for key in ("y", "grads", "nogate", "swiglu"):
        assert native[key] == python[key], key
    assert native["y"] == [[6, 64], "torch.bfloat16"]
    assert native["grads"] == ["torch.bfloat16", "torch.float32", "torch.float32"]
    assert native["swiglu"] == [[256, 256], [2048], [256, 256], [2048]]
    for a, b in zip(native["errors"], python["errors"]):
        assert a is not None and b is not None
        assert a.split(":")[0] == b.split(":")[0], (a, b)
    assert "Cake runs on CUDA tensors" in native["errors"][0]
    assert "group_size = 24" in native["errors"][1]
    assert "UnsupportedShapeError" in native["errors"][3]


def test_another_torch_minor_version_gets_the_python_operators_with_a_notice():
    code = textwrap.dedent("""
        import warnings, torch
        torch.__version__ = "2.99.0"
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            import cake.torch as ct
        print(ct.backend(), "|", " ".join(str(m.message) for m in w))
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(PYTHON_DIR)})
    assert r.returncode == 0, r.stderr[-3000:]
    backend, notice = r.stdout.strip().split("|", 1)
    assert backend.strip() == "python"
    assert "built for torch 2.11" in notice and "2.99.0" in notice
