#!/usr/bin/env python3
"""The Markdown tables of docs/performance.md, rendered from bench/results/<device>.json
(bench/results.py makes that file from a cake-bench JSON and a peers JSON).

    python3 bench/tables.py bench/results/h200.json      # print one device's tables
    python3 bench/tables.py --write docs/performance.md  # refresh every device's block
    python3 bench/tables.py --check docs/performance.md  # exit 1 where a block differs

A device's block in the Markdown lies between `<!-- tables DEVICE begin ... -->` and
`<!-- tables DEVICE end -->`, DEVICE being the results file's name (h200 for h200.json);
--write and --check read every bench/results/*.json unless files are named.

Per device: norm-gate against its limit line and the device copy; norm-gate against each peer
with Cake's speedup over the best one; SwiGLU + MXFP8 against the limit, the copy and each
peer; the smallest SwiGLU shapes against the empty-kernel floor timed in the same rounds; the
routing check's verdict. A speedup is the best peer's time over Cake's in the rounds where
peers.py alternated Cake's graph with that peer's: median [min, max] of the per-round ratios.
Where the results JSON has the norm-gate variant table (bench/results.py --variants), it follows;
where it has the quantized norm-gate forward (cake-bench --ng-quant), its table follows the
norm-gate ones; where it has grouped SwiGLU rows (cake-bench --sw-shapes grouped), their table
(the grouped launch against the limit line and against per-expert launches of the ungrouped
call) follows the SwiGLU ones.

    python3 bench/tables.py --variants variants.json     # the variant table of one peers.py
                                                         # --table variants JSON, straight
"""

import argparse
import difflib
import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NG_OPS = ("fwd", "fwdg", "bwdg", "ckptg", "stepg_f32", "fwd+bwd")
SW_FORMS = ("fwd_row", "fwd_col", "fwd_both", "bwd_row", "bwd_col", "bwd_both")


def short_peer(name):
    """A column title for a peer: 'FLA rms_norm_gated' -> 'FLA', 'torch.compile
    max-autotune-no-cudagraphs' -> 'compile max-autotune', 'torch.compile default' -> 'compile'."""
    if name.startswith("torch.compile"):
        mode = name[len("torch.compile"):].strip()
        mode = mode.replace("-no-cudagraphs", "")
        return "compile" if mode in ("", "default") else "compile " + mode
    return name.split()[0]


def is_grouped(r):
    """A grouped SwiGLU row (timed beside per-expert launches of the ungrouped call)."""
    return r.get("base_label") == "per-expert"


def us(v):
    return "%.2f" % v if v is not None else "-"


def pct(num, den):
    return "%.1f%%" % (100.0 * num / den) if num and den else "-"


def speedup(v):
    if not v:
        return "-"
    if v.get("lo") is None:
        return "%.3f" % v["speedup"]
    return "%.3f [%.3f, %.3f]" % (v["speedup"], v["lo"], v["hi"])


class Doc:
    """Lookups over one results JSON."""

    def __init__(self, doc):
        self.doc = doc
        self.cake = {(r["family"], r["op"], r["shape"], r["package"]): r for r in doc["cake"]}
        self.peer = {(r["family"], r["op"], r["shape"], r["peer"]): r["us"] for r in doc["peers"]}
        self.paired = {(v["family"], v["op"], v["shape"], v["cake"]): v for v in doc["vs_best_peer"]}

    def shapes(self, family, grouped=False):
        out = []
        for r in self.doc["cake"]:
            if r["family"] == family and is_grouped(r) == grouped and r["shape"] not in out:
                out.append(r["shape"])
        return out

    def peers(self, family):
        out = []
        for r in self.doc["peers"]:
            if r["family"] == family and r["peer"] not in out:
                out.append(r["peer"])
        return out

    def best(self, family, op, shape):
        cands = [(u, p) for (f, o, s, p), u in self.peer.items() if (f, o, s) == (family, op, shape)]
        return min(cands)[1] if cands else None

    def row(self, family, op, shape, package="-"):
        r = self.cake.get((family, op, shape, package))
        return r if r and "us" in r else None


