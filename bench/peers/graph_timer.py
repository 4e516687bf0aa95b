"""peers.py's timer: each op captured once in a CUDA graph and replayed with a cold L2, the way
cake-bench times its graph ops; a peer's graph and Cake's alternate round by round."""

import statistics


class GraphTimer:
    """Graph capture and cold-L2 event timing, the way cake-bench times its graph ops."""

    def __init__(self, torch, flush_mult, rounds, iters, warmup):
        self.torch = torch
        props = torch.cuda.get_device_properties(0)
        self.l2 = int(getattr(props, "L2_cache_size", 0) or 50 << 20)
        self.flush_bytes = int(max(2.0, flush_mult) * self.l2)
        self.flush_buf = torch.empty(self.flush_bytes, dtype=torch.uint8, device="cuda")
        self.rounds, self.iters, self.warmup = rounds, iters, warmup
        self.count = 0

    def flush(self):
        self.count = self.count % 250 + 1
        self.flush_buf.fill_(self.count)

    def capture(self, fn):
        """Returns (graph, outputs): fn() captured once after warm-up on a side stream."""
        torch = self.torch
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                fn()
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = fn()
        torch.cuda.synchronize()
        return g, out

    def time_graph(self, g):
        return self.time_graphs([g])[0]

    def time_graphs(self, graphs):
        """Graphs alternated round by round (a round: --iters replays of one graph, then of the
        next; the order reversed every other round), so that a peer and Cake's paired graph share
        the machine's state and drift."""
        torch = self.torch
        for g in graphs:
            for _ in range(self.warmup):
                self.flush()
                g.replay()
        torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(self.iters)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(self.iters)]
        per_graph = [[] for _ in graphs]
        for rnd in range(self.rounds):
            # Odd rounds run the graphs in reverse order: neither goes first every time.
            order = range(len(graphs)) if rnd % 2 == 0 else range(len(graphs) - 1, -1, -1)
            for j in order:
                medians, g = per_graph[j], graphs[j]
                for i in range(self.iters):
                    self.flush()
                    starts[i].record()
                    g.replay()
                    ends[i].record()
                torch.cuda.synchronize()
                medians.append(statistics.median(starts[i].elapsed_time(ends[i]) * 1e3
                                                 for i in range(self.iters)))
        out = []
        for medians in per_graph:
            med = statistics.median(medians)
            out.append({"median_us": med, "lo_us": min(medians), "hi_us": max(medians),
                        "spread_pct": 100.0 * (max(medians) - min(medians)) / med,
                        "round_medians_us": medians, "timer": "events (graph replay)"})
        return out
