#!/usr/bin/env python3
"""Draws cake-bench's JSON as a PNG: each op's time as a fraction of its limit line, by shape.

    python3 bench/plot.py cake.json -o docs/perf.png [--peers peers.json ...]

One panel per family (normgate, swiglu). A bar is limit us / op us for one op (and package) at
one shape: 1.0 is the streaming kernel that moves exactly the op's bytes; above 1.0 is faster
than it. With --peers, a black tick marks the best peer where it measured the same op and shape
(graph replays of fwdg, bwdg, fwd+bwd and the swiglu forms): where the peers JSON pairs Cake
with that peer (bench/peers/peers.py: Cake's graph alternating with the peer's on the same
inputs) the tick is the bar divided by the paired speedup, i.e. the peer on the bar's scale
through a comparison made in one harness; otherwise limit us / peer us, two harnesses.
"""

import argparse
import json
import sys


def cake_name(r):
    """The name peers.py gives Cake's paired graph for this cake-bench result."""
    if r["family"] == "normgate" and r["package"] in ("det", "nondet"):
        return "Cake " + r["package"]
    return "Cake"


def peer_tick(r, best_peer, paired):
    """The best peer on the scale of cake-bench result r (limit us / op us), or None where no
    peer measured the op: r's fraction over the paired speedup where peers.py paired Cake with
    the best peer, else the limit over the peer's time (two harnesses)."""
    v = paired.get((r["family"], r["op"], r["shape"], cake_name(r)))
    if v and v["speedup"] > 0:
        return r["frac_limit"] / v["speedup"]
    b = best_peer.get((r["family"], r["op"], r["shape"]))
    if b and r["limit"]["median_us"] > 0:
        return r["limit"]["median_us"] / b["us"]
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", help="cake-bench --json output")
    ap.add_argument("-o", "--output", default="cake-bench.png")
    ap.add_argument("--peers", action="append", default=[],
                    help="bench/peers/peers.py --json output (repeatable; the best of all counts)")
    ap.add_argument("--title", default=None)
    a = ap.parse_args()

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(a.json) as f:
        doc = json.load(f)
    best_peer, paired = {}, {}
    for path in a.peers:
        with open(path) as f:
            pdoc = json.load(f)
        for b in pdoc.get("best", []):
            key = (b["family"], b["op"], b["shape"])
            if key not in best_peer or b["us"] < best_peer[key]["us"]:
                best_peer[key] = b
        for v in pdoc.get("cake_vs_best_peer", []):
            key = (v["family"], v["op"], v["shape"], v["cake"])
            if key not in paired or v["peer_us"] < paired[key]["peer_us"]:
                paired[key] = v


    families = [f for f in ("normgate", "swiglu")
                if any(r["family"] == f and r.get("frac_limit", -1) and r["frac_limit"] > 0
                       for r in doc["results"])]
    if not families:
        print("plot.py: no result has both a time and a limit", file=sys.stderr)
        return 1
    fig, axes = plt.subplots(len(families), 1, figsize=(14, 4.8 * len(families)), squeeze=False)
    for ax, fam in zip(axes[:, 0], families):
        rows = [r for r in doc["results"] if r["family"] == fam and r.get("frac_limit") and r["frac_limit"] > 0]
        shapes = []
        for r in rows:
            if r["shape"] not in shapes:
                shapes.append(r["shape"])
        series = []
        for r in rows:
            key = r["op"] if r["package"] in ("-", "") else "%s (%s)" % (r["op"], r["package"])
            if key not in series:
                series.append(key)
        width = 0.8 / max(1, len(series))
        cmap = plt.get_cmap("tab20")
        for i, key in enumerate(series):
            xs, ys = [], []
            for r in rows:
                k = r["op"] if r["package"] in ("-", "") else "%s (%s)" % (r["op"], r["package"])
                if k == key:
                    xs.append(shapes.index(r["shape"]) + (i - (len(series) - 1) / 2) * width)
                    ys.append(r["frac_limit"])
            ax.bar(xs, ys, width=width * 0.95, label=key, color=cmap(i % 20))
            # The best peer on the same limit, where it measured this op.
            for r in rows:
                k = r["op"] if r["package"] in ("-", "") else "%s (%s)" % (r["op"], r["package"])
                if k != key:
                    continue
                y = peer_tick(r, best_peer, paired)
                if y is not None:
                    x = shapes.index(r["shape"]) + (i - (len(series) - 1) / 2) * width
                    ax.plot([x - width * 0.45, x + width * 0.45], [y] * 2, color="black", linewidth=2)
        ax.axhline(1.0, color="gray", linestyle="--", linewidth=1)
        ax.set_xticks(range(len(shapes)))
        ax.set_xticklabels(shapes)
        ax.set_ylabel("limit us / op us")
        ax.set_xlabel("T x H (D = 128)" if fam == "normgate" else "M x K")
        ax.set_title("%s: fraction of the limit line%s" % (
            fam, "" if not best_peer else " (black: best peer, by the paired speedup)" if paired
            else " (black: best peer)"))
        ax.set_ylim(0, max(1.1, max(r["frac_limit"] for r in rows) * 1.08))
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.005, 1.0))
        ax.grid(axis="y", alpha=0.3)
    dev = doc.get("device", {})
    fig.suptitle(a.title or "cake-bench, %s (%d SMs), %s" % (dev.get("name", "?"), dev.get("sm_count", 0),
                                                           doc.get("date", "")))
    fig.tight_layout()
    fig.savefig(a.output, dpi=110)
    print("wrote " + a.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
