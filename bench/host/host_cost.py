#!/usr/bin/env python3
"""Host time per call of Cake's PyTorch operators beside native PyTorch ops of the same kind.

Eager PyTorch runs one Python call per op; where the GPU work is short, the CPU time of that
call is the step's speed. This benchmark times calls back to back (no synchronisation inside a
timed batch) on shapes whose GPU time is far below the host time, so the launch queue never
fills and the wall time per call is the host cost. Every case is timed in rounds, interleaved
with the others, and the median over rounds is reported.

Both implementations of the cake:: operators are measured in one run: this process uses the
C++ operators of libcake_torch, a child process (CAKE_TORCH_NATIVE=0) the Python ones.

    python3 bench/host/host_cost.py --json host.json [--peers-dir .peers] [--rounds 15]
    python3 bench/host/host_cost.py --table host.json       # the markdown table
    python3 bench/host/host_cost.py --write docs/performance.md bench/results/host/h200.json
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Targets (docs/performance.md): a Cake op at most this many times its native reference.
TARGET_RATIO = 1.2


def _cases(torch, args):
    """(key, label, reference key or None, fn) of every case this process can run."""
    sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
    import cake
    import cake.torch as ct
    import torch.nn.functional as F

    dev = torch.device("cuda", 0)
    g = torch.Generator(device=dev).manual_seed(0)
    rows, d = args.rows, args.d
    bf16 = torch.bfloat16
    x = torch.randn(rows, d, device=dev, generator=g).to(bf16)
    z = (2 * torch.randn(rows, d, device=dev, generator=g)).to(bf16)
    w = (1 + 0.5 * torch.randn(d, device=dev, generator=g)).to(bf16)
    dy = torch.randn(rows, d, device=dev, generator=g).to(bf16)
    xr, zr, wr = (t.clone().requires_grad_() for t in (x, z, w))
    inp = torch.randn(args.swiglu_m, 2 * args.swiglu_k, device=dev, generator=g).to(bf16)
    grad = torch.randn(args.swiglu_m, args.swiglu_k, device=dev, generator=g).to(bf16)
    eps = 1e-6
    out = []

    def case(key, label, ref, fn):
        out.append((key, label, ref, fn))

    scratch = torch.zeros(16, device=dev)
    case("add", "a native PyTorch op (`x.add_`)", None, lambda: scratch.add_(1))
    case("rms_fwd", "`F.rms_norm` forward (native)", None,
         lambda: F.rms_norm(x, (d,), w, eps))
    case("rms_fwd_bwd", "`F.rms_norm` forward + backward through autograd (native)", None,
         lambda: torch.autograd.grad(F.rms_norm(xr, (d,), wr, eps), (xr, wr), dy))

    h = ct.handle(dev)
    stream = torch.cuda.current_stream().cuda_stream
    y = torch.empty_like(x)
    desc = cake.normgate_desc(rows, d)
    ptrs = (x.data_ptr(), z.data_ptr(), w.data_ptr(), y.data_ptr())
    case("ctypes_reused", "`cake.Handle.normgate_forward` (ctypes, descriptor reused)", None,
         lambda: h.normgate_forward(desc, *ptrs, None, stream))
    case("ctypes_new", "the same with a new descriptor each call", None,
         lambda: h.normgate_forward(cake.normgate_desc(rows, d), *ptrs, None, stream))
    case("op_fwd", "`torch.ops.cake.normgate_fwd`", "rms_fwd",
         lambda: torch.ops.cake.normgate_fwd(x, z, w, eps))
    case("ng_fwd", "`cake.torch.normgate` (forward, no grad)", "rms_fwd",
         lambda: ct.normgate(x, z, w, eps))
    case("ng_fwd_bwd", "`cake.torch.normgate`, forward + backward through autograd",
         "rms_fwd_bwd",
         lambda: torch.autograd.grad(ct.normgate(xr, zr, wr, eps), (xr, zr, wr), dy))
    case("ng_before_fwd", "`cake.torch.normgate`, gate before the norm, sigmoid, G = 64",
         "rms_fwd", lambda: ct.normgate(x, z, w, eps, gate="sigmoid", gate_before_norm=True,
                                        group_size=64))
    case("ng_nogate_fwd_bwd", "`cake.torch.normgate`, no gate, forward + backward",
         "rms_fwd_bwd", lambda: torch.autograd.grad(ct.normgate(xr, None, wr, eps), (xr, wr), dy))
    for o in ("rowwise", "colwise", "both"):
        case(f"sw_fwd_{o}", f"`cake.torch.swiglu_mxfp8` ({args.swiglu_m} x {args.swiglu_k}, {o})",
             "rms_fwd", lambda o=o: ct.swiglu_mxfp8(inp, o))
    for o in ("rowwise", "both"):
        case(f"sw8_fwd_{o}", f"`cake.torch.swiglu_fp8` ({args.swiglu_m} x {args.swiglu_k}, {o})",
             "rms_fwd", lambda o=o: ct.swiglu_fp8(inp, o))
    case("sw_bwd_rowwise", f"`cake.torch.swiglu_mxfp8_backward` ({args.swiglu_m} x "
         f"{args.swiglu_k}, rowwise)", "rms_fwd", lambda: ct.swiglu_mxfp8_backward(inp, grad))

    def reference(x, z, w):
        return ct.normgate_reference(x, z, w, eps)

    compiled_ref = torch.compile(reference)
    compiled_cake = torch.compile(lambda x, z, w: ct.normgate(x, z, w, eps))
    case("compile_ref_fwd", "`torch.compile` of the reference forward", None,
         lambda: compiled_ref(x, z, w))
    case("compile_cake_fwd", "`torch.compile` of `cake.torch.normgate` (forward)", None,
         lambda: compiled_cake(x, z, w))
    case("compile_cake_fwd_bwd", "`torch.compile` of `cake.torch.normgate`, forward + backward",
         None, lambda: torch.autograd.grad(compiled_cake(xr, zr, wr), (xr, zr, wr), dy))

    # A CUDA graph of the forward + backward: its replay's host cost.
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            torch.autograd.grad(ct.normgate(xr, zr, wr, eps), (xr, zr, wr), dy)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=s):
        torch.autograd.grad(ct.normgate(xr, zr, wr, eps), (xr, zr, wr), dy)
    case("graph_replay", "CUDA graph replay of `cake.torch.normgate` forward + backward", None,
         graph.replay)

    if args.peers_dir:
        sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
        try:
            from peer_loaders import load_fla
            rms_norm_gated = load_fla(args.peers_dir)[0]
            case("fla_fwd", "FLA `rms_norm_gated` forward", None,
                 lambda: rms_norm_gated(x, z, w, None, eps=eps))
            case("fla_fwd_bwd", "FLA `rms_norm_gated` forward + backward", None,
                 lambda: torch.autograd.grad(rms_norm_gated(xr, zr, wr, None, eps=eps),
                                             (xr, zr, wr), dy))
        except Exception as e:  # noqa: BLE001 - a peer that does not load is reported
            print(f"host_cost: FLA not loaded: {e!r}", file=sys.stderr)
    return out, ct.backend()


def measure(args):
    import torch

    cases, backend = _cases(torch, args)
    runnable = []
    skipped = {}
    for key, label, ref, fn in cases:
        try:
            for _ in range(args.warmup):
                fn()
            torch.cuda.synchronize()
            runnable.append((key, label, ref, fn))
        except Exception as e:  # noqa: BLE001 - e.g. a variant this library does not compute
            skipped[key] = {"label": label, "reason": f"{type(e).__name__}: {e}"[:200]}
    times = {key: [] for key, *_ in runnable}
    for _ in range(args.rounds):
        for key, _, _, fn in runnable:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(args.calls):
                fn()
            t1 = time.perf_counter()
            times[key].append((t1 - t0) / args.calls * 1e6)
        torch.cuda.synchronize()
    rows = {}
    for key, label, ref, _ in runnable:
        rows[key] = {"label": label, "ref": ref, "us": statistics.median(times[key]),
                     "min_us": min(times[key]), "max_us": max(times[key])}
    return {"backend": backend, "rows": rows, "skipped": skipped}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--json", help="write the results here")
    p.add_argument("--table", metavar="JSON", help="print the markdown table of a results file")
    p.add_argument("--write", nargs=2, metavar=("DOC", "JSON"),
                   help="render JSON's table into DOC's host-cost block")
    p.add_argument("--peers-dir", default=None, help="FLA's carried sources (bench/peers/fetch.sh)")
    p.add_argument("--rows", type=int, default=4096)
    p.add_argument("--d", type=int, default=128)
    p.add_argument("--swiglu-m", type=int, default=256)
    p.add_argument("--swiglu-k", type=int, default=256)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.table:
        print(table(json.load(open(args.table))))
        return 0
    if args.write:
        doc, path = args.write
        with open(doc) as f:
            text = f.read()
        new = replace_block(text, block(json.load(open(path)), path))
        with open(doc, "w") as f:
            f.write(new)
        return 0
    if args.child:
        json.dump(measure(args), sys.stdout)
        return 0
    native = measure(args)
    cmd = [sys.executable, os.path.abspath(__file__), "--child"]
    for name in ("rows", "d", "swiglu_m", "swiglu_k", "rounds", "calls", "warmup", "peers_dir"):
        value = getattr(args, name)
        if value is not None:
            cmd += ["--" + name.replace("_", "-"), str(value)]
    env = dict(os.environ, CAKE_TORCH_NATIVE="0")
    child = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if child.returncode != 0:
        print(child.stderr, file=sys.stderr)
        return 1
    python = json.loads(child.stdout)
    import torch
    result = {"meta": {"date": time.strftime("%Y-%m-%d"), "device": torch.cuda.get_device_name(0),
                       "torch": torch.__version__, "rows": args.rows, "d": args.d,
                       "swiglu": [args.swiglu_m, args.swiglu_k], "rounds": args.rounds,
                       "calls": args.calls, "cpu": _cpu_name(),
                       "commit": os.environ.get("CAKE_COMMIT", "")},
              "native": native, "python": python}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    print(table(result))
    return 0


def _cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


BEGIN = "<!-- host cost begin: rendered by bench/host/host_cost.py from %s; do not edit -->"
END = "<!-- host cost end -->"


def block(result, path):
    """The document block: the run's facts, then the table."""
    m = result["meta"]
    rel = os.path.relpath(os.path.abspath(path), ROOT)
    head = [BEGIN % rel,
            f"- Device: {m['device']}, host CPU {m.get('cpu') or 'unknown'}; torch {m['torch']}.",
            f"- Library: commit `{m.get('commit') or 'unknown'}`; measured {m['date']}; norm-gate "
            f"{m['rows']} x {m['d']}, SwiGLU {m['swiglu'][0]} x {m['swiglu'][1]}; median of "
            f"{m['rounds']} rounds of {m['calls']} calls.",
            "", table(result), END]
    return "\n".join(head)


def replace_block(text, new):
    """@p text with its host-cost block replaced by @p new."""
    start = text.index("<!-- host cost begin")
    end = text.index(END, start) + len(END)
    return text[:start] + new + text[end:]


def table(result):
    """Markdown: one row per case, the native and the Python operators' host us per call, and
    each Cake op's ratio to its native reference (target <= 1.2)."""
    nat, py = result["native"]["rows"], result["python"]["rows"]
    lines = ["| call | host us per call | with the Python operators | vs native reference |",
             "| --- | --- | --- | --- |"]
    for key, row in nat.items():
        other = py.get(key)
        ratio = ""
        if row["ref"] and row["ref"] in nat:
            r = row["us"] / nat[row["ref"]]["us"]
            ratio = f"{r:.2f}x {'(met)' if r <= TARGET_RATIO else '(missed)'}"
        lines.append(f"| {row['label']} | {row['us']:.1f} | "
                     f"{'' if other is None else '%.1f' % other['us']} | {ratio} |")
    for key, s in result["native"]["skipped"].items():
        lines.append(f"| {s['label']} | not run: {s['reason']} | | |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
