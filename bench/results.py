#!/usr/bin/env python3
"""One small results JSON per device (bench/results/<device>.json) from a table run:
cake-bench's JSON and bench/peers/peers.py's JSON of the same machine.

    python3 bench/results.py cake.json peers.json -o bench/results/h200.json \\
        [--commit c74f508] [--nvidia-smi nvidia-smi.csv | --driver 580.159.04] \\
        [--peers-command "..."] [--date 2026-11-30]

It keeps what docs/performance.md's tables and figures need (medians, spreads, limit lines,
fractions, each peer's time, the paired speedups against the best peer, the routing check's
verdict) and the provenance (date, device, library commit, tool versions, method, the commands
that reproduce it); per-round medians and per-program routing times stay in the raw JSONs.
bench/tables.py and bench/plot.py read only this file.

A cake-bench run with --ng-quant (the quantized norm-gate forward beside the plain one) keeps
its rows (family normgate_quant) with the plain forward's time in the same rounds (base_us), the
ratio of round medians (ratio [ratio_lo, ratio_hi]) and the bytes moved; PEERS may be - then.

A grouped SwiGLU run (cake-bench --sw-shapes grouped) keeps the per-expert launches of the
ungrouped call timed in the same rounds the same way (base_us, ratio [ratio_lo, ratio_hi],
base_label "per-expert"). --cake-also adds the rows of another cake-bench JSON of the same
device (the other family's run); --cake-command records the cake-bench command lines as given.
--peers-also adds another peers.py JSON of the same device (its rows, paired speedups and skips:
the grouped peers of the other family, peers.py --family swiglu_fp8); --peers-also-command
records its command line.

--variants VARIANTS.json (bench/peers/peers.py --table variants) adds the norm-gate variant
table: its rows (variants), Cake against the best peer (variants_vs_best) and its provenance
and copy reference (variants_meta). Without it the file has none of these keys.
"""

import argparse
import csv
import json
import os
import subprocess
import sys

FORMAT = "cake-results 1"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS_DEFAULT = "python3 bench/peers/peers.py --peers fla,mamba,compile --json peers.json"
VARIANTS_DEFAULT = "python3 bench/peers/peers.py --table variants --json variants.json"


def r3(v):
    """Three decimals: enough for microseconds and ratios, and keeps the file small."""
    return None if v is None else round(float(v), 3)


def git_commit():
    try:
        out = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=7", "HEAD"],
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def driver_from_csv(path):
    """The driver version from `nvidia-smi --query-gpu=name,driver_version,... --format=csv`."""
    with open(path) as f:
        rows = list(csv.reader(f))
    head = [h.strip() for h in rows[0]]
    if "driver_version" not in head or len(rows) < 2:
        return None
    return rows[1][head.index("driver_version")].strip()


def cake_rows(cake):
    out = []
    for r in cake["results"]:
        row = {"family": r["family"], "op": r["op"], "shape": r["shape"], "package": r["package"]}
        if r.get("status", "ok") == "ok":
            t = r["time"]
            row.update(us=r3(t["median_us"]), spread_pct=r3(t.get("spread_pct")),
                       timer=t.get("timer", ""), program=r.get("program", ""))
            if r.get("frac_copy", -1) > 0:
                row["frac_copy"] = round(r["frac_copy"], 4)
            if r.get("floor", {}).get("median_us", -1) > 0:
                row["floor_us"] = r3(r["floor"]["median_us"])
            # The plain forward of a quantized norm-gate row; a grouped row's per-expert launches.
            if r.get("base", {}).get("median_us", -1) > 0:
                row.update(base_us=r3(r["base"]["median_us"]), ratio=r3(r["ratio_to_base"]),
                           ratio_lo=r3(r.get("ratio_lo")), ratio_hi=r3(r.get("ratio_hi")))
                if r.get("base_label"):
                    row["base_label"] = r["base_label"]
        else:
            row.update(status=r.get("status", ""), note=r.get("note", ""))
        if r["family"] == "normgate_quant":  # its table gives the bytes each output moves
            row["bytes"] = r.get("read_bytes", 0) + r.get("write_bytes", 0)
        # The limit line is measured even where the op did not run.
        lim = r.get("limit", {}).get("median_us", -1)
        if lim and lim > 0:
            row["limit_us"] = r3(lim)
        out.append(row)
    return out


