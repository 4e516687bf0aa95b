// The invalid-argument matrix, host only: one case per validation rule of
// both specs through the real entry points, on device-less handles (rel_fake.h). Extends
// tests/host/test_normgate_validation.cc (which covers the forward's desc rules, the forward's
// pointers and a first set of backward rules) to every entry point, every pointer and stride,
// every public struct's struct_size, the output structs, handle options and program forcing.
//
// Each rejection: the exact status, a message naming the argument, the canary-filled host
// "tensors" and output structs untouched, and no driver call: rejections run on a handle with
// no driver at all, so a call that wrongly gets past validation crashes at launch. Each
// acceptance at a rule's boundary runs on the recording stub driver and is checked against the
// oracle of spec_oracle.h (what it would launch satisfies the program's preconditions).
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../host/cmocka_cxx.h"
#include "rel_fake.h"
#include "spec_oracle.h"

namespace {

using rel::NgEntry;
using rel::SwEntry;

constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int32_t kI32Min = std::numeric_limits<int32_t>::min();
constexpr int32_t kI32Max = std::numeric_limits<int32_t>::max();

// Host memory standing in for device tensors, canary-filled: nothing may write it.
constexpr size_t kSlot = 4096;
constexpr size_t kWsBytes = 256 * 1024;  // the last slot: the workspace of the shapes here
enum Slot { kX, kZ, kW, kY, kDy, kDx, kDz, kDw, kRstd, kIn, kGrad, kRowQ, kRowS, kColQ, kColS, kWs, kSlots };
alignas(64) unsigned char g_arena[(kSlots - 1) * kSlot + kWsBytes];

void fill_arena() { std::memset(g_arena, 0xC5, sizeof g_arena); }
bool arena_intact() {
  for (unsigned char b : g_arena) {
    if (b != 0xC5) return false;
  }
  return true;
}
unsigned char *slot(Slot s, size_t off = 0) { return g_arena + size_t(s) * kSlot + off; }

int g_failures = 0;

#define CHECK(cond, ...)                                                   \
  do {                                                                     \
    if (!(cond)) {                                                         \
      print_error("%s:%d: ", __FILE__, __LINE__);                          \
      print_error(__VA_ARGS__);                                            \
      print_error("\n");                                                   \
      ++g_failures;                                                        \
    }                                                                      \
  } while (0)

bool has(const char *needle) { return std::strstr(cake_last_error_message(), needle) != nullptr; }

// ---- normgate --------------------------------------------------------------------------

struct Ng {
  NgEntry entry;
  cake_normgate_desc desc;
  const cake_normgate_desc *desc_ptr;  // &desc unless a case replaces it
  const void *x = slot(kX), *z = slot(kZ), *w = slot(kW), *dy = slot(kDy);
  void *y = slot(kY), *dx = slot(kDx), *dz = slot(kDz), *dw = slot(kDw), *ws = slot(kWs);
  float *rstd = nullptr;
  size_t ws_bytes = kWsBytes;
  bool null_out = false;  // info (queries) or bytes (workspace size) NULL
  cake_program_info info;
  size_t bytes = 0;

  explicit Ng(NgEntry e) : entry(e), desc_ptr(&desc) {
    cake_normgate_desc_init(&desc);
    desc.rows = 4;
    desc.d = 128;
    cake_program_info_init(&info);
  }

