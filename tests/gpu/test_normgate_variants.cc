// Normgate variants on the GPU (docs/spec/normgate.md): every gate (SiLU, sigmoid, none) x
// placement (after, before the norm) x group size (G = d, G = 8, G = 1024 at d = 5120 and 8192,
// groups that cross 32-leaf runs) x dtypes (x, z, w each BF16, F16 or FP32, differing) against
// the float64 reference within the spec's contract; the backward in both packages, with BF16,
// F16 and FP32 dw, DW_ACCUMULATE and DW_SKIP, strided rows; the deterministic package repeated
// and forced through every program of its form (both thread counts, every table through the
// sm_90 cross-check images) to the same bytes; every forward and dx/dz likewise; outputs
// poisoned before each call, fresh random inputs each case. The default form keeps its own
// programs (the routing check below; its bytes are the existing tests'). Skips without a GPU.
// CAKE_TEST_SEED repeats a run; CAKE_VARIANT_QUICK=1 runs every third case.
#include "normgate_variant_harness.h"

namespace {

// ---- the cases -----------------------------------------------------------------------------

struct Shape {
  int64_t rows;
  int32_t d;
  std::vector<int32_t> groups;
};

// Shapes: tiny rows, groups crossing 32-leaf runs (G = 96 at d = 768: 12 leaves), both thread
// counts (d <= 2048 runs on both), the wide rows of Mamba2 (5120) and Nemotron-H (8192, G = 1024),
// and rows that leave the last dw chunk part-filled.
const Shape kShapes[] = {
    {37, 8, {8}},
    {300, 24, {24, 8}},
    {257, 128, {128, 8, 32, 64}},
    {129, 768, {768, 96, 256, 8}},
    {70, 1000, {1000, 40, 8}},
    {50, 2048, {2048, 1024, 8}},
    {33, 2056, {2056, 8}},
    {40, 5120, {5120, 1024, 8, 640}},
    {24, 8192, {8192, 1024, 8}},
};

const int kDtypes[][3] = {
    {CAKE_DTYPE_BF16, CAKE_DTYPE_BF16, CAKE_DTYPE_BF16}, {CAKE_DTYPE_F16, CAKE_DTYPE_F16, CAKE_DTYPE_F16},
    {CAKE_DTYPE_F32, CAKE_DTYPE_F32, CAKE_DTYPE_F32},    {CAKE_DTYPE_BF16, CAKE_DTYPE_F32, CAKE_DTYPE_F16},
    {CAKE_DTYPE_F32, CAKE_DTYPE_BF16, CAKE_DTYPE_BF16},  {CAKE_DTYPE_F16, CAKE_DTYPE_BF16, CAKE_DTYPE_F32},
};
const int kDwDtypes[] = {CAKE_DTYPE_BF16, CAKE_DTYPE_F32, CAKE_DTYPE_F16};

// Every shape x group x gate x placement, the dtype combination, pad and backward options
// rotating with the case index (so every combination appears across the run).
std::vector<Case> all_cases() {
  std::vector<Case> cases;
  int k = 0;
  for (const Shape &s : kShapes) {
    for (int32_t g : s.groups) {
      for (int gate : {CAKE_NORMGATE_GATE_SILU, CAKE_NORMGATE_GATE_SIGMOID, CAKE_NORMGATE_GATE_NONE}) {
        for (int placement : {CAKE_NORMGATE_GATE_AFTER_NORM, CAKE_NORMGATE_GATE_BEFORE_NORM}) {
          const int *dt = kDtypes[k % 6];
          const int64_t pad = (k % 3 == 1) ? 8 : (k % 3 == 2) ? 24 : 0;
          Case c = {s.rows, s.d, g, gate, placement, dt[0], dt[1], dt[2], pad};
          // The default form (SiLU after a whole-row norm, all BF16) is not a variant: make it
          // one by its w dtype (the default's own programs are the existing tests').
          if (gate == CAKE_NORMGATE_GATE_SILU && placement == 0 && g == s.d && dt[0] == CAKE_DTYPE_BF16 &&
              dt[1] == CAKE_DTYPE_BF16 && dt[2] == CAKE_DTYPE_BF16) {
            c.wdt = CAKE_DTYPE_F32;
          }
          cases.push_back(c);
          ++k;
        }
      }
    }
  }
  if (std::getenv("CAKE_VARIANT_QUICK") != nullptr) {
    std::vector<Case> some;
    for (size_t i = 0; i < cases.size(); i += 3) some.push_back(cases[i]);
    return some;
  }
  return cases;
}

}  // namespace