def peer_rows(peers):
    out = []
    for r in peers.get("results", []):
        if r.get("status") != "ok" or r.get("is_cake"):
            continue
        out.append({"family": r["family"], "op": r["op"], "shape": r["shape"], "peer": r["peer"],
                    "us": r3(r["time"]["median_us"])})
    return out


def paired_rows(peers):
    out = []
    for v in peers.get("cake_vs_best_peer", []):
        out.append({"family": v["family"], "op": v["op"], "shape": v["shape"], "cake": v["cake"],
                    "cake_us": r3(v["cake_us"]), "peer": v["peer"], "peer_us": r3(v["peer_us"]),
                    "speedup": r3(v["speedup"]), "lo": r3(v.get("speedup_lo")),
                    "hi": r3(v.get("speedup_hi"))})
    return out


def routing(cake):
    rows = cake.get("routing", [])
    flagged = [{"family": r["family"], "form": r["form"], "shape": r["shape"],
                "routed": r["routed"], "routed_us": r3(r["routed_us"]),
                "fastest": r["fastest"], "fastest_us": r3(r["fastest_us"])}
               for r in rows if r.get("flagged")]
    return {"checked": len(rows), "flagged": flagged}


def commands(a, commit, out_path):
    rel = os.path.relpath(os.path.abspath(out_path), ROOT)
    drv = "--nvidia-smi nvidia-smi.csv" if a.nvidia_smi else "--driver %s" % a.driver
    if not a.cake_command:  # the default run: cake-bench and the peers
        return [
            "cmake -S . -B build -G Ninja && cmake --build build",
            "bench/peers/fetch.sh",
            "nvidia-smi --query-gpu=name,driver_version --format=csv > nvidia-smi.csv",
            "build/bench/cake-bench --routing --json cake.json",
            a.peers_command,
            "python3 bench/results.py cake.json peers.json --commit %s %s -o %s" % (commit, drv, rel),
            "python3 bench/tables.py --write docs/performance.md",
            "python3 bench/plot.py %s -o docs/img" % rel,
        ]
    # Cake alone, as the given commands ran it: no peers, no figure.
    also = "".join(" --cake-also %s" % os.path.basename(p) for p in a.cake_also)
    cmds = ["cmake -S . -B build -G Ninja && cmake --build build",
            "nvidia-smi --query-gpu=name,driver_version --format=csv > nvidia-smi.csv"]
    cmds += a.cake_command
    if a.peers != "-":
        cmds.append(a.peers_command)
        cmds += a.peers_also_command
    also += "".join(" --peers-also %s" % os.path.basename(p) for p in a.peers_also)
    return cmds + [
        "python3 bench/results.py %s %s%s --commit %s %s -o %s" % (
            os.path.basename(a.cake), os.path.basename(a.peers) if a.peers != "-" else "-",
            also, commit, drv, rel),
        "python3 bench/tables.py --write docs/performance.md",
    ]