  cake_status_t call(cake_handle_t h) {
    cake_program_info *ip = null_out ? nullptr : &info;
    switch (entry) {
      case NgEntry::kForward: return cake_normgate_forward(h, desc_ptr, x, z, w, y, rstd, nullptr);
      case NgEntry::kForwardQuery: return cake_normgate_forward_query(h, desc_ptr, ip);
      case NgEntry::kBackward:
        return cake_normgate_backward(h, desc_ptr, dy, x, z, w, dx, dz, dw, ws, ws_bytes, nullptr);
      case NgEntry::kBackwardQuery: return cake_normgate_backward_query(h, desc_ptr, ip);
      default: return cake_normgate_workspace_size(h, desc_ptr, null_out ? nullptr : &bytes);
    }
  }
};

const char *ng_name(NgEntry e) {
  switch (e) {
    case NgEntry::kForward: return "cake_normgate_forward";
    case NgEntry::kForwardQuery: return "cake_normgate_forward_query";
    case NgEntry::kBackward: return "cake_normgate_backward";
    case NgEntry::kBackwardQuery: return "cake_normgate_backward_query";
    default: return "cake_normgate_workspace_size";
  }
}

const NgEntry kNgAll[] = {NgEntry::kForward, NgEntry::kForwardQuery, NgEntry::kBackward,
                          NgEntry::kBackwardQuery, NgEntry::kWorkspaceSize};
const NgEntry kNgBwd[] = {NgEntry::kBackward, NgEntry::kBackwardQuery, NgEntry::kWorkspaceSize};

// Rejection: exact status, message with `needle`, arena and output untouched, no driver call.
void ng_reject(Ng &c, cake_status_t want, const char *needle, cake_handle_t h = nullptr) {
  const bool own = h == nullptr;
  if (own) h = rel::make_crashing_handle(CAKE_ARCH_SM90);
  fill_arena();
  cake_program_info before = c.info;
  const size_t bytes_before = c.bytes = 0x5A5A5A5A;
  const cake_status_t got = c.call(h);
  CHECK(got == want && has(needle), "%s: want %s with \"%s\", got %s: \"%s\"", ng_name(c.entry),
        cake_status_string(want), needle, cake_status_string(got), cake_last_error_message());
  CHECK(arena_intact(), "%s: a rejected call wrote a tensor", ng_name(c.entry));
  CHECK(std::memcmp(&before, &c.info, sizeof before) == 0, "%s: rejected, info written", ng_name(c.entry));
  CHECK(c.bytes == bytes_before, "%s: rejected, *bytes written", ng_name(c.entry));
  if (own) rel::free_handle(h);
}

// Acceptance on the recording driver, judged by the oracle.
void ng_accept(Ng &c, cake_arch_t arch = CAKE_ARCH_SM90) {
  cake_handle_t h = rel::make_recording_handle(arch);
  rel::reset_recording();
  fill_arena();
  const cake_status_t got = c.call(h);
  CHECK(got == CAKE_STATUS_SUCCESS, "%s: want success, got %s: \"%s\"", ng_name(c.entry),
        cake_status_string(got), cake_last_error_message());
  CHECK(cake_last_error_message()[0] == '\0', "%s: success with a message", ng_name(c.entry));
  CHECK(arena_intact(), "%s: the host wrote a tensor", ng_name(c.entry));
  const bool launching = c.entry == NgEntry::kForward || c.entry == NgEntry::kBackward;
  if (got == CAKE_STATUS_SUCCESS && launching) {
    CHECK(rel::launches().size() == 1, "%s: %zu launches", ng_name(c.entry), rel::launches().size());
    if (rel::launches().size() == 1) {
      const rel::Launch &l = rel::launches()[0];
      rel::NgPointers p;
      p.x = c.x, p.z = c.z, p.w = c.w, p.y = c.y, p.rstd = c.rstd, p.dy = c.dy, p.dx = c.dx;
      p.dz = c.dz, p.dw = c.dw, p.workspace = c.ws, p.workspace_bytes = c.ws_bytes;
      const std::string bad = rel::check_normgate_launch(
          c.entry, h, c.desc, p, {l.program, {l.grid[0], l.grid[1], l.grid[2]},
                                  {l.block[0], l.block[1], l.block[2]}, l.smem, l.params, l.extra_used != 0,
                                  l.cooperative != 0});
      CHECK(bad.empty(), "%s: launch breaks a precondition: %s", ng_name(c.entry), bad.c_str());
    }
  } else {
    CHECK(rel::launches().empty(), "%s: a query launched", ng_name(c.entry));
  }
  rel::free_handle(h);
}

void test_ng_handles(void **) {
  for (NgEntry e : kNgAll) {
    Ng c(e);
    fill_arena();
    CHECK(c.call(nullptr) == CAKE_STATUS_INVALID_HANDLE && has("handle: must not be NULL") && arena_intact(),
          "%s: NULL handle: %s", ng_name(e), cake_last_error_message());
    cake_handle_t dead = rel::make_crashing_handle(CAKE_ARCH_SM90);
    dead->magic = 0;  // what cake_destroy leaves behind
    ng_reject(c, CAKE_STATUS_INVALID_HANDLE, "destroyed", dead);
    dead->magic = cake::kHandleMagic;
    rel::free_handle(dead);
  }
}

void test_ng_desc_null_and_struct_size(void **) {
  for (NgEntry e : kNgAll) {
    {
      Ng c(e);
      c.desc_ptr = nullptr;
      ng_reject(c, CAKE_STATUS_INVALID_ARGUMENT, "desc: must not be NULL");
    }
    // Below the first version (which ends where the 0.3 fields begin) is refused.
    constexpr size_t kFirst = offsetof(cake_normgate_desc, gate);
    for (size_t size : {size_t(0), size_t(8), kFirst - 8, kFirst - 1}) {
      Ng c(e);
      c.desc.struct_size = size;
      char needle[64];
      std::snprintf(needle, sizeof needle, "desc->struct_size = %zu", size);
      ng_reject(c, CAKE_STATUS_INVALID_ARGUMENT, needle);
    }
    // From a newer header: a non-zero unknown tail (first or last byte) is refused, a zero
    // tail accepted.
    struct Newer {
      cake_normgate_desc base;
      unsigned char tail[64];
    };
    for (size_t extra : {size_t(1), size_t(8), size_t(64)}) {
      for (int where : {0, 1}) {
        Ng c(e);
        Newer n;
        std::memset(&n, 0, sizeof n);
        n.base = c.desc;
        n.base.struct_size = sizeof(cake_normgate_desc) + extra;
        n.tail[where == 0 ? 0 : extra - 1] = 0x01;
        c.desc_ptr = &n.base;
        ng_reject(c, CAKE_STATUS_INVALID_ARGUMENT, "newer Cake");
        n.tail[where == 0 ? 0 : extra - 1] = 0;
        ng_accept(c);
      }
    }
  }
}

void test_ng_shape_rules(void **) {
  for (NgEntry e : kNgAll) {
    for (int64_t rows : {kI64Min, int64_t(-1), int64_t(0)}) {
      Ng c(e);
      c.desc.rows = rows;
      ng_reject(c, CAKE_STATUS_INVALID_ARGUMENT, "desc->rows");
    }
    for (int32_t d : {kI32Min, -8, 0, 1, 2, 4, 63, 8200, 8192 + 8, kI32Max}) {
      Ng c(e);
      c.desc.d = d;
      char needle[48];
      std::snprintf(needle, sizeof needle, "desc->d = %d", d);
      ng_reject(c, CAKE_STATUS_UNSUPPORTED_SHAPE, needle);
    }
    for (int32_t d : {8, 16, 96, 8192}) {  // the boundaries and a general width
      Ng c(e);
      c.desc.d = d;
      ng_accept(c);
    }
    for (float eps : {-FLT_MIN, -1.0f, std::numeric_limits<float>::quiet_NaN(),
                      -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()}) {
      Ng c(e);
      c.desc.eps = eps;
      ng_reject(c, CAKE_STATUS_INVALID_ARGUMENT, "desc->eps");
    }
    for (float eps : {0.0f, -0.0f, std::numeric_limits<float>::denorm_min(), FLT_MAX}) {
      Ng c(e);
      c.desc.eps = eps;
      ng_accept(c);
    }
  }
}

// Every stride of every entry: < d (and negative), not a multiple of 8, overflowing bytes.
void test_ng_strides(void **) {
  struct Field {
    const char *name;
    int64_t cake_normgate_desc::*member;
    bool fwd, bwd;
  };
  const Field fields[] = {
      {"desc->x_stride", &cake_normgate_desc::x_stride, true, true},
      {"desc->z_stride", &cake_normgate_desc::z_stride, true, true},
      {"desc->y_stride", &cake_normgate_desc::y_stride, true, false},
      {"desc->dy_stride", &cake_normgate_desc::dy_stride, false, true},
      {"desc->dx_stride", &cake_normgate_desc::dx_stride, false, true},
      {"desc->dz_stride", &cake_normgate_desc::dz_stride, false, true},
  };
  for (NgEntry e : kNgAll) {
    const bool bwd = rel::ng_backward_entry(e);
    for (const Field &f : fields) {
      const bool used = bwd ? f.bwd : f.fwd;
      if (!used) {
        // An entry ignores the strides of tensors it does not take.
        Ng c(e);
        c.desc.*f.member = -3;
        ng_accept(c);
        continue;
      }
      for (int64_t s : {kI64Min, int64_t(-8), int64_t(1), int64_t(120)}) {
        Ng c(e);
        c.desc.*f.member = s;
        char needle[80];
        std::snprintf(needle, sizeof needle, "%s = %lld", f.name, (long long)s);
        ng_reject(c, CAKE_STATUS_INVALID_ARGUMENT, needle);
      }
      for (int64_t s : {int64_t(129), int64_t(130), int64_t(132), int64_t(8192 + 4)}) {
        Ng c(e);
        c.desc.*f.member = s;
        char needle[80];
        std::snprintf(needle, sizeof needle, "%s = %lld", f.name, (long long)s);
        ng_reject(c, CAKE_STATUS_MISALIGNED, needle);
      }
      {
        Ng c(e);  // 2^40 rows x 2^23 elements x 2 bytes = 2^64 bytes
        c.desc.rows = int64_t(1) << 40;
        c.desc.*f.member = int64_t(1) << 23;
        ng_reject(c, CAKE_STATUS_INVALID_ARGUMENT, f.name);
        CHECK(has("overflows"), "%s: overflow message: %s", f.name, cake_last_error_message());
      }
      {
        Ng c(e);  // packed rows (stride 0) overflow too: 2^59 rows x 8192 x 2
        c.desc.rows = int64_t(1) << 59;
        c.desc.d = 8192;
        ng_reject(c, CAKE_STATUS_INVALID_ARGUMENT, "overflows");
      }
      for (int64_t s : {int64_t(136), int64_t(1) << 20}) {
        Ng c(e);
        c.desc.*f.member = s;
        ng_accept(c);
      }
    }
  }
}

void test_ng_enums_and_flags(void **) {
  for (NgEntry e : kNgBwd) {
    for (int32_t v : {kI32Min, -1, 2, kI32Max}) {
      Ng c(e);
      rel::set_raw(&c.desc.package, v);
      char needle[48];
      std::snprintf(needle, sizeof needle, "desc->package = %d", v);
      ng_reject(c, CAKE_STATUS_INVALID_ARGUMENT, needle);
    }
    for (int32_t v : {kI32Min, 0, 4, kI32Max}) {  // 1 BF16, 2 FP32, 3 F16 are dw dtypes
      Ng c(e);
      rel::set_raw(&c.desc.dw_dtype, v);
      char needle[48];
      std::snprintf(needle, sizeof needle, "desc->dw_dtype = %d", v);
      ng_reject(c, CAKE_STATUS_INVALID_ARGUMENT, needle);
    }
    for (int b = 2; b < 32; ++b) {
      Ng c(e);
      c.desc.flags = 1u << b;
      ng_reject(c, CAKE_STATUS_INVALID_ARGUMENT, "unknown bits");
    }
    {
      Ng c(e);
      c.desc.flags = CAKE_NORMGATE_DW_ACCUMULATE | CAKE_NORMGATE_DW_SKIP;
      ng_reject(c, CAKE_STATUS_INVALID_ARGUMENT, "together");
    }
    for (uint32_t flags : {0u, 1u, 2u}) {
      for (int32_t pkg : {0, 1}) {
        for (int32_t dt : {1, 2}) {
          Ng c(e);
          c.desc.flags = flags;
          rel::set_raw(&c.desc.package, pkg);
          rel::set_raw(&c.desc.dw_dtype, dt);
          ng_accept(c);
        }
      }
    }
  }
  // The forward takes no package, dtype or flags: they are not looked at.
  for (NgEntry e : {NgEntry::kForward, NgEntry::kForwardQuery}) {
    Ng c(e);
    rel::set_raw(&c.desc.package, 77);
    rel::set_raw(&c.desc.dw_dtype, -5);
    c.desc.flags = 0xffffffffu;
    ng_accept(c);
  }
}

void test_ng_pointers(void **) {
  // Backward: the NULLs and misalignments tests/host/test_normgate_validation.cc leaves out.
  struct P {
    const char *name;
    Slot s;
  };
  for (const P &p : {P{"x", kX}, P{"z", kZ}, P{"w", kW}}) {
    Ng c(NgEntry::kBackward);
    if (p.s == kX) c.x = nullptr;
    if (p.s == kZ) c.z = nullptr;
    if (p.s == kW) c.w = nullptr;
    char needle[48];
    std::snprintf(needle, sizeof needle, "%s: must not be NULL", p.name);
    ng_reject(c, CAKE_STATUS_INVALID_ARGUMENT, needle);
  }
  for (int off : {1, 2, 4, 8}) {
    for (const P &p : {P{"x", kX}, P{"z", kZ}, P{"w", kW}, P{"dx", kDx}}) {
      Ng c(NgEntry::kBackward);
      if (p.s == kX) c.x = slot(kX, off);
      if (p.s == kZ) c.z = slot(kZ, off);
      if (p.s == kW) c.w = slot(kW, off);
      if (p.s == kDx) c.dx = slot(kDx, off);
      char needle[48];
      std::snprintf(needle, sizeof needle, "%s = ", p.name);
      ng_reject(c, CAKE_STATUS_MISALIGNED, needle);
      char bytes[48];
      std::snprintf(bytes, sizeof bytes, "off by %d bytes", off);
      CHECK(has(bytes), "misaligned %s by %d: \"%s\"", p.name, off, cake_last_error_message());
    }
    // dw is neither needed nor looked at when skipped.
    Ng c(NgEntry::kBackward);
    c.desc.flags = CAKE_NORMGATE_DW_SKIP;
    c.dw = slot(kDw, off);
    ng_accept(c);
  }
  {
    Ng c(NgEntry::kBackward);
    c.desc.flags = CAKE_NORMGATE_DW_SKIP;
    c.dw = nullptr;
    c.ws = nullptr;
    c.ws_bytes = 0;
    ng_accept(c);
  }
  // rstd: optional, 4-byte aligned.
  for (int off : {1, 2, 3}) {
    Ng c(NgEntry::kForward);
    c.rstd = reinterpret_cast<float *>(slot(kRstd, off));
    ng_reject(c, CAKE_STATUS_MISALIGNED, "rstd");
  }
  {
    Ng c(NgEntry::kForward);
    c.rstd = reinterpret_cast<float *>(slot(kRstd, 4));
    ng_accept(c);
  }
  // Query outputs.
  for (NgEntry e : {NgEntry::kForwardQuery, NgEntry::kBackwardQuery}) {
    Ng c(e);
    c.null_out = true;
    ng_reject(c, CAKE_STATUS_INVALID_ARGUMENT, "info: must not be NULL");
    for (size_t size : {size_t(0), size_t(4), size_t(7)}) {
      Ng s(e);
      s.info.struct_size = size;
      ng_reject(s, CAKE_STATUS_INVALID_ARGUMENT, "info->struct_size");
    }
  }
  {
    Ng c(NgEntry::kWorkspaceSize);
    c.null_out = true;
    ng_reject(c, CAKE_STATUS_INVALID_ARGUMENT, "bytes: must not be NULL");
  }
}

void test_ng_workspace(void **) {
  for (int32_t pkg : {0, 1}) {
    for (int32_t dt : {1, 2}) {
      for (int64_t rows : {int64_t(1), int64_t(17), int64_t(4096)}) {
        Ng q(NgEntry::kWorkspaceSize);
        rel::set_raw(&q.desc.package, pkg);
        rel::set_raw(&q.desc.dw_dtype, dt);
        q.desc.rows = rows;
        cake_handle_t h = rel::make_crashing_handle(CAKE_ARCH_SM90);
        CHECK(q.call(h) == CAKE_STATUS_SUCCESS, "workspace size: %s", cake_last_error_message());
        rel::free_handle(h);
        const size_t need = q.bytes;
        CHECK(need > 0 && need <= kWsBytes, "need %zu", need);
        Ng c(NgEntry::kBackward);
        c.desc = q.desc;
        c.ws_bytes = need - 1;
        ng_reject(c, CAKE_STATUS_INSUFFICIENT_WORKSPACE, "needs");
        c.ws_bytes = 0;
        ng_reject(c, CAKE_STATUS_INSUFFICIENT_WORKSPACE, "workspace_bytes = 0");
        c.ws_bytes = need;
        c.ws = nullptr;
        ng_reject(c, CAKE_STATUS_INSUFFICIENT_WORKSPACE, "workspace is NULL");
        c.ws = slot(kWs);
        ng_accept(c);  // exactly what the query said
        c.desc.flags = CAKE_NORMGATE_DW_ACCUMULATE;
        ng_accept(c);
      }
    }
  }
  // "Plenty" of workspace (2^63 bytes or more) is plenty: compared unsigned, never negative.
  Ng c(NgEntry::kBackward);
  c.ws_bytes = SIZE_MAX;
  cake_handle_t h = rel::make_recording_handle(CAKE_ARCH_SM90);
  rel::reset_recording();
  const cake_status_t st = c.call(h);
  CHECK(st == CAKE_STATUS_SUCCESS, "workspace_bytes = SIZE_MAX: %s: %s", cake_status_string(st),
        cake_last_error_message());
  rel::free_handle(h);
}

// Every program of every table forced into every normgate entry, at tuned and general widths:
// accepted exactly when its family, op and width serve the call.
void test_ng_program_forcing(void **) {
  int count = 0;
  const cake::ArchTable *tables = cake::arch_tables(&count);
  int accepted = 0, refused = 0;
  for (int t = 0; t < count; ++t) {
    for (int i = 0; i < tables[t].program_count; ++i) {
      const cake_program_desc &prog = tables[t].programs[i];
      for (NgEntry e : kNgAll) {
        for (int32_t d : {64, 128, 256, 96}) {
          for (int32_t pkg : {0, 1}) {
            if (!rel::ng_backward_entry(e) && pkg == 1) continue;
            Ng c(e);
            c.desc.d = d;
            rel::set_raw(&c.desc.package, pkg);
            c.desc.program = prog.name;
            if (rel::ng_serves(prog, rel::ng_op_for(e, c.desc), d)) {
              ng_accept(c, tables[t].arch);
              ++accepted;
            } else {
              cake_handle_t h = rel::make_crashing_handle(tables[t].arch);
              ng_reject(c, CAKE_STATUS_PROGRAM_NOT_FOUND, prog.name, h);
              rel::free_handle(h);
              ++refused;
            }
          }
        }
      }
    }
  }
  // Names from another table, near misses, the empty name.
  for (const char *name : {"", "sm90", "sm90.", "sm100.ng_fwd_d128_short", "sm90.ng_fwd_d128_short ",
                           "SM90.NG_FWD_D128_SHORT", "ng_fwd_d128_short"}) {
    for (NgEntry e : kNgAll) {
      Ng c(e);
      c.desc.program = name;
      ng_reject(c, CAKE_STATUS_PROGRAM_NOT_FOUND, "desc->program");
    }
  }
  print_message("forced programs: %d accepted, %d refused\n", accepted, refused);
  CHECK(accepted > 0 && refused > 0, "forcing matrix is empty");
}

// Output structs of the queries: written up to the caller's struct_size, never past it.
void test_ng_info_sizes(void **) {
  for (NgEntry e : {NgEntry::kForwardQuery, NgEntry::kBackwardQuery}) {
    for (size_t size : {size_t(8), offsetof(cake_program_info, kernel), offsetof(cake_program_info, grid),
                        sizeof(cake_program_info), sizeof(cake_program_info) + 40}) {
      struct Big {
        cake_program_info info;
        unsigned char tail[64];
      } big;
      std::memset(&big, 0xA5, sizeof big);
      big.info.struct_size = size;
      cake_handle_t h = rel::make_recording_handle(CAKE_ARCH_SM90);
      cake_normgate_desc d;
      cake_normgate_desc_init(&d);
      d.rows = 1000;
      d.d = 128;
      const cake_status_t st = e == NgEntry::kForwardQuery ? cake_normgate_forward_query(h, &d, &big.info)
                                                           : cake_normgate_backward_query(h, &d, &big.info);
      CHECK(st == CAKE_STATUS_SUCCESS, "info size %zu: %s", size, cake_last_error_message());
      CHECK(big.info.struct_size == size, "struct_size rewritten to %zu", big.info.struct_size);
      const unsigned char *b = reinterpret_cast<const unsigned char *>(&big);
      const size_t written = std::min(size, sizeof(cake_program_info));
      for (size_t i = written; i < sizeof big; ++i) {
        if (b[i] != 0xA5) {
          CHECK(false, "info struct_size %zu: byte %zu written", size, i);
          break;
        }
      }
      if (size >= offsetof(cake_program_info, kernel)) {
        CHECK(std::strncmp(big.info.name, "sm90.ng_", 8) == 0, "name \"%.64s\"", big.info.name);
      }
      rel::free_handle(h);
    }
  }
}

// ---- swiglu_mxfp8 ----------------------------------------------------------------------

#define SKIP_WITHOUT_SWIGLU()                          \
  do {                                                 \
    if (!rel::have_swiglu()) {                         \
      print_message("SKIP: %s\n", REL_SWIGLU_ABSENT);  \
      skip();                                          \
    }                                                  \
  } while (0)

struct Sw {
  SwEntry entry;
  cake_swiglu_mxfp8_desc desc;
  const cake_swiglu_mxfp8_desc *desc_ptr;
  const void *in = slot(kIn), *grad = slot(kGrad);
  void *row_q = slot(kRowQ), *row_s = slot(kRowS), *col_q = slot(kColQ), *col_s = slot(kColS);
  int backward = 0;  // query and buffer sizes
  bool null_out = false;
  cake_program_info info;
  cake_swiglu_mxfp8_sizes sizes;

