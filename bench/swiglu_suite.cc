// The SwiGLU + MXFP8 suite: every form of every shape as CUDA-graph replays (as the peers are
// timed) or eager kernel time, against its limit line and, at small shapes, the empty-kernel
// floor (or A against B); and the routing check of every form. With sw_fp8_ the same for the
// SwiGLU + FP8 blockwise family (rows of family "swiglu_fp8").
#include <cstdio>

#include "bench.h"

namespace cake_bench {

void Bench::swiglu_shape(const SwShape &s) {
  SwigluWorkload wl(s.m, s.k, sw_fp8_, s.experts, s.ragged);
  bool need_bwd = false;
  for (const SwigluForm &f : o_.sw_forms) need_bwd |= f.backward;
  std::string why;
  const bool fits = shape_fits(wl.device_bytes(need_bwd), &why);
  if (fits) {
    const std::string e = wl.alloc(need_bwd, &lib_a_);
    if (!e.empty()) why = e;
  }
  const bool ready = fits && why.empty();
  for (const SwigluForm &f : o_.sw_forms) swiglu_form(wl, s, f, ready, why);
}

// One form: its row, timed or with why not.
void Bench::swiglu_form(SwigluWorkload &wl, const SwShape &s, const SwigluForm &f, bool ready,
                        const std::string &why) {
  Row r;
  r.family = sw_fp8_ ? "swiglu_fp8" : "swiglu";
  r.op = f.name();
  r.shape = s.name();
  r.package = "-";
  r.m = s.m;
  r.k = s.k;
  const StreamPlan pl = wl.plan(f);
  r.read_bytes = pl.read_bytes;
  r.write_bytes = pl.write_bytes;
  std::printf("  %-8s %-9s %-12s ", sw_fp8_ ? "fp8" : "swiglu", r.op.c_str(), r.shape.c_str());
  std::fflush(stdout);
  if (!ready) {
    record_skipped(r, why);
    return;
  }
  std::string err;
  CakeLib &lib_b = two_libs_ ? lib_b_ : lib_a_;
  const std::string &prog_a = o_.program_a();
  Launchable la, lb;
  std::string label_a, label_b;
  bool ok = wl.experts() > 0 ? lib_a_.has_swiglu_grouped(sw_fp8_)
                             : sw_fp8_ ? lib_a_.has_swiglu_fp8() : lib_a_.has_swiglu();
  if (!ok) err = "not in this build (" + lib_a_.missing() + ")";
  if (ok) {
    label_a = wl.query(lib_a_, f, prog_a.empty() ? nullptr : prog_a.c_str(), &err);
    ok = !label_a.empty();
    la.call = wl.call(lib_a_, f, prog_a.empty() ? nullptr : prog_a.c_str());
  }
  if (ok && o_.ab_mode()) {
    const std::string &pb = o_.program_b();
    label_b = wl.query(lib_b, f, pb.empty() ? nullptr : pb.c_str(), &err);
    ok = !label_b.empty();
    lb.call = wl.call(lib_b, f, pb.empty() ? nullptr : pb.c_str());
  }
  // Probe: one eager run of each side on fresh inputs, checked, before anything is timed.
  if (ok) {
    err = wl.fresh_inputs(next_seed(), o_.block_exp, timer_.stream());
    if (err.empty()) err = la.call(timer_.stream());
    if (err.empty() && o_.ab_mode()) err = lb.call(timer_.stream());
    const cudaError_t ce = cudaStreamSynchronize(timer_.stream());
    if (err.empty() && ce != cudaSuccess) err = cudaGetErrorString(ce);
    ok = err.empty();
  }
  r.program = label_a;
  if (!ok) {
    r.status = "not available";
    r.note = err;
    std::printf("not available: %s\n", err.c_str());
    // The limit line is still worth having before the op exists.
    if (o_.limit && !o_.ab_mode()) swiglu_limit_only(s, f, pl, &r);
    rows_.push_back(r);
    return;
  }
  swiglu_measure(wl, s, f, pl, la, lb, label_a, label_b, &r);
  rows_.push_back(r);
}

// The limit line alone, for a form this build cannot run.
void Bench::swiglu_limit_only(const SwShape &s, const SwigluForm &f, const StreamPlan &pl,
                              Row *r) {
  Launchable llim;
  const StreamVariant v = best_variant((sw_fp8_ ? "sw8/" : "sw/") + s.name() + "/" + f.name(), pl);
  llim.call = stream_call(pl, v);
  std::string e2;
  cudaGraphExec_t g = nullptr;
  if (!o_.sw_eager) {
    e2 = timer_.capture({llim.call}, &g);
    llim.graph = g;
  }
  std::vector<Stat> st;
  if (e2.empty()) st = timer_.measure({llim}, o_.method, &e2);
  if (g) cudaGraphExecDestroy(g);
  if (!st.empty()) {
    r->limit = st[0];
    r->limit_variant = v.name();
    std::printf("  %*s limit %.3f us (%s)\n", 24, "", r->limit.median_us,
                r->limit_variant.c_str());
  }
}

// Times A (and B in A/B mode) interleaved with the limit line and the floor into `r`; on a
// failed capture or measurement `r` is marked as an error.
void Bench::swiglu_measure(SwigluWorkload &wl, const SwShape &s, const SwigluForm &f,
                           const StreamPlan &pl, Launchable la, Launchable lb,
                           const std::string &label_a, const std::string &label_b, Row *r) {
  std::string err;
  Launchable llim;
  const bool with_limit = o_.limit && !o_.ab_mode();
  if (with_limit) {
    const StreamVariant v =
        best_variant((sw_fp8_ ? "sw8/" : "sw/") + s.name() + "/" + f.name(), pl);
    llim.call = stream_call(pl, v);
    r->limit_variant = v.name();
  }
  // Graph replays (the default, as the peers are timed) or eager kernel time. Up to 2^20
  // elements the empty-kernel floor is a third item of the same rounds: a machine's state
  // moves a 5 us replay by several percent, a floor timed apart from the op with it.
  Launchable lfloor;
  const bool with_floor = !o_.sw_eager && !o_.ab_mode() && s.m * s.k <= (int64_t(1) << 20);
  if (with_floor) lfloor.call = empty_call();
  // A grouped call: the per-expert launches of the ungrouped call it replaces, in the same
  // rounds (one graph of E launches), the grouped time's base.
  Launchable lbase;
  bool with_base = wl.experts() > 0 && !o_.ab_mode();
  if (with_base) {
    // Probed once eagerly: a split the ungrouped call cannot run (a ragged MXFP8 expert) is
    // noted, and the grouped call is timed without it.
    lbase.call = wl.per_expert_call(lib_a_, f);
    std::string be = lbase.call(timer_.stream());
    const cudaError_t ce = cudaStreamSynchronize(timer_.stream());
    if (be.empty() && ce != cudaSuccess) be = cudaGetErrorString(ce);
    if (!be.empty()) {
      with_base = false;
      r->note = "no per-expert base: " + be;
    }
  }
  if (!with_base) lbase.call = nullptr;
  std::vector<cudaGraphExec_t> graphs;
  if (!o_.sw_eager) {
    for (Launchable *l : {&la, &lb, &llim, &lfloor, &lbase}) {
      if (!l->call || !err.empty()) continue;
      cudaGraphExec_t g = nullptr;
      err = timer_.capture({l->call}, &g);
      if (g) graphs.push_back(g);
      l->graph = g;
    }
  }
  std::vector<Stat> st;
  if (err.empty()) {
    wl.fresh_inputs(next_seed(), o_.block_exp, timer_.stream());
    std::vector<Launchable> items = {la};
    if (o_.ab_mode()) items.push_back(lb);
    if (with_limit) items.push_back(llim);
    if (with_floor && lfloor.graph) items.push_back(lfloor);
    if (with_base) items.push_back(lbase);
    st = timer_.measure(items, o_.method, &err);
  }
  for (cudaGraphExec_t g : graphs) cudaGraphExecDestroy(g);
  if (st.empty()) {
    r->status = "error";
    r->note = err;
    std::printf("error: %s\n", err.c_str());
    return;
  }
  r->time = st[0];
  if (o_.ab_mode()) {
    record_ab("swiglu", f.name(), s.name(), "-", label_a, label_b, st);
  } else {
    if (with_limit) r->limit = st[1];
    if (with_floor && lfloor.graph) r->floor = st[with_limit ? 2 : 1];
    if (with_base) {
      r->base = st.back();
      r->base_label = "per-expert";
      round_ratio(r->time, r->base, r);
    }
    std::printf("%9.3f us (%s, spread %.1f%%)  limit %s us  %s of limit", r->time.median_us,
                r->time.timer.c_str(), r->time.spread_pct(),
                fmt(r->limit.median_us, "%.3f").c_str(),
                fmt(r->frac_limit() * 100, "%.1f%%").c_str());
    if (r->floor.ok()) {
      std::printf("  floor %.3f us (%.2fx)", r->floor.median_us,
                  r->time.median_us / r->floor.median_us);
    }
    if (r->base.ok()) {
      std::printf("  per-expert %.3f us (%.3fx of it)", r->base.median_us, r->ratio);
    }
    std::printf("\n");
  }
}

void Bench::routing_swiglu(const SwShape &s) {
  SwigluWorkload wl(s.m, s.k, sw_fp8_, s.experts, s.ragged);
  bool need_bwd = false;
  for (const SwigluForm &f : o_.sw_forms) need_bwd |= f.backward;
  std::string why;
  if (!shape_fits(wl.device_bytes(need_bwd), &why) ||
      !(why = wl.alloc(need_bwd, &lib_a_)).empty()) {
    RouteRow rr;
    rr.family = sw_fp8_ ? "swiglu_fp8" : "swiglu";
    rr.shape = s.name();
    rr.status = "skipped";
    rr.note = why;
    route_rows_.push_back(rr);
    return;
  }
  for (const SwigluForm &f : o_.sw_forms) {
    RouteRow rr;
    rr.family = sw_fp8_ ? "swiglu_fp8" : "swiglu";
    rr.form = f.name();
    rr.shape = s.name();
    std::printf("  routing swiglu   %-16s %-12s ", f.name().c_str(), s.name().c_str());
    std::string err;
    const bool has = wl.experts() > 0 ? lib_a_.has_swiglu_grouped(sw_fp8_)
                                      : sw_fp8_ ? lib_a_.has_swiglu_fp8() : lib_a_.has_swiglu();
    if (has) rr.routed = wl.query(lib_a_, f, nullptr, &err);
    if (rr.routed.empty()) {
      rr.status = "not available";
      rr.note = has ? err : "not in this build (" + lib_a_.missing() + ")";
      std::printf("not available: %s\n", rr.note.c_str());
      route_rows_.push_back(rr);
      continue;
    }
    const std::vector<const char *> progs = wl.serving_programs(lib_a_, f);
    std::vector<Launchable> items;
    for (const char *p : progs) {
      Launchable l;
      l.call = wl.call(lib_a_, f, p);
      items.push_back(l);
    }
    Launchable routed;
    routed.call = wl.call(lib_a_, f, nullptr);
    items.push_back(routed);
    wl.fresh_inputs(next_seed(), o_.block_exp, timer_.stream());
    const std::vector<Stat> st = timer_.measure(items, o_.routing_method, &err);
    record_route(rr, progs, st, err);
  }
}

}  // namespace cake_bench