def peer_cells(d, family, op, shape, names):
    best = d.best(family, op, shape)
    cells = []
    for p in names:
        u = d.peer.get((family, op, shape, p))
        cells.append("-" if u is None else ("**%.2f**" % u if p == best else "%.2f" % u))
    return cells


def header(doc):
    dev, lib, ref, tools = doc["device"], doc["library"], doc["references"], doc["tools"]
    names = {"fla": "FLA", "mamba_ssm": "mamba_ssm", "torch": "torch", "triton": "triton"}
    peers = ", ".join("%s %s" % (names[k], tools[k]) for k in names if k in tools)
    m = doc["method"]
    floors = "%s us (cake-bench)" % us(ref["floor_us"])
    if ref.get("peers_floor_us") is not None or peers:  # a run with peers
        floors += ", %s us (peers.py)" % us(ref["peers_floor_us"])
    return "\n".join([
        "- Device: %s (%s, %d SMs, L2 %.0f MiB), driver %s." % (
            dev["name"], dev["arch"], dev["sm_count"], dev["l2_mib"], dev.get("driver") or "?"),
        "- Library: `libcake.so` %s at `%s`, table %s (%d programs), image `%s`; measured %s." % (
            lib["version"], lib["commit"], lib["table"], lib["programs"], lib["image"], doc["date"]),
    ] + (["- Peers: %s." % peers] if peers else []) + [
        "- Method: %d rounds x %d launches (warm-up %d), cold L2 (%.0f MiB flush before every "
        "timed launch), median of round medians." % (m["rounds"], m["iters"], m["warmup"],
                                                      m["flush_mib"]),
        "- References: device copy %.1f GB/s (%s); empty-kernel graph replay %s." % (
            ref["copy_gbps"], ref["copy_how"], floors),
    ])


def normgate_limit(d):
    if not d.shapes("normgate"):
        return []
    out = ["Norm-gate, D = 128 (T x H rows of BF16), Cake's time (us) against the limit line and "
           "the device copy. `fwd`: eager launch, CUPTI kernel time; the other ops: CUDA-graph "
           "replays; `fwd+bwd` = `fwdg` + `bwdg`; `=`: the forward has one package.", "",
           "| T x H | op | det us | nondet us | limit us | % limit det | % limit nondet | % copy nondet |",
           "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for sh in d.shapes("normgate"):
        for op in NG_OPS:
            one = d.row("normgate", op, sh)
            det, nd = (one, None) if one else (d.row("normgate", op, sh, "det"),
                                               d.row("normgate", op, sh, "nondet"))
            if not (det or nd):
                continue
            ref = nd or det
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                sh, op, us(det and det["us"]), "=" if one else us(nd and nd["us"]),
                us(ref.get("limit_us")), pct(det and det.get("limit_us"), det and det["us"]),
                "=" if one else pct(nd and nd.get("limit_us"), nd and nd["us"]),
                "%.1f%%" % (100 * ref["frac_copy"]) if ref.get("frac_copy") else "-"))
    return out


def normgate_peers(d):
    names = d.peers("normgate")
    if not names:
        return []
    out = ["Norm-gate against each peer: graph replays in peers.py's harness (us; bold: the best "
           "peer), and Cake's speedup over the best peer, paired. %s." % legend(names), "",
           "| T x H | op | %s | vs best, nondet | vs best, det |" % " | ".join(short_peer(p) for p in names),
           "| --- | --- | %s | ---: | ---: |" % " | ".join("---:" for _ in names)]
    for sh in d.shapes("normgate"):
        for op in ("fwdg", "bwdg", "fwd+bwd"):
            cells = peer_cells(d, "normgate", op, sh, names)
            if all(c == "-" for c in cells):
                continue
            if op == "fwdg":
                nd, det = d.paired.get(("normgate", op, sh, "Cake")), "="
            else:
                nd = d.paired.get(("normgate", op, sh, "Cake nondet"))
                det = speedup(d.paired.get(("normgate", op, sh, "Cake det")))
            out.append("| %s | %s | %s | %s | %s |" % (sh, op, " | ".join(cells), speedup(nd), det))
    return out