static int setup(void **) { return cake_test::open_handles(&g_handle, &g_cross); }
static int teardown(void **) {
  cake_test::close_handles(g_handle, &g_cross);
  return 0;
}

// The default form keeps its programs; every variant routes to a variant program.
static void test_variant_routing(void **) {
  SKIP_WITHOUT_GPU();
  for (int32_t d : {128, 512, 5120}) {
    cake_normgate_desc desc;
    cake_normgate_desc_init(&desc);
    desc.rows = 4096;
    desc.d = d;
    cake_program_info info;
    cake_program_info_init(&info);
    CAKE_OK(cake_normgate_forward_query(g_handle, &desc, &info));
    assert_null(std::strstr(info.name, "variant"));
    CAKE_OK(cake_normgate_backward_query(g_handle, &desc, &info));
    assert_null(std::strstr(info.name, "variant"));
    desc.group_size = d / 2;
    CAKE_OK(cake_normgate_forward_query(g_handle, &desc, &info));
    assert_non_null(std::strstr(info.name, "variant"));
    CAKE_OK(cake_normgate_backward_query(g_handle, &desc, &info));
    assert_non_null(std::strstr(info.name, "variant"));
  }
}

static void test_variant_forward(void **) {
  SKIP_WITHOUT_GPU();
  int cases = 0, forced = 0;
  for (const Case &c : all_cases()) {
    const Inputs in = make_inputs(c);
    const FwdOut out = run_forward(g_handle, in, nullptr);
    assert_non_null(std::strstr(out.program.c_str(), "variant"));
    check_forward(in, out);
    forced += forward_every_program(in, out);
    ++cases;
  }
  print_message("%d forward cases within the contract, %d forced program runs byte-identical\n",
                cases, forced);
  assert_true(forced >= cases);
}

static void test_variant_backward(void **) {
  SKIP_WITHOUT_GPU();
  int cases = 0, forced = 0, k = 0;
  std::vector<cake_handle_t> handles = {g_handle};
  handles.insert(handles.end(), g_cross.begin(), g_cross.end());
  for (const Case &c : all_cases()) {
    const Inputs in = make_inputs(c);
    const BwdRef ref = backward_ref(in);
    const int dw_dtype = kDwDtypes[k % 3];
    const int mode = k % 4;  // 0, 1: plain; 2: accumulate; 3: skip
    ++k;
    BwdRun run;
    run.dw_dtype = dw_dtype;
    std::vector<unsigned char> dw0;
    if (mode == 2) {
      run.flags = CAKE_NORMGATE_DW_ACCUMULATE;
      dw0.assign(size_t(c.d) * cake_test::dtype_size(dw_dtype), 0);
      std::normal_distribution<double> dist(0.0, 1.0);
      for (int i = 0; i < c.d; ++i) cake_test::store_elem(dw_dtype, dw0.data(), size_t(i), dist(cake_test::rng()));
      run.dw_init = &dw0;
    } else if (mode == 3) {
      run.flags = CAKE_NORMGATE_DW_SKIP;
    }
    const std::vector<unsigned char> *base = mode == 2 ? &dw0 : nullptr;
    // Deterministic: within the contract, the same bytes again and from every program of the
    // form in every table.
    const BwdOut det = run_backward(g_handle, in, run);
    assert_non_null(std::strstr(det.program.c_str(), "variant"));
    check_backward(in, ref, run, det, base);
    const BwdOut again = run_backward(g_handle, in, run);
    if (!same_grads(det, again) || det.dw != again.dw) {
      print_error("%s: the deterministic package changed between runs\n", c.label().c_str());
      fail();
    }
    cake_normgate_desc desc = desc_of(in, nullptr);
    desc.dw_dtype = static_cast<cake_dtype_t>(dw_dtype);
    desc.flags = run.flags;
    const auto det_same = [&](const std::string &name, const BwdOut &got) {
      if (!same_grads(det, got) || got.dw != det.dw) {
        print_error("%s: deterministic %s differs from routed %s\n", c.label().c_str(),
                    name.c_str(), det.program.c_str());
        fail();
      }
    };
    forced += backward_every_program(handles, in, desc, run, det_same);
    // Non-deterministic: dx, dz the same bytes; dw within the contract; every program.
    BwdRun nd = run;
    nd.package = CAKE_NORMGATE_NONDETERMINISTIC;
    desc.package = CAKE_NORMGATE_NONDETERMINISTIC;
    const auto nd_check = [&](const std::string &name, const BwdOut &got) {
      check_backward(in, ref, nd, got, base);
      if (!same_grads(det, got)) {
        print_error("%s: non-deterministic %s dx/dz differ from the deterministic package\n",
                    c.label().c_str(), name.c_str());
        fail();
      }
    };
    forced += backward_every_program(handles, in, desc, nd, nd_check);
    ++cases;
  }
  print_message("%d backward cases within the contract, %d forced program runs checked\n", cases,
                forced);
  assert_true(forced >= 2 * cases);
}

