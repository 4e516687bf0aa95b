// The quantized norm-gate forward (cake_normgate_forward_quantized) beside the plain forward on
// the same shape and buffers: the plain forward's graph, each quantized output's graph and each
// one's limit line, all interleaved in the same rounds, so that the ratio quantized / plain is
// of round medians measured together.
#include <algorithm>
#include <cstdio>

#include "bench.h"
#include "ngquant_workload.h"

namespace cake_bench {

namespace {

Row ngquant_row(const NgShape &s, const NgQuantForm *f, const StreamPlan &pl) {
  Row r;
  r.family = "normgate_quant";
  r.op = f ? f->name() : "fwdg";
  r.shape = s.name();
  r.package = "-";
  r.rows = s.rows();
  r.d = s.d;
  r.read_bytes = pl.read_bytes;
  r.write_bytes = pl.write_bytes;
  return r;
}

}  // namespace

void Bench::ngquant_shape(const NgShape &s) {
  NgQuantWorkload wl(s.rows(), s.d, s.h);
  std::string why;
  bool ready = shape_fits(wl.device_bytes(), &why);
  if (ready) {
    why = wl.alloc();
    ready = why.empty();
  }
  // The plain forward (null), then each quantized output.
  std::vector<const NgQuantForm *> forms = {nullptr};
  for (const NgQuantForm &f : o_.ng_quant) forms.push_back(&f);
  std::vector<Row> rows;
  std::vector<Call> calls;
  std::vector<size_t> live;  // rows with a call
  for (const NgQuantForm *f : forms) {
    Row r = ngquant_row(s, f, wl.plan(f));
    std::string err;
    if (!ready) {
      r.status = "skipped";
      r.note = why;
    } else {
      // --program where it serves this call, else routed.
      const char *prog = nullptr;
      if (!o_.program.empty() && !wl.query(lib_a_, f, o_.program.c_str(), &err).empty()) {
        prog = o_.program.c_str();
      }
      r.program = wl.query(lib_a_, f, prog, &err);
      if (r.program.empty()) {
        r.status = "not available";
        r.note = err;
      } else {
        live.push_back(rows.size());
        calls.push_back(wl.call(lib_a_, f, prog));
      }
    }
    rows.push_back(r);
  }
  // One eager run of every call on fresh inputs, checked, before anything is timed.
  std::string err = live.empty() ? "" : wl.fresh_inputs(next_seed(), timer_.stream());
  for (const Call &c : calls) {
    if (err.empty()) err = c(timer_.stream());
  }
  const cudaError_t ce = cudaStreamSynchronize(timer_.stream());
  if (err.empty() && ce != cudaSuccess) err = cudaGetErrorString(ce);
  // The graphs: each call's, then (unless --no-limit) each call's limit line.
  std::vector<cudaGraphExec_t> graphs;
  std::vector<Launchable> items;
  for (size_t i = 0; i < calls.size() && err.empty(); ++i) {
    cudaGraphExec_t g = nullptr;
    err = timer_.capture({calls[i]}, &g);
    if (g) graphs.push_back(g);
    Launchable l;
    l.graph = g;
    items.push_back(l);
  }
  for (size_t i = 0; i < live.size() && err.empty() && o_.limit; ++i) {
    const NgQuantForm *f = forms[live[i]];
    const StreamPlan pl = wl.plan(f);
    const StreamVariant v = best_variant("ngq/" + s.name() + "/" + rows[live[i]].op, pl);
    rows[live[i]].limit_variant = v.name();
    cudaGraphExec_t g = nullptr;
    err = timer_.capture({stream_call(pl, v)}, &g);
    if (g) graphs.push_back(g);
    Launchable l;
    l.graph = g;
    items.push_back(l);
  }
  std::vector<Stat> st;
  if (err.empty() && !items.empty()) {
    wl.fresh_inputs(next_seed(), timer_.stream());
    st = timer_.measure(items, o_.method, &err);
  }
  for (cudaGraphExec_t g : graphs) cudaGraphExecDestroy(g);
  const bool plain = !live.empty() && live[0] == 0;
  for (size_t i = 0; i < live.size(); ++i) {
    Row &r = rows[live[i]];
    if (st.empty()) {
      r.status = "error";
      r.note = err;
      continue;
    }
    r.time = st[i];
    if (o_.limit) r.limit = st[live.size() + i];
    if (plain && live[i] != 0) {
      r.base = st[0];
      round_ratio(r.time, r.base, &r);
    }
  }
  for (const Row &r : rows) {
    std::printf("  normgate_quant %-10s %-13s ", r.op.c_str(), r.shape.c_str());
    if (r.status != "ok") {
      std::printf("%s: %s\n", r.status.c_str(), r.note.c_str());
    } else {
      std::printf("%9.3f us (spread %.1f%%)  limit %s us  %s of limit  %s of plain\n",
                  r.time.median_us, r.time.spread_pct(), fmt(r.limit.median_us, "%.3f").c_str(),
                  fmt(r.frac_limit() * 100, "%.1f%%").c_str(), fmt(r.ratio, "%.3fx").c_str());
    }
    rows_.push_back(r);
  }
}

}  // namespace cake_bench