def legend(names):
    return "Peers: " + "; ".join("%s = %s" % (short_peer(p), p) for p in names
                                 if short_peer(p) != p)


SWIGLU_TITLES = {
    "swiglu": "SwiGLU + MXFP8 (input M x 2K BF16, outputs E4M3 with E8M0 scales)",
    "swiglu_fp8": "SwiGLU + FP8 blockwise 1x128 (input M x 2K BF16, outputs E4M3 with FP32 scales "
                  "per 128 values, exact scale rule)",
}


def swiglu(d, family="swiglu"):
    names = d.peers(family)
    shapes = d.shapes(family)
    if not shapes:
        return []
    out = ["%s, CUDA-graph replays (us). %% limit = limit us / Cake us; %% copy = Cake's GB/s / the "
           "device copy's; peers in peers.py's harness (bold: the best); vs best = Cake's speedup "
           "over it, paired.%s" % (SWIGLU_TITLES[family], " " + legend(names) + "." if names else ""), "",
           "| M x K | form | Cake us | limit us | %% limit | %% copy | %s | vs best | program |" % (
               " | ".join(short_peer(p) for p in names)),
           "| --- | --- | ---: | ---: | ---: | ---: | %s | ---: | --- |" % (
               " | ".join("---:" for _ in names))]
    for sh in shapes:
        for form in SW_FORMS:
            r = d.cake.get((family, form, sh, "-"))
            if not r:
                continue
            ok = "us" in r
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                sh, form, us(r.get("us")), us(r.get("limit_us")),
                pct(r.get("limit_us"), r.get("us")),
                "%.1f%%" % (100 * r["frac_copy"]) if r.get("frac_copy") else "-",
                " | ".join(peer_cells(d, family, form, sh, names)),
                speedup(d.paired.get((family, form, sh, "Cake"))),
                "`%s`" % r["program"] if ok else r.get("status", "")))
    return out


GROUPED_TITLES = {
    "swiglu": "Grouped SwiGLU + MXFP8 (`cake_swiglu_mxfp8_grouped_*`)",
    "swiglu_fp8": "Grouped SwiGLU + FP8 blockwise 1x128 (`cake_swiglu_fp8_grouped_*`, exact scale "
                  "rule)",
}


def ratio(r):
    return "-" if r.get("ratio") is None else "%.3f [%.3f, %.3f]" % (
        r["ratio"], r["ratio_lo"], r["ratio_hi"])


def swiglu_grouped(d, family):
    """Grouped SwiGLU (cake-bench --sw-shapes grouped): per shape and form, the grouped launch
    against the limit line and against the per-expert launches timed in the same rounds; where
    peers.py timed peers at these shapes (torch.compile of the grouped reference), their columns
    and Cake's paired speedup over the best of them."""
    shapes = d.shapes(family, grouped=True)
    if not shapes:
        return []
    names = [p for p in d.peers(family) if any(
        (family, f, sh, p) in d.peer for sh in shapes for f in SW_FORMS)]
    peer_note = (" Peers in peers.py's harness at the same shape and split (bold: the best); vs "
                 "best = Cake's speedup over it, paired. " + legend(names) + ".") if names else ""
    out = ["%s, CUDA-graph replays (us). T x K / E: T tokens (input T x 2K BF16) over E experts, "
           "one fixed uneven split per shape. %% limit = limit us / grouped us, the limit line "
           "being the whole tensor's bytes. per-expert us = the E launches of the ungrouped call "
           "on the same split and buffers, one graph, timed in the same rounds; grouped / "
           "per-expert: median [min, max] over rounds of the ratio of round medians (< 1: the "
           "grouped launch is faster).%s" % (GROUPED_TITLES[family], peer_note), "",
           "| T x K / E | form | grouped us | limit us | %% limit | per-expert us | "
           "grouped / per-expert | %sprogram |" % "".join(
               "%s | " % h for h in [short_peer(p) for p in names] + (["vs best"] if names else [])),
           "| --- | --- | ---: | ---: | ---: | ---: | ---: | %s--- |" % (
               "---: | " * (len(names) + (1 if names else 0)))]
    for sh in shapes:
        for form in SW_FORMS:
            r = d.cake.get((family, form, sh, "-"))
            if not r:
                continue
            peers = ""
            if names:
                peers = "".join("%s | " % c for c in peer_cells(d, family, form, sh, names))
                peers += "%s | " % speedup(d.paired.get((family, form, sh, "Cake")))
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s%s |" % (
                sh, form, us(r.get("us")), us(r.get("limit_us")),
                pct(r.get("limit_us"), r.get("us")), us(r.get("base_us")), ratio(r), peers,
                "`%s`" % r["program"] if "us" in r else r.get("status", "")))
    return out