// Special rows in the variants: an all-zero group (rstd = 1/sqrt(eps)), saturated gates, NaN in
// one group of one row stays in that group's outputs (y) and row (dx, dz).
static void test_variant_special_rows(void **) {
  SKIP_WITHOUT_GPU();
  for (int placement : {CAKE_NORMGATE_GATE_AFTER_NORM, CAKE_NORMGATE_GATE_BEFORE_NORM}) {
    Case c = {64, 256, 64, CAKE_NORMGATE_GATE_SILU, placement, CAKE_DTYPE_BF16, CAKE_DTYPE_BF16,
              CAKE_DTYPE_BF16, 0};
    Inputs in = make_inputs(c);
    for (int col = 0; col < 64; ++col) {  // row 0, group 0: zeros
      cake_test::store_elem(c.xdt, in.x.bytes.data(), size_t(col), 0.0);
      in.x.vals[size_t(col)] = 0.0;
    }
    for (int col = 0; col < c.d; ++col) {  // row 1: saturated gates
      const double v = (col & 1) ? -100.0 : 90.0;
      cake_test::store_elem(c.zdt, in.z.bytes.data(), size_t(in.zs + col), v);
      in.z.vals[size_t(c.d + col)] = cake_test::load_elem(c.zdt, in.z.bytes.data(), size_t(in.zs + col));
    }
    cake_test::store_elem(c.xdt, in.x.bytes.data(), size_t(2 * in.xs + 70), NAN);  // row 2, group 1
    in.x.vals[size_t(2 * c.d + 70)] = NAN;
    const FwdOut out = run_forward(g_handle, in, nullptr);
    check_forward(in, out);
    for (int col = 0; col < c.d; ++col) {
      const double y2 = cake_test::load_elem(c.xdt, out.y.data(), size_t(2 * in.ys + col));
      assert_true(std::isnan(y2) == (col >= 64 && col < 128));
    }
    forward_every_program(in, out);
    const BwdRef ref = backward_ref(in);
    BwdRun run;
    run.flags = CAKE_NORMGATE_DW_SKIP;  // the NaN reaches every dw column it touches
    const BwdOut bwd = run_backward(g_handle, in, run);
    // The all-zero group's dx (rstd = 1/sqrt(eps)) is about 1000x every other element, so the
    // tensor's L2 error is the statistics of those 64 elements, not of the >= 4096 the L2 rule
    // is stated for; every element is still held to the per-element contract.
    check_backward(in, ref, run, bwd, nullptr, false);
  }
}


