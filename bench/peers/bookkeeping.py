"""peers.py's results bookkeeping: the rows as they are timed (printed and written to --json
after each), the best peer per op and shape, the derived fwd + bwd rows, and Cake against the
best peer from the paired rounds."""

import json
import os
import time


class Run:
    def __init__(self, args):
        self.args = args
        self.t0 = time.time()
        self.results = []
        self.skipped = []
        self.meta = {}

    def over_budget(self):
        return self.args.time_budget > 0 and time.time() - self.t0 > self.args.time_budget

    def add(self, **row):
        self.results.append(row)
        t = row.get("time") or {}
        status = row.get("status", "ok")
        print("  %-8s %-9s %-12s %-34s %s" % (
            row["family"], row["op"], row["shape"], row["peer"],
            ("%10.3f us (spread %.1f%%)" % (t["median_us"], t["spread_pct"])) if status == "ok"
            else status + ": " + row.get("note", "")), flush=True)
        for name, pc in (row.get("paired_cake") or {}).items():
            print("  %-8s %-9s %-12s   paired %-25s %10.3f us, peer / Cake %.3f [%.3f, %.3f]" % (
                "", "", "", name, pc["time"]["median_us"], pc["speedup"], pc["speedup_lo"],
                pc["speedup_hi"]), flush=True)
        self.write()

    def write(self):
        if not self.args.json:
            return
        doc = dict(self.meta)
        doc["results"] = self.results
        doc["skipped_for_time"] = self.skipped
        if "best" not in doc:  # the variant table keeps its own, per variant
            doc["best"] = best_table(self.results)
        doc["elapsed_s"] = time.time() - self.t0
        tmp = self.args.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, self.args.json)


def best_table(results):
    best = {}
    for r in results:
        if r.get("status") != "ok" or r.get("is_cake"):
            continue
        key = (r["family"], r["op"], r["shape"])
        if key not in best or r["time"]["median_us"] < best[key]["us"]:
            best[key] = {"family": r["family"], "op": r["op"], "shape": r["shape"],
                         "peer": r["peer"], "us": r["time"]["median_us"]}
    return list(best.values())


def derive_fwd_bwd(results):
    """fwd + bwd rows (normgate) from each peer's fwdg and bwdg rows: the sums of their times.
    Cake's two backward packages pair with its one forward (a bwdg row's "fwd_peer")."""
    derived = []
    for b in results:
        if b["family"] == "normgate" and b["op"] == "bwdg" and b.get("status") == "ok":
            fwd_peer = b.get("fwd_peer", b["peer"])
            r = next((q for q in results if q["family"] == "normgate" and q["op"] == "fwdg"
                      and q["shape"] == b["shape"] and q["peer"] == fwd_peer and q.get("status") == "ok"), None)
            if r:
                row = {"family": "normgate", "op": "fwd+bwd", "shape": b["shape"], "peer": b["peer"],
                       "status": "ok", "time": {"median_us": r["time"]["median_us"] + b["time"]["median_us"],
                                                "lo_us": r["time"]["lo_us"] + b["time"]["lo_us"],
                                                "hi_us": r["time"]["hi_us"] + b["time"]["hi_us"],
                                                "spread_pct": None, "timer": "derived"}}
                if b.get("is_cake"):
                    row["is_cake"] = True
                derived.append(row)
    return derived


def cake_vs_best_peer(results):
    """Cake against the best peer of every op and shape, from the rounds where Cake's graph
    alternated with that peer's ("paired_cake"): the median and range of the per-round speedups
    (peer us / Cake us); fwd + bwd: the sums of the best peer's and its paired Cake's fwdg and
    bwdg medians. Sorted by family, op, shape, Cake's name."""
    def row_of(family, op, shape, peer):
        return next((q for q in results if (q["family"], q["op"], q["shape"], q["peer"]) ==
                     (family, op, shape, peer) and q.get("status") == "ok"), None)

    def paired(family, op, shape, peer):
        return (row_of(family, op, shape, peer) or {}).get("paired_cake") or {}

    versus = []
    for b in best_table(results):
        if b["op"] == "fwd+bwd":
            pf = paired(b["family"], "fwdg", b["shape"], b["peer"])
            pb = paired(b["family"], "bwdg", b["shape"], b["peer"])
            f = row_of(b["family"], "fwdg", b["shape"], b["peer"])
            g = row_of(b["family"], "bwdg", b["shape"], b["peer"])
            if "Cake" in pf and f and g:
                for name, pc in pb.items():
                    cake_us = pf["Cake"]["time"]["median_us"] + pc["time"]["median_us"]
                    peer_us = f["time"]["median_us"] + g["time"]["median_us"]
                    versus.append({"family": b["family"], "op": b["op"], "shape": b["shape"],
                                   "cake": name, "cake_us": cake_us, "peer": b["peer"],
                                   "peer_us": peer_us, "speedup": peer_us / cake_us,
                                   "speedup_lo": None, "speedup_hi": None})
            continue
        for name, pc in paired(b["family"], b["op"], b["shape"], b["peer"]).items():
            versus.append({"family": b["family"], "op": b["op"], "shape": b["shape"], "cake": name,
                           "cake_us": pc["time"]["median_us"], "peer": b["peer"], "peer_us": b["us"],
                           "speedup": pc["speedup"], "speedup_lo": pc["speedup_lo"],
                           "speedup_hi": pc["speedup_hi"]})
    versus.sort(key=lambda v: (v["family"], v["op"], v["shape"], v["cake"]))
    return versus