NGQ_OUTPUTS = {"fwdg": "plain (BF16 y)", "fp8b": "FP8 blockwise, exact", "fp8b_pow2":
               "FP8 blockwise, pow2", "mxfp8": "MXFP8"}


def normgate_quant(d):
    """The quantized norm-gate forward beside the plain one (cake-bench --ng-quant): per shape,
    the plain forward, then each quantized output, timed in the same rounds."""
    rows = [r for r in d.doc["cake"] if r["family"] == "normgate_quant"]
    if not rows:
        return []
    out = ["Norm-gate forward with quantized y (`cake_normgate_forward_quantized`, the default "
           "form) beside the plain forward on the same shapes and buffers: CUDA-graph replays "
           "(us), cold L2, each shape's calls and limit lines interleaved in the same rounds. "
           "T x H[:D]: T tokens of H heads of D (128 unless given); the quantized matrix is "
           "[T, H x D]. MB: bytes read + written (x, z, w; q and its scales, and y where written). "
           "% limit = the limit line of those bytes / Cake us. quantized / plain: median [min, "
           "max] over rounds of the ratio of round medians.", "",
           "| T x H[:D] | output | MB | Cake us | quantized / plain | limit us | % limit | program |",
           "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        base, plus = r["op"].partition("+")[::2]
        name = NGQ_OUTPUTS.get(base, base) + (" + BF16 y" if plus else "")
        ok = "us" in r
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["shape"], name, "%.1f" % (r["bytes"] / 1e6) if r.get("bytes") else "-",
            us(r.get("us")), ratio(r), us(r.get("limit_us")), pct(r.get("limit_us"), r.get("us")),
            "`%s`" % r["program"] if ok else r.get("status", "")))
    return out


