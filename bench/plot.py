#!/usr/bin/env python3
"""One figure per family from bench/results/<device>.json (bench/results.py makes it).

    python3 bench/plot.py bench/results/h200.json -o docs/img
    # -> docs/img/normgate-h200.png, docs/img/swiglu-mxfp8-h200.png

Each figure has two panels over the measured shapes (smallest first):
  top:    Cake as a fraction of the limit line (limit us / Cake us; 100% is a streaming kernel
          that moves exactly the op's bytes), one bar per op (and backward package);
  bottom: Cake's speedup over the best peer, paired in peers.py's harness (best peer us / Cake
          us, median of the per-round ratios; the whisker spans their min and max).
Needs matplotlib (python3 -m pip install matplotlib); the tables (bench/tables.py) do not.
"""

import argparse
import json
import os
import sys

NG_BARS = [("fwd", "-"), ("fwdg", "-"), ("bwdg", "nondet"), ("bwdg", "det"), ("ckptg", "nondet"),
           ("ckptg", "det"), ("fwd+bwd", "nondet"), ("fwd+bwd", "det")]
NG_VS = [("fwdg", "Cake"), ("bwdg", "Cake nondet"), ("bwdg", "Cake det"),
         ("fwd+bwd", "Cake nondet"), ("fwd+bwd", "Cake det")]
SW_FORMS = ["fwd_row", "fwd_col", "fwd_both", "bwd_row", "bwd_col", "bwd_both"]
FAMILIES = {
    "normgate": {"file": "normgate", "title": "Norm-gate (D = 128)", "xlabel": "T x H",
                 "bars": NG_BARS, "vs": NG_VS},
    "swiglu": {"file": "swiglu-mxfp8", "title": "SwiGLU + MXFP8", "xlabel": "M x K",
               "bars": [(f, "-") for f in SW_FORMS], "vs": [(f, "Cake") for f in SW_FORMS]},
    "swiglu_fp8": {"file": "swiglu-fp8", "title": "SwiGLU + FP8 blockwise 1x128", "xlabel": "M x K",
                   "bars": [(f, "-") for f in SW_FORMS], "vs": [(f, "Cake") for f in SW_FORMS]},
}


def label(op, pkg):
    return op if pkg in ("-", "Cake") else "%s %s" % (op, pkg.replace("Cake ", ""))


def elements(shape):
    a, b = shape.split(":")[0].split("x")
    return int(a) * int(b)


def series(doc, family):
    """(shapes, [(label, [fraction or None per shape])], [(label, [(speedup, lo, hi) or None])])."""
    spec = FAMILIES[family]
    # Grouped SwiGLU rows (base_label "per-expert") have their table only.
    rows = [r for r in doc["cake"] if r.get("base_label") != "per-expert"]
    cake = {(r["family"], r["op"], r["shape"], r["package"]): r for r in rows if "us" in r}
    shapes = sorted({r["shape"] for r in rows if r["family"] == family}, key=elements)
    fracs = []
    for op, pkg in spec["bars"]:
        ys = []
        for sh in shapes:
            r = cake.get((family, op, sh, pkg))
            ys.append(r["limit_us"] / r["us"] if r and r.get("limit_us") else None)
        if any(y is not None for y in ys):
            fracs.append((label(op, pkg), ys))
    paired = {(v["family"], v["op"], v["shape"], v["cake"]): v for v in doc["vs_best_peer"]}
    vs = []
    for op, name in spec["vs"]:
        ys = []
        for sh in shapes:
            v = paired.get((family, op, sh, name))
            ys.append((v["speedup"], v.get("lo"), v.get("hi")) if v else None)
        if any(y is not None for y in ys):
            vs.append((label(op, name), ys))
    return shapes, fracs, vs


def bars(ax, shapes, rows, colors, whiskers=False):
    width = 0.84 / max(1, len(rows))
    for i, (name, ys) in enumerate(rows):
        xs, hs, lo, hi = [], [], [], []
        for j, y in enumerate(ys):
            if y is None:
                continue
            v = y[0] if whiskers else y
            xs.append(j + (i - (len(rows) - 1) / 2) * width)
            hs.append(v)
            if whiskers:
                lo.append(v - (y[1] if y[1] is not None else v))
                hi.append((y[2] if y[2] is not None else v) - v)
        ax.bar(xs, hs, width=width * 0.92, label=name, color=colors[name],
               yerr=[lo, hi] if whiskers else None, capsize=1.5 if whiskers else 0,
               error_kw={"linewidth": 0.8})
    ax.set_xticks(range(len(shapes)))
    ax.set_xticklabels(shapes)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.005, 1.0))


def figure(doc, family, path, plt):
    spec = FAMILIES[family]
    shapes, fracs, vs = series(doc, family)
    if not fracs:
        return False
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(12, 7.5), sharex=True)
    # One colour per op and package in both panels.
    cmap = plt.get_cmap("tab10")
    colors = {label(op, pkg): cmap(i % 10) for i, (op, pkg) in enumerate(spec["bars"])}
    bars(top, shapes, [(n, [None if y is None else 100 * y for y in ys]) for n, ys in fracs], colors)
    top.axhline(100, color="gray", linestyle="--", linewidth=1)
    top.set_ylabel("% of the limit line")
    low = min(100 * y for _, ys in fracs for y in ys if y is not None)
    top.set_ylim(max(0, low - 10 - low % 10), 105)
    top.set_title("Cake against the limit line (limit us / Cake us)", fontsize=10)
    if vs:
        bars(bottom, shapes, vs, colors, whiskers=True)
        bottom.axhline(1.0, color="gray", linestyle="--", linewidth=1)
        lows = [y[1] if y[1] is not None else y[0] for _, ys in vs for y in ys if y]
        highs = [y[2] if y[2] is not None else y[0] for _, ys in vs for y in ys if y]
        bottom.set_ylim(max(0, min(lows) - 0.1), max(highs) * 1.05)
        bottom.set_ylabel("best peer us / Cake us")
        bottom.set_title("Cake's speedup over the best peer, paired (whiskers: min and max "
                         "over the rounds)", fontsize=10)
    else:
        bottom.set_visible(False)
    bottom.set_xlabel(spec["xlabel"])
    dev, lib = doc["device"], doc["library"]
    fig.suptitle("%s on %s (%s, %d SMs), libcake %s (%s), %s" % (
        spec["title"], dev["name"], dev["arch"], dev["sm_count"], lib["version"], lib["commit"],
        doc["date"]))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", help="bench/results/<device>.json")
    ap.add_argument("-o", "--outdir", default=".", help="folder for FAMILY-DEVICE.png")
    a = ap.parse_args(argv)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    with open(a.results) as f:
        doc = json.load(f)
    device = os.path.splitext(os.path.basename(a.results))[0]
    os.makedirs(a.outdir, exist_ok=True)
    wrote = 0
    for family, spec in FAMILIES.items():
        path = os.path.join(a.outdir, "%s-%s.png" % (spec["file"], device))
        if figure(doc, family, path, plt):
            print("wrote " + path)
            wrote += 1
    if not wrote:
        print("plot.py: no result has both a time and a limit", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
