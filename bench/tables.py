#!/usr/bin/env python3
"""Markdown tables for docs/performance.md from cake-bench's JSON and the peers' JSON.

    python3 bench/tables.py cake.json [--peers peers.json ...] > tables.md

Normgate: per shape and op, Cake (deterministic and non-deterministic), the limit line, Cake as a
fraction of it, the best peer and the speedup over it (peer us / Cake us). SwiGLU + MXFP8: per
shape and form, Cake, the limit, the fractions of the limit and of the device copy, the
torch.compile reference and the speedup. Then the routing check's flagged rows, and where a peers
JSON holds Cake paired with its peers (bench/peers/peers.py: Cake's graph alternating with each
peer's round by round on the same inputs), Cake against the best peer from those rounds.
"""

import argparse
import json


def fmt(v, f="%.2f"):
    return f % v if v is not None and v > 0 else "-"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("json")
    ap.add_argument("--peers", action="append", default=[])
    a = ap.parse_args()
    with open(a.json) as f:
        doc = json.load(f)
    best = {}
    paired = {}
    for path in a.peers:
        with open(path) as f:
            pdoc = json.load(f)
        for v in pdoc.get("cake_vs_best_peer", []):
            key = (v["family"], v["op"], v["shape"], v["cake"])
            if key not in paired or v["peer_us"] < paired[key]["peer_us"]:
                paired[key] = v
        for b in pdoc.get("best", []):
            key = (b["family"], b["op"], b["shape"])
            if key not in best or b["us"] < best[key]["us"]:
                best[key] = b
    res = {(r["family"], r["op"], r["shape"], r["package"]): r for r in doc["results"]}
    shapes = {f: [] for f in ("normgate", "swiglu")}
    for r in doc["results"]:
        if r["shape"] not in shapes[r["family"]]:
            shapes[r["family"]].append(r["shape"])

    def t(r):
        return r["time"]["median_us"] if r and r.get("status") == "ok" else None

    def lim(r):
        return r["limit"]["median_us"] if r and r["limit"]["median_us"] > 0 else None

    def speedup(fam, op, shape, cake, cake_row):
        """Cake against the best peer: the paired speedup (peers.py, one harness) where there
        is one, else the best peer's us over cake-bench's (two harnesses; marked ~ when other
        rows are paired)."""
        v = paired.get((fam, op, shape, cake))
        if v:
            return "%.3f" % v["speedup"]
        b = best.get((fam, op, shape))
        if not (b and t(cake_row)):
            return ""
        return ("~" if paired else "") + "%.3f" % (b["us"] / t(cake_row))

    vs_note = ("vs peer = the speedup over the best peer paired with Cake in peers.py's harness "
               "(median of the per-round ratios; fwd+bwd: ratio of the sums), or, marked ~, best "
               "peer us / Cake us across the two harnesses" if paired else
               "vs peer = best peer us / Cake us")
    print("Normgate (D = 128). us: median of round medians; limit: streaming kernel on the op's "
          "bytes, same timing; %% limit = limit us / Cake us; %s (non-deterministic package; det "
          "in parentheses). `=`: the forward does not depend on the package.\n" % vs_note)
    print("| T x H | op | Cake det us | Cake nondet us | limit us | % limit (nondet) | best peer us | best peer | vs peer |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    for sh in shapes["normgate"]:
        for op in ("fwd", "fwdg", "bwdg", "ckptg", "stepg_f32", "fwd+bwd"):
            if op in ("fwd", "fwdg"):
                r = res.get(("normgate", op, sh, "-"))
                det = nd = r
            else:
                det = res.get(("normgate", op, sh, "det"))
                nd = res.get(("normgate", op, sh, "nondet"))
            if not nd and not det:
                continue
            ref = nd or det
            b = best.get(("normgate", op, sh))
            if op in ("fwd", "fwdg"):
                vs = speedup("normgate", op, sh, "Cake", nd)
            else:
                vs = speedup("normgate", op, sh, "Cake nondet", nd)
                vd = speedup("normgate", op, sh, "Cake det", det)
                if vs and vd:
                    vs += " (%s)" % vd
            frac = "%.1f%%" % (100 * lim(ref) / t(ref)) if lim(ref) and t(ref) else "-"
            print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                sh, op, fmt(t(det)), fmt(t(nd)) if op not in ("fwd", "fwdg") else "=",
                fmt(lim(ref)), frac, fmt(b["us"]) if b else "-", b["peer"] if b else "-", vs or "-"))
    print("\nSwiGLU + MXFP8 (graph replays). %% copy = achieved GB/s / device-copy GB/s; vs "
          "torch.compile: %s.\n" % (
              "the speedup over the best torch.compile mode paired with Cake in peers.py's "
              "harness, or, marked ~, its us / Cake us across the two harnesses" if paired else
              "its us / Cake us"))
    print("| M x K | form | Cake us | limit us | % limit | % copy | torch.compile us | vs torch.compile | program |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for sh in shapes["swiglu"]:
        for form in ("fwd_row", "fwd_col", "fwd_both", "bwd_row", "bwd_col", "bwd_both"):
            r = res.get(("swiglu", form, sh, "-"))
            if not r:
                continue
            b = best.get(("swiglu", form, sh))
            frac = "%.1f%%" % (100 * lim(r) / t(r)) if lim(r) and t(r) else "-"
            fc = "%.1f%%" % (100 * r["frac_copy"]) if r.get("frac_copy", -1) > 0 else "-"
            vs = speedup("swiglu", form, sh, "Cake", r) or "-"
            print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                sh, form, fmt(t(r)), fmt(lim(r)), frac, fc, fmt(b["us"]) if b else "-", vs,
                r["program"] if r.get("status") == "ok" else r.get("status", "")))
    floors = [r for r in doc["results"] if r["family"] == "swiglu" and r.get("floor")
              and r["floor"]["median_us"] > 0 and t(r)]
    if floors:
        print("\nSwiGLU at the smallest shapes against the empty-kernel floor timed in the same "
              "rounds (cake-bench alternates the op, its limit line and an empty-kernel graph "
              "launch by launch).\n")
        print("| M x K | form | Cake us | limit us | floor us | Cake / floor | limit / floor |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
        for r in floors:
            f = r["floor"]["median_us"]
            print("| %s | %s | %s | %s | %.2f | %.2f | %s |" % (
                r["shape"], r["op"], fmt(t(r)), fmt(lim(r)), f, t(r) / f,
                "%.2f" % (lim(r) / f) if lim(r) else "-"))
    flagged = [r for r in doc.get("routing", []) if r.get("flagged")]
    if doc.get("routing"):
        print("\nRouting check: %d of %d forms x shapes flagged (routed > 1.03 x fastest forced "
              "program, CUPTI kernel time).\n" % (len(flagged), len(doc["routing"])))
        if flagged:
            print("| family | form | shape | routed | us | fastest | us | ratio |")
            print("| --- | --- | --- | --- | ---: | --- | ---: | ---: |")
            for r in flagged:
                print("| %s | %s | %s | %s | %.2f | %s | %.2f | %.3f |" % (
                    r["family"], r["form"], r["shape"], r["routed"], r["routed_us"], r["fastest"],
                    r["fastest_us"], r["routed_us"] / r["fastest_us"]))
    if paired:
        print("\nCake against the best peer, paired: in bench/peers/peers.py's harness, Cake's graph "
              "alternating with the peer's round by round on the same inputs. Speedup = peer us / "
              "Cake us, median [min, max] over the rounds; fwd+bwd: sums of the paired fwdg and "
              "bwdg medians.\n")
        print("| family | op | shape | Cake | Cake us | best peer | peer us | speedup |")
        print("| --- | --- | --- | --- | ---: | --- | ---: | ---: |")
        order = {"fwdg": 0, "bwdg": 1, "fwd+bwd": 2, "fwd_row": 0, "fwd_col": 1, "fwd_both": 2,
                 "bwd_row": 3, "bwd_col": 4, "bwd_both": 5}
        fam_shapes = {f: [s_ for s_ in shapes[f]] for f in shapes}
        keys = sorted(paired, key=lambda k: (k[0] != "normgate", fam_shapes.get(k[0], []).index(k[2])
                                             if k[2] in fam_shapes.get(k[0], []) else 99,
                                             order.get(k[1], 9), k[3]))
        for k in keys:
            v = paired[k]
            rng = (" [%.3f, %.3f]" % (v["speedup_lo"], v["speedup_hi"])
                   if v.get("speedup_lo") is not None else "")
            print("| %s | %s | %s | %s | %.2f | %s | %.2f | %.3f%s |" % (
                k[0], k[1], k[2], k[3], v["cake_us"], v["peer"], v["peer_us"], v["speedup"], rng))


if __name__ == "__main__":
    main()
