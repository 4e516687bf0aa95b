// Grouped SwiGLU on the GPU (docs/spec/swiglu-grouped.md), both families: every grouped program
// of every table forced (the Blackwell and Rubin tables through their sm_90 cross-check images),
// all six forms, both FP8 scale rules, byte-exact over whole poisoned buffers against the grouped
// host model driven by the device's measured sigmoid table (the bytes the spec leaves unwritten
// keep the poison), expert sizes 0, 1, 31, 33, 127, 129 and random ones, up to 256 experts;
// every expert's slices bit-identical to the ungrouped call of its rows (FP8 blockwise: every
// expert; MXFP8: the experts whose rows are a multiple of 32); one CUDA graph per family
// captured once and replayed with new offsets each time, every replay against the model;
// offsets that decrease or pass T, and the status word; a refused call writes nothing. Skips
// without a GPU.
#include <cuda_runtime.h>

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu_common.h"
#include "swiglu_gpu_common.h"
#include "swiglu_fp8_ref.h"
#include "swiglu_grouped_ref.h"
#include "swiglu_mxfp8_ref.h"
#include "swiglu_sigmoid_table.cuh"

using cake_test::DeviceBuffer;

namespace {

using cake_swiglu_gpu::g_cross;
using cake_swiglu_gpu::g_handle;
using cake_swiglu_gpu::g_table;
using cake_swiglu_gpu::setup;
using cake_swiglu_gpu::teardown;
using cake_swiglu_gpu::test_sigmoid_table;

constexpr uint8_t kPoison = 0xa5;

std::vector<cake_handle_t> handles() {
  std::vector<cake_handle_t> h = {g_handle};
  h.insert(h.end(), g_cross.begin(), g_cross.end());
  return h;
}

// One grouped problem: T rows, K, the experts' end offsets.
struct Problem {
  int64_t T, K;
  std::vector<int32_t> offsets;
  int64_t E() const { return (int64_t)offsets.size(); }
};

// The device buffers of a problem, sized for the backward (the larger) of both orientations.
struct Device {
  DeviceBuffer<uint16_t> in, grad;
  DeviceBuffer<int32_t> offsets, status;
  DeviceBuffer<uint8_t> row_q, row_s, col_q, col_s;
  Device(const Problem &p, const cake_swiglu_grouped_sizes &s)
      : in(size_t(p.T) * 2 * p.K, 0), grad(size_t(p.T) * p.K, 0), offsets(p.offsets.size(), 0),
        status(1, 0), row_q(s.q_bytes), row_s(s.row_s_bytes), col_q(s.q_bytes),
        col_s(s.col_s_bytes) {}
  void poison() {
    for (DeviceBuffer<uint8_t> *b : {&row_q, &row_s, &col_q, &col_s}) b->poison(kPoison);
    status.poison(0x7f);
  }
};

struct Host {
  std::vector<uint8_t> row_q, row_s, col_q, col_s;
  int32_t status = 0;
};

template <class T>
const T *ptr(const std::vector<T> &v) {
  return v.empty() ? nullptr : v.data();
}

// A family's grouped calls (MXFP8, FP8 blockwise): one code path drives both.
struct Mxfp8 {
  using Desc = cake_swiglu_mxfp8_grouped_desc;
  static constexpr auto init = cake_swiglu_mxfp8_grouped_desc_init;
  static constexpr auto buffer_sizes = cake_swiglu_mxfp8_grouped_buffer_sizes;
  static constexpr auto forward = cake_swiglu_mxfp8_grouped_forward;
  static constexpr auto backward = cake_swiglu_mxfp8_grouped_backward;
  static constexpr auto query = cake_swiglu_mxfp8_grouped_query;
};
struct Fp8 {
  using Desc = cake_swiglu_fp8_grouped_desc;
  static constexpr auto init = cake_swiglu_fp8_grouped_desc_init;
  static constexpr auto buffer_sizes = cake_swiglu_fp8_grouped_buffer_sizes;
  static constexpr auto forward = cake_swiglu_fp8_grouped_forward;
  static constexpr auto backward = cake_swiglu_fp8_grouped_backward;
  static constexpr auto query = cake_swiglu_fp8_grouped_query;
};

// f(Mxfp8{}) or f(Fp8{}).
template <class F>
auto with_family(bool mxfp8, F f) {
  return mxfp8 ? f(Mxfp8{}) : f(Fp8{});
}

// The descriptor of `form` (FP8 blockwise: with the scale rule; MXFP8 has none).
template <class Fam>
typename Fam::Desc desc_of(const Problem &p, int form, int rule, const char *program) {
  typename Fam::Desc d;
  Fam::init(&d);
  d.tokens = p.T;
  d.k = p.K;
  d.experts = (int32_t)p.E();
  d.orientation = static_cast<cake_mxfp8_orientation_t>(form % 3 + 1);
  if constexpr (std::is_same_v<Fam, Fp8>) d.scale_rule = static_cast<cake_fp8_scale_rule_t>(rule);
  d.program = program;
  return d;
}

cake_swiglu_grouped_sizes sizes_of(const Problem &p, bool mxfp8, int form, int backward) {
  cake_swiglu_grouped_sizes s;
  cake_swiglu_grouped_sizes_init(&s);
  const cake_status_t st = with_family(mxfp8, [&](auto fam) {
    using Fam = decltype(fam);
    const typename Fam::Desc d = desc_of<Fam>(p, form, 0, nullptr);
    return Fam::buffer_sizes(&d, backward, &s);
  });
  CAKE_OK(st);
  return s;
}

// The backward's sizes (the larger), which every form fits.
cake_swiglu_grouped_sizes sizes_of(const Problem &p, bool mxfp8) {
  return sizes_of(p, mxfp8, 0, 1);
}

// The problem's inputs and offsets into dev.
void upload(Device &dev, const Problem &p, const std::vector<uint16_t> &in,
            const std::vector<uint16_t> &grad) {
  dev.in.upload(in);
  dev.grad.upload(grad);
  dev.offsets.upload(p.offsets);
}

// The call of `form` (poisoned first) on `stream`; nothing synchronised or copied.
cake_status_t launch(cake_handle_t h, Device &dev, const Problem &p, int form, int rule,
                     bool mxfp8, const char *program, cudaStream_t stream) {
  const bool bwd = form >= 3;
  return with_family(mxfp8, [&](auto fam) {
    using Fam = decltype(fam);
    const typename Fam::Desc d = desc_of<Fam>(p, form, rule, program);
    return bwd ? Fam::backward(h, &d, dev.in.ptr, dev.grad.ptr, dev.offsets.ptr, dev.row_q.ptr,
                               dev.row_s.ptr, dev.col_q.ptr, dev.col_s.ptr, dev.status.ptr, stream)
               : Fam::forward(h, &d, dev.in.ptr, dev.offsets.ptr, dev.row_q.ptr, dev.row_s.ptr,
                              dev.col_q.ptr, dev.col_s.ptr, dev.status.ptr, stream);
  });
}

// The bytes of the form's buffers, as many as the form's sizes say (the buffers are the
// backward's, so a forward's tail bytes are the poison and not compared).
Host download(Device &dev, const Problem &p, int form, bool mxfp8) {
  const cake_swiglu_grouped_sizes s = sizes_of(p, mxfp8, form, form >= 3);
  Host h;
  auto get = [](DeviceBuffer<uint8_t> &b, size_t n) {
    std::vector<uint8_t> v = b.download();
    v.resize(n);
    return v;
  };
  if (form % 3 != 1) {
    h.row_q = get(dev.row_q, s.q_bytes);
    h.row_s = get(dev.row_s, s.row_s_bytes);
  }
  if (form % 3 != 0) {
    h.col_q = get(dev.col_q, s.q_bytes);
    h.col_s = get(dev.col_s, s.col_s_bytes);
  }
  h.status = dev.status.download()[0];
  return h;
}

cake_ref::GroupedOut model(const Problem &p, const std::vector<uint16_t> &in,
                           const std::vector<uint16_t> &grad, int form, int rule, bool mxfp8) {
  cake_ref::GroupedOut want;
  if (mxfp8) {
    cake_ref::swiglu_mxfp8_grouped_model(form, in.data(), grad.data(), p.T, p.K, p.offsets,
                                         g_table.data(), kPoison, &want);
  } else {
    cake_ref::swiglu_fp8_grouped_model(form, in.data(), grad.data(), p.T, p.K, p.offsets,
                                       g_table.data(), rule, kPoison, &want);
  }
  return want;
}

void expect_model(const cake_ref::GroupedOut &want, const Host &got, const Problem &p, int form,
                  const std::string &label) {
  const cake_ref::GroupedCompare r = cake_ref::grouped_compare(
      form, want, ptr(got.row_q), ptr(got.row_s), ptr(got.col_q), ptr(got.col_s));
  const int32_t want_status = cake_ref::grouped_rows(p.offsets, p.T).status;
  if (!r.ok || got.status != want_status) {
    print_error("%s form %d T=%lld K=%lld E=%lld: status %d (want %d); %lld of %lld bytes "
                "differ\n%s",
                label.c_str(), form, (long long)p.T, (long long)p.K, (long long)p.E(),
                got.status, want_status, (long long)r.differing, (long long)r.bytes,
                r.detail.c_str());
    fail();
  }
}

// Every form (both rules for FP8 blockwise): the routed call and every grouped program of every
// table forced, against the model. Returns the runs.
int check_problem(const Problem &p, bool mxfp8, bool cross) {
  const std::vector<uint16_t> in = cake_swiglu_gpu::random_input(p.T, 2 * p.K, 40, 32, false);
  const std::vector<uint16_t> grad = cake_swiglu_gpu::random_input(p.T, p.K, 20, 32, false);
  Device dev(p, sizes_of(p, mxfp8));
  upload(dev, p, in, grad);
  int runs = 0;
  for (int rule = 0; rule < (mxfp8 ? 1 : 2); ++rule) {
    for (int form = 0; form < 6; ++form) {
      const cake_ref::GroupedOut want = model(p, in, grad, form, rule, mxfp8);
      dev.poison();
      CAKE_OK(launch(g_handle, dev, p, form, rule, mxfp8, nullptr, nullptr));
      CUDA_OK(cudaDeviceSynchronize());
      expect_model(want, download(dev, p, form, mxfp8), p, form, "routed");
      ++runs;
      for (cake_handle_t h : cross ? handles() : std::vector<cake_handle_t>{g_handle}) {
        for (int i = 0; i < cake_program_count(h); ++i) {
          const char *name = cake_program_name(h, i);
          cake_program_info info;
          cake_program_info_init(&info);
          const cake_status_t q = with_family(mxfp8, [&](auto fam) {
            using Fam = decltype(fam);
            const typename Fam::Desc d = desc_of<Fam>(p, form, rule, name);
            return Fam::query(h, &d, form >= 3, &info);
          });
          if (q != CAKE_STATUS_SUCCESS) continue;
          dev.poison();
          CAKE_OK(launch(h, dev, p, form, rule, mxfp8, name, nullptr));
          CUDA_OK(cudaDeviceSynchronize());
          expect_model(want, download(dev, p, form, mxfp8), p, form,
                       std::string(name) + " rule " + std::to_string(rule));
          ++runs;
        }
      }
    }
  }
  return runs;
}

// k_unit: the family's K multiple (MXFP8 32, FP8 blockwise 128). Token counts that leave col_q
// rows unaligned (4099, 2053), many experts with no rows (256 experts on 2053 tokens), the
// spec's MXFP8 example, one expert.
std::vector<Problem> problems(int64_t k_unit) {
  return {
      {1000, 256, cake_ref::grouped_test_offsets(1000, 8, 1)},
      {4099, 2 * k_unit, cake_ref::grouped_test_offsets(4099, 64, 2)},
      {2053, k_unit, cake_ref::grouped_test_offsets(2053, 256, 3)},
      {256, 2 * k_unit, {33, 33, 200}},
      {512, 3 * k_unit, {512}},
  };
}

// The routed ungrouped call of n rows at ein (egrad), its form's buffers copied back.
Host ungrouped(bool mxfp8, int form, int64_t n, int64_t K, const uint16_t *ein,
               const uint16_t *egrad) {
  const bool bwd = form >= 3;
  auto run = [&](auto desc, auto sizes, auto buffer_sizes, auto forward, auto backward) {
    desc.m = n;
    desc.k = K;
    desc.orientation = static_cast<cake_mxfp8_orientation_t>(form % 3 + 1);
    CAKE_OK(buffer_sizes(&desc, bwd, &sizes));
    DeviceBuffer<uint8_t> rq(sizes.q_bytes), rs(sizes.row_s_bytes), cq(sizes.q_bytes),
        cs(sizes.col_s_bytes);
    CAKE_OK(bwd ? backward(g_handle, &desc, ein, egrad, rq.ptr, rs.ptr, cq.ptr, cs.ptr, nullptr)
                : forward(g_handle, &desc, ein, rq.ptr, rs.ptr, cq.ptr, cs.ptr, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    Host h;
    if (form % 3 != 1) {
      h.row_q = rq.download();
      h.row_s = rs.download();
    }
    if (form % 3 != 0) {
      h.col_q = cq.download();
      h.col_s = cs.download();
    }
    return h;
  };
  if (mxfp8) {
    cake_swiglu_mxfp8_desc d;
    cake_swiglu_mxfp8_desc_init(&d);
    cake_swiglu_mxfp8_sizes s;
    cake_swiglu_mxfp8_sizes_init(&s);
    return run(d, s, cake_swiglu_mxfp8_buffer_sizes, cake_swiglu_mxfp8_forward,
               cake_swiglu_mxfp8_backward);
  }
  cake_swiglu_fp8_desc d;
  cake_swiglu_fp8_desc_init(&d);
  cake_swiglu_fp8_sizes s;
  cake_swiglu_fp8_sizes_init(&s);
  return run(d, s, cake_swiglu_fp8_buffer_sizes, cake_swiglu_fp8_forward,
             cake_swiglu_fp8_backward);
}

// Whether expert e's slices of the grouped buffers are the ungrouped call's bytes (spec,
// "Layouts": the offsets of each family's slices).
bool slices_equal(bool mxfp8, int form, const Problem &p, const cake_ref::GroupRows &g, int64_t e,
                  const Host &grouped, const Host &u) {
  const int64_t O = form >= 3 ? 2 * p.K : p.K, n = g.rows[e], c0 = g.start[e], p0 = g.pad[e];
  auto same = [](const std::vector<uint8_t> &a, const std::vector<uint8_t> &b, int64_t at) {
    return std::memcmp(a.data(), b.data() + at, a.size()) == 0;
  };
  bool ok = true;
  if (form % 3 != 1) {
    ok &= same(u.row_q, grouped.row_q, c0 * O);
    ok &= same(u.row_s, grouped.row_s, mxfp8 ? p0 * ((O / 32 + 3) / 4 * 4) : 4 * p0 * (O / 128));
  }
  if (form % 3 != 0) {
    if (mxfp8) {  // col_q [O, T]: the expert's columns
      for (int64_t o = 0; o < O; ++o) {
        ok &= std::memcmp(u.col_q.data() + o * n, grouped.col_q.data() + o * p.T + c0, n) == 0;
      }
      ok &= same(u.col_s, grouped.col_s, (O + 127) / 128 * 128 * p0 / 32);
    } else {
      ok &= same(u.col_q, grouped.col_q, c0 * O);
      ok &= same(u.col_s, grouped.col_s, 4 * (p0 / 128) * O);
    }
  }
  return ok;
}

}  // namespace

static void test_every_program(void **) {
  SKIP_WITHOUT_GPU();
  assert_int_equal(g_table.size(), 65536);
  int runs = 0;
  for (int fam = 0; fam < 2; ++fam) {
    for (const Problem &p : problems(fam == 0 ? 32 : 128)) runs += check_problem(p, fam == 0, true);
  }
  print_message("%d grouped runs byte-exact (routed and every grouped program forced)\n", runs);
  // Per problem, family, form and rule: the routed call and two grouped programs per table (the
  // plain one and the variant one).
  assert_int_equal(runs, 5 * 6 * (1 + 2) * (1 + 2 * (1 + (int)g_cross.size())));
}


// Every expert's slices against the ungrouped call of its rows (in + 2K c[e-1]).
static void test_bit_identical_to_ungrouped(void **) {
  SKIP_WITHOUT_GPU();
  for (int fam = 0; fam < 2; ++fam) {
    const bool mxfp8 = fam == 0;
    // MXFP8: three experts of multiples of 32 rows (the ungrouped call's rule), two that are
    // not, an empty one.
    const Problem p = mxfp8 ? Problem{1024, 256, {96, 96, 352, 385, 640, 1024}}
                            : Problem{1500, 256, cake_ref::grouped_test_offsets(1500, 10, 4)};
    const std::vector<uint16_t> in = cake_swiglu_gpu::random_input(p.T, 2 * p.K, 30, 32, false);
    const std::vector<uint16_t> grad = cake_swiglu_gpu::random_input(p.T, p.K, 10, 32, false);
    Device dev(p, sizes_of(p, mxfp8));
    upload(dev, p, in, grad);
    const cake_ref::GroupRows g = cake_ref::grouped_rows(p.offsets, p.T);
    int slices = 0;
    for (int form = 0; form < 6; ++form) {
      dev.poison();
      CAKE_OK(launch(g_handle, dev, p, form, 0, mxfp8, nullptr, nullptr));
      CUDA_OK(cudaDeviceSynchronize());
      const Host grouped = download(dev, p, form, mxfp8);
      for (int64_t e = 0; e < p.E(); ++e) {
        const int64_t n = g.rows[e], c0 = g.start[e];
        if (n == 0 || (mxfp8 && n % 32 != 0)) continue;
        const Host u = ungrouped(mxfp8, form, n, p.K, dev.in.ptr + c0 * 2 * p.K,
                                 dev.grad.ptr + c0 * p.K);
        if (!slices_equal(mxfp8, form, p, g, e, grouped, u)) {
          print_error("%s form %d expert %lld (%lld rows): slices differ from the ungrouped "
                      "call\n",
                      mxfp8 ? "MXFP8" : "FP8 blockwise", form, (long long)e, (long long)n);
          fail();
        }
        ++slices;
      }
    }
    print_message("%s: %d expert slices bit-identical to ungrouped calls\n",
                  mxfp8 ? "MXFP8" : "FP8 blockwise", slices);
    assert_true(slices >= 6 * 3);
  }
}

// One graph a family, captured once; each replay runs with offsets written to the same device
// buffer before it (a new split of the tokens every time), against the model of those offsets.
static void test_graph_replay_new_offsets(void **) {
  SKIP_WITHOUT_GPU();
  for (int fam = 0; fam < 2; ++fam) {
    const bool mxfp8 = fam == 0;
    Problem p{3001, mxfp8 ? 160 : 256, cake_ref::grouped_test_offsets(3001, 32, 20)};
    const std::vector<uint16_t> in = cake_swiglu_gpu::random_input(p.T, 2 * p.K, 30, 32, false);
    const std::vector<uint16_t> grad = cake_swiglu_gpu::random_input(p.T, p.K, 10, 32, false);
    Device dev(p, sizes_of(p, mxfp8));
    upload(dev, p, in, grad);
    const int form = 5;  // backward both: every buffer
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CAKE_OK(launch(g_handle, dev, p, form, 1, mxfp8, nullptr, s));
    CUDA_OK(cudaStreamEndCapture(s, &graph));
    CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 0; replay < 4; ++replay) {
      // New counts every time; the last replay's offsets break the rules (status and the
      // effective offsets through the same graph).
      p.offsets = cake_ref::grouped_test_offsets(p.T, 32, 100 + replay);
      if (replay == 3) {
        p.offsets[5] = p.offsets[4] - 7;
        p.offsets.back() = (int32_t)p.T + 50;
      }
      dev.offsets.upload(p.offsets);
      dev.poison();
      CUDA_OK(cudaDeviceSynchronize());  // the legacy-stream uploads before the replay
      CUDA_OK(cudaGraphLaunch(exec, s));
      CUDA_OK(cudaStreamSynchronize(s));
      expect_model(model(p, in, grad, form, 1, mxfp8), download(dev, p, form, mxfp8), p, form,
                   std::string("graph replay ") + std::to_string(replay));
    }
    CUDA_OK(cudaGraphExecDestroy(exec));
    CUDA_OK(cudaGraphDestroy(graph));
    CUDA_OK(cudaStreamDestroy(s));
  }
}

// Offsets that decrease, are negative or pass T: the effective offsets' bytes and the status.
static void test_invalid_offsets(void **) {
  SKIP_WITHOUT_GPU();
  const std::vector<std::vector<int32_t>> bad = {
      {100, 40, 250, 900}, {-5, 60, 60, 130}, {170, 10}, {0, 0, 0}};
  int runs = 0;
  for (int fam = 0; fam < 2; ++fam) {
    for (const std::vector<int32_t> &o : bad) {
      const Problem p{300, fam == 0 ? 64 : 128, o};
      runs += check_problem(p, fam == 0, false);
    }
  }
  print_message("%d runs with offsets that break the rules, byte-exact, status as the spec\n",
                runs);
}

// The benchmark's largest expert count on a real token count: routed programs, every form.
static void test_many_experts(void **) {
  SKIP_WITHOUT_GPU();
  for (int fam = 0; fam < 2; ++fam) {
    const Problem p{16384, 2048, cake_ref::grouped_test_offsets(16384, 256, 30 + fam)};
    const bool mxfp8 = fam == 0;
    const std::vector<uint16_t> in = cake_swiglu_gpu::random_input(p.T, 2 * p.K, 8, 32, false);
    const std::vector<uint16_t> grad = cake_swiglu_gpu::random_input(p.T, p.K, 4, 32, false);
    Device dev(p, sizes_of(p, mxfp8));
    upload(dev, p, in, grad);
    for (int form = 0; form < 6; ++form) {
      dev.poison();
      CAKE_OK(launch(g_handle, dev, p, form, 0, mxfp8, nullptr, nullptr));
      CUDA_OK(cudaDeviceSynchronize());
      expect_model(model(p, in, grad, form, 0, mxfp8), download(dev, p, form, mxfp8), p, form,
                   "16384x2048, 256 experts");
    }
  }
}

// A refused call writes nothing.
static void test_validation_writes_nothing(void **) {
  SKIP_WITHOUT_GPU();
  const Problem p{256, 128, {100, 256}};
  Device dev(p, sizes_of(p, false));
  dev.poison();
  cake_swiglu_fp8_grouped_desc d = desc_of<Fp8>(p, 2, 0, nullptr);
  d.scale_rule = static_cast<cake_fp8_scale_rule_t>(7);
  assert_int_equal(cake_swiglu_fp8_grouped_forward(g_handle, &d, dev.in.ptr, dev.offsets.ptr,
                                                   dev.row_q.ptr, dev.row_s.ptr, dev.col_q.ptr,
                                                   dev.col_s.ptr, dev.status.ptr, nullptr),
                   CAKE_STATUS_INVALID_ARGUMENT);
  d = desc_of<Fp8>(p, 2, 0, nullptr);
  std::vector<int32_t> host_offsets = p.offsets;  // offsets in host memory: refused
  assert_int_equal(cake_swiglu_fp8_grouped_forward(g_handle, &d, dev.in.ptr, host_offsets.data(),
                                                   dev.row_q.ptr, dev.row_s.ptr, dev.col_q.ptr,
                                                   dev.col_s.ptr, dev.status.ptr, nullptr),
                   CAKE_STATUS_INVALID_ARGUMENT);
  CUDA_OK(cudaDeviceSynchronize());
  for (uint8_t b : dev.row_q.download()) assert_int_equal(b, kPoison);
  for (uint8_t b : dev.col_s.download()) assert_int_equal(b, kPoison);
  assert_int_equal(dev.status.download()[0], 0x7f7f7f7f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sigmoid_table),
      cmocka_unit_test(test_every_program),
      cmocka_unit_test(test_bit_identical_to_ungrouped),
      cmocka_unit_test(test_graph_replay_new_offsets),
      cmocka_unit_test(test_invalid_offsets),
      cmocka_unit_test(test_many_experts),
      cmocka_unit_test(test_validation_writes_nothing),
  };
  return cmocka_run_group_tests_name("swiglu_grouped", tests, setup, teardown);
}
