"""peers.py's phases, in priority order, each stopped when the time budget is spent: Cake alone
(--peers ...,cake), the norm-gate peers (FLA, mamba_ssm, torch.compile per mode), SwiGLU +
MXFP8 per torch.compile mode. Every phase takes the harness's Context. A SwiGLU shape
"TxK/E<n>" is a grouped one (bench/peers/grouped.py): the grouped reference over cake-bench's
split, paired with Cake's grouped launch."""

import time

from grouped import (differing_bytes, grouped_reference, parse_shape, shape_offsets,
                     written_masks)
from references import EPS, ng_reference64, rel_l2, sw8_bytes, sw8_reference, sw_bytes, sw_reference


def normgate_phase(ctx, which):
    """One norm-gate peer (fla, mamba, cake, compile:MODE) over every --ng-shapes shape."""
    torch, args, run, fla, mamba, cake = ctx.torch, ctx.args, ctx.run, ctx.fla, ctx.mamba, ctx.cake
    randn, measure, compiled, cake_normgate_fns = ctx.randn, ctx.measure, ctx.compiled, ctx.cake_normgate_fns
    ref_fwd, ref_bwd = ctx.ref_fwd, ctx.ref_bwd
    for sh in args.ng_shapes.split(","):
        t, h = (int(v) for v in sh.split("x"))
        rows, d = t * h, args.d
        shape = sh if d == 128 else "%s:%d" % (sh, d)
        if run.over_budget():
            run.skipped.append("normgate %s %s" % (which, shape))
            continue
        x, z, dy = randn(rows, d), randn(rows, d, scale=2.0), randn(rows, d)
        w = randn(d, scale=0.5, offset=1.0)
        tb = rows * d * 2
        fwd_bytes = (2 * tb + 2 * d, tb)
        bwd_bytes = (3 * tb + 2 * d, 2 * tb + 2 * d)
        check = {}
        ref = ng_reference64(torch, x, z, w, dy) if shape == args.ng_shapes.split(",")[0] else None
        ck = cake_normgate_fns(rows, d, x, z, w, dy)  # paired with every peer below
        if which == "fla" and fla is not None:
            rms_norm_gated, fla_fwd, fla_bwd, _ = fla

            def f_fwd():
                with torch.no_grad():
                    return rms_norm_gated(x, z, w, None, activation="swish", eps=EPS)
            _, _, rstd, _ = fla_fwd(x=x, g=z, weight=w, bias=None, activation="swish", eps=EPS,
                                    is_rms_norm=True)

            def f_bwd():
                dx, dz, dw, _, _ = fla_bwd(dy=dy, x=x, g=z, weight=w, bias=None, activation="swish",
                                           eps=EPS, mean=None, rstd=rstd, is_rms_norm=True,
                                           x_dtype=x.dtype)
                return dx, dz, dw
            if ref is not None:
                y = f_fwd()
                dx, dz, dw = f_bwd()
                check = {"y": rel_l2(torch, y, ref[0]), "dx": rel_l2(torch, dx, ref[1]),
                         "dz": rel_l2(torch, dz, ref[2]), "dw": rel_l2(torch, dw, ref[3])}
            measure("normgate", "fwdg", shape, "FLA rms_norm_gated", f_fwd, fwd_bytes,
                    {"check_rel_l2": check} if check else None, ck.get("fwdg"))
            measure("normgate", "bwdg", shape, "FLA rms_norm_gated", f_bwd, bwd_bytes,
                    cake_fns=ck.get("bwdg"))
        elif which == "mamba" and mamba is not None:
            mod = mamba[0]

            def m_fwd():
                with torch.no_grad():
                    return mod.rmsnorm_fn(x, w, None, z=z, eps=EPS, norm_before_gate=True)
            _, _, rstd = mod._layer_norm_fwd(x, w, None, EPS, z=z, norm_before_gate=True,
                                             is_rms_norm=True)

            def m_bwd():
                dx, dw, _, dz = mod._layer_norm_bwd(dy, x, w, None, EPS, None, rstd, z=z,
                                                    norm_before_gate=True, is_rms_norm=True)
                return dx, dz, dw
            if ref is not None:
                y = m_fwd()
                dx, dz, dw = m_bwd()
                check = {"y": rel_l2(torch, y, ref[0]), "dx": rel_l2(torch, dx, ref[1]),
                         "dz": rel_l2(torch, dz, ref[2]), "dw": rel_l2(torch, dw, ref[3])}
            measure("normgate", "fwdg", shape, "mamba_ssm rmsnorm_fn", m_fwd, fwd_bytes,
                    {"check_rel_l2": check} if check else None, ck.get("fwdg"))
            measure("normgate", "bwdg", shape, "mamba_ssm rmsnorm_fn", m_bwd, bwd_bytes,
                    cake_fns=ck.get("bwdg"))
        elif which == "cake" and cake is not None:
            # Cake alone in this harness (its numbers beside cake-bench's).
            if ref is not None:
                y = ck["fwdg"]["Cake"]()
                check = {"y": rel_l2(torch, y, ref[0])}
            measure("normgate", "fwdg", shape, "Cake", ck["fwdg"]["Cake"], fwd_bytes,
                    {"is_cake": True, "check_rel_l2": check} if check else {"is_cake": True})
            for name, c_bwd in ck["bwdg"].items():
                extra = {"is_cake": True, "fwd_peer": "Cake"}
                if ref is not None:
                    dx, dz, dw = c_bwd()
                    extra["check_rel_l2"] = {"dx": rel_l2(torch, dx, ref[1]),
                                             "dz": rel_l2(torch, dz, ref[2]),
                                             "dw": rel_l2(torch, dw, ref[3])}
                measure("normgate", "bwdg", shape, name, c_bwd, bwd_bytes, extra)
        elif which.startswith("compile:"):
            mode = which.split(":", 1)[1]
            for op, fn, args_, nbytes in (("fwdg", ref_fwd, (x, z, w), fwd_bytes),
                                          ("bwdg", ref_bwd, (dy, x, z, w), bwd_bytes)):
                if run.over_budget():
                    run.skipped.append("normgate %s %s %s" % (which, op, shape))
                    continue
                c = compiled(fn, mode)
                t0 = time.time()
                try:
                    out = c(*args_)
                    torch.cuda.synchronize()
                except Exception as e:  # noqa: BLE001
                    run.add(family="normgate", op=op, shape=shape, peer="torch.compile " + mode,
                            status="error", note="compile: %s" % e)
                    continue
                extra = {"compile_s": time.time() - t0}
                if ref is not None:
                    if op == "fwdg":
                        extra["check_rel_l2"] = {"y": rel_l2(torch, out, ref[0])}
                    else:
                        extra["check_rel_l2"] = {"dx": rel_l2(torch, out[0], ref[1]),
                                                 "dz": rel_l2(torch, out[1], ref[2]),
                                                 "dw": rel_l2(torch, out[2], ref[3])}
                measure("normgate", op, shape, "torch.compile " + mode,
                        (lambda c=c, a=args_: c(*a)), nbytes, extra, ck.get(op))
        del x, z, dy, w, ck