def build(cake, peers, a, out_path):
    dev, lib, m = cake["device"], cake["cake"], cake["method"]
    commit = a.commit or git_commit() or "unknown"
    driver = a.driver or (driver_from_csv(a.nvidia_smi) if a.nvidia_smi else None)
    v = lib.get("version", 0)
    versions = dict(peers.get("versions", {}))
    versions.pop("cake", None)
    return {
        "format": FORMAT,
        "date": a.date or cake.get("date", "")[:10],
        "device": {"name": dev["name"], "arch": "sm_%d%d" % (dev["cc_major"], dev["cc_minor"]),
                   "sm_count": dev["sm_count"], "l2_mib": r3(dev["l2_bytes"] / 2**20),
                   "memory_gib": round(dev.get("memory_bytes", 0) / 2**30, 1),
                   "driver": driver},
        "library": {"commit": commit, "version": "%d.%d.%d" % (v // 10000, v // 100 % 100, v % 100),
                    "table": "sm%d" % lib.get("table", 0), "image": lib.get("image", ""),
                    "programs": lib.get("program_count", 0)},
        "tools": versions,
        "method": {"rounds": m["rounds"], "iters": m["iters"], "warmup": m["warmup"],
                   "flush_mib": r3(m["flush_bytes"] / 2**20), "eager_timer": m["eager_timer"],
                   "graph_timer": m["graph_timer"], "swiglu_timing": m.get("swiglu_timing", ""),
                   "peers_timer": peers.get("method", {}).get("timer", "")},
        "references": {"copy_gbps": r3(cake["copy"]["gbps"]), "copy_how": cake["copy"]["reference"],
                       "floor_us": r3(cake.get("empty_kernel_graph", {}).get("median_us")),
                       "peers_floor_us": r3(peers.get("floor_graph", {}).get("median_us"))},
        "commands": commands(a, commit, out_path),
        "cake": cake_rows(cake),
        "peers": peer_rows(peers),
        "vs_best_peer": paired_rows(peers),
        "peers_skipped": list(peers.get("skipped_for_time", [])),
        "routing": routing(cake),
    }


def variant_rows(raw):
    """The variant table's rows: per variant, shape, op and peer (Cake's rows marked "cake"), the
    median and the copy limit, or the status and note of a row not timed (unsupported, mismatch
    against float64, error, not available)."""
    out = []
    for r in raw.get("results", []):
        if "variant" not in r:
            continue
        row = {"variant": r["variant"], "shape": r["shape"], "op": r["op"], "peer": r["peer"]}
        if r.get("th"):
            row["th"] = r["th"]
        if r.get("is_cake"):
            row["cake"] = True
        if r.get("status") == "ok":
            row["us"] = r3(r["time"]["median_us"])
            if r["time"].get("spread_pct") is not None:
                row["spread_pct"] = r3(r["time"]["spread_pct"])
        else:
            row["status"] = r.get("status", "")
            row["note"] = (r.get("note") or "")[:200]
        if r.get("limit_us"):
            row["limit_us"] = r3(r["limit_us"])
        out.append(row)
    return out


def variant_section(raw, command=None):
    """{variants, variants_vs_best, variants_meta} from a peers.py --table variants JSON."""
    if raw.get("tool") != "cake-bench peers variants":
        raise ValueError("not a peers.py --table variants JSON (tool %r)" % raw.get("tool"))
    copy = raw.get("copy", {})
    meta = {"date": raw.get("date", "")[:10], "device": raw.get("device", {}),
            "versions": raw.get("versions", {}), "method": raw.get("method", {}),
            "copy_gbps": r3(copy.get("gbps")), "copy_how": copy.get("how", ""),
            "floor_us": r3(raw.get("floor_graph", {}).get("median_us")),
            "check_tol": raw.get("check_tol"), "skipped": list(raw.get("skipped_for_time", []))}
    if command:
        meta["command"] = command
    versus = [{"variant": v["variant"], "op": v["op"], "shape": v["shape"], "cake": v["cake"],
               "cake_us": r3(v["cake_us"]), "peer": v["peer"], "peer_us": r3(v["peer_us"]),
               "speedup": r3(v["speedup"]), "lo": r3(v.get("speedup_lo")),
               "hi": r3(v.get("speedup_hi"))} for v in raw.get("cake_vs_best_peer", [])]
    return {"variants": variant_rows(raw), "variants_vs_best": versus, "variants_meta": meta}


def dumps(doc):
    """JSON with one row of a list a line: small, and a new run reads as a line-by-line diff."""
    parts = []
    for k, v in doc.items():
        if isinstance(v, list) and v:
            body = ",\n".join("  " + json.dumps(x, separators=(",", ":")) for x in v)
            parts.append(" %s: [\n%s\n ]" % (json.dumps(k), body))
        else:
            parts.append(" %s: %s" % (json.dumps(k), json.dumps(v)))
    return "{\n" + ",\n".join(parts) + "\n}\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cake", help="cake-bench --routing --json output")
    ap.add_argument("peers", help="bench/peers/peers.py --json output of the same machine, or - for "
                    "none (a run whose peers are in --variants only)")
    ap.add_argument("-o", "--output", required=True, help="bench/results/<device>.json")
    ap.add_argument("--commit", help="the library's commit (default: this checkout's HEAD)")
    ap.add_argument("--driver", help="the NVIDIA driver version, e.g. 580.159.04")
    ap.add_argument("--nvidia-smi", help="nvidia-smi --format=csv output holding driver_version")
    ap.add_argument("--date", help="YYYY-MM-DD (default: cake-bench's date)")
    ap.add_argument("--peers-command", default=PEERS_DEFAULT,
                    help="the peers.py command line that made PEERS (recorded as given)")
    ap.add_argument("--cake-also", action="append", default=[], metavar="JSON",
                    help="another cake-bench JSON of the same device (its rows follow CAKE's)")
    ap.add_argument("--cake-command", action="append", default=[], metavar="CMD",
                    help="a cake-bench command line that made CAKE or --cake-also (recorded as "
                    "given, in order; with it the commands list no peers unless PEERS is given)")
    ap.add_argument("--peers-also", action="append", default=[], metavar="JSON",
                    help="another peers.py JSON of the same device (the other family's peers)")
    ap.add_argument("--peers-also-command", action="append", default=[], metavar="CMD",
                    help="the peers.py command line that made a --peers-also JSON")
    ap.add_argument("--variants", help="bench/peers/peers.py --table variants --json output")
    ap.add_argument("--variants-command", default=VARIANTS_DEFAULT,
                    help="the peers.py command line that made VARIANTS (recorded as given)")
    a = ap.parse_args(argv)
    with open(a.cake) as f:
        cake = json.load(f)
    peers = {}
    if a.peers != "-":
        with open(a.peers) as f:
            peers = json.load(f)
    if cake.get("tool") != "cake-bench" or "results" not in cake:
        sys.exit("results.py: %s is not cake-bench JSON" % a.cake)
    for path in a.cake_also:
        with open(path) as f:
            more = json.load(f)
        if more.get("tool") != "cake-bench" or "results" not in more:
            sys.exit("results.py: %s is not cake-bench JSON" % path)
        if more["device"]["name"] != cake["device"]["name"]:
            sys.exit("results.py: %s is of %s, %s of %s" % (
                path, more["device"]["name"], a.cake, cake["device"]["name"]))
        cake = dict(cake, results=cake["results"] + more["results"],
                    routing=cake.get("routing", []) + more.get("routing", []))
    for path in a.peers_also:
        if a.peers == "-":
            sys.exit("results.py: --peers-also needs a peers JSON first")
        with open(path) as f:
            more = json.load(f)
        if more.get("device", {}).get("name") != peers.get("device", {}).get("name"):
            sys.exit("results.py: %s is of %s, %s of %s" % (
                path, more.get("device", {}).get("name"), a.peers,
                peers.get("device", {}).get("name")))
        peers = dict(peers, results=peers.get("results", []) + more.get("results", []),
                     cake_vs_best_peer=peers.get("cake_vs_best_peer", []) +
                     more.get("cake_vs_best_peer", []),
                     skipped_for_time=peers.get("skipped_for_time", []) +
                     more.get("skipped_for_time", []))
    doc = build(cake, peers, a, a.output)
    if a.variants:
        with open(a.variants) as f:
            doc.update(variant_section(json.load(f), a.variants_command))
    with open(a.output, "w") as f:
        f.write(dumps(doc))
    print("wrote %s (%d Cake rows, %d peer rows, %d paired)" % (
        a.output, len(doc["cake"]), len(doc["peers"]), len(doc["vs_best_peer"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