  explicit Sw(SwEntry e, int orientation = CAKE_MXFP8_BOTH) : entry(e), desc_ptr(&desc) {
    cake_swiglu_mxfp8_desc_init(&desc);
    desc.m = 256;
    desc.k = 512;
    rel::set_raw(&desc.orientation, orientation);
    cake_program_info_init(&info);
    cake_swiglu_mxfp8_sizes_init(&sizes);
  }
  bool bwd() const { return entry == SwEntry::kBackward || ((entry == SwEntry::kQuery || entry == SwEntry::kBufferSizes) && backward); }

  cake_status_t call(cake_handle_t h) {
    switch (entry) {
      case SwEntry::kForward: return cake_swiglu_mxfp8_forward(h, desc_ptr, in, row_q, row_s, col_q, col_s, nullptr);
      case SwEntry::kBackward:
        return cake_swiglu_mxfp8_backward(h, desc_ptr, in, grad, row_q, row_s, col_q, col_s, nullptr);
      case SwEntry::kQuery: return cake_swiglu_mxfp8_query(h, desc_ptr, backward, null_out ? nullptr : &info);
      default: return cake_swiglu_mxfp8_buffer_sizes(desc_ptr, backward, null_out ? nullptr : &sizes);
    }
  }
};

const char *sw_name(SwEntry e) {
  switch (e) {
    case SwEntry::kForward: return "cake_swiglu_mxfp8_forward";
    case SwEntry::kBackward: return "cake_swiglu_mxfp8_backward";
    case SwEntry::kQuery: return "cake_swiglu_mxfp8_query";
    default: return "cake_swiglu_mxfp8_buffer_sizes";
  }
}

const SwEntry kSwAll[] = {SwEntry::kForward, SwEntry::kBackward, SwEntry::kQuery, SwEntry::kBufferSizes};

void sw_reject(Sw &c, cake_status_t want, const char *needle, cake_handle_t h = nullptr) {
  const bool own = h == nullptr;
  if (own) h = rel::make_crashing_handle(CAKE_ARCH_SM90);
  fill_arena();
  const cake_program_info info_before = c.info;
  const cake_swiglu_mxfp8_sizes sizes_before = c.sizes;
  const cake_status_t got = c.call(h);
  CHECK(got == want && has(needle), "%s: want %s with \"%s\", got %s: \"%s\"", sw_name(c.entry),
        cake_status_string(want), needle, cake_status_string(got), cake_last_error_message());
  CHECK(arena_intact(), "%s: a rejected call wrote a buffer", sw_name(c.entry));
  CHECK(std::memcmp(&info_before, &c.info, sizeof info_before) == 0, "%s: rejected, info written", sw_name(c.entry));
  CHECK(std::memcmp(&sizes_before, &c.sizes, sizeof sizes_before) == 0, "%s: rejected, sizes written", sw_name(c.entry));
  if (own) rel::free_handle(h);
}

void sw_accept(Sw &c, cake_arch_t arch = CAKE_ARCH_SM90) {
  cake_handle_t h = rel::make_recording_handle(arch);
  rel::reset_recording();
  fill_arena();
  const cake_status_t got = c.call(h);
  CHECK(got == CAKE_STATUS_SUCCESS, "%s: want success, got %s: \"%s\"", sw_name(c.entry),
        cake_status_string(got), cake_last_error_message());
  CHECK(arena_intact(), "%s: the host wrote a buffer", sw_name(c.entry));
  const bool launching = c.entry == SwEntry::kForward || c.entry == SwEntry::kBackward;
  if (got == CAKE_STATUS_SUCCESS && launching) {
    CHECK(rel::launches().size() == 1, "%s: %zu launches", sw_name(c.entry), rel::launches().size());
    if (rel::launches().size() == 1) {
      const rel::Launch &l = rel::launches()[0];
      rel::SwPointers p;
      p.in = c.in, p.grad = c.grad, p.row_q = c.row_q, p.row_s = c.row_s, p.col_q = c.col_q, p.col_s = c.col_s;
      const std::string bad = rel::check_swiglu_launch(
          c.entry == SwEntry::kBackward, h, c.desc, p,
          {l.program, {l.grid[0], l.grid[1], l.grid[2]}, {l.block[0], l.block[1], l.block[2]}, l.smem,
           l.params, l.extra_used != 0});
      CHECK(bad.empty(), "%s: launch breaks a precondition: %s", sw_name(c.entry), bad.c_str());
    }
  } else {
    CHECK(rel::launches().empty(), "%s: launched", sw_name(c.entry));
  }
  rel::free_handle(h);
}

void test_sw_handles_desc_struct_size(void **) {
  SKIP_WITHOUT_SWIGLU();
  for (SwEntry e : kSwAll) {
    if (e != SwEntry::kBufferSizes) {
      Sw c(e);
      fill_arena();
      CHECK(c.call(nullptr) == CAKE_STATUS_INVALID_HANDLE && has("handle"), "%s: NULL handle: %s",
            sw_name(e), cake_last_error_message());
      cake_handle_t dead = rel::make_crashing_handle(CAKE_ARCH_SM90);
      dead->magic = 0;
      sw_reject(c, CAKE_STATUS_INVALID_HANDLE, "destroyed", dead);
      dead->magic = cake::kHandleMagic;
      rel::free_handle(dead);
    }
    {
      Sw c(e);
      c.desc_ptr = nullptr;
      sw_reject(c, CAKE_STATUS_INVALID_ARGUMENT, "desc");
    }
    for (size_t size : {size_t(0), size_t(8), offsetof(cake_swiglu_mxfp8_desc, variant) - 8}) {
      Sw c(e);
      c.desc.struct_size = size;
      sw_reject(c, CAKE_STATUS_INVALID_ARGUMENT, "desc->struct_size");
    }
    struct Newer {
      cake_swiglu_mxfp8_desc base;
      unsigned char tail[32];
    } n;
    for (size_t extra : {size_t(1), size_t(32)}) {
      Sw c(e);
      std::memset(&n, 0, sizeof n);
      n.base = c.desc;
      n.base.struct_size = sizeof(cake_swiglu_mxfp8_desc) + extra;
      n.tail[extra - 1] = 0x80;
      c.desc_ptr = &n.base;
      sw_reject(c, CAKE_STATUS_INVALID_ARGUMENT, "newer Cake");
      n.tail[extra - 1] = 0;
      sw_accept(c);
    }
  }
}

void test_sw_shapes(void **) {
  SKIP_WITHOUT_SWIGLU();
  for (SwEntry e : kSwAll) {
    for (int64_t v : {kI64Min, int64_t(-128), int64_t(0)}) {
      for (int which : {0, 1}) {
        Sw c(e);
        (which ? c.desc.k : c.desc.m) = v;
        sw_reject(c, CAKE_STATUS_INVALID_ARGUMENT, which ? "desc->k" : "desc->m");
      }
    }
    for (int64_t v : {int64_t(1), int64_t(31), int64_t(48), int64_t(127), int64_t(129), int64_t(200), kI64Max}) {
      for (int which : {0, 1}) {
        Sw c(e);
        (which ? c.desc.k : c.desc.m) = v;
        sw_reject(c, CAKE_STATUS_UNSUPPORTED_SHAPE, which ? "desc->k" : "desc->m");
      }
    }
    // Byte counts past int64: the input alone is 4*m*k bytes.
    for (auto mk : {std::pair<int64_t, int64_t>{int64_t(1) << 62, 128}, {128, int64_t(1) << 62},
                    {int64_t(1) << 31, int64_t(1) << 31}, {int64_t(1) << 40, int64_t(1) << 21}}) {
      Sw c(e);
      c.desc.m = mk.first;
      c.desc.k = mk.second;
      sw_reject(c, CAKE_STATUS_INVALID_ARGUMENT, "overflow");
    }
    for (int32_t o : {kI32Min, -1, 0, 4, 7, kI32Max}) {
      Sw c(e);
      rel::set_raw(&c.desc.orientation, o);
      sw_reject(c, CAKE_STATUS_INVALID_ARGUMENT, "desc->orientation");
    }
    for (int64_t m : {int64_t(128), int64_t(384)}) {
      for (int64_t k : {int64_t(128), int64_t(640)}) {
        for (int o : {1, 2, 3}) {
          Sw c(e, o);
          c.desc.m = m;
          c.desc.k = k;
          sw_accept(c);
        }
      }
    }
  }
  for (SwEntry e : {SwEntry::kQuery, SwEntry::kBufferSizes}) {
    for (int b : {kI32Min, -1, 2, kI32Max}) {
      Sw c(e);
      c.backward = b;
      sw_reject(c, CAKE_STATUS_INVALID_ARGUMENT, "backward");
    }
    Sw c(e);
    c.null_out = true;
    sw_reject(c, CAKE_STATUS_INVALID_ARGUMENT, e == SwEntry::kQuery ? "info" : "sizes");
    Sw s(e);
    if (e == SwEntry::kQuery) s.info.struct_size = 4;
    else s.sizes.struct_size = 4;
    sw_reject(s, CAKE_STATUS_INVALID_ARGUMENT, "struct_size");
  }
}

void test_sw_pointers(void **) {
  SKIP_WITHOUT_SWIGLU();
  struct P {
    const char *name;
    int bit;  // 0 always, 1 rowwise, 2 colwise, 4 backward only
    Slot s;
  };
  const P ptrs[] = {{"in", 0, kIn},       {"grad", 4, kGrad},   {"row_q", 1, kRowQ},
                    {"row_s", 1, kRowS}, {"col_q", 2, kColQ}, {"col_s", 2, kColS}};
  for (SwEntry e : {SwEntry::kForward, SwEntry::kBackward}) {
    const bool bwd = e == SwEntry::kBackward;
    for (int o : {1, 2, 3}) {
      for (const P &p : ptrs) {
        const bool used = p.bit == 0 || (p.bit == 4 ? bwd : (o & p.bit) != 0);
        for (int off : {-1, 1, 2, 4, 8}) {  // -1: NULL
          Sw c(e, o);
          void *v = off < 0 ? nullptr : static_cast<void *>(slot(p.s, off));
          switch (p.s) {
            case kIn: c.in = v; break;
            case kGrad: c.grad = v; break;
            case kRowQ: c.row_q = v; break;
            case kRowS: c.row_s = v; break;
            case kColQ: c.col_q = v; break;
            default: c.col_s = v; break;
          }
          if (!used) {
            sw_accept(c);  // a disabled orientation's pointers (and grad forward) are ignored
            continue;
          }
          char needle[48];
          std::snprintf(needle, sizeof needle, off < 0 ? "%s: must not be NULL" : "%s = ", p.name);
          sw_reject(c, off < 0 ? CAKE_STATUS_INVALID_ARGUMENT : CAKE_STATUS_MISALIGNED, needle);
        }
      }
    }
  }
}

void test_sw_sizes_and_forcing(void **) {
  SKIP_WITHOUT_SWIGLU();
  // The spec's worked shape: M=256, K=512 forward; and its backward.
  for (int b : {0, 1}) {
    Sw c(SwEntry::kBufferSizes);
    c.backward = b;
    cake_handle_t h = nullptr;
    CHECK(c.call(h) == CAKE_STATUS_SUCCESS, "buffer sizes: %s", cake_last_error_message());
    const int64_t O = b ? 1024 : 512;
    CHECK(c.sizes.out_cols == O, "out_cols %lld", (long long)c.sizes.out_cols);
    CHECK(c.sizes.q_bytes == size_t(256 * O), "q_bytes %zu", c.sizes.q_bytes);
    CHECK(c.sizes.row_s_bytes == size_t(256 * (O / 32)), "row_s_bytes %zu", c.sizes.row_s_bytes);
    CHECK(c.sizes.col_s_bytes == size_t(O * 8), "col_s_bytes %zu", c.sizes.col_s_bytes);
  }
  {
    // The smallest shape (with multiples of 128 the 128x4 scale tiles are never padded).
    Sw c(SwEntry::kBufferSizes);
    c.desc.m = 128;
    c.desc.k = 128;
    CHECK(c.call(nullptr) == CAKE_STATUS_SUCCESS, "%s", cake_last_error_message());
    CHECK(c.sizes.row_s_bytes == 128 * 4 && c.sizes.col_s_bytes == 128 * 4, "padded %zu %zu",
          c.sizes.row_s_bytes, c.sizes.col_s_bytes);
  }
  int count = 0, accepted = 0, refused = 0;
  const cake::ArchTable *tables = cake::arch_tables(&count);
  for (int t = 0; t < count; ++t) {
    for (int i = 0; i < tables[t].program_count; ++i) {
      const cake_program_desc &prog = tables[t].programs[i];
      for (SwEntry e : {SwEntry::kForward, SwEntry::kBackward, SwEntry::kQuery}) {
        for (int o : {1, 2, 3}) {
          for (int b : {0, 1}) {
            if (e != SwEntry::kQuery && b == 1) continue;
            Sw c(e, o);
            c.backward = b;
            c.desc.program = prog.name;
            const int form = rel::sw_form(c.bwd(), o);
            if (prog.family == CAKE_FAMILY_SWIGLU_MXFP8 && prog.op == form) {
              sw_accept(c, tables[t].arch);
              ++accepted;
            } else {
              cake_handle_t h = rel::make_crashing_handle(tables[t].arch);
              sw_reject(c, CAKE_STATUS_PROGRAM_NOT_FOUND, prog.name, h);
              rel::free_handle(h);
              ++refused;
            }
          }
        }
      }
    }
  }
  print_message("forced swiglu programs: %d accepted, %d refused\n", accepted, refused);
  // More CTA tiles than the kernel counts in 32 bits (m = 2^22, k = 2^21: 2^45 input bytes,
  // fine for 64-bit byte counts): refused in validation, never an internal error.
  {
    Sw c(SwEntry::kForward, 1);
    c.desc.m = int64_t(1) << 22;
    c.desc.k = int64_t(1) << 21;
    cake_handle_t h = rel::make_recording_handle(CAKE_ARCH_SM90);
    rel::reset_recording();
    const cake_status_t st = c.call(h);
    CHECK(st == CAKE_STATUS_UNSUPPORTED_SHAPE, "m=2^22 k=2^21: %s: %s", cake_status_string(st),
          cake_last_error_message());
    rel::free_handle(h);
  }
}

// ---- handles, options, listing, init functions, tables ----------------------------------

void test_create_ex_options(void **) {
  // This process has no driver (main sets CAKE_LIBCUDA): options that pass validation end at
  // DRIVER_UNAVAILABLE, so each invalid one is told apart by status and message.
  auto create = [](const cake_handle_options *o, cake_status_t want, const char *needle) {
    cake_handle_t h = reinterpret_cast<cake_handle_t>(uintptr_t{0x1});
    const cake_status_t got = cake_create_ex(&h, 0, o);
    CHECK(got == want && has(needle), "create_ex: want %s with \"%s\", got %s: \"%s\"",
          cake_status_string(want), needle, cake_status_string(got), cake_last_error_message());
    CHECK(h == nullptr, "create_ex failed without setting *handle to NULL");
  };
  cake_handle_options o;
  cake_handle_options_init(&o);
  create(&o, CAKE_STATUS_DRIVER_UNAVAILABLE, "driver");
  create(nullptr, CAKE_STATUS_DRIVER_UNAVAILABLE, "driver");
  {
    const cake_status_t got = cake_create_ex(nullptr, 0, &o);
    CHECK(got == CAKE_STATUS_INVALID_ARGUMENT && has("handle"), "NULL handle: %s", cake_last_error_message());
  }
  for (size_t size : {size_t(0), size_t(8), size_t(12), sizeof o - 1}) {
    cake_handle_options s = o;
    s.struct_size = size;
    create(&s, CAKE_STATUS_INVALID_ARGUMENT, "options->struct_size");
  }
  struct Newer {
    cake_handle_options base;
    unsigned char tail[16];
  } n;
  std::memset(&n, 0, sizeof n);
  n.base = o;
  n.base.struct_size = sizeof n;
  n.tail[15] = 1;
  create(&n.base, CAKE_STATUS_INVALID_ARGUMENT, "newer Cake");
  n.tail[15] = 0;
  create(&n.base, CAKE_STATUS_DRIVER_UNAVAILABLE, "driver");
  for (int32_t t : {kI32Min, -1, 1, 89, 91, 99, 101, 102, 104, 108, 120, kI32Max}) {
    cake_handle_options s = o;
    rel::set_raw(&s.table, t);
    char needle[48];
    std::snprintf(needle, sizeof needle, "options.table = %d", t);
    create(&s, CAKE_STATUS_INVALID_ARGUMENT, needle);
  }
  for (int32_t t : {0, 90, 100, 103, 107}) {
    cake_handle_options s = o;
    rel::set_raw(&s.table, t);
    create(&s, CAKE_STATUS_DRIVER_UNAVAILABLE, "driver");
  }
  for (int32_t sms : {kI32Min, -1}) {
    cake_handle_options s = o;
    s.sm_count = sms;
    create(&s, CAKE_STATUS_INVALID_ARGUMENT, "options.sm_count");
  }
  for (int32_t sms : {0, 1, kI32Max}) {
    cake_handle_options s = o;
    s.sm_count = sms;
    create(&s, CAKE_STATUS_DRIVER_UNAVAILABLE, "driver");
  }
  // An ordinal is judged by the driver, which is not here: the driver's status comes first.
  for (int ordinal : {-1, kI32Max}) {
    cake_handle_t h = nullptr;
    CHECK(cake_create(&h, ordinal) == CAKE_STATUS_DRIVER_UNAVAILABLE && h == nullptr, "ordinal %d: %s",
          ordinal, cake_last_error_message());
  }
}

void test_device_and_program_queries(void **) {
  for (cake_arch_t arch : {CAKE_ARCH_SM90, CAKE_ARCH_SM100, CAKE_ARCH_SM103, CAKE_ARCH_SM107}) {
    cake_handle_t h = rel::make_crashing_handle(arch);
    const int n = cake_program_count(h);
    CHECK(n == h->table->program_count && n > 0, "program count %d", n);
    for (int i : {kI32Min, -1, n, n + 1, kI32Max}) CHECK(cake_program_name(h, i) == nullptr, "index %d", i);
    for (int i = 0; i < n; ++i) {
      const char *name = cake_program_name(h, i);
      CHECK(name != nullptr && std::strncmp(name, h->table->tag, std::strlen(h->table->tag)) == 0, "name %d", i);
    }
    // device query: output struct sizes.
    CHECK(cake_device_query(h, nullptr) == CAKE_STATUS_INVALID_ARGUMENT && has("info"), "NULL info");
    for (size_t size : {size_t(8), offsetof(cake_device_info, sm_count), sizeof(cake_device_info),
                        sizeof(cake_device_info) + 24}) {
      struct Big {
        cake_device_info info;
        unsigned char tail[32];
      } big;
      std::memset(&big, 0xA5, sizeof big);
      big.info.struct_size = size;
      CHECK(cake_device_query(h, &big.info) == CAKE_STATUS_SUCCESS, "device query size %zu: %s", size,
            cake_last_error_message());
      CHECK(big.info.struct_size == size, "struct_size rewritten");
      const unsigned char *b = reinterpret_cast<const unsigned char *>(&big);
      for (size_t i = std::min(size, sizeof(cake_device_info)); i < sizeof big; ++i) {
        if (b[i] != 0xA5) {
          CHECK(false, "device info size %zu: byte %zu written", size, i);
          break;
        }
      }
      if (size >= sizeof(cake_device_info)) {
        CHECK(big.info.table == arch && big.info.program_count == n, "table %d programs %d",
              (int)big.info.table, big.info.program_count);
      }
    }
    for (size_t size : {size_t(0), size_t(4)}) {
      cake_device_info info;
      std::memset(&info, 0xA5, sizeof info);
      info.struct_size = size;
      CHECK(cake_device_query(h, &info) == CAKE_STATUS_INVALID_ARGUMENT && has("info->struct_size"),
            "info size %zu: %s", size, cake_last_error_message());
    }
    h->magic = 0;
    CHECK(cake_program_count(h) == -1 && cake_program_name(h, 0) == nullptr, "dead handle listing");
    cake_device_info info;
    cake_device_info_init(&info);
    CHECK(cake_device_query(h, &info) == CAKE_STATUS_INVALID_HANDLE, "dead handle device query");
    CHECK(cake_destroy(h) == CAKE_STATUS_INVALID_HANDLE && has("destroyed"), "destroy of a dead handle: %s",
          cake_last_error_message());
    h->magic = cake::kHandleMagic;
    rel::free_handle(h);
  }
}

void test_init_functions(void **) {
  CHECK(cake_handle_options_init(nullptr) == CAKE_STATUS_INVALID_ARGUMENT && has("options"), "options init");
  CHECK(cake_device_info_init(nullptr) == CAKE_STATUS_INVALID_ARGUMENT && has("info"), "device info init");
  CHECK(cake_program_info_init(nullptr) == CAKE_STATUS_INVALID_ARGUMENT && has("info"), "program info init");
  CHECK(cake_normgate_desc_init(nullptr) == CAKE_STATUS_INVALID_ARGUMENT && has("desc"), "desc init");
  for (int s : {-1, 12, 1000, kI32Min}) {
    CHECK(std::strcmp(cake_status_string(static_cast<cake_status_t>(s)), "CAKE_STATUS_UNKNOWN") == 0,
          "status %d", s);
  }
  if (rel::have_swiglu()) {
    CHECK(cake_swiglu_mxfp8_desc_init(nullptr) == CAKE_STATUS_INVALID_ARGUMENT && has("desc"), "swiglu desc init");
    CHECK(cake_swiglu_mxfp8_sizes_init(nullptr) == CAKE_STATUS_INVALID_ARGUMENT && has("sizes"), "sizes init");
    cake_swiglu_mxfp8_desc d;
    std::memset(&d, 0xEE, sizeof d);
    CHECK(cake_swiglu_mxfp8_desc_init(&d) == CAKE_STATUS_SUCCESS && d.struct_size == sizeof d &&
              d.orientation == CAKE_MXFP8_ROWWISE && d.program == nullptr,
          "swiglu desc defaults");
  } else {
    print_message("swiglu init functions not checked: %s\n", REL_SWIGLU_ABSENT);
  }
}

void test_tables_api(void **) {
  if (!rel::have_tables()) {
    print_message("SKIP: the public table API (cake_table_*) is not in this libcake yet\n");
    skip();
  }
  CHECK(cake_table_program_init(nullptr) == CAKE_STATUS_INVALID_ARGUMENT && has("program"), "program init");
  CHECK(cake_table_route_init(nullptr) == CAKE_STATUS_INVALID_ARGUMENT && has("route"), "route init");
  int32_t np = -7, nr = -7;
  for (int32_t t : {0, 1, 89, 91, 108, -1}) {
    cake_arch_t a;
    rel::set_raw(&a, t);
    CHECK(cake_table_counts(a, &np, &nr) == CAKE_STATUS_INVALID_ARGUMENT && has("table"), "counts %d", t);
    CHECK(np == -7 && nr == -7, "counts written on failure");
  }
  CHECK(cake_table_counts(CAKE_ARCH_SM90, &np, nullptr) == CAKE_STATUS_SUCCESS && np > 0, "counts");
  cake_table_program p;
  cake_table_program_init(&p);
  for (int32_t i : {kI32Min, -1, np, kI32Max}) {
    CHECK(cake_table_program_get(CAKE_ARCH_SM90, i, &p) == CAKE_STATUS_INVALID_ARGUMENT && has("index"),
          "program_get %d: %s", i, cake_last_error_message());
  }
  CHECK(cake_table_program_get(CAKE_ARCH_SM90, 0, nullptr) == CAKE_STATUS_INVALID_ARGUMENT, "NULL program");
  for (size_t size : {size_t(0), size_t(4)}) {
    p.struct_size = size;
    CHECK(cake_table_program_get(CAKE_ARCH_SM90, 0, &p) == CAKE_STATUS_INVALID_ARGUMENT &&
              has("struct_size"),
          "program struct_size %zu: %s", size, cake_last_error_message());
  }
  struct Big {
    cake_table_program p;
    unsigned char tail[16];
  } big;
  std::memset(&big, 0xA5, sizeof big);
  big.p.struct_size = offsetof(cake_table_program, kernel);
  CHECK(cake_table_program_get(CAKE_ARCH_SM90, 0, &big.p) == CAKE_STATUS_SUCCESS, "short program struct");
  const unsigned char *b = reinterpret_cast<const unsigned char *>(&big);
  for (size_t i = offsetof(cake_table_program, kernel); i < sizeof big; ++i) {
    if (b[i] != 0xA5) {
      CHECK(false, "table program: byte %zu written past struct_size", i);
      break;
    }
  }
}

int check_group(void **) { return 0; }

}  // namespace

