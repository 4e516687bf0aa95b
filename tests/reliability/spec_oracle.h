// An independent checker of the validation and launch rules, written from the specs
// (docs/spec/normgate.md, docs/spec/swiglu-mxfp8.md) and the public header, not from lib/api/. The fuzzer
// and the argument matrix judge the real entry points with it:
//   - expect_*(): which rules a call breaks, each with the statuses the spec allows for it. A
//     call that breaks a rule must be rejected with one of them; a call that breaks none must be
//     accepted. A few implementation limits the spec leaves open are "may reject" rules.
//   - check_*_launch(): for an accepted launching call (recorded by the stub driver), the
//     preconditions of the program it launched: the program serves the call, the parameter
//     struct says what the caller asked, rows/tiles are covered, the grid is launchable, the
//     workspace covers the layout the kernel indexes.
// Program knobs and kernel layouts are read from the manifests (the tables) and the shared
// kernel headers: they are what the kernels compile against, so they are the kernels' contract.
#pragma once
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "cake.h"
#include <cstddef>

#include "normgate_general_layout.h"
#include "normgate_params.h"
#include "normgate_workspace.h"
#include "program_desc.h"
#include "router/tables.h"
#include "swiglu_mxfp8_params.h"

namespace rel {

inline uint32_t bit(cake_status_t s) { return 1u << static_cast<unsigned>(s); }

// The statuses a call may end with, and whether it must be rejected.
struct Expect {
  bool must_reject = false;
  uint32_t allowed = 0;  // statuses allowed for a rejection (bits)
  std::string why;       // the rules broken, for the failure report

