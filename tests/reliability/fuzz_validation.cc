// libFuzzer target over the validation and routing layer (ASan + UBSan), host only.
//
// Each input decodes to one call of a real entry point on a device-less handle whose stub
// driver records launches (rel_fake.h): the entry (normgate forward/backward/queries/workspace
// size, SwiGLU + MXFP8 forward/backward/query/buffer sizes, cake_create_ex options, program
// listing, device query), the handle (table, SM count, routing SM count, NULL or destroyed),
// the descriptor (shape, strides, eps, package, dtype, flags, orientation, forced program,
// struct_size with a zero or non-zero tail), the pointers (NULL, or fake device addresses
// misaligned by 0..15 bytes) and the output structs (NULL, struct_size small or from the future).
// The oracle is spec_oracle.h, written from the specs:
//   - a call breaking a rule is rejected with a status the spec gives that rule, with a message;
//     a call breaking none is accepted, with an empty message;
//   - a rejected call reaches no driver entry point and writes no output byte;
//   - an accepted launching call launches once, and what it launches satisfies the program's
//     preconditions (check_*_launch); the matching query names the same program and grid;
//   - output structs are written up to the caller's struct_size, never past it (ASan sees the
//     caller's buffers at their exact size).
// Any departure aborts with a description (libFuzzer saves the input).
#include <fuzzer/FuzzedDataProvider.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "rel_fake.h"
#include "spec_oracle.h"