def swiglu_cake_phase(ctx, fam="swiglu"):
    """Cake alone, every SwiGLU + MXFP8 (fam "swiglu") or FP8 blockwise ("swiglu_fp8") form
    over every --sw-shapes shape."""
    torch, args, run = ctx.torch, ctx.args, ctx.run
    randn, measure = ctx.randn, ctx.measure
    fp8 = fam == "swiglu_fp8"
    cake_swiglu_fn = ctx.cake_swiglu_fp8_fn if fp8 else ctx.cake_swiglu_fn
    nbytes = sw8_bytes if fp8 else sw_bytes
    orient_of = {"row": "rowwise", "col": "colwise", "both": "both"}
    for sh in args.sw_shapes.split(","):
        grouped = parse_shape(sh)
        m, k = grouped[:2] if grouped else (int(v) for v in sh.split("x"))
        if run.over_budget():
            run.skipped.append("%s cake %s" % (fam, sh))
            continue
        inp = randn(m, 2 * k)
        grad = randn(m, k)
        offs = _offsets(torch, grouped) if grouped else None
        for form in args.forms.split(","):
            fn = (ctx.cake_swiglu_grouped_fn(fam, m, k, grouped[2], form, inp, grad, offs)
                  if grouped else cake_swiglu_fn(m, k, form, inp, grad))
            if fn is None:
                continue
            measure(fam, form, sh, "Cake", fn, nbytes(m, k, form), {"is_cake": True})
            del fn
        del inp, grad
        torch.cuda.empty_cache()

