// The norm-gate suite: every op of every shape, per package where the op has a backward, timed
// against its limit line (or A against B), fwd + bwd derived from fwdg and bwdg; and the
// routing check of the forward and of each backward form.
#include <algorithm>
#include <cstdio>

#include "bench.h"

namespace cake_bench {

// One norm-gate op: its calls in launch order, as one graph or one eager call, with the dw
// dtype of its backward and whether it is timed once per package.
struct NgOpDef {
  std::string name;
  bool graph;
  std::vector<NgCall> calls;
  cake_dtype_t dw;
  bool per_package;
};

namespace {

NgOpDef ng_op(const std::string &name) {
  if (name == "fwd") return {name, false, {NgCall::kFwd}, CAKE_DTYPE_BF16, false};
  if (name == "fwdg") return {name, true, {NgCall::kFwd}, CAKE_DTYPE_BF16, false};
  if (name == "bwdg") return {name, true, {NgCall::kBwd}, CAKE_DTYPE_BF16, true};
  if (name == "ckptg") {
    return {name, true, {NgCall::kFwd, NgCall::kFwd, NgCall::kBwd}, CAKE_DTYPE_BF16, true};
  }
  return {name, true, {NgCall::kFwd, NgCall::kFwd, NgCall::kBwd}, CAKE_DTYPE_F32, true};
}

const char *pkg_name(int p) { return p == 0 ? "det" : "nondet"; }

Row normgate_row(const NgShape &s, const std::string &op, const std::string &pkg) {
  Row r;
  r.family = "normgate";
  r.op = op;
  r.shape = s.name();
  r.package = pkg;
  r.rows = s.rows();
  r.d = s.d;
  return r;
}

}  // namespace

void Bench::normgate_shape(const NgShape &s) {
  NormgateWorkload wl(s.rows(), s.d);
  wl.set_variant(s.gate, s.placement, s.group);
  if (o_.dw_skip) wl.set_backward_flags(CAKE_NORMGATE_DW_SKIP);
  std::string why;
  const bool fits = shape_fits(wl.device_bytes(), &why);
  std::vector<CakeLib *> libs = {&lib_a_};
  if (two_libs_) libs.push_back(&lib_b_);
  if (fits) {
    const std::string e = wl.alloc(libs);
    if (!e.empty()) why = e;
  }
  const bool ready = fits && why.empty();
  std::map<std::string, Row> done;  // op/pkg -> row, for the derived fwd+bwd
  for (const std::string &opname : o_.ng_ops) {
    if (opname == "fwd+bwd") continue;
    const NgOpDef def = ng_op(opname);
    std::vector<int> pkgs = def.per_package ? o_.packages : std::vector<int>{-1};
    for (int pkg : pkgs) normgate_op(wl, s, def, pkg, ready, why, &done);
  }
  normgate_fwd_bwd(s, ready, why, done);
}

// One op at one package (-1: an op without a backward): its row, timed or with why not.
void Bench::normgate_op(NormgateWorkload &wl, const NgShape &s, const NgOpDef &def, int pkg,
                        bool ready, const std::string &why, std::map<std::string, Row> *done) {
  const int p = pkg < 0 ? 0 : pkg;
  Row r = normgate_row(s, def.name, pkg < 0 ? "-" : pkg_name(pkg));
  for (NgCall c : def.calls) {
    const StreamPlan pl = wl.plan(c, def.dw);
    r.read_bytes += pl.read_bytes;
    r.write_bytes += pl.write_bytes;
  }
  std::printf("  normgate %-9s %-10s %-6s ", def.name.c_str(), s.name().c_str(),
              r.package.c_str());
  std::fflush(stdout);
  if (!ready) {
    record_skipped(r, why);
    return;
  }
  // The A side (and, for A/B, the B side): calls, each with its program where forced.
  std::vector<Call> calls_a, calls_b;
  std::string label_a, label_b, err;
  const bool has = def.calls.back() == NgCall::kBwd ? lib_a_.has_normgate_backward()
                                                     : lib_a_.has_normgate_forward();
  CakeLib &lib_b = two_libs_ ? lib_b_ : lib_a_;
  bool ok = has && normgate_calls(wl, def, p, lib_a_, o_.program_a(), &calls_a, &label_a, &err);
  if (!has) err = "not in this build (" + lib_a_.missing() + ")";
  if (ok && o_.ab_mode()) {
    ok = normgate_calls(wl, def, p, lib_b, o_.program_b(), &calls_b, &label_b, &err);
  }
  if (ok) err = normgate_probe(wl, calls_a, calls_b);
  ok = ok && err.empty();
  r.program = label_a;
  if (!ok) {
    r.status = "not available";
    r.note = err;
    std::printf("not available: %s\n", err.c_str());
    rows_.push_back(r);
    return;
  }
  if (normgate_measure(wl, s, def, calls_a, calls_b, label_a, label_b, &r)) {
    (*done)[def.name + "/" + r.package] = r;
  }
  rows_.push_back(r);
}

// The op's calls on `lib` at `package`, each forced to `forced` where that program serves it
// (routed otherwise), and their label: the forward and backward programs they run.
bool Bench::normgate_calls(NormgateWorkload &wl, const NgOpDef &def, int package, CakeLib &lib,
                           const std::string &forced, std::vector<Call> *calls,
                           std::string *label, std::string *err) {
  bool any_forced = forced.empty();
  std::string fwd_name, bwd_name;
  for (NgCall c : def.calls) {
    const char *prog = nullptr;
    std::string qerr;
    if (!forced.empty() && !wl.query(lib, c, package, def.dw, forced.c_str(), &qerr).empty()) {
      prog = forced.c_str();
      any_forced = true;
    }
    const std::string name = wl.query(lib, c, package, def.dw, prog, &qerr);
    if (name.empty()) {
      *err = qerr;
      return false;
    }
    (c == NgCall::kFwd ? fwd_name : bwd_name) = name;
    calls->push_back(wl.call(lib, c, package, def.dw, prog));
  }
  if (!any_forced) {
    *err = "program " + forced + " serves no call of this op";
    return false;
  }
  *label = !fwd_name.empty() && !bwd_name.empty() ? fwd_name + " + " + bwd_name
                                                  : fwd_name + bwd_name;
  return true;
}

// One eager run of every call on fresh inputs, checked, before anything is timed: "" or what
// went wrong.
std::string Bench::normgate_probe(NormgateWorkload &wl, const std::vector<Call> &calls_a,
                                  const std::vector<Call> &calls_b) {
  std::string err = wl.fresh_inputs(next_seed(), timer_.stream());
  if (err.empty()) {
    for (const std::vector<Call> *cs : {&calls_a, &calls_b}) {
      for (const Call &c : *cs) {
        if (err.empty()) err = c(timer_.stream());
      }
    }
    const cudaError_t ce = cudaStreamSynchronize(timer_.stream());
    if (err.empty() && ce != cudaSuccess) err = cudaGetErrorString(ce);
  }
  return err;
}

// The limit side: the best streaming variant of each call's plan, in the op's form; the
// distinct variants' names into `variants`.
std::vector<Call> Bench::normgate_limit_calls(NormgateWorkload &wl, const NgShape &s,
                                              const NgOpDef &def, std::string *variants) {
  std::vector<Call> lim_calls;
  std::string vname;
  for (NgCall c : def.calls) {
    const StreamPlan pl = wl.plan(c, def.dw);
    const std::string key = "ng/" + s.name() + (c == NgCall::kFwd ? "/fwd" : "/bwd") +
                            (c == NgCall::kBwd && def.dw == CAKE_DTYPE_F32 ? "f32" : "");
    const StreamVariant v = best_variant(key, pl);
    lim_calls.push_back(stream_call(pl, v));
    if (vname.find(v.name()) == std::string::npos) {
      vname += (vname.empty() ? "" : " + ") + v.name();
    }
  }
  *variants = vname;
  return lim_calls;
}

// Times the op (A, and B in A/B mode) interleaved with its limit line into `r`; false with `r`
// marked as an error when the capture or the measurement failed.
bool Bench::normgate_measure(NormgateWorkload &wl, const NgShape &s, const NgOpDef &def,
                             const std::vector<Call> &calls_a, const std::vector<Call> &calls_b,
                             const std::string &label_a, const std::string &label_b, Row *r) {
  std::vector<cudaGraphExec_t> graphs;
  auto to_launchable = [&](const std::vector<Call> &calls, Launchable *l) {
    if (!def.graph) {
      l->call = calls[0];
      return std::string();
    }
    cudaGraphExec_t g = nullptr;
    const std::string e = timer_.capture(calls, &g);
    if (g) graphs.push_back(g);
    l->graph = g;
    return e;
  };
  Launchable la, lb, llim;
  std::string err = to_launchable(calls_a, &la);
  if (err.empty() && o_.ab_mode()) err = to_launchable(calls_b, &lb);
  bool with_limit = o_.limit && !o_.ab_mode() && err.empty();
  if (with_limit) {
    const std::vector<Call> lim_calls = normgate_limit_calls(wl, s, def, &r->limit_variant);
    err = to_launchable(lim_calls, &llim);
  }
  std::vector<Stat> st;
  if (err.empty()) {
    wl.fresh_inputs(next_seed(), timer_.stream());
    std::vector<Launchable> items = {la};
    if (o_.ab_mode()) items.push_back(lb);
    if (with_limit) items.push_back(llim);
    st = timer_.measure(items, o_.method, &err);
  }
  for (cudaGraphExec_t g : graphs) cudaGraphExecDestroy(g);
  if (st.empty()) {
    r->status = "error";
    r->note = err;
    std::printf("error: %s\n", err.c_str());
    return false;
  }
  if (o_.ab_mode()) {
    record_ab("normgate", def.name, s.name(), r->package, label_a, label_b, st);
    r->time = st[0];
  } else {
    r->time = st[0];
    if (with_limit) r->limit = st[1];
    std::printf("%9.3f us (%s, spread %.1f%%)  limit %s us  %s of limit\n", r->time.median_us,
                r->time.timer.c_str(), r->time.spread_pct(),
                fmt(r->limit.median_us, "%.3f").c_str(),
                fmt(r->frac_limit() * 100, "%.1f%%").c_str());
  }
  return true;
}

// fwd + bwd = fwdg + bwdg, derived (not in A/B mode, which compares launched ops only).
void Bench::normgate_fwd_bwd(const NgShape &s, bool ready, const std::string &why,
                             const std::map<std::string, Row> &done) {
  if (std::find(o_.ng_ops.begin(), o_.ng_ops.end(), "fwd+bwd") == o_.ng_ops.end() ||
      o_.ab_mode()) {
    return;
  }
  for (int pkg : o_.packages) {
    Row r = normgate_row(s, "fwd+bwd", pkg_name(pkg));
    auto f = done.find("fwdg/-");
    auto b = done.find(std::string("bwdg/") + pkg_name(pkg));
    if (f == done.end() || b == done.end() || !f->second.time.ok() || !b->second.time.ok()) {
      r.status = "not available";
      r.note = "needs fwdg and bwdg at this shape";
      if (!ready) {
        r.status = "skipped";
        r.note = why;
      }
      rows_.push_back(r);
      continue;
    }
    const Row &fr = f->second, &br = b->second;
    r.program = fr.program + " + " + br.program;
    r.read_bytes = fr.read_bytes + br.read_bytes;
    r.write_bytes = fr.write_bytes + br.write_bytes;
    r.time.median_us = fr.time.median_us + br.time.median_us;
    r.time.lo_us = fr.time.lo_us + br.time.lo_us;
    r.time.hi_us = fr.time.hi_us + br.time.hi_us;
    r.time.timer = "derived";
    if (fr.limit.ok() && br.limit.ok()) {
      r.limit.median_us = fr.limit.median_us + br.limit.median_us;
      r.limit.lo_us = fr.limit.lo_us + br.limit.lo_us;
      r.limit.hi_us = fr.limit.hi_us + br.limit.hi_us;
      r.limit_variant = fr.limit_variant + " + " + br.limit_variant;
    }
    std::printf("  normgate %-9s %-10s %-6s %9.3f us (fwdg + bwdg)  %s of limit\n", "fwd+bwd",
                s.name().c_str(), r.package.c_str(), r.time.median_us,
                fmt(r.frac_limit() * 100, "%.1f%%").c_str());
    rows_.push_back(r);
  }
}

void Bench::routing_normgate(const NgShape &s) {
  NormgateWorkload wl(s.rows(), s.d);
  wl.set_variant(s.gate, s.placement, s.group);
  if (o_.dw_skip) wl.set_backward_flags(CAKE_NORMGATE_DW_SKIP);
  std::string why;
  if (!shape_fits(wl.device_bytes(), &why) || !(why = wl.alloc({&lib_a_})).empty()) {
    RouteRow rr;
    rr.family = "normgate";
    rr.shape = s.name();
    rr.status = "skipped";
    rr.note = why;
    route_rows_.push_back(rr);
    return;
  }
  struct Form {
    std::string name;
    NgCall kind;
    int pkg;
    cake_dtype_t dw;
  };
  std::vector<Form> forms = {{"fwd", NgCall::kFwd, 0, CAKE_DTYPE_BF16}};
  for (int p : o_.packages) {
    for (cake_dtype_t dt : {CAKE_DTYPE_BF16, CAKE_DTYPE_F32}) {
      forms.push_back({std::string("bwd_") + pkg_name(p) + (dt == CAKE_DTYPE_F32 ? "_f32" : "_bf16"),
                       NgCall::kBwd, p, dt});
    }
  }
  for (const Form &f : forms) {
    RouteRow rr;
    rr.family = "normgate";
    rr.form = f.name;
    rr.shape = s.name();
    std::printf("  routing normgate %-16s %-10s ", f.name.c_str(), s.name().c_str());
    std::string err;
    const bool has = f.kind == NgCall::kFwd ? lib_a_.has_normgate_forward()
                                            : lib_a_.has_normgate_backward();
    if (has) rr.routed = wl.query(lib_a_, f.kind, f.pkg, f.dw, nullptr, &err);
    if (!has || rr.routed.empty()) {
      rr.status = "not available";
      rr.note = has ? err : "not in this build (" + lib_a_.missing() + ")";
      std::printf("not available: %s\n", rr.note.c_str());
      route_rows_.push_back(rr);
      continue;
    }
    const std::vector<const char *> progs = wl.serving_programs(lib_a_, f.kind, f.pkg, f.dw);
    std::vector<Launchable> items;
    for (const char *p : progs) {
      Launchable l;
      l.call = wl.call(lib_a_, f.kind, f.pkg, f.dw, p);
      items.push_back(l);
    }
    Launchable routed;
    routed.call = wl.call(lib_a_, f.kind, f.pkg, f.dw, nullptr);
    items.push_back(routed);
    wl.fresh_inputs(next_seed(), timer_.stream());
    const std::vector<Stat> st = timer_.measure(items, o_.routing_method, &err);
    record_route(rr, progs, st, err);
  }
}

}  // namespace cake_bench