namespace {

[[noreturn]] void die(const char *entry, const std::string &what) {
  std::fprintf(stderr, "\n*** cake oracle: %s: %s\n    last message: \"%s\"\n", entry, what.c_str(),
               cake_last_error_message());
  std::abort();
}

// Departures already reported to the owners of lib/ (docs/reliability.md, "Regression guards"):
// printed once and tolerated, so the time-boxed CI run keeps looking for new ones. With
// REL_FUZZ_STRICT=1 in the environment they abort like any other.
bool known_issue(const char *id, const char *entry, const std::string &what) {
  static bool strict = std::getenv("REL_FUZZ_STRICT") != nullptr;
  if (strict) return false;
  static std::vector<std::string> seen;
  for (const std::string &s : seen) {
    if (s == id) return true;
  }
  seen.push_back(id);
  std::fprintf(stderr, "KNOWN ISSUE %s (reported; tolerated): %s: %s\n", id, entry, what.c_str());
  return true;
}

// Calls judged, per entry point: accepted and rejected (printed when the process ends).
struct Tally {
  const char *name;
  long accepted, rejected;
};
Tally g_tally[] = {{"create_ex", 0, 0},        {"normgate_forward", 0, 0},
                   {"normgate_forward_query", 0, 0}, {"normgate_backward", 0, 0},
                   {"normgate_backward_query", 0, 0}, {"normgate_workspace_size", 0, 0},
                   {"listing/device_query", 0, 0},   {"swiglu_forward", 0, 0},
                   {"swiglu_backward", 0, 0},        {"swiglu_query", 0, 0},
                   {"swiglu_buffer_sizes", 0, 0},    {"swiglu_forward (2)", 0, 0}};
int g_entry = 0;
void tally(cake_status_t st) { ++(st == CAKE_STATUS_SUCCESS ? g_tally[g_entry].accepted : g_tally[g_entry].rejected); }
struct TallyPrinter {
  ~TallyPrinter() {
    std::fprintf(stderr, "cake oracle: calls judged (accepted/rejected):");
    for (const Tally &t : g_tally) std::fprintf(stderr, " %s %ld/%ld;", t.name, t.accepted, t.rejected);
    std::fprintf(stderr, "\n");
  }
} g_tally_printer;

const cake_arch_t kArchs[] = {CAKE_ARCH_SM90, CAKE_ARCH_SM100, CAKE_ARCH_SM103, CAKE_ARCH_SM107};

int64_t pick_i64(FuzzedDataProvider &f, int64_t near) {
  switch (f.ConsumeIntegralInRange<int>(0, 15)) {
    case 0: return 0;
    case 1: return 1;
    case 2: return -1;
    case 3: return near;
    case 4: return near + 8 * f.ConsumeIntegralInRange<int64_t>(1, 64);
    case 5: return near + f.ConsumeIntegralInRange<int64_t>(-9, 9);
    case 6: return 128 * f.ConsumeIntegralInRange<int64_t>(1, 4096);
    case 7: return int64_t{1} << f.ConsumeIntegralInRange<int>(0, 62);
    case 8: return (int64_t{1} << f.ConsumeIntegralInRange<int>(0, 62)) + f.ConsumeIntegralInRange<int>(-1, 1);
    case 9: return std::numeric_limits<int64_t>::max();
    case 10: return std::numeric_limits<int64_t>::min();
    case 11: return f.ConsumeIntegralInRange<int64_t>(1, 100000);
    case 12: return -f.ConsumeIntegralInRange<int64_t>(1, 1 << 20);
    default: return f.ConsumeIntegral<int64_t>();
  }
}

int32_t pick_d(FuzzedDataProvider &f) {
  switch (f.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: return 64;
    case 1: return 128;
    case 2: return 256;
    case 3: return 8 * f.ConsumeIntegralInRange<int32_t>(1, 1024);
    case 4: return f.ConsumeIntegralInRange<int32_t>(-16, 8300);
    case 5: return std::numeric_limits<int32_t>::max();
    case 6: return std::numeric_limits<int32_t>::min();
    default: return f.ConsumeIntegral<int32_t>();
  }
}

float pick_eps(FuzzedDataProvider &f) {
  switch (f.ConsumeIntegralInRange<int>(0, 9)) {
    case 0: return 1e-6f;
    case 1: return 0.0f;
    case 2: return -0.0f;
    case 3: return -1e-6f;
    case 4: return std::numeric_limits<float>::quiet_NaN();
    case 5: return std::numeric_limits<float>::infinity();
    case 6: return -std::numeric_limits<float>::infinity();
    case 7: return std::numeric_limits<float>::denorm_min();
    case 8: return FLT_MAX;
    default: {
      const uint32_t bits = f.ConsumeIntegral<uint32_t>();
      float v;
      std::memcpy(&v, &bits, 4);
      return v;
    }
  }
}

int32_t pick_enum(FuzzedDataProvider &f, int32_t lo, int32_t hi) {
  switch (f.ConsumeIntegralInRange<int>(0, 5)) {
    case 0:
    case 1:
    case 2: return f.ConsumeIntegralInRange<int32_t>(lo, hi);
    case 3: return hi + 1;
    case 4: return lo - 1;
    default: return f.ConsumeIntegral<int32_t>();
  }
}

// A fake device address, 16-byte aligned, offset by 0 (mostly) or a chosen misalignment; or NULL.
void *pick_ptr(FuzzedDataProvider &f, int slot) {
  const uintptr_t base = uintptr_t{0x7f0000000000} + (uintptr_t(slot) << 36);
  switch (f.ConsumeIntegralInRange<int>(0, 11)) {
    case 0: return nullptr;
    case 1: return reinterpret_cast<void *>(base + (uintptr_t{1} << f.ConsumeIntegralInRange<int>(0, 3)));
    case 2: return reinterpret_cast<void *>(base + f.ConsumeIntegralInRange<int>(1, 15));
    default: return reinterpret_cast<void *>(base + 16 * f.ConsumeIntegralInRange<uintptr_t>(0, 1 << 20));
  }
}

// The caller's struct: exactly struct_size bytes (at least the size_t itself), the known prefix
// copied from `known`, a zero or non-zero tail when it claims more than this library knows.
struct CallerStruct {
  std::vector<unsigned char> bytes;
  rel::StructView view{0, false};
  template <class T>
  const T *as() const { return reinterpret_cast<const T *>(bytes.data()); }
};

template <class T>
CallerStruct caller_struct(FuzzedDataProvider &f, const T &known) {
  size_t size = sizeof(T);
  switch (f.ConsumeIntegralInRange<int>(0, 9)) {
    case 0: size = 0; break;
    case 1: size = sizeof(size_t); break;
    case 2: size = sizeof(T) - f.ConsumeIntegralInRange<size_t>(1, sizeof(T) - 1); break;
    case 3:
    case 4: size = sizeof(T) + f.ConsumeIntegralInRange<size_t>(1, 64); break;
    default: break;
  }
  CallerStruct c;
  c.bytes.assign(std::max(size, sizeof(size_t)), 0);
  std::memcpy(c.bytes.data(), &known, std::min(c.bytes.size(), sizeof(T)));
  std::memcpy(c.bytes.data(), &size, sizeof size);
  c.view.size = size;
  if (size > sizeof(T) && f.ConsumeBool()) {
    const size_t at = sizeof(T) + f.ConsumeIntegralInRange<size_t>(0, size - sizeof(T) - 1);
    c.bytes[at] = f.ConsumeIntegralInRange<unsigned char>(1, 255);
    c.view.tail_nonzero = true;
  }
  return c;
}

// An output struct the caller passes: NULL, or struct_size of its choice in a buffer of exactly
// that size, the rest canary-filled so writes past its struct_size (or on rejection) show.
struct OutStruct {
  bool null = false;
  std::vector<unsigned char> bytes;
  size_t declared = 0;
  void *ptr() { return null ? nullptr : bytes.data(); }
};

template <class T>
OutStruct out_struct(FuzzedDataProvider &f) {
  OutStruct o;
  size_t size = sizeof(T);
  switch (f.ConsumeIntegralInRange<int>(0, 11)) {
    case 0: o.null = true; return o;
    case 1: size = 0; break;
    case 2: size = sizeof(size_t); break;
    case 3: size = f.ConsumeIntegralInRange<size_t>(sizeof(size_t), sizeof(T)); break;
    case 4: size = sizeof(T) + f.ConsumeIntegralInRange<size_t>(1, 64); break;
    default: break;
  }
  o.declared = size;
  o.bytes.assign(std::max(size, sizeof(size_t)), 0xA5);
  std::memcpy(o.bytes.data(), &size, sizeof size);
  return o;
}

// The output struct after a call: untouched on rejection; on success its struct_size kept and
// nothing written past min(declared, sizeof(T)).
template <class T>
void check_out(const char *entry, const OutStruct &o, bool ok) {
  if (o.null) return;
  size_t size;
  std::memcpy(&size, o.bytes.data(), sizeof size);
  if (size != o.declared) die(entry, rel::fmt("struct_size changed from %zu to %zu", o.declared, size));
  const size_t written = ok ? std::min(o.declared, sizeof(T)) : sizeof(size_t);
  for (size_t i = std::max(written, sizeof(size_t)); i < o.bytes.size(); ++i) {
    if (o.bytes[i] != 0xA5) {
      die(entry, rel::fmt("%s output byte %zu of %zu written (struct_size %zu)",
                          ok ? "accepted:" : "rejected:", i, o.bytes.size(), o.declared));
    }
  }
}

rel::RecordedLaunch recorded(const rel::Launch &l) {
  return {l.program, {l.grid[0], l.grid[1], l.grid[2]}, {l.block[0], l.block[1], l.block[2]},
          l.smem, l.params, l.extra_used != 0, l.cooperative != 0};
}

void expect_driver_untouched(const char *entry) {
  if (rel::driver_calls() != 0) die(entry, rel::fmt("a rejected call made %d driver call(s)", rel::driver_calls()));
}

const char *pick_program(FuzzedDataProvider &f, const cake::ArchTable &t) {
  static const char *const kOdd[] = {"", "sm90.", "sm90.nope", "sm100.ng_fwd_d128_short",
                                     "sm90.ng_fwd_d128_short ", "SM90.NG_FWD_D128_SHORT"};
  switch (f.ConsumeIntegralInRange<int>(0, 5)) {
    case 0:
    case 1: return nullptr;
    case 2: return kOdd[f.ConsumeIntegralInRange<size_t>(0, sizeof kOdd / sizeof kOdd[0] - 1)];
    default: return t.programs[f.ConsumeIntegralInRange<int>(0, t.program_count - 1)].name;
  }
}

struct HandleChoice {
  cake_handle_t h = nullptr;   // what the call gets
  cake_handle_t owned = nullptr;
  bool live = true;
};

HandleChoice pick_handle(FuzzedDataProvider &f) {
  HandleChoice c;
  const cake_arch_t arch = kArchs[f.ConsumeIntegralInRange<int>(0, 3)];
  const int sms = f.ConsumeIntegralInRange<int>(1, 1024);
  const int routing = f.ConsumeBool() ? 0 : f.ConsumeIntegralInRange<int>(1, 1 << 16);
  c.owned = rel::make_recording_handle(arch, sms, routing);
  c.h = c.owned;
  switch (f.ConsumeIntegralInRange<int>(0, 15)) {
    case 0: c.h = nullptr; c.live = false; break;
    case 1: c.owned->magic = 0xDEADu; c.live = false; break;  // as after cake_destroy
    default: break;
  }
  return c;
}

// ---- normgate --------------------------------------------------------------------------

void fuzz_normgate(FuzzedDataProvider &f, rel::NgEntry k, const HandleChoice &hc) {
  const cake::ArchTable &t = *hc.owned->table;
  cake_normgate_desc d;
  cake_normgate_desc_init(&d);
  d.rows = f.ConsumeBool() ? f.ConsumeIntegralInRange<int64_t>(1, 3000000) : pick_i64(f, 4096);
  d.d = pick_d(f);
  d.eps = f.ConsumeIntegralInRange<int>(0, 3) == 0 ? pick_eps(f) : 1e-6f;
  int64_t *strides[] = {&d.x_stride, &d.z_stride, &d.y_stride, &d.dy_stride, &d.dx_stride, &d.dz_stride};
  for (int64_t *s : strides) {
    if (f.ConsumeIntegralInRange<int>(0, 3) == 0) *s = pick_i64(f, d.d);
  }
  rel::set_raw(&d.package, pick_enum(f, 0, 1));
  rel::set_raw(&d.dw_dtype, pick_enum(f, 1, 2));
  d.flags = f.ConsumeIntegralInRange<int>(0, 5) == 0 ? f.ConsumeIntegral<uint32_t>()
                                                     : f.ConsumeIntegralInRange<uint32_t>(0, 3);
  d.program = pick_program(f, t);
  const bool null_desc = f.ConsumeIntegralInRange<int>(0, 31) == 0;
  const CallerStruct cs = caller_struct(f, d);
  const cake_normgate_desc *user = null_desc ? nullptr : cs.as<cake_normgate_desc>();

  rel::NgPointers p;
  p.x = pick_ptr(f, 0);
  p.z = pick_ptr(f, 1);
  p.w = pick_ptr(f, 2);
  p.y = pick_ptr(f, 3);
  p.dy = pick_ptr(f, 4);
  p.dx = pick_ptr(f, 5);
  p.dz = pick_ptr(f, 6);
  p.dw = pick_ptr(f, 7);
  p.workspace = pick_ptr(f, 8);
  p.rstd = f.ConsumeBool() ? nullptr : static_cast<float *>(pick_ptr(f, 9));
  if (p.rstd != nullptr && f.ConsumeBool()) p.rstd = reinterpret_cast<float *>(reinterpret_cast<uintptr_t>(p.rstd) | 4);

  // The workspace rule is relative to what the size query says for the same descriptor.
  int64_t need = -1;
  if (k == rel::NgEntry::kBackward || k == rel::NgEntry::kWorkspaceSize) {
    rel::reset_recording();
    size_t bytes = 0xA5A5A5A5u;
    const cake_status_t st = cake_normgate_workspace_size(hc.h, user, &bytes);
    const rel::Expect e = rel::expect_normgate(rel::NgEntry::kWorkspaceSize, hc.owned, hc.live,
                                               user, cs.view, rel::NgPointers{}, -1);
    const std::string bad = rel::judge(e, st, cake_last_error_message());
    if (!bad.empty()) die("cake_normgate_workspace_size", bad);
    if (k == rel::NgEntry::kWorkspaceSize) tally(st);
    expect_driver_untouched("cake_normgate_workspace_size");
    if (st == CAKE_STATUS_SUCCESS) {
      need = static_cast<int64_t>(bytes);
      const int prog_idx = d.program ? rel::program_by_name(t, d.program)
                                     : rel::ng_route(t, rel::ng_op_for(k, d), d.d, d.rows, hc.owned->routing_sm_count,
                                                     rel::ng_variant_call(rel::ng_backward_entry(k), d));
      const int64_t kernel_need = prog_idx >= 0 ? rel::ng_kernel_workspace(t.programs[prog_idx], d) : -1;
      if (kernel_need < 0 || need < kernel_need) {
        die("cake_normgate_workspace_size",
            rel::fmt("says %lld bytes; the kernel indexes %lld", (long long)need, (long long)kernel_need));
      }
    } else if (bytes != 0xA5A5A5A5u) {
      die("cake_normgate_workspace_size", "rejected but wrote *bytes");
    }
    switch (f.ConsumeIntegralInRange<int>(0, 5)) {
      case 0: p.workspace_bytes = 0; break;
      case 1: p.workspace_bytes = need > 0 ? size_t(need) - 1 : 0; break;
      case 2: p.workspace_bytes = SIZE_MAX; break;
      case 3: p.workspace_bytes = f.ConsumeIntegral<size_t>(); break;
      default: p.workspace_bytes = need >= 0 ? size_t(need) + f.ConsumeIntegralInRange<size_t>(0, 4096) : 4096; break;
    }
    if (k == rel::NgEntry::kWorkspaceSize) return;
  }

  OutStruct info = out_struct<cake_program_info>(f);
  p.info_null = info.null;
  const rel::Expect e = rel::expect_normgate(k, hc.owned, hc.live, user, cs.view, p, need);
  rel::reset_recording();
  cake_status_t st;
  const char *entry;
  switch (k) {
    case rel::NgEntry::kForward:
      entry = "cake_normgate_forward";
      st = cake_normgate_forward(hc.h, user, p.x, p.z, p.w, p.y, p.rstd, nullptr);
      break;
    case rel::NgEntry::kBackward:
      entry = "cake_normgate_backward";
      st = cake_normgate_backward(hc.h, user, p.dy, p.x, p.z, p.w, p.dx, p.dz, p.dw, p.workspace,
                                  p.workspace_bytes, nullptr);
      break;
    case rel::NgEntry::kForwardQuery:
      entry = "cake_normgate_forward_query";
      st = cake_normgate_forward_query(hc.h, user, static_cast<cake_program_info *>(info.ptr()));
      break;
    default:
      entry = "cake_normgate_backward_query";
      st = cake_normgate_backward_query(hc.h, user, static_cast<cake_program_info *>(info.ptr()));
      break;
  }
  // A query's own output rule: an info struct_size too small to hold struct_size is refused.
  rel::Expect e2 = e;
  const bool query = k == rel::NgEntry::kForwardQuery || k == rel::NgEntry::kBackwardQuery;
  if (query && !info.null && !e.must_reject) {
    e2.rule(info.declared < sizeof(size_t), CAKE_STATUS_INVALID_ARGUMENT, "info->struct_size < 8");
  }
  tally(st);
  const std::string bad = rel::judge(e2, st, cake_last_error_message());
  if (!bad.empty()) {
    // lib/api/normgate.cc compares workspace_bytes as int64: 2^63 or more reads as negative.
    const bool ws_sign = k == rel::NgEntry::kBackward && st == CAKE_STATUS_INSUFFICIENT_WORKSPACE &&
                         p.workspace_bytes > static_cast<size_t>(INT64_MAX);
    if (!(ws_sign && known_issue("NG-WORKSPACE-SIGN", entry, bad))) die(entry, bad);
    return;
  }
  const bool launching = k == rel::NgEntry::kForward || k == rel::NgEntry::kBackward;
  if (st != CAKE_STATUS_SUCCESS) {
    expect_driver_untouched(entry);
    if (query) check_out<cake_program_info>(entry, info, false);
    return;
  }
  if (query) {
    check_out<cake_program_info>(entry, info, true);
    if (info.declared >= offsetof(cake_program_info, name) + 64) {
      const cake_program_info *pi = reinterpret_cast<const cake_program_info *>(info.bytes.data());
      const int idx = rel::program_by_name(t, pi->name);
      if (idx < 0 || !rel::ng_serves(t.programs[idx], rel::ng_op_for(k, d), d.d,
                                     rel::ng_variant_call(rel::ng_backward_entry(k), d))) {
        die(entry, rel::fmt("named program \"%.64s\", which does not serve the call", pi->name));
      }
    }
    return;
  }
  if (!launching) return;
  if (rel::launches().size() != 1) die(entry, rel::fmt("accepted with %zu launches", rel::launches().size()));
  const rel::Launch l = rel::launches()[0];
  // The caller's descriptor as the library read it (its known prefix; a newer tail is zero).
  cake_normgate_desc seen = d;
  const std::string pre = rel::check_normgate_launch(k, hc.owned, seen, p, recorded(l));
  if (!pre.empty()) die(entry, pre);
  // The query names the program it launched and the same grid.
  cake_program_info qi;
  cake_program_info_init(&qi);
  const cake_status_t qs = k == rel::NgEntry::kForward ? cake_normgate_forward_query(hc.h, user, &qi)
                                                       : cake_normgate_backward_query(hc.h, user, &qi);
  if (qs != CAKE_STATUS_SUCCESS) die(entry, rel::fmt("launch accepted, query says %s", cake_status_string(qs)));
  if (std::strcmp(qi.name, t.programs[l.program].name) != 0 || qi.grid != l.grid[0]) {
    die(entry, rel::fmt("query says %s grid %lld, launch ran %s grid %u", qi.name, (long long)qi.grid,
                        t.programs[l.program].name, l.grid[0]));
  }
}

// ---- swiglu_mxfp8 ----------------------------------------------------------------------

void fuzz_swiglu(FuzzedDataProvider &f, rel::SwEntry k, const HandleChoice &hc) {
  const cake::ArchTable &t = *hc.owned->table;
  cake_swiglu_mxfp8_desc d;
  cake_swiglu_mxfp8_desc_init(&d);
  d.m = f.ConsumeBool() ? 128 * f.ConsumeIntegralInRange<int64_t>(1, 1 << 16) : pick_i64(f, 128);
  d.k = f.ConsumeBool() ? 128 * f.ConsumeIntegralInRange<int64_t>(1, 1 << 16) : pick_i64(f, 128);
  rel::set_raw(&d.orientation, pick_enum(f, 1, 3));
  d.program = pick_program(f, t);
  const bool null_desc = f.ConsumeIntegralInRange<int>(0, 31) == 0;
  const CallerStruct cs = caller_struct(f, d);
  const cake_swiglu_mxfp8_desc *user = null_desc ? nullptr : cs.as<cake_swiglu_mxfp8_desc>();
  rel::SwPointers p;
  p.in = pick_ptr(f, 0);
  p.grad = pick_ptr(f, 1);
  p.row_q = pick_ptr(f, 2);
  p.row_s = pick_ptr(f, 3);
  p.col_q = pick_ptr(f, 4);
  p.col_s = pick_ptr(f, 5);
  p.backward_arg = f.ConsumeIntegralInRange<int>(0, 7) == 0 ? f.ConsumeIntegral<int>() : f.ConsumeBool();

  rel::reset_recording();
  cake_status_t st;
  const char *entry;
  OutStruct out;
  bool bwd = k == rel::SwEntry::kBackward;
  switch (k) {
    case rel::SwEntry::kForward:
      entry = "cake_swiglu_mxfp8_forward";
      st = cake_swiglu_mxfp8_forward(hc.h, user, p.in, p.row_q, p.row_s, p.col_q, p.col_s, nullptr);
      break;
    case rel::SwEntry::kBackward:
      entry = "cake_swiglu_mxfp8_backward";
      st = cake_swiglu_mxfp8_backward(hc.h, user, p.in, p.grad, p.row_q, p.row_s, p.col_q, p.col_s, nullptr);
      break;
    case rel::SwEntry::kQuery:
      entry = "cake_swiglu_mxfp8_query";
      out = out_struct<cake_program_info>(f);
      bwd = p.backward_arg != 0;
      st = cake_swiglu_mxfp8_query(hc.h, user, p.backward_arg, static_cast<cake_program_info *>(out.ptr()));
      break;
    default:
      entry = "cake_swiglu_mxfp8_buffer_sizes";
      out = out_struct<cake_swiglu_mxfp8_sizes>(f);
      bwd = p.backward_arg != 0;
      st = cake_swiglu_mxfp8_buffer_sizes(user, p.backward_arg, static_cast<cake_swiglu_mxfp8_sizes *>(out.ptr()));
      break;
  }
  p.out_null = out.null;
  rel::Expect e = rel::expect_swiglu(k, hc.owned, hc.live, user, cs.view, p);
  const bool has_out = k == rel::SwEntry::kQuery || k == rel::SwEntry::kBufferSizes;
  if (has_out && !out.null && !e.must_reject) {
    e.rule(out.declared < sizeof(size_t), CAKE_STATUS_INVALID_ARGUMENT, "output struct_size < 8");
  }
  tally(st);
  const std::string bad = rel::judge(e, st, cake_last_error_message());
  if (!bad.empty()) {
    // lib/api/swiglu_mxfp8.cc: more CTA tiles than the kernel counts in 32 bits is refused by
    // swiglu_mxfp8_fill_params() at launch time as CAKE_STATUS_INTERNAL_ERROR (the query accepts).
    const bool tiles = st == CAKE_STATUS_INTERNAL_ERROR && e.why.find("2^31-1 CTA tiles") != std::string::npos;
    if (!(tiles && known_issue("SW-TILES-INTERNAL", entry, bad))) die(entry, bad);
    return;
  }
  if (st != CAKE_STATUS_SUCCESS) {
    expect_driver_untouched(entry);
    if (k == rel::SwEntry::kQuery) check_out<cake_program_info>(entry, out, false);
    if (k == rel::SwEntry::kBufferSizes) check_out<cake_swiglu_mxfp8_sizes>(entry, out, false);
    return;
  }
  if (k == rel::SwEntry::kQuery) {
    check_out<cake_program_info>(entry, out, true);
    return;
  }
  if (k == rel::SwEntry::kBufferSizes) {
    check_out<cake_swiglu_mxfp8_sizes>(entry, out, true);
    if (out.declared >= sizeof(cake_swiglu_mxfp8_sizes)) {
      cake_swiglu_mxfp8_sizes s;
      std::memcpy(&s, out.bytes.data(), sizeof s);
      const rel::SwBytes b = rel::sw_bytes(d.m, d.k, bwd);
      if (s.out_cols != b.out_cols || (__int128)s.q_bytes != b.q || (__int128)s.row_s_bytes != b.row_s ||
          (__int128)s.col_s_bytes != b.col_s) {
        die(entry, rel::fmt("sizes O %lld q %zu row_s %zu col_s %zu differ from the spec's", (long long)s.out_cols,
                            s.q_bytes, s.row_s_bytes, s.col_s_bytes));
      }
    }
    return;
  }
  if (rel::launches().size() != 1) die(entry, rel::fmt("accepted with %zu launches", rel::launches().size()));
  const rel::Launch l = rel::launches()[0];
  const std::string pre = rel::check_swiglu_launch(bwd, hc.owned, d, p, recorded(l));
  if (!pre.empty()) die(entry, pre);
  cake_program_info qi;
  cake_program_info_init(&qi);
  const cake_status_t qs = cake_swiglu_mxfp8_query(hc.h, user, bwd ? 1 : 0, &qi);
  if (qs != CAKE_STATUS_SUCCESS) die(entry, rel::fmt("launch accepted, query says %s", cake_status_string(qs)));
  if (std::strcmp(qi.name, t.programs[l.program].name) != 0 || qi.grid != l.grid[0]) {
    die(entry, rel::fmt("query says %s grid %lld, launch ran %s grid %u", qi.name, (long long)qi.grid,
                        t.programs[l.program].name, l.grid[0]));
  }
}

// ---- handles, options, listing -----------------------------------------------------------

void fuzz_create_ex(FuzzedDataProvider &f) {
  cake_handle_options o;
  cake_handle_options_init(&o);
  rel::set_raw(&o.table, f.ConsumeBool() ? static_cast<int32_t>(kArchs[f.ConsumeIntegralInRange<int>(0, 3)])
                                         : f.ConsumeIntegral<int32_t>());
  if (f.ConsumeIntegralInRange<int>(0, 3) == 0) o.table = CAKE_ARCH_NONE;
  o.sm_count = f.ConsumeBool() ? f.ConsumeIntegralInRange<int32_t>(0, 1024) : f.ConsumeIntegral<int32_t>();
  const CallerStruct cs = caller_struct(f, o);
  const int mode = f.ConsumeIntegralInRange<int>(0, 7);
  const cake_handle_options *opts = mode == 0 ? nullptr : cs.as<cake_handle_options>();
  cake_handle_t h = reinterpret_cast<cake_handle_t>(uintptr_t{0x1});
  cake_handle_t *hp = mode == 1 ? nullptr : &h;
  const cake_status_t st = cake_create_ex(hp, f.ConsumeIntegralInRange<int>(-2, 2), opts);
  rel::Expect e;
  e.rule(hp == nullptr, CAKE_STATUS_INVALID_ARGUMENT, "handle NULL");
  if (hp != nullptr && opts != nullptr) {
    rel::struct_rules(e, cs.view, offsetof(cake_handle_options, sm_count) + sizeof(int32_t),
                      sizeof(cake_handle_options), "options->struct_size");
    if (!e.must_reject) {
      // Fields beyond a smaller caller's struct_size keep their defaults.
      const bool has_table = cs.view.size >= offsetof(cake_handle_options, table) + sizeof(int32_t);
      const bool has_sms = cs.view.size >= offsetof(cake_handle_options, sm_count) + sizeof(int32_t);
      const int table = has_table ? rel::raw(o.table) : 0;
      e.rule(table != 0 && table != 90 && table != 100 && table != 103 && table != 107,
             CAKE_STATUS_INVALID_ARGUMENT, "options.table not a table");
      e.rule(has_sms && o.sm_count < 0, CAKE_STATUS_INVALID_ARGUMENT, "options.sm_count < 0");
    }
  }
  // Past validation the driver is loaded: this process has none (CAKE_LIBCUDA, below).
  if (!e.must_reject) e.rule(true, CAKE_STATUS_DRIVER_UNAVAILABLE, "no driver in the fuzzer");
  tally(st);
  const std::string bad = rel::judge(e, st, cake_last_error_message());
  if (!bad.empty()) die("cake_create_ex", bad);
  if (hp != nullptr && h != nullptr) die("cake_create_ex", "failed without setting *handle to NULL");
}

void fuzz_listing(FuzzedDataProvider &f, const HandleChoice &hc) {
  const int n = cake_program_count(hc.h);
  const int want = hc.live ? hc.owned->table->program_count : -1;
  if (n != want) die("cake_program_count", rel::fmt("%d, want %d", n, want));
  const int idx = f.ConsumeBool() ? f.ConsumeIntegralInRange<int>(-2, n + 2) : f.ConsumeIntegral<int>();
  const char *name = cake_program_name(hc.h, idx);
  const bool valid = hc.live && idx >= 0 && idx < n;
  if ((name != nullptr) != valid) die("cake_program_name", rel::fmt("index %d of %d: %s", idx, n, name ? name : "NULL"));
  if (valid && std::strcmp(name, hc.owned->table->programs[idx].name) != 0) die("cake_program_name", "wrong name");

  OutStruct info = out_struct<cake_device_info>(f);
  rel::reset_recording();
  const cake_status_t st = cake_device_query(hc.h, static_cast<cake_device_info *>(info.ptr()));
  rel::Expect e;
  e.rule(!hc.live, CAKE_STATUS_INVALID_HANDLE, "handle NULL or destroyed");
  if (!e.must_reject) {
    e.rule(info.null, CAKE_STATUS_INVALID_ARGUMENT, "info NULL");
    e.rule(!info.null && info.declared < sizeof(size_t), CAKE_STATUS_INVALID_ARGUMENT, "info->struct_size < 8");
  }
  tally(st);
  const std::string bad = rel::judge(e, st, cake_last_error_message());
  if (!bad.empty()) die("cake_device_query", bad);
  expect_driver_untouched("cake_device_query");
  check_out<cake_device_info>("cake_device_query", info, st == CAKE_STATUS_SUCCESS);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // No driver in this process: cake_create_ex goes as far as loading it and reports that.
  setenv("CAKE_LIBCUDA", "/nonexistent/libcuda-for-the-fuzzer.so.1", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzedDataProvider f(data, size);
  const int entry = f.ConsumeIntegralInRange<int>(0, 11);
  g_entry = entry;
  if (entry == 0) {
    fuzz_create_ex(f);
    return 0;
  }
  HandleChoice hc = pick_handle(f);
  switch (entry) {
    case 1: fuzz_normgate(f, rel::NgEntry::kForward, hc); break;
    case 2: fuzz_normgate(f, rel::NgEntry::kForwardQuery, hc); break;
    case 3: fuzz_normgate(f, rel::NgEntry::kBackward, hc); break;
    case 4: fuzz_normgate(f, rel::NgEntry::kBackwardQuery, hc); break;
    case 5: fuzz_normgate(f, rel::NgEntry::kWorkspaceSize, hc); break;
    case 6: fuzz_listing(f, hc); break;
    default:
      if (rel::have_swiglu()) {
        static const rel::SwEntry kSw[] = {rel::SwEntry::kForward, rel::SwEntry::kBackward,
                                           rel::SwEntry::kQuery, rel::SwEntry::kBufferSizes,
                                           rel::SwEntry::kForward};
        fuzz_swiglu(f, kSw[entry - 7], hc);
      }
      break;
  }
  hc.owned->magic = cake::kHandleMagic;
  rel::free_handle(hc.owned);
  return 0;
}