// The default form with F16 dw is a variant call: only the variant programs serve it, within the
// variant contract; the default form itself cannot be forced onto them.
static void test_variant_default_form(void **) {
  SKIP_WITHOUT_GPU();
  for (int32_t d : {128, 1000, 4096}) {
    const Case c = {300, d, d, CAKE_NORMGATE_GATE_SILU, CAKE_NORMGATE_GATE_AFTER_NORM,
                    CAKE_DTYPE_BF16, CAKE_DTYPE_BF16, CAKE_DTYPE_BF16, 8};
    const Inputs in = make_inputs(c);
    const BwdRef ref = backward_ref(in);
    BwdRun run;
    run.dw_dtype = CAKE_DTYPE_F16;
    for (cake_normgate_package_t pkg : {CAKE_NORMGATE_DETERMINISTIC, CAKE_NORMGATE_NONDETERMINISTIC}) {
      run.package = pkg;
      const BwdOut out = run_backward(g_handle, in, run);
      assert_non_null(std::strstr(out.program.c_str(), "variant"));
      check_backward(in, ref, run, out, nullptr);
    }
    const char *fwd = d <= 2048 ? "sm90.ng_fwd_variant" : "sm90.ng_fwd_variant_wide";
    const char *bwd = d <= 2048 ? "sm90.ng_bwd_det_variant" : "sm90.ng_bwd_det_variant_wide";
    // The default form itself is not theirs: forcing a variant program on it is refused (every
    // program of a form gives the same bytes, and theirs are summed in another order).
    cake_program_info info;
    cake_program_info_init(&info);
    cake_normgate_desc desc = desc_of(in, fwd);
    assert_int_equal(cake_normgate_forward_query(g_handle, &desc, &info),
                     CAKE_STATUS_PROGRAM_NOT_FOUND);
    desc = desc_of(in, bwd);
    desc.dw_dtype = CAKE_DTYPE_F32;
    assert_int_equal(cake_normgate_backward_query(g_handle, &desc, &info),
                     CAKE_STATUS_PROGRAM_NOT_FOUND);
  }
}

// A variant forward and deterministic backward captured in one CUDA graph replay to the eager
// bytes with fresh inputs each replay (the workspace left zero between them).
static void test_variant_graph_replay(void **) {
  SKIP_WITHOUT_GPU();
  const Case c = {1000, 5120, 1024, CAKE_NORMGATE_GATE_SILU, CAKE_NORMGATE_GATE_BEFORE_NORM,
                  CAKE_DTYPE_BF16, CAKE_DTYPE_BF16, CAKE_DTYPE_BF16, 0};
  Inputs in = make_inputs(c);
  cake_normgate_desc desc = desc_of(in, nullptr);
  size_t ws_bytes = 0;
  CAKE_OK(cake_normgate_workspace_size(g_handle, &desc, &ws_bytes));
  const size_t t = size_t(c.rows) * c.d * 2;
  DeviceBuffer<unsigned char> x(t, 0), z(t, 0), w(size_t(c.d) * 2, 0), y(t), dy(t, 0), dx(t), dz(t);
  DeviceBuffer<unsigned char> dw(size_t(c.d) * 2), ws(ws_bytes > 0 ? ws_bytes : 16, 0);
  w.upload(in.w.bytes);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  CAKE_OK(cake_normgate_forward(g_handle, &desc, x.ptr, z.ptr, w.ptr, y.ptr, nullptr, stream));
  CAKE_OK(cake_normgate_backward(g_handle, &desc, dy.ptr, x.ptr, z.ptr, w.ptr, dx.ptr, dz.ptr,
                                 dw.ptr, ws_bytes ? ws.ptr : nullptr, ws_bytes, stream));
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 3; ++replay) {
    Inputs fresh = make_inputs(c);
    fresh.w = in.w;
    x.upload(fresh.x.bytes);
    z.upload(fresh.z.bytes);
    dy.upload(fresh.dy.bytes);
    y.poison();
    dx.poison();
    dz.poison();
    dw.poison();
    // The uploads and poisoning run on the legacy stream, which the non-blocking replay stream
    // does not wait for.
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaGraphLaunch(exec, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    const FwdOut eager_y = run_forward(g_handle, fresh, nullptr);
    const BwdOut eager = run_backward(g_handle, fresh, BwdRun{});
    assert_true(y.download() == eager_y.y);
    assert_true(dx.download() == eager.dx);
    assert_true(dz.download() == eager.dz);
    assert_true(dw.download() == eager.dw);
  }
  for (unsigned char b : ws.download()) assert_int_equal(b, 0);
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  CUDA_OK(cudaStreamDestroy(stream));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_variant_graph_replay),
      cmocka_unit_test(test_variant_routing),
      cmocka_unit_test(test_variant_default_form),
      cmocka_unit_test(test_variant_forward),
      cmocka_unit_test(test_variant_backward),
      cmocka_unit_test(test_variant_special_rows),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