def floors(d):
    rows = [r for r in d.doc["cake"] if r["family"] == "swiglu" and r.get("floor_us") and "us" in r]
    if not rows:
        return []
    out = ["SwiGLU at the smallest shapes against the empty-kernel graph replay timed in the same "
           "rounds (cake-bench alternates the op, its limit line and the empty kernel).", "",
           "| M x K | form | Cake us | limit us | floor us | Cake / floor | limit / floor |",
           "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        f = r["floor_us"]
        out.append("| %s | %s | %s | %s | %.2f | %.2f | %s |" % (
            r["shape"], r["op"], us(r["us"]), us(r.get("limit_us")), f, r["us"] / f,
            "%.2f" % (r["limit_us"] / f) if r.get("limit_us") else "-"))
    return out


def routing(d):
    rt = d.doc.get("routing", {})
    if not rt.get("checked"):
        return []
    out = ["Routing check (`cake-bench --routing`, CUPTI kernel time): %d of %d forms x shapes "
           "flagged (routed call > 1.03 x the fastest forced program)." % (
               len(rt["flagged"]), rt["checked"])]
    if rt["flagged"]:
        out += ["", "| family | form | shape | routed | us | fastest | us |",
                "| --- | --- | --- | --- | ---: | --- | ---: |"]
        out += ["| %s | %s | %s | `%s` | %.2f | `%s` | %.2f |" % (
            r["family"], r["form"], r["shape"], r["routed"], r["routed_us"], r["fastest"],
            r["fastest_us"]) for r in rt["flagged"]]
    return out


def skipped(d):
    items = d.doc.get("peers_skipped") or []
    if not items:
        return []
    pretty = []
    for s in items:
        f = s.split()
        if len(f) == 4:
            fam, peer, op, shape = f
            peer = short_peer("torch.compile " + peer.split(":", 1)[1]) if peer.startswith("compile:") else peer
            pretty.append("%s `%s` %s" % (peer, op, shape))
        else:
            pretty.append(s)
    return ["Not measured (the peers' time budget ran out): %s." % "; ".join(pretty)]


VARIANT_LEGEND = ("`silu/after`: y = rmsnorm(x) * w * silu(z); `silu/before`: y = rmsnorm(x * "
                  "silu(z)) * w; `sigmoid/...`: sigmoid(z) for silu(z); `none`: y = rmsnorm(x) * w; "
                  "`/G1024`: mean squares per group of 1024 columns; BF16 tensors unless `/f16`, "
                  "`/f32` (all tensors) or `/bf16-wf32` (FP32 w and dw) says otherwise")
VARIANT_CELL = {"unsupported": "n/a", "mismatch": "wrong", "error": "err", "not available": "n/a"}


def variants(doc):
    """The norm-gate variant table (peers.py --table variants): Cake against the copy limit and
    each peer, per variant, shape and op."""
    rows = doc.get("variants") or []
    if not rows:
        return []
    meta = doc.get("variants_meta", {})
    by = {(r["variant"], r["shape"], r["op"], r["peer"]): r for r in rows}
    vs = {(v["variant"], v["shape"], v["op"], v["cake"]): v for v in doc.get("variants_vs_best", [])}
    keys, names = [], []
    for r in rows:
        k = (r["variant"], r["shape"], r["op"])
        if k not in keys:
            keys.append(k)
        if not r.get("cake") and r["peer"] not in names:
            names.append(r["peer"])
    order = {op: i for i, op in enumerate(("fwdg", "bwdg", "fwd+bwd"))}
    first = {}
    for i, k in enumerate(keys):
        first.setdefault(k[:2], i)
    # Each variant and shape where it first appears, its ops in order (fwd + bwd rows come last).
    keys.sort(key=lambda k: (first[k[:2]], order.get(k[2], 9)))

    def cake(k, name):
        r = by.get(k + (name,))
        if not r:
            return "-", "-"
        if "us" not in r:
            return VARIANT_CELL.get(r.get("status"), r.get("status", "?")), "-"
        return us(r["us"]), pct(r.get("limit_us"), r["us"])

    def peer(k, name, best):
        r = by.get(k + (name,))
        if not r:
            return "-"
        if "us" not in r:
            return VARIANT_CELL.get(r.get("status"), r.get("status", "?"))
        return "**%.2f**" % r["us"] if name == best else "%.2f" % r["us"]

    tol = meta.get("check_tol")
    out = ["Norm-gate variants (eps 1e-6; %s), CUDA-graph replays in peers.py's harness (us). "
           "limit us = the op's bytes at the device copy's bandwidth (%s GB/s, %s); %% limit = limit "
           "us / Cake us. Every peer and Cake checked against float64 before timing: `wrong` = a "
           "relative L2 error above %s (not timed), `n/a` = the peer does not compute the variant. "
           "vs best = the best peer's time over Cake's, paired rounds. %s." % (
               VARIANT_LEGEND, "%.0f" % meta["copy_gbps"] if meta.get("copy_gbps") else "?", meta.get("copy_how", "?"),
               "%g" % tol if tol is not None else "?", legend(names) if names else "No peers"), "",
           "| variant | rows x D | op | Cake nondet us | Cake det us | limit us | %% limit nondet | "
           "%% limit det | %s | vs best, nondet | vs best, det |" % " | ".join(short_peer(p) for p in names),
           "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | %s | ---: | ---: |" % " | ".join(
               "---:" for _ in names)]
    for k in keys:
        cands = [(by[k + (p,)]["us"], p) for p in names if "us" in by.get(k + (p,), {})]
        best = min(cands)[1] if cands else None
        lim = next((by[k + (p,)].get("limit_us") for p in names + ["Cake", "Cake nondet", "Cake det"]
                    if by.get(k + (p,), {}).get("limit_us")), None)
        if k[2] == "fwdg":
            (nd, nd_pct), (det, det_pct) = cake(k, "Cake"), ("=", "=")
            v_nd, v_det = speedup(vs.get(k + ("Cake",))), "="
        else:
            (nd, nd_pct), (det, det_pct) = cake(k, "Cake nondet"), cake(k, "Cake det")
            v_nd, v_det = speedup(vs.get(k + ("Cake nondet",))), speedup(vs.get(k + ("Cake det",)))
        th = next((by[k + (p,)].get("th") for p in names + ["Cake", "Cake nondet"]
                   if by.get(k + (p,), {}).get("th")), None)
        shape = "%s (%s)" % (k[1], th) if th else k[1]
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            k[0], shape, k[2], nd, det, us(lim), nd_pct, det_pct,
            " | ".join(peer(k, p, best) for p in names), v_nd, v_det))
    notes = ["%s %s %s %s: %s" % (r["peer"], r["variant"], r["shape"], r["op"], r.get("note", ""))
             for r in rows if r.get("status") in ("mismatch", "error", "not available")]
    if notes:
        out += ["", "Not timed: " + "; ".join(notes) + "."]
    if meta.get("skipped"):
        out += ["", "Not measured (the time budget ran out): %s." % "; ".join(meta["skipped"])]
    return out