def swiglu_phase(ctx, mode, fam="swiglu"):
    """torch.compile (MODE) of the SwiGLU + MXFP8 (or, fam "swiglu_fp8", FP8 blockwise)
    reference, every form over every shape."""
    torch, F, args, run, gen = ctx.torch, ctx.F, ctx.args, ctx.run, ctx.gen
    randn, measure, compiled = ctx.randn, ctx.measure, ctx.compiled
    fp8 = fam == "swiglu_fp8"
    cake_swiglu_fn = ctx.cake_swiglu_fp8_fn if fp8 else ctx.cake_swiglu_fn
    sw_bytes_ = sw8_bytes if fp8 else sw_bytes
    make = sw8_reference(torch, F) if fp8 else sw_reference(torch, F)[0]
    block_exp = 0
    if args.inputs.startswith("blockscaled"):
        block_exp = int(args.inputs.split(":")[1]) if ":" in args.inputs else 100
    for sh in args.sw_shapes.split(","):
        grouped = parse_shape(sh)
        if grouped:
            grouped_shape(ctx, mode, fam, sh, grouped)
            continue
        m, k = (int(v) for v in sh.split("x"))
        need = m * 2 * k * 2 + m * k * 2 + 6 * m * k
        free, _ = torch.cuda.mem_get_info()
        if need * 3 > free:
            run.add(family=fam, op="*", shape=sh, peer="torch.compile " + mode,
                    status="skipped", note="needs about %.1f GiB" % (3 * need / 2**30))
            continue
        inp = randn(m, 2 * k)
        grad = randn(m, k)
        if block_exp:
            e = torch.randint(-block_exp, block_exp + 1, (m, 2 * k // 32), device="cuda",
                              generator=gen).float()
            inp = (inp.float().view(m, -1, 32) * torch.exp2(e).unsqueeze(-1)).view(m, 2 * k).to(torch.bfloat16)
        for form in args.forms.split(","):
            if run.over_budget():
                run.skipped.append("%s compile:%s %s %s" % (fam, mode, form, sh))
                continue
            c = compiled(make(form), mode)
            a = (inp,) if form.startswith("fwd") else (inp, grad)
            t0 = time.time()
            try:
                c(*a)
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001
                run.add(family=fam, op=form, shape=sh, peer="torch.compile " + mode,
                        status="error", note="compile: %s" % str(e).splitlines()[0])
                continue
            cf = cake_swiglu_fn(m, k, form, inp, grad)
            measure(fam, form, sh, "torch.compile " + mode, (lambda c=c, a=a: c(*a)),
                    sw_bytes_(m, k, form), {"compile_s": time.time() - t0},
                    {"Cake": cf} if cf else None)
            del cf
        del inp, grad
        torch.cuda.empty_cache()

def _offsets(torch, grouped):
    t, k, e, ragged = grouped
    return torch.tensor(shape_offsets(t, k, e, ragged), device="cuda", dtype=torch.int32)


def grouped_shape(ctx, mode, fam, sh, grouped):
    """torch.compile (MODE) of the grouped reference (bench/peers/grouped.py) at one grouped
    shape, every form, over cake-bench's split (the offsets a device tensor, as Cake takes
    them), each paired with Cake's grouped launch; the first time each form runs, its written
    bytes are compared with Cake's (check_bytes_differ: the fraction that differ)."""
    torch, F, args, run = ctx.torch, ctx.F, ctx.args, ctx.run
    t, k, e, ragged = grouped
    fp8 = fam == "swiglu_fp8"
    fmt = "fp8_blockwise" if fp8 else "mxfp8"
    peer = "torch.compile " + mode
    p = (t + 127 * min(e, t)) // 128 * 128
    need = t * 2 * k * 2 + t * k * 2 + 6 * t * k + 2 * p * 2 * k * 3
    free, _ = torch.cuda.mem_get_info()
    if need * 3 > free:
        run.add(family=fam, op="*", shape=sh, peer=peer, status="skipped",
                note="needs about %.1f GiB" % (3 * need / 2**30))
        return
    make = grouped_reference(torch, F)
    inp, grad = ctx.randn(t, 2 * k), ctx.randn(t, k)
    host_offs = shape_offsets(t, k, e, ragged)
    offs = _offsets(torch, grouped)
    nbytes = sw8_bytes if fp8 else sw_bytes  # the whole tensor's bytes, as cake-bench's limit
    for form in args.forms.split(","):
        if run.over_budget():
            run.skipped.append("%s compile:%s %s %s" % (fam, mode, form, sh))
            continue
        c = ctx.compiled(make(form, fmt), mode)
        a = (inp, offs) if form.startswith("fwd") else (inp, grad, offs)
        t0 = time.time()
        try:
            got = c(*a)
            torch.cuda.synchronize()
        except Exception as ex:  # noqa: BLE001
            run.add(family=fam, op=form, shape=sh, peer=peer, status="error",
                    note="compile: %s" % str(ex).splitlines()[0])
            continue
        extra = {"compile_s": time.time() - t0, "experts": e}
        cf = ctx.cake_swiglu_grouped_fn(fam, t, k, e, form, inp, grad, offs)
        if cf is not None:
            want = cf()
            torch.cuda.synchronize()
            masks = written_masks(torch, fmt, host_offs, t, k, form.startswith("bwd"),
                                  form.split("_")[1], device="cuda")
            extra["check_bytes_differ"] = differing_bytes(torch, got, want, masks)
            del want, masks
        del got
        ctx.measure(fam, form, sh, peer, (lambda c=c, a=a: c(*a)), nbytes(t, k, form), extra,
                    {"Cake": cf} if cf else None)
        del cf
    del inp, grad, offs
    torch.cuda.empty_cache()


def phase_list(args, peers, modes, cake):
    """(family, which) in priority order."""
    phases = []
    if cake is not None and "cake" in peers:  # first: never skipped for time
        if args.family in ("all", "normgate"):
            phases.append(("normgate", "cake"))
        if args.family in ("all", "swiglu"):
            phases.append(("swiglu", "cake"))
        if args.family == "swiglu_fp8":
            phases.append(("swiglu_fp8", "cake"))
    if args.family in ("all", "normgate"):
        phases += [("normgate", "fla"), ("normgate", "mamba")]
        if "compile" in peers and "default" in modes:
            phases.append(("normgate", "compile:default"))
    if args.family in ("all", "swiglu") and "default" in modes:
        phases.append(("swiglu", "default"))
    if args.family == "swiglu_fp8" and "default" in modes:
        phases.append(("swiglu_fp8", "default"))
    for m in modes:
        if m == "default":
            continue
        if args.family in ("all", "normgate") and "compile" in peers:
            phases.append(("normgate", "compile:" + m))
        if args.family in ("all", "swiglu"):
            phases.append(("swiglu", m))
        if args.family == "swiglu_fp8":
            phases.append(("swiglu_fp8", m))
    return phases


def run_phases(ctx, peers, modes):
    run = ctx.run
    for fam, which in phase_list(ctx.args, peers, modes, ctx.cake):
        if run.over_budget():
            run.skipped.append("%s %s (all shapes)" % (fam, which))
            continue
        print("\n%s: %s" % (fam, which), flush=True)
        if fam == "normgate":
            normgate_phase(ctx, which)
        elif which == "cake":
            swiglu_cake_phase(ctx, fam)
        else:
            swiglu_phase(ctx, which, fam)
