"""peers.py's harness: what every phase uses (the arguments, the results, the timer, the loaded
peers and Cake), random inputs, torch.compile, and measure(): a peer's graph timed, alternated
round by round with Cake's graphs of the same op on the same inputs."""

import statistics
import traceback

from references import EPS


class Context:
    """The state the phases share; one for the whole script."""

    def __init__(self, torch, F, args, run, timer, gen, ref_fwd, ref_bwd, fla, mamba, cake, cake_h):
        self.torch, self.F, self.args, self.run, self.timer, self.gen = torch, F, args, run, timer, gen
        self.ref_fwd, self.ref_bwd = ref_fwd, ref_bwd
        self.fla, self.mamba, self.cake, self.cake_h = fla, mamba, cake, cake_h

    def randn(self, *shape, scale=1.0, offset=0.0):
        torch, gen = self.torch, self.gen
        t = torch.randn(*shape, device="cuda", dtype=torch.float32, generator=gen) * scale + offset
        t = t.to(torch.bfloat16)
        return torch.where(t == 0, torch.full_like(t, scale), t)  # never zeros

    def measure(self, family, op, shape, peer, fn, bytes_rw=None, extra=None, cake_fns=None):
        """Times fn's graph; with cake_fns ({name: fn}, Cake on the same inputs) each of them too,
        alternated with the peer round by round: row["paired_cake"][name] holds its time and the
        speedup (peer us / Cake us) over the rounds."""
        args, timer, run = self.args, self.timer, self.run
        if args.no_pair:
            cake_fns = None
        row = {"family": family, "op": op, "shape": shape, "peer": peer}
        if extra:
            row.update(extra)
        if bytes_rw:
            row["read_bytes"], row["write_bytes"] = bytes_rw
        try:
            g, out = timer.capture(fn)
            graphs, names = [g], []
            for name, cf in (cake_fns or {}).items():
                graphs.append(timer.capture(cf)[0])
                names.append(name)
            stats = timer.time_graphs(graphs)
            row["time"] = stats[0]
            if names:
                row["paired_cake"] = {}
                for name, st in zip(names, stats[1:]):
                    ratios = [a / b for a, b in zip(stats[0]["round_medians_us"], st["round_medians_us"])]
                    row["paired_cake"][name] = {"time": st, "speedup": statistics.median(ratios),
                                                "speedup_lo": min(ratios), "speedup_hi": max(ratios)}
            row["status"] = "ok"
            del g, out, graphs
        except Exception as e:  # noqa: BLE001
            row["status"] = "error"
            row["note"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
            traceback.print_exc(limit=2)
        run.add(**row)
        return row

    def compiled(self, fn, mode):
        torch = self.torch
        torch._dynamo.reset()
        return torch.compile(fn, mode=None if mode == "default" else mode, dynamic=False, fullgraph=True)

    def cake_normgate_fns(self, rows, d, x, z, w, dy):
        """Cake's fwdg and bwdg (both packages, BF16 dw) on these inputs, as cake-bench calls
        them: {op: {name: fn}}, own outputs and zeroed workspaces."""
        torch, cake, cake_h = self.torch, self.cake, self.cake_h
        if cake is None:
            return {}
        y, dx, dz = (torch.empty_like(x) for _ in range(3))
        dw = torch.empty(d, device="cuda", dtype=torch.bfloat16)
        fdesc = cake.normgate_desc(rows, d, eps=EPS)

        def c_fwd():
            cake_h.normgate_forward(fdesc, x, z, w, y, None, stream=torch.cuda.current_stream())
            return y
        fns = {"fwdg": {"Cake": c_fwd}, "bwdg": {}}
        for pkg, name in ((cake.NormgatePackage.NONDETERMINISTIC, "Cake nondet"),
                          (cake.NormgatePackage.DETERMINISTIC, "Cake det")):
            bdesc = cake.normgate_desc(rows, d, eps=EPS, package=pkg, dw_dtype=cake.DType.BF16)
            ws_bytes = cake_h.normgate_workspace_size(bdesc)
            ws = torch.zeros(max(ws_bytes, 16), device="cuda", dtype=torch.uint8)

            def c_bwd(bdesc=bdesc, ws=ws, ws_bytes=ws_bytes):
                cake_h.normgate_backward(bdesc, dy, x, z, w, dx, dz, dw, ws, ws_bytes,
                                         stream=torch.cuda.current_stream())
                return dx, dz, dw
            fns["bwdg"][name] = c_bwd
        return fns

    def outputs(self, sz, orientation):
        """Cake's output buffers of a SwiGLU form ("row", "col", "both") from its buffer sizes:
        row_q, row_s, col_q, col_s, None for an orientation not asked for."""
        torch = self.torch
        row_on, col_on = orientation in ("row", "both"), orientation in ("col", "both")
        return tuple(torch.empty(n, device="cuda", dtype=torch.uint8) if on else None
                     for n, on in ((sz.q_bytes, row_on), (sz.row_s_bytes, row_on),
                                   (sz.q_bytes, col_on), (sz.col_s_bytes, col_on)))

    def cake_swiglu_fn(self, m, k, form, inp, grad):
        """Cake's SwiGLU + MXFP8 form on these inputs, with its own output buffers, or None."""
        torch, cake, cake_h = self.torch, self.cake, self.cake_h
        if cake is None:
            return None
        direction, orientation = form.split("_")
        orient = {"row": "rowwise", "col": "colwise", "both": "both"}[orientation]
        backward = direction == "bwd"
        desc = cake.swiglu_mxfp8_desc(m, k, orient)
        sz = cake.swiglu_mxfp8_buffer_sizes(m, k, backward, orient)
        out = self.outputs(sz, orientation)
        if backward:
            def fn():
                cake_h.swiglu_mxfp8_backward(desc, inp, grad, *out, stream=torch.cuda.current_stream())
                return out
        else:
            def fn():
                cake_h.swiglu_mxfp8_forward(desc, inp, *out, stream=torch.cuda.current_stream())
                return out
        return fn

    def cake_swiglu_fp8_fn(self, m, k, form, inp, grad):
        """Cake's SwiGLU + FP8 blockwise form on these inputs, with its own outputs, or None."""
        torch, cake, cake_h = self.torch, self.cake, self.cake_h
        if cake is None or not hasattr(cake, "swiglu_fp8_desc"):
            return None
        direction, orientation = form.split("_")
        orient = {"row": "rowwise", "col": "colwise", "both": "both"}[orientation]
        backward = direction == "bwd"
        desc = cake.swiglu_fp8_desc(m, k, orient)
        sz = cake.swiglu_fp8_buffer_sizes(m, k, backward)
        out = self.outputs(sz, orientation)
        if backward:
            def fn():
                cake_h.swiglu_fp8_backward(desc, inp, grad, *out, stream=torch.cuda.current_stream())
                return out
        else:
            def fn():
                cake_h.swiglu_fp8_forward(desc, inp, *out, stream=torch.cuda.current_stream())
                return out
        return fn

    def cake_swiglu_grouped_fn(self, fam, t, k, e, form, inp, grad, offs):
        """Cake's grouped SwiGLU form (fam "swiglu": MXFP8, "swiglu_fp8": FP8 blockwise) on these
        inputs and device offsets, with its own outputs (and status word), or None."""
        torch, cake, cake_h = self.torch, self.cake, self.cake_h
        if cake is None or not hasattr(cake, "swiglu_grouped_buffer_sizes"):
            return None
        direction, orientation = form.split("_")
        orient = {"row": "rowwise", "col": "colwise", "both": "both"}[orientation]
        backward = direction == "bwd"
        fp8 = fam == "swiglu_fp8"
        desc = (cake.swiglu_fp8_grouped_desc(t, k, e, orient) if fp8
                else cake.swiglu_mxfp8_grouped_desc(t, k, e, orient))
        sz = cake.swiglu_grouped_buffer_sizes(t, k, e, backward,
                                              "fp8_blockwise" if fp8 else "mxfp8")
        out = self.outputs(sz, orientation)
        status = torch.empty(1, device="cuda", dtype=torch.int32)
        if backward:
            def fn():
                cake_h.swiglu_grouped_backward(desc, inp, grad, offs, *out, status=status,
                                               stream=torch.cuda.current_stream())
                return tuple(b for b in out if b is not None)
        else:
            def fn():
                cake_h.swiglu_grouped_forward(desc, inp, offs, *out, status=status,
                                              stream=torch.cuda.current_stream())
                return tuple(b for b in out if b is not None)
        return fn