def render(doc):
    d = Doc(doc)
    blocks = [header(doc).split("\n"), normgate_limit(d), normgate_peers(d), normgate_quant(d),
              swiglu(d), swiglu(d, "swiglu_fp8"), swiglu_grouped(d, "swiglu"),
              swiglu_grouped(d, "swiglu_fp8"), floors(d), skipped(d), routing(d), variants(doc)]
    return "\n\n".join("\n".join(b) for b in blocks if b) + "\n"


def render_variants(doc):
    """The variant table alone (a results JSON's or bench/results.variant_section()'s)."""
    return "\n".join(variants(doc)) + "\n"


def load(path):
    with open(path) as f:
        return json.load(f)


def device_of(path):
    return os.path.splitext(os.path.basename(path))[0]


BLOCK = re.compile(r"(<!-- tables (?P<dev>[\w.-]+) begin[^>]*-->\n)(?P<body>.*?)(<!-- tables (?P=dev) end -->)",
                   re.S)


def refresh(text, rendered):
    """text with every device block that `rendered` ({device: markdown}) has replaced; the
    devices whose block is missing."""
    seen = set()

    def sub(m):
        dev = m.group("dev")
        if dev not in rendered:
            return m.group(0)
        seen.add(dev)
        return m.group(1) + rendered[dev] + m.group(4)
    return BLOCK.sub(sub, text), sorted(set(rendered) - seen)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="*", help="bench/results/<device>.json (default: all)")
    ap.add_argument("--variants", metavar="JSON",
                    help="print the variant table of a peers.py --table variants JSON")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--write", metavar="MD", help="replace the device blocks of MD")
    g.add_argument("--check", metavar="MD", help="exit 1 if a device block of MD differs")
    a = ap.parse_args(argv)
    if a.variants:
        import results as results_json  # beside this file
        sys.stdout.write(render_variants(results_json.variant_section(load(a.variants))))
        return 0
    paths = a.results or sorted(glob.glob(os.path.join(ROOT, "bench", "results", "*.json")))
    if not paths:
        sys.exit("tables.py: no results JSON")
    rendered = {device_of(p): render(load(p)) for p in paths}
    md = a.write or a.check
    if not md:
        sys.stdout.write("\n".join(rendered.values()))
        return 0
    with open(md) as f:
        text = f.read()
    new, missing = refresh(text, rendered)
    if missing:
        print("tables.py: %s has no block for %s (<!-- tables DEVICE begin -->)" % (
            md, ", ".join(missing)), file=sys.stderr)
        return 1
    if a.write:
        if new != text:
            with open(md, "w") as f:
                f.write(new)
        print("tables.py: %s %s" % (md, "updated" if new != text else "unchanged"))
        return 0
    if new != text:
        sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True),
                                                   md, md + " (rendered)"))
        print("tables.py: %s differs from bench/results; run: python3 bench/tables.py --write %s"
              % (md, md), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