  // A rule of the spec: when broken, the call must fail with `status`.
  void rule(bool broken, cake_status_t status, const char *what) {
    if (!broken) return;
    must_reject = true;
    allowed |= bit(status);
    if (!why.empty()) why += "; ";
    why += what;
  }
  // An implementation limit the spec leaves open: rejecting is allowed, not required.
  void may(bool broken, cake_status_t status, const char *what) {
    if (!broken) return;
    allowed |= bit(status);
    if (!why.empty()) why += "; ";
    why += "(may) ";
    why += what;
  }
};

// Judges one call's status and message against the expectation; "" when it conforms.
inline std::string judge(const Expect &e, cake_status_t got, const char *message) {
  char buf[1024];
  const char *msg = message ? message : "(null)";
  if (got == CAKE_STATUS_SUCCESS) {
    if (e.must_reject) {
      std::snprintf(buf, sizeof buf, "accepted a call that breaks: %s", e.why.c_str());
      return buf;
    }
    if (msg[0] != '\0') {
      std::snprintf(buf, sizeof buf, "success left a message: \"%s\"", msg);
      return buf;
    }
    return "";
  }
  if (msg[0] == '\0') {
    std::snprintf(buf, sizeof buf, "%s with an empty message", cake_status_string(got));
    return buf;
  }
  if ((e.allowed & bit(got)) == 0) {
    std::snprintf(buf, sizeof buf, "%s (\"%s\") but the spec allows %s for: %s",
                  cake_status_string(got), msg, e.must_reject ? "other statuses" : "success",
                  e.why.empty() ? "(no rule broken)" : e.why.c_str());
    return buf;
  }
  return "";
}

inline std::string fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
inline std::string fmt(const char *f, ...) {
  char buf[1024];
  va_list a;
  va_start(a, f);
  std::vsnprintf(buf, sizeof buf, f, a);
  va_end(a);
  return buf;
}

// An enum field of a caller's struct as the integer the caller stored: C callers may store any
// int, and loading an out-of-range value as the C++ enum type is undefined behaviour.
template <class E>
inline int32_t raw(const E &e) {
  static_assert(sizeof(E) == sizeof(int32_t), "C enums are int-sized");
  int32_t v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}
template <class E>
inline void set_raw(E *e, int32_t v) {
  static_assert(sizeof(E) == sizeof(int32_t), "C enums are int-sized");
  std::memcpy(e, &v, sizeof v);
}

inline bool aligned(const void *p, uintptr_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

// The caller's view of a struct passed by pointer: its struct_size, and whether bytes past this
// library's sizeof are non-zero (a newer header setting a field this one does not know).
struct StructView {
  size_t size;
  bool tail_nonzero;
};

inline void struct_rules(Expect &e, const StructView &s, size_t first_version, size_t known,
                         const char *what) {
  e.rule(s.size < first_version, CAKE_STATUS_INVALID_ARGUMENT, what);
  e.rule(s.size > known && s.tail_nonzero, CAKE_STATUS_INVALID_ARGUMENT, what);
}

// ------------------------------------------------------------------------------------------
// normgate

enum class NgEntry { kForward, kForwardQuery, kBackward, kBackwardQuery, kWorkspaceSize };

inline bool ng_backward_entry(NgEntry k) {
  return k == NgEntry::kBackward || k == NgEntry::kBackwardQuery || k == NgEntry::kWorkspaceSize;
}

struct NgPointers {
  const void *x = nullptr, *z = nullptr, *w = nullptr, *dy = nullptr;
  void *y = nullptr, *dx = nullptr, *dz = nullptr, *dw = nullptr, *workspace = nullptr;
  float *rstd = nullptr;
  size_t workspace_bytes = 0;
  bool info_null = false;  // queries: info (or bytes) NULL
};

// The table entry a forced name denotes, or -1 (independent of the router: a plain search).
inline int program_by_name(const cake::ArchTable &t, const char *name) {
  for (int i = 0; i < t.program_count; ++i) {
    if (std::strcmp(t.programs[i].name, name) == 0) return i;
  }
  return -1;
}

inline uint16_t ng_op_for(NgEntry k, const cake_normgate_desc &d) {
  if (!ng_backward_entry(k)) return CAKE_NG_OP_FWD;
  return raw(d.package) == CAKE_NORMGATE_NONDETERMINISTIC ? CAKE_NG_OP_BWD_NONDET : CAKE_NG_OP_BWD_DET;
}

inline bool ng_d_ok(int32_t d) { return d >= 8 && d <= 8192 && d % 8 == 0; }

// Whether `prog` computes `op` at width d: the manifest's width knob is d, or 0 (general).
// Leaves of the row tree: D/8 rounded up to a power of two. A general program (D knob 0) holds
// a row's leaves in one CTA, a lane each: it serves the widths with at most `threads` leaves.
inline int64_t ng_tree_leaves(int64_t d) {
  int64_t leaves = 1;
  while (leaves < d / 8) leaves <<= 1;
  return leaves;
}
// variant: the call is not the default form (docs/spec/normgate.md, "Programs and routes"),
// which only the variant programs (knob 5) serve, and which they serve nothing else of.
inline bool ng_serves(const cake_program_desc &prog, uint16_t op, int32_t d, bool variant = false) {
  if (variant != (prog.knobs[5] != 0)) return false;
  if (prog.knobs[6] != 0) return false;  // a quantizing forward (knob 6) serves only quantized calls
  if (prog.knobs[7] != 0) {  // a tile program (knob 7: its slots): a tile that holds d, and for
                             // the backward one row a row group
    cake_ng_tile t;
    return prog.family == CAKE_FAMILY_NORMGATE && prog.op == op &&
           cake_ng_tile_of(d, static_cast<int32_t>(prog.threads), prog.knobs[7], &t) != 0 &&
           (op == CAKE_NG_OP_FWD || t.rows_per_thread == 1);
  }
  return prog.family == CAKE_FAMILY_NORMGATE && prog.op == op &&
         (prog.knobs[0] == d || (prog.knobs[0] == 0 && d >= 8 && ng_tree_leaves(d) <= prog.threads));
}

// The default form: the SiLU gate after a whole-row norm on BF16 x, z, w, and (backward) BF16
// or FP32 dw. Anything else is a variant call.
inline bool ng_variant_call(bool backward, const cake_normgate_desc &d) {
  if (raw(d.gate) != CAKE_NORMGATE_GATE_SILU || raw(d.placement) != CAKE_NORMGATE_GATE_AFTER_NORM) return true;
  if (d.group_size != 0 && d.group_size != d.d) return true;
  if (raw(d.x_dtype) != CAKE_DTYPE_BF16 || raw(d.z_dtype) != CAKE_DTYPE_BF16 || raw(d.w_dtype) != CAKE_DTYPE_BF16)
    return true;
  return backward && raw(d.dw_dtype) != CAKE_DTYPE_BF16 && raw(d.dw_dtype) != CAKE_DTYPE_F32;
}

// `desc` is the caller's struct as the library would read it (the known prefix); `view` its
// struct_size story. `ws_need` is what the size query said for the same descriptor (-1 if it
// failed); the backward's workspace rule is "smaller than asked".
inline Expect expect_normgate(NgEntry k, const cake_handle_st *h, bool handle_live,
                              const cake_normgate_desc *desc, const StructView &view,
                              const NgPointers &p, int64_t ws_need) {
  Expect e;
  e.rule(h == nullptr || !handle_live, CAKE_STATUS_INVALID_HANDLE, "handle NULL or destroyed");
  if (e.must_reject) return e;  // nothing else is looked at
  e.rule(desc == nullptr, CAKE_STATUS_INVALID_ARGUMENT, "desc NULL");
  if (desc == nullptr) return e;
  // The first version ends before the 0.3 fields (gate ...): a shorter struct gets their defaults.
  struct_rules(e, view, offsetof(cake_normgate_desc, gate), sizeof(cake_normgate_desc),
               "desc->struct_size");
  if (e.must_reject) return e;  // the fields are not read
  // The fields as the library reads them: the caller's prefix, the defaults past its size.
  // (Not cake_normgate_desc_init: a library call would clear the message being judged.)
  cake_normgate_desc d;
  std::memset(&d, 0, sizeof d);
  set_raw(&d.x_dtype, CAKE_DTYPE_BF16);
  set_raw(&d.z_dtype, CAKE_DTYPE_BF16);
  set_raw(&d.w_dtype, CAKE_DTYPE_BF16);
  std::memcpy(&d, desc, std::min(view.size, sizeof d));
  d.struct_size = sizeof d;
  const bool bwd = ng_backward_entry(k);
  e.rule(d.rows <= 0, CAKE_STATUS_INVALID_ARGUMENT, "rows <= 0");
  e.rule(!ng_d_ok(d.d), CAKE_STATUS_UNSUPPORTED_SHAPE, "d not a multiple of 8 in [8, 8192]");
  e.rule(!std::isfinite(d.eps) || d.eps < 0.0f, CAKE_STATUS_INVALID_ARGUMENT, "eps non-finite or < 0");
  const int64_t fwd_strides[] = {d.x_stride, d.z_stride, d.y_stride};
  const int64_t bwd_strides[] = {d.dy_stride, d.x_stride, d.z_stride, d.dx_stride, d.dz_stride};
  const int64_t *strides = bwd ? bwd_strides : fwd_strides;
  const int nstrides = bwd ? 5 : 3;
  for (int i = 0; i < nstrides; ++i) {
    const int64_t s = strides[i];
    if (s == 0) continue;  // packed
    e.rule(s < d.d, CAKE_STATUS_INVALID_ARGUMENT, "a row stride < d");
    e.rule(s % 8 != 0, CAKE_STATUS_MISALIGNED, "a row stride not a multiple of 8 elements");
  }
  if (d.rows > 0 && ng_d_ok(d.d)) {
    for (int i = 0; i < nstrides; ++i) {
      const int64_t s = strides[i] == 0 ? d.d : strides[i];
      if (s < d.d) continue;
      const __int128 bytes = static_cast<__int128>(d.rows) * s * 2;
      e.rule(bytes > INT64_MAX, CAKE_STATUS_INVALID_ARGUMENT, "a tensor's bytes overflow int64");
    }
  }
  if (bwd) {
    e.rule(raw(d.package) != CAKE_NORMGATE_DETERMINISTIC && raw(d.package) != CAKE_NORMGATE_NONDETERMINISTIC,
           CAKE_STATUS_INVALID_ARGUMENT, "package out of range");
    e.rule(raw(d.dw_dtype) != CAKE_DTYPE_BF16 && raw(d.dw_dtype) != CAKE_DTYPE_F32 &&
               raw(d.dw_dtype) != CAKE_DTYPE_F16,
           CAKE_STATUS_INVALID_ARGUMENT, "dw_dtype out of range");
    const uint32_t known = CAKE_NORMGATE_DW_ACCUMULATE | CAKE_NORMGATE_DW_SKIP;
    e.rule((d.flags & ~known) != 0, CAKE_STATUS_INVALID_ARGUMENT, "unknown flag bits");
    e.rule((d.flags & known) == known, CAKE_STATUS_INVALID_ARGUMENT, "ACCUMULATE with SKIP");
  }
  if (d.program != nullptr) {
    const int idx = program_by_name(*h->table, d.program);
    e.rule(idx < 0, CAKE_STATUS_PROGRAM_NOT_FOUND, "forced program not in the table");
    if (idx >= 0 && ng_d_ok(d.d) &&
        (!bwd || raw(d.package) == CAKE_NORMGATE_DETERMINISTIC ||
         raw(d.package) == CAKE_NORMGATE_NONDETERMINISTIC)) {
      e.rule(!ng_serves(h->table->programs[idx], ng_op_for(k, d), d.d, ng_variant_call(bwd, d)),
             CAKE_STATUS_PROGRAM_NOT_FOUND, "forced program does not serve the call");
    }
  }
  // Pointers: only the launching entry points take them; queries take their output struct.
  if (k == NgEntry::kForward) {
    const void *ptrs[] = {p.x, p.z, p.w, p.y};
    for (const void *q : ptrs) {
      e.rule(q == nullptr, CAKE_STATUS_INVALID_ARGUMENT, "a tensor pointer NULL");
      e.rule(q != nullptr && !aligned(q, 16), CAKE_STATUS_MISALIGNED, "a tensor not 16-byte aligned");
    }
    e.rule(p.rstd != nullptr && !aligned(p.rstd, 4), CAKE_STATUS_MISALIGNED, "rstd not 4-byte aligned");
  } else if (k == NgEntry::kBackward) {
    const bool skip = (d.flags & CAKE_NORMGATE_DW_SKIP) != 0;
    const void *ptrs[] = {p.dy, p.x, p.z, p.w, p.dx, p.dz, skip ? nullptr : p.dw};
    for (int i = 0; i < 7; ++i) {
      if (i == 6 && skip) continue;
      e.rule(ptrs[i] == nullptr, CAKE_STATUS_INVALID_ARGUMENT, "a tensor pointer NULL");
      e.rule(ptrs[i] != nullptr && !aligned(ptrs[i], 16), CAKE_STATUS_MISALIGNED,
             "a tensor not 16-byte aligned");
    }
    if (ws_need > 0) {
      e.rule(p.workspace == nullptr || p.workspace_bytes < static_cast<uint64_t>(ws_need),
             CAKE_STATUS_INSUFFICIENT_WORKSPACE, "workspace smaller than the size query said");
      e.rule(p.workspace != nullptr && !aligned(p.workspace, 16), CAKE_STATUS_MISALIGNED,
             "workspace not 16-byte aligned");
    }
  } else {
    e.rule(p.info_null, CAKE_STATUS_INVALID_ARGUMENT, "info/bytes NULL");
  }
  return e;
}

// The route the manifest gives a call: routes for this exact d win over general ones (d = 0);
// among each kind the first whose [lo, hi) holds the metric and, for a wave route, whose band
// holds the call's waves: rows in units of wave_rows over the SMs, in hundredths rounded down
// (kernels/common/program_desc.h), computed here as a fraction compared by cross-multiplying.
inline bool ng_wave_band(const cake_route_desc &r, int64_t rows, int32_t sms) {
  if (r.wave_rows == 0) return true;
  const int64_t units = rows / r.wave_rows + (rows % r.wave_rows != 0 ? 1 : 0);
  const int64_t part = units % sms;  // waves W = units / sms = whole + part / sms
  // floor(100 W) in [lo, hi)  <=>  lo <= 100 W < hi (lo, hi integers)
  const bool in_band = 100 * units >= int64_t(r.waves_lo) * sms && 100 * units < int64_t(r.waves_hi) * sms;
  // floor(100 W) mod 100 = floor(100 part / sms): in [frac_lo, frac_hi]
  const bool fill = 100 * part >= int64_t(r.frac_lo) * sms && 100 * part < int64_t(r.frac_hi + 1) * sms;
  return in_band && fill;
}

inline int ng_route(const cake::ArchTable &t, uint16_t op, int32_t d, int64_t rows, int32_t sms,
                    bool variant = false) {
  const int64_t metric = rows / sms;
  int general = -1;
  for (int i = 0; i < t.route_count; ++i) {
    const cake_route_desc &r = t.routes[i];
    if (r.family != CAKE_FAMILY_NORMGATE || r.op != op) continue;
    if (metric < r.metric_lo || metric >= r.metric_hi) continue;
    if (!ng_wave_band(r, rows, sms)) continue;
    const bool serves = ng_serves(t.programs[r.program], op, d, variant);
    if (r.d == d && serves) return r.program;
    if (r.d == 0 && general < 0 && serves) general = r.program;
  }
  return general;
}

// Rows one CTA covers per trip, and dw chunks per level-0 tree node, as the kernel bodies
// compute them (kernels/common/normgate_fwd.cuh, normgate_bwd.cuh) from their template knobs.
// The tuned backward kernels (D != 0) take units of one step (threads / (d/8) * rows_per_group
// rows) from a persistent grid: a "block" is a unit.
inline bool ng_tuned_backward(const cake_program_desc &prog) {
  return prog.op != CAKE_NG_OP_FWD && prog.knobs[0] != 0;
}
// Row groups of a general program's CTA: a group of max(leaves, threads / 64) lanes per row
// (64 dw chunks a block at most).
inline int64_t ng_general_groups(int64_t d, int64_t threads) {
  return threads / std::max<int64_t>(ng_tree_leaves(d), threads / 64);
}
// A tile program's tile for `width` (knob 7 its slots): a backward's row groups take one row
// each, a chunk a block; a forward's threads each take rows_per_thread rows a trip.
inline cake_ng_tile ng_tile_for(const cake_program_desc &prog, int64_t width) {
  cake_ng_tile t = {1, 1, 1, 1};
  if (!cake_ng_tile_of(static_cast<int32_t>(width), static_cast<int32_t>(prog.threads), prog.knobs[7], &t)) {
    t = cake_ng_tile{1, 1, 1, 1};
  }
  return t;
}
inline bool ng_tile_backward(const cake_program_desc &prog) {
  return prog.op != CAKE_NG_OP_FWD && prog.knobs[7] != 0;
}
inline int64_t ng_kernel_rows_per_block(const cake_program_desc &prog, int64_t width) {
  const int64_t d = prog.knobs[0], threads = prog.threads;
  if (ng_tile_backward(prog)) return int64_t(ng_tile_for(prog, width).row_groups) * CAKE_NG_DW_CHUNK_ROWS;
  if (prog.knobs[7] != 0) {
    const cake_ng_tile t = ng_tile_for(prog, width);
    return int64_t(t.row_groups) * t.rows_per_thread;
  }
  const int64_t groups = d != 0 ? threads / (d / 8) : ng_general_groups(width, threads);
  if (prog.op == CAKE_NG_OP_FWD) return groups * prog.knobs[1];
  return d != 0 ? groups * prog.knobs[1] : groups * CAKE_NG_DW_CHUNK_ROWS;
}
// CTAs a tuned backward launch takes: one per resident slot, at most one per unit.
inline unsigned ng_tuned_backward_grid(const cake_handle_st *h, int program, int64_t rows) {
  const cake_program_desc &prog = h->table->programs[program];
  const int64_t resident = int64_t(h->sm_count) * h->ctas_per_sm[program];
  const int64_t unit = ng_kernel_rows_per_block(prog, prog.knobs[0]);
  return static_cast<unsigned>(std::min<int64_t>(std::min(resident, (rows + unit - 1) / unit), 0x7fffffff));
}
// Dynamic shared memory the kernel's layout (normgate_workspace.h) takes.
inline int64_t ng_kernel_smem(const cake_program_desc &prog) {
  if (prog.op == CAKE_NG_OP_FWD) {  // a tile forward's load ring: knob 2 trips of x and z
    return prog.knobs[7] != 0 ? int64_t(prog.knobs[2]) * 2 * prog.knobs[7] * prog.threads * 16 : 0;
  }
  if (ng_tile_backward(prog)) {  // FP32 chunk sums and sigmoid(z) of each slot, FP64 sums
                                 // (nondet), a ring of knob 2 trips of x, z, dy
    const int64_t t = prog.threads, slots = prog.knobs[7];
    return 2 * slots * 8 * t * 4 + (prog.op == CAKE_NG_OP_BWD_NONDET ? slots * 8 * t * 8 : 0) +
           int64_t(prog.knobs[2]) * 3 * slots * t * 16;
  }
  if (!ng_tuned_backward(prog)) {  // the load ring, the FP32 chunk sums, the FP64 sums (nondet)
    const int64_t t = prog.threads;
    return int64_t(prog.knobs[2]) * 3 * t * 16 + 8 * t * 4 + (prog.op == CAKE_NG_OP_BWD_NONDET ? 8 * t * 8 : 0);
  }
  return cake_ng_bwd_smem_of(prog.knobs[0], static_cast<int32_t>(prog.threads), prog.knobs[1],
                             prog.knobs[2], prog.knobs[4])
      .bytes;
}
inline int64_t ng_kernel_chunks_per_block(const cake_program_desc &prog, int64_t width) {
  if (ng_tile_backward(prog)) return ng_tile_for(prog, width).row_groups;
  return prog.knobs[0] != 0 ? prog.threads / (prog.knobs[0] / 8) : ng_general_groups(width, prog.threads);
}

// Workspace bytes the kernel indexes for this call (the device layout of normgate_workspace.h).
inline int64_t ng_kernel_workspace(const cake_program_desc &prog, const cake_normgate_desc &d) {
  if (prog.op == CAKE_NG_OP_FWD || (d.flags & CAKE_NORMGATE_DW_SKIP)) return 0;
  if (prog.op == CAKE_NG_OP_BWD_NONDET) return cake_ng_nondet_bytes(d.d);
  if (ng_tuned_backward(prog)) {  // the row, column or grouped tree (knob 4), then the counters
    return cake_ng_det_tuned_bytes(d.rows, d.d, ng_kernel_rows_per_block(prog, d.d) / CAKE_NG_DW_CHUNK_ROWS,
                                   prog.knobs[4]);
  }
  const cake_ng_tree tree = cake_ng_tree_of(d.rows, d.d, ng_kernel_chunks_per_block(prog, d.d));
  return cake_ng_tree_bytes(&tree);
}

struct RecordedLaunch {
  int program;
  unsigned grid[3], block[3], smem;
  const void *params;
  bool extra_used;
  bool cooperative = false;
};

// Preconditions of an accepted normgate launch. `desc` is the caller's (strides may be 0).
inline std::string check_normgate_launch(NgEntry k, const cake_handle_st *h,
                                         const cake_normgate_desc &desc, const NgPointers &p,
                                         const RecordedLaunch &l) {
  const cake::ArchTable &t = *h->table;
  if (l.program < 0 || l.program >= t.program_count) return fmt("launched program %d", l.program);
  const cake_program_desc &prog = t.programs[l.program];
  const uint16_t op = ng_op_for(k, desc);
  const bool variant = ng_variant_call(ng_backward_entry(k), desc);
  if (!ng_serves(prog, op, desc.d, variant)) {
    return fmt("launched %s, which does not serve op %d d %d", prog.name, op, desc.d);
  }
  if (desc.program != nullptr) {
    if (std::strcmp(prog.name, desc.program) != 0) return fmt("forced %s, launched %s", desc.program, prog.name);
  } else {
    const int want = ng_route(t, op, desc.d, desc.rows, h->routing_sm_count, variant);
    if (want != l.program) {
      return fmt("routed to %s, the manifest routes rows %lld d %d (%d SMs) to %s", prog.name,
                 (long long)desc.rows, desc.d, h->routing_sm_count,
                 want >= 0 ? t.programs[want].name : "(none)");
    }
  }
  if (l.extra_used) return "cuLaunchKernel got `extra`";
  if (l.block[0] != prog.threads || l.block[1] != 1 || l.block[2] != 1) {
    return fmt("block %ux%ux%u, program compiled for %u threads", l.block[0], l.block[1],
               l.block[2], prog.threads);
  }
  if (l.grid[0] < 1 || l.grid[0] > 0x7fffffffu || l.grid[1] != 1 || l.grid[2] != 1) {
    return fmt("grid %ux%ux%u", l.grid[0], l.grid[1], l.grid[2]);
  }
  if (l.smem != ng_kernel_smem(prog)) {
    return fmt("%u bytes of dynamic shared memory; the kernel of %s lays out %lld", l.smem,
               prog.name, (long long)ng_kernel_smem(prog));
  }
  // The tuned deterministic backward has grid barriers: it needs every CTA resident.
  const bool needs_coop = ng_tuned_backward(prog) && prog.op == CAKE_NG_OP_BWD_DET &&
                          (desc.flags & CAKE_NORMGATE_DW_SKIP) == 0;
  if ((l.cooperative != 0) != needs_coop) {
    return fmt("%s launch of %s", l.cooperative ? "cooperative" : "non-cooperative", prog.name);
  }
  cake_normgate_params q;
  std::memcpy(&q, l.params, sizeof q);
  const int64_t want_rpb = ng_kernel_rows_per_block(prog, desc.d);
  if (q.rows != desc.rows || q.d != desc.d) return fmt("params rows %lld d %d", (long long)q.rows, q.d);
  if (std::memcmp(&q.eps, &desc.eps, sizeof q.eps) != 0) return "params eps differs from desc->eps";
  if (q.rows_per_block != want_rpb) {
    return fmt("rows_per_block %lld, the kernel of %s walks %lld", (long long)q.rows_per_block,
               prog.name, (long long)want_rpb);
  }
  const int64_t want_blocks = (desc.rows + want_rpb - 1) / want_rpb;
  if (q.num_blocks != want_blocks) return fmt("num_blocks %lld, want %lld", (long long)q.num_blocks, (long long)want_blocks);
  if (l.grid[0] > q.num_blocks) return fmt("grid %u > %lld blocks", l.grid[0], (long long)q.num_blocks);
  if (ng_tuned_backward(prog) && l.grid[0] != ng_tuned_backward_grid(h, l.program, desc.rows)) {
    return fmt("%s launched %u CTAs; its ranges (and workspace) assume %u", prog.name, l.grid[0],
               ng_tuned_backward_grid(h, l.program, desc.rows));
  }
  // The tuned deterministic kernels take their workspace layout from the params.
  {
    cake_ng_det_layout want;
    std::memset(&want, 0, sizeof want);
    if (needs_coop) {
      want = cake_ng_det_layout_of(desc.rows, desc.d, ng_kernel_rows_per_block(prog, desc.d) / CAKE_NG_DW_CHUNK_ROWS,
                                   prog.knobs[4], l.grid[0]);
    }
    if (std::memcmp(&q.det, &want, sizeof want) != 0) {
      return fmt("params det layout (words at %lld) differs from the layout of %s for %u CTAs (words at %lld)",
                 (long long)q.det.words_offset, prog.name, l.grid[0], (long long)want.words_offset);
    }
  }
  if (!ng_tuned_backward(prog) && prog.knobs[3] == 0 &&
      int64_t(l.grid[0]) != std::min<int64_t>(q.num_blocks, 0x7fffffff)) {
    return fmt("non-persistent %s launched %u CTAs for %lld blocks", prog.name, l.grid[0],
               (long long)q.num_blocks);
  }
  auto stride_ok = [&](int64_t got, int64_t asked) {
    const int64_t want = asked == 0 ? desc.d : asked;
    return got == want && got >= desc.d && got % 8 == 0;
  };
  const bool fwd = k == NgEntry::kForward;
  if (!stride_ok(q.x_stride, desc.x_stride) || !stride_ok(q.z_stride, desc.z_stride)) return "x/z stride";
  if (fwd && !stride_ok(q.y_stride, desc.y_stride)) return "y stride";
  if (!fwd && (!stride_ok(q.dy_stride, desc.dy_stride) || !stride_ok(q.dx_stride, desc.dx_stride) ||
               !stride_ok(q.dz_stride, desc.dz_stride))) {
    return "dy/dx/dz stride";
  }
  // Packed: every row tensor the bulk prefetch may touch is contiguous (x, z; dy too backward).
  const bool packed = q.x_stride == desc.d && q.z_stride == desc.d && (fwd || q.dy_stride == desc.d);
  if (q.packed != (packed ? 1 : 0)) {
    return fmt("packed = %d for x/z/dy strides %lld/%lld/%lld", q.packed, (long long)q.x_stride,
               (long long)q.z_stride, (long long)q.dy_stride);
  }
  if (q.x != p.x || q.z != p.z || q.w != p.w) return "x/z/w pointers differ from the call's";
  if (fwd) {
    if (q.y != p.y || q.rstd != p.rstd) return "y/rstd pointers differ";
    return "";
  }
  if (q.dy != p.dy || q.dx != p.dx || q.dz != p.dz) return "dy/dx/dz pointers differ";
  const bool skip = (desc.flags & CAKE_NORMGATE_DW_SKIP) != 0;
  if (skip ? q.dw != nullptr : q.dw != p.dw) return "dw pointer (NULL exactly when skipped)";
  if (q.dw_f32 != (raw(desc.dw_dtype) == CAKE_DTYPE_F32 ? 1 : 0)) return "dw_f32";
  if (static_cast<uint32_t>(q.dw_flags) != desc.flags) return "dw_flags";
  const int64_t need = ng_kernel_workspace(prog, desc);
  if (need > 0) {
    if (q.workspace != p.workspace) return "workspace pointer differs";
    if (p.workspace_bytes < static_cast<uint64_t>(need)) {
      return fmt("accepted %zu workspace bytes; the kernel of %s indexes %lld", p.workspace_bytes,
                 prog.name, (long long)need);
    }
  }
  return "";
}

// ------------------------------------------------------------------------------------------
// swiglu_mxfp8

inline bool sw_dim_ok(int64_t v) { return v > 0 && v % 32 == 0; }  // whole 32-value blocks

// Buffer bytes of a form per the spec (sizes of q and the padded swizzled scale matrices), in
// 128 bits; false when a count does not fit int64.
struct SwBytes {
  __int128 in, grad, q, row_s, col_s;
  int64_t out_cols;
};
inline SwBytes sw_bytes(int64_t m, int64_t k, bool bwd) {
  SwBytes b;
  if (m > (INT64_MAX >> 2) || k > (INT64_MAX >> 2)) {  // 4*m*k > INT64_MAX for any positive other
    b.in = b.grad = b.q = b.row_s = b.col_s = static_cast<__int128>(INT64_MAX) + 1;
    b.out_cols = bwd ? -1 : k;
    return b;
  }
  const __int128 M = m, K = k, O = bwd ? 2 * K : K;
  b.out_cols = static_cast<int64_t>(O);
  b.in = M * 2 * K * 2;
  b.grad = bwd ? M * K * 2 : 0;
  b.q = M * O;
  auto pad = [](__int128 v, __int128 a) { return (v + a - 1) / a * a; };
  b.row_s = pad(M, 128) * pad((O + 31) / 32, 4);
  b.col_s = pad(O, 128) * pad((M + 31) / 32, 4);
  return b;
}
inline bool sw_fits(const SwBytes &b) {
  const __int128 lim = INT64_MAX;
  return b.in <= lim && b.grad <= lim && b.q <= lim && b.row_s <= lim && b.col_s <= lim;
}

enum class SwEntry { kForward, kBackward, kQuery, kBufferSizes };

// The manifest's route for a form at size metric M*K (swiglu routes serve any shape: d = 0).
inline int sw_route(const cake::ArchTable &t, int form, int64_t metric) {
  for (int i = 0; i < t.route_count; ++i) {
    const cake_route_desc &r = t.routes[i];
    if (r.family != CAKE_FAMILY_SWIGLU_MXFP8 || r.op != form) continue;
    if (metric >= r.metric_lo && metric < r.metric_hi) return r.program;
  }
  return -1;
}

// CTA tiles of a program over an M x K problem (its tile knobs: rows, k-columns).
inline __int128 sw_tiles(const cake_program_desc &prog, int64_t m, int64_t k) {
  const int64_t tr = prog.knobs[0], tc = prog.knobs[1];
  if (tr <= 0 || tc <= 0) return -1;
  return static_cast<__int128>((m + tr - 1) / tr) * ((k + tc - 1) / tc);
}

struct SwPointers {
  const void *in = nullptr, *grad = nullptr;
  void *row_q = nullptr, *row_s = nullptr, *col_q = nullptr, *col_s = nullptr;
  bool out_null = false;  // query info / buffer_sizes sizes NULL
  int backward_arg = 0;   // query/buffer_sizes: the `backward` argument
};

inline int sw_form(bool bwd, int orientation) { return (bwd ? 3 : 0) + orientation - 1; }

inline Expect expect_swiglu(SwEntry k, const cake_handle_st *h, bool handle_live,
                            const cake_swiglu_mxfp8_desc *desc, const StructView &view,
                            const SwPointers &p) {
  Expect e;
  if (k != SwEntry::kBufferSizes) {
    e.rule(h == nullptr || !handle_live, CAKE_STATUS_INVALID_HANDLE, "handle NULL or destroyed");
    if (e.must_reject) return e;
  }
  e.rule(desc == nullptr, CAKE_STATUS_INVALID_ARGUMENT, "desc NULL");
  if (desc == nullptr) return e;
  // The first version ends before `variant` (the fuzzed variant is the plain SwiGLU's defaults).
  struct_rules(e, view, offsetof(cake_swiglu_mxfp8_desc, variant), sizeof(cake_swiglu_mxfp8_desc),
               "desc->struct_size");
  if (e.must_reject) return e;
  const cake_swiglu_mxfp8_desc &d = *desc;
  bool bwd = k == SwEntry::kBackward;
  if (k == SwEntry::kQuery || k == SwEntry::kBufferSizes) {
    e.may(p.backward_arg != 0 && p.backward_arg != 1, CAKE_STATUS_INVALID_ARGUMENT,
          "backward argument not 0 or 1");
    bwd = p.backward_arg != 0;
  }
  const int o = raw(d.orientation);
  const bool o_ok = o >= 1 && o <= 3;
  if (k == SwEntry::kBufferSizes) {
    e.may(!o_ok, CAKE_STATUS_INVALID_ARGUMENT, "orientation out of range (sizes need none)");
  } else {
    e.rule(!o_ok, CAKE_STATUS_INVALID_ARGUMENT, "orientation not rowwise/colwise/both");
  }
  const bool m_pos = d.m > 0, k_pos = d.k > 0;
  e.rule(!m_pos || !k_pos, CAKE_STATUS_INVALID_ARGUMENT, "m or k not positive");
  if (!m_pos || !k_pos) e.allowed |= bit(CAKE_STATUS_UNSUPPORTED_SHAPE);
  e.rule(m_pos && d.m % 32 != 0, CAKE_STATUS_UNSUPPORTED_SHAPE, "m not a multiple of 32");
  e.rule(k_pos && d.k % 32 != 0, CAKE_STATUS_UNSUPPORTED_SHAPE, "k not a multiple of 32");
  if (m_pos && k_pos) {
    const bool fits = sw_fits(sw_bytes(d.m, d.k, bwd)) && d.k <= INT64_MAX / 4;
    e.rule(!fits, CAKE_STATUS_INVALID_ARGUMENT, "buffer bytes overflow int64");
    if (!fits) e.allowed |= bit(CAKE_STATUS_UNSUPPORTED_SHAPE);
  }
  if (k == SwEntry::kBufferSizes) {
    e.rule(p.out_null, CAKE_STATUS_INVALID_ARGUMENT, "sizes NULL");
    return e;
  }
  if (d.program != nullptr) {
    const int idx = program_by_name(*h->table, d.program);
    e.rule(idx < 0, CAKE_STATUS_PROGRAM_NOT_FOUND, "forced program not in the table");
    if (idx >= 0 && o_ok) {
      const cake_program_desc &prog = h->table->programs[idx];
      e.rule(prog.family != CAKE_FAMILY_SWIGLU_MXFP8 || prog.op != sw_form(bwd, o),
             CAKE_STATUS_PROGRAM_NOT_FOUND, "forced program does not serve the form");
    }
  }
  // The kernel counts CTA tiles in 32 bits (lib/families/swiglu_mxfp8_launch.h): a limit the
  // spec does not state, so refusing a shape beyond it is allowed, computing it wrongly is not.
  if (sw_dim_ok(d.m) && sw_dim_ok(d.k) && o_ok && sw_fits(sw_bytes(d.m, d.k, bwd))) {
    int idx = d.program != nullptr ? program_by_name(*h->table, d.program)
                                   : sw_route(*h->table, sw_form(bwd, o), d.m * d.k);
    if (idx >= 0 && h->table->programs[idx].family == CAKE_FAMILY_SWIGLU_MXFP8) {
      e.may(sw_tiles(h->table->programs[idx], d.m, d.k) > INT32_MAX, CAKE_STATUS_UNSUPPORTED_SHAPE,
            "more than 2^31-1 CTA tiles");
    }
  }
  if (k == SwEntry::kQuery) {
    e.rule(p.out_null, CAKE_STATUS_INVALID_ARGUMENT, "info NULL");
    return e;
  }
  const bool row = o_ok && (o & 1), col = o_ok && (o & 2);
  const void *ptrs[] = {p.in, bwd ? p.grad : nullptr, row ? p.row_q : nullptr,
                        row ? p.row_s : nullptr, col ? p.col_q : nullptr, col ? p.col_s : nullptr};
  const bool used[] = {true, bwd, row, row, col, col};
  for (int i = 0; i < 6; ++i) {
    if (!used[i]) continue;
    e.rule(ptrs[i] == nullptr, CAKE_STATUS_INVALID_ARGUMENT, "an input or enabled output NULL");
    e.rule(ptrs[i] != nullptr && !aligned(ptrs[i], 16), CAKE_STATUS_MISALIGNED,
           "a pointer not 16-byte aligned");
  }
  return e;
}

// Preconditions of an accepted SwiGLU + MXFP8 launch (kernel contract of
// kernels/common/swiglu_mxfp8_params.h: 64-bit shapes, tiles in 32 bits, padded scale shapes).
inline std::string check_swiglu_launch(bool bwd, const cake_handle_st *h,
                                       const cake_swiglu_mxfp8_desc &desc, const SwPointers &p,
                                       const RecordedLaunch &l) {
  const cake::ArchTable &t = *h->table;
  if (l.program < 0 || l.program >= t.program_count) return fmt("launched program %d", l.program);
  const cake_program_desc &prog = t.programs[l.program];
  const int o = raw(desc.orientation);
  const int form = sw_form(bwd, o);
  if (prog.family != CAKE_FAMILY_SWIGLU_MXFP8 || prog.op != form) {
    return fmt("launched %s (family %d op %d) for form %d", prog.name, prog.family, prog.op, form);
  }
  if (desc.program != nullptr) {
    if (std::strcmp(prog.name, desc.program) != 0) return fmt("forced %s, launched %s", desc.program, prog.name);
  } else if (sw_route(t, form, desc.m * desc.k) != l.program) {
    return fmt("routed M*K = %lld to %s; the manifest says otherwise", (long long)(desc.m * desc.k), prog.name);
  }
  if (l.extra_used) return "cuLaunchKernel got `extra`";
  if (l.block[0] != prog.threads || l.block[1] != 1 || l.block[2] != 1) {
    return fmt("block %u, program compiled for %u threads", l.block[0], prog.threads);
  }
  // Dynamic shared memory: the staged programs' input ring (knob 6 = stages >= 2), a whole tile
  // of gate, up (and grad) BF16 per stage; none for the others (their Y tile is static).
  const int64_t stages = prog.knobs[6];
  const int64_t want_smem = stages >= 2 ? stages * (bwd ? 3 : 2) * prog.knobs[0] * prog.knobs[1] * 2 : 0;
  if (int64_t{l.smem} != want_smem) {
    return fmt("%u bytes of dynamic shared memory; %s lays out %lld", l.smem, prog.name,
               (long long)want_smem);
  }
  cake_swiglu_mxfp8_params q;
  std::memcpy(&q, l.params, sizeof q);
  const SwBytes b = sw_bytes(desc.m, desc.k, bwd);
  if (q.M != desc.m || q.K != desc.k || q.O != b.out_cols) {
    return fmt("params M %lld K %lld O %lld", (long long)q.M, (long long)q.K, (long long)q.O);
  }
  const int64_t tr = prog.knobs[0], tc = prog.knobs[1];
  if (tr <= 0 || tc <= 0) return fmt("%s has tile %lldx%lld", prog.name, (long long)tr, (long long)tc);
  const int64_t tiles_k = (desc.k + tc - 1) / tc;
  const __int128 tiles = static_cast<__int128>((desc.m + tr - 1) / tr) * tiles_k;
  if (tiles > INT32_MAX) return fmt("accepted %lld tiles: the kernel counts them in 32 bits", (long long)tiles);
  if (q.tiles != static_cast<int64_t>(tiles) || q.tiles_k != tiles_k) return "params tiles";
  if (l.grid[0] < 1 || l.grid[0] > q.tiles || l.grid[1] != 1 || l.grid[2] != 1) {
    return fmt("grid %ux%ux%u for %lld tiles", l.grid[0], l.grid[1], l.grid[2], (long long)q.tiles);
  }
  auto pad = [](int64_t v, int64_t a) { return (v + a - 1) / a * a; };
  const int64_t O = b.out_cols;
  if (q.row_s_cols != O / 32 || q.row_s_cols_padded != pad(O / 32, 4) ||
      q.row_s_rows_padded != pad(desc.m, 128) || q.col_s_cols != desc.m / 32 ||
      q.col_s_cols_padded != pad(desc.m / 32, 4) || q.col_s_rows_padded != pad(O, 128)) {
    return "params scale shapes differ from the spec's swizzled layout";
  }
  if (q.form != static_cast<uint32_t>(form)) return fmt("params form %u for %d", q.form, form);
  const bool row = o & 1, col = o & 2;
  if (q.in != p.in || (bwd ? q.grad != p.grad : q.grad != nullptr)) return "in/grad pointers";
  if (q.row_q != (row ? p.row_q : nullptr) || q.row_s != (row ? p.row_s : nullptr)) return "row pointers";
  if (q.col_q != (col ? p.col_q : nullptr) || q.col_s != (col ? p.col_s : nullptr)) return "col pointers";
  return "";
}

}  // namespace rel