// Every case counts its failures and goes on; each test fails at its end if any did.
#define REL_TEST(fn)                     \
  static void run_##fn(void **state) {   \
    const int before = g_failures;       \
    fn(state);                           \
    if (g_failures != before) fail();    \
  }
REL_TEST(test_ng_handles)
REL_TEST(test_ng_desc_null_and_struct_size)
REL_TEST(test_ng_shape_rules)
REL_TEST(test_ng_strides)
REL_TEST(test_ng_enums_and_flags)
REL_TEST(test_ng_pointers)
REL_TEST(test_ng_workspace)
REL_TEST(test_ng_program_forcing)
REL_TEST(test_ng_info_sizes)
REL_TEST(test_sw_handles_desc_struct_size)
REL_TEST(test_sw_shapes)
REL_TEST(test_sw_pointers)
REL_TEST(test_sw_sizes_and_forcing)
REL_TEST(test_create_ex_options)
REL_TEST(test_device_and_program_queries)
REL_TEST(test_init_functions)
REL_TEST(test_tables_api)

int main(void) {
  setenv("CAKE_LIBCUDA", "/nonexistent/libcuda-for-the-argument-matrix.so.1", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(run_test_ng_handles),
      cmocka_unit_test(run_test_ng_desc_null_and_struct_size),
      cmocka_unit_test(run_test_ng_shape_rules),
      cmocka_unit_test(run_test_ng_strides),
      cmocka_unit_test(run_test_ng_enums_and_flags),
      cmocka_unit_test(run_test_ng_pointers),
      cmocka_unit_test(run_test_ng_workspace),
      cmocka_unit_test(run_test_ng_program_forcing),
      cmocka_unit_test(run_test_ng_info_sizes),
      cmocka_unit_test(run_test_sw_handles_desc_struct_size),
      cmocka_unit_test(run_test_sw_shapes),
      cmocka_unit_test(run_test_sw_pointers),
      cmocka_unit_test(run_test_sw_sizes_and_forcing),
      cmocka_unit_test(run_test_create_ex_options),
      cmocka_unit_test(run_test_device_and_program_queries),
      cmocka_unit_test(run_test_init_functions),
      cmocka_unit_test(run_test_tables_api),
  };
  return cmocka_run_group_tests(tests, check_group, check_group);
}
