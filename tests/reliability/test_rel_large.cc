// Large shapes: problems above 2^31 elements, checked where 32-bit indexing
// would break. Skips without a GPU, or with the reason when device memory is short.
//
// Normgate: d = 128, rows = 2^24 + 2^20 + 3 (2.28e9 elements per tensor; element 2^31 starts row
// 2^24). Inputs repeat a random block of R = 100003 rows (R does not divide 2^24, so a wrapped
// index reads other data). Forward and deterministic backward (FP32 dw); y, rstd, dx, dz of
// sampled rows (the first, around R, around row 2^24, the last, and random ones) against the
// float64 reference of those rows; dw over all rows against the float64 sum (block sum times
// repeats plus the remainder), relative L2 <= 1e-5 (the spec's FP32 dw bound).
//
// SwiGLU + MXFP8 (when present): m = 65664, k = 16384 (the input is 2.15e9 elements, element 2^31
// is row 65536; the backward's outputs are 2.15e9 bytes). Forward and backward, both
// orientations, against the same forced program run on the 128-row groups {0, 32768, 65536} alone:
// rows are independent and the layouts are the spec's, so every byte of a group's rows, scales,
// transposed columns and column scales must be equal to the small run's.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu/gpu_common.h"
#include "normgate_ref.h"
#include "rel_gpu.h"

namespace {

// Fills `elems` BF16 elements of `dst` by repeating `block` (upload once, then doubling copies).
void fill_repeating(void *dst, size_t elems, const std::vector<uint16_t> &block) {
  const size_t b = std::min(block.size(), elems);
  CUDA_OK(cudaMemcpy(dst, block.data(), b * 2, cudaMemcpyHostToDevice));
  size_t have = b;
  char *p = static_cast<char *>(dst);
  while (have < elems) {
    const size_t n = std::min(have, elems - have);
    CUDA_OK(cudaMemcpy(p + have * 2, p, n * 2, cudaMemcpyDeviceToDevice));
    have += n;
  }
}

bool enough_memory(size_t need, const char *what) {
  size_t free_b = 0, total = 0;
  if (cudaMemGetInfo(&free_b, &total) != cudaSuccess) return false;
  if (free_b < need + (size_t(2) << 30)) {
    print_message("SKIP: %s needs %.1f GiB of device memory, %.1f GiB free\n", what, need / 1073741824.0,
                  free_b / 1073741824.0);
    return false;
  }
  return true;
}

struct Dev {
  void *p = nullptr;
  explicit Dev(size_t bytes) { CUDA_OK(cudaMalloc(&p, bytes)); }
  ~Dev() { cudaFree(p); }
  template <class T>
  T *as() const { return static_cast<T *>(p); }
};

}  // namespace

static void test_normgate_above_2_31(void **) {
  SKIP_WITHOUT_GPU();
  const int32_t d = 128;
  const int64_t rows = (int64_t(1) << 24) + (int64_t(1) << 20) + 3;
  const int64_t R = 100003;
  const size_t elems = size_t(rows) * d, bytes = elems * 2;
  assert_true(elems > (size_t(1) << 31));
  if (!enough_memory(6 * bytes + size_t(rows) * 4, "normgate above 2^31 elements")) skip();
  cake_handle_t h = nullptr;
  CAKE_OK(cake_create(&h, 0));

  std::mt19937_64 rng(31);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  auto block_of = [&](float scale, float offset, size_t n) {
    std::vector<uint16_t> v(n);
    for (auto &e : v) e = cake_test::float_to_bf16_rne(offset + scale * nd(rng));
    return v;
  };
  const std::vector<uint16_t> bx = block_of(1.0f, 0.0f, size_t(R) * d), bz = block_of(2.0f, 0.0f, size_t(R) * d);
  const std::vector<uint16_t> bdy = block_of(1.0f, 0.0f, size_t(R) * d), bw = block_of(0.5f, 1.0f, d);
  Dev x(bytes), z(bytes), dy(bytes), y(bytes), dx(bytes), dz(bytes), w(d * 2), rstd(size_t(rows) * 4), dw(d * 4);
  fill_repeating(x.p, elems, bx);
  fill_repeating(z.p, elems, bz);
  fill_repeating(dy.p, elems, bdy);
  CUDA_OK(cudaMemcpy(w.p, bw.data(), d * 2, cudaMemcpyHostToDevice));
  for (void *p : {y.p, dx.p, dz.p}) CUDA_OK(cudaMemset(p, 0xFF, bytes));

  cake_normgate_desc desc;
  cake_normgate_desc_init(&desc);
  desc.rows = rows;
  desc.d = d;
  desc.dw_dtype = CAKE_DTYPE_F32;
  cake_program_info info;
  cake_program_info_init(&info);
  CAKE_OK(cake_normgate_forward_query(h, &desc, &info));
  print_message("forward: %s, grid %lld\n", info.name, (long long)info.grid);
  CAKE_OK(cake_normgate_forward(h, &desc, x.p, z.p, w.p, y.p, rstd.as<float>(), nullptr));
  size_t ws_bytes = 0;
  CAKE_OK(cake_normgate_workspace_size(h, &desc, &ws_bytes));
  Dev ws(ws_bytes ? ws_bytes : 16);
  CUDA_OK(cudaMemset(ws.p, 0, ws_bytes ? ws_bytes : 16));
  CAKE_OK(cake_normgate_backward_query(h, &desc, &info));
  print_message("backward: %s, grid %lld, workspace %zu bytes\n", info.name, (long long)info.grid, ws_bytes);
  CAKE_OK(cake_normgate_backward(h, &desc, dy.p, x.p, z.p, w.p, dx.p, dz.p, dw.p, ws.p, ws_bytes, nullptr));
  CUDA_OK(cudaDeviceSynchronize());

  // Sampled rows: their inputs are block rows r mod R.
  std::vector<int64_t> sample = {0, 1, R - 1, R, (int64_t(1) << 24) - 2, (int64_t(1) << 24) - 1, int64_t(1) << 24,
                                 (int64_t(1) << 24) + 1, rows - 2, rows - 1};
  std::uniform_int_distribution<int64_t> pick(0, rows - 1);
  while (sample.size() < 40) sample.push_back(pick(rng));
  const int64_t S = int64_t(sample.size());
  std::vector<uint16_t> sx(S * d), sz(S * d), sdy(S * d), sy(S * d), sdx(S * d), sdz(S * d);
  std::vector<float> srstd(S);
  for (int64_t i = 0; i < S; ++i) {
    const int64_t r = sample[i], b = r % R;
    std::memcpy(&sx[i * d], &bx[b * d], d * 2);
    std::memcpy(&sz[i * d], &bz[b * d], d * 2);
    std::memcpy(&sdy[i * d], &bdy[b * d], d * 2);
    CUDA_OK(cudaMemcpy(&sy[i * d], y.as<char>() + size_t(r) * d * 2, d * 2, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(&sdx[i * d], dx.as<char>() + size_t(r) * d * 2, d * 2, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(&sdz[i * d], dz.as<char>() + size_t(r) * d * 2, d * 2, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(&srstd[i], rstd.as<char>() + size_t(r) * 4, 4, cudaMemcpyDeviceToHost));
  }
  const cake_test::NormgateShape fs = {S, d, d, d, d, 1e-6f};
  std::vector<double> ref_y, ref_rstd;
  cake_test::normgate_forward_ref(fs, sx.data(), sz.data(), bw.data(), &ref_y, &ref_rstd);
  char first[256] = {0};
  const int64_t bad_y = cake_test::check_forward_y(fs, ref_y, sy.data(), first, sizeof first);
  if (bad_y) print_error("y: %lld failures in sampled rows; first: %s\n", (long long)bad_y, first);
  assert_int_equal(bad_y, 0);
  for (int64_t i = 0; i < S; ++i) {
    if (std::fabs(srstd[i] - ref_rstd[i]) > 1e-5 * std::fabs(ref_rstd[i])) {
      print_error("rstd of row %lld: %.9g, want %.9g\n", (long long)sample[i], srstd[i], ref_rstd[i]);
      fail();
    }
  }
  const cake_test::NormgateBwdShape bs = {S, d, d, d, d, d, d, 1e-6f};
  std::vector<double> rdx, rdz, rdw;
  cake_test::normgate_backward_ref(bs, sdy.data(), sx.data(), sz.data(), bw.data(), &rdx, &rdz, &rdw);
  double l2 = 0;
  const int64_t bad_dx = cake_test::check_grad("dx", S, d, rdx, sdx.data(), d, &l2, first, sizeof first);
  if (bad_dx) print_error("dx: %lld failures; first: %s\n", (long long)bad_dx, first);
  const int64_t bad_dz = cake_test::check_grad("dz", S, d, rdz, sdz.data(), d, &l2, first, sizeof first);
  if (bad_dz) print_error("dz: %lld failures; first: %s\n", (long long)bad_dz, first);
  assert_int_equal(bad_dx + bad_dz, 0);

  // dw over every row: the block's float64 sum times the whole repeats, plus the remainder.
  const int64_t reps = rows / R, rem = rows % R;
  std::vector<double> bdx, bdz, dw_block, dw_rem;
  const cake_test::NormgateBwdShape block_shape = {R, d, d, d, d, d, d, 1e-6f};
  cake_test::normgate_backward_ref(block_shape, bdy.data(), bx.data(), bz.data(), bw.data(), &bdx, &bdz, &dw_block);
  const cake_test::NormgateBwdShape rem_shape = {rem, d, d, d, d, d, d, 1e-6f};
  cake_test::normgate_backward_ref(rem_shape, bdy.data(), bx.data(), bz.data(), bw.data(), &bdx, &bdz, &dw_rem);
  std::vector<float> got_dw(d);
  CUDA_OK(cudaMemcpy(got_dw.data(), dw.p, d * 4, cudaMemcpyDeviceToHost));
  double err2 = 0, ref2 = 0;
  for (int c = 0; c < d; ++c) {
    const double want = double(reps) * dw_block[c] + dw_rem[c];
    err2 += (got_dw[c] - want) * (got_dw[c] - want);
    ref2 += want * want;
  }
  const double rel = std::sqrt(err2 / ref2);
  print_message("rows %lld (x d %d = %lld elements): %lld sampled rows exact to the spec; dw FP32 rel L2 %.3g\n",
                (long long)rows, d, (long long)(rows * d), (long long)S, rel);
  assert_true(rel <= 1e-5);
  cake_destroy(h);
}

namespace {

int64_t swizzle(int64_t r, int64_t c, int64_t cols_padded) {
  return ((r / 128) * (cols_padded / 4) + c / 4) * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + c % 4;
}

// One direction of SwiGLU + MXFP8 at the large shape, then each group alone with the same program.
void swiglu_large(cake_handle_t h, bool bwd) {
  const int64_t M = 65536 + 128, K = 16384, O = bwd ? 2 * K : K;
  cake_swiglu_mxfp8_desc desc;
  cake_swiglu_mxfp8_desc_init(&desc);
  desc.m = M;
  desc.k = K;
  desc.orientation = CAKE_MXFP8_BOTH;
  cake_swiglu_mxfp8_sizes big;
  cake_swiglu_mxfp8_sizes_init(&big);
  CAKE_OK(cake_swiglu_mxfp8_buffer_sizes(&desc, bwd, &big));
  const size_t in_elems = size_t(M) * 2 * K, grad_elems = bwd ? size_t(M) * K : 0;
  assert_true(in_elems > (size_t(1) << 31));
  std::mt19937_64 rng(bwd ? 8 : 7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t R = 997;  // block rows
  std::vector<uint16_t> bin(size_t(R) * 2 * K), bgrad(bwd ? size_t(R) * K : 0);
  for (auto &e : bin) e = cake_test::float_to_bf16_rne(2.0f * nd(rng));
  for (auto &e : bgrad) e = cake_test::float_to_bf16_rne(nd(rng));
  Dev in(in_elems * 2), grad(grad_elems ? grad_elems * 2 : 16);
  Dev rq(big.q_bytes), rs(big.row_s_bytes), cq(big.q_bytes), cs(big.col_s_bytes);
  fill_repeating(in.p, in_elems, bin);
  if (bwd) fill_repeating(grad.p, grad_elems, bgrad);
  cake_program_info info;
  cake_program_info_init(&info);
  CAKE_OK(cake_swiglu_mxfp8_query(h, &desc, bwd, &info));
  const std::string program = info.name;
  CAKE_OK(bwd ? cake_swiglu_mxfp8_backward(h, &desc, in.p, grad.p, rq.p, rs.p, cq.p, cs.p, nullptr)
              : cake_swiglu_mxfp8_forward(h, &desc, in.p, rq.p, rs.p, cq.p, cs.p, nullptr));
  CUDA_OK(cudaDeviceSynchronize());

  for (int64_t m0 : {int64_t(0), int64_t(32768), int64_t(65536)}) {
    cake_swiglu_mxfp8_desc sd = desc;
    sd.m = 128;
    sd.program = program.c_str();
    cake_swiglu_mxfp8_sizes small;
    cake_swiglu_mxfp8_sizes_init(&small);
    CAKE_OK(cake_swiglu_mxfp8_buffer_sizes(&sd, bwd, &small));
    Dev sin(size_t(128) * 2 * K * 2), sgrad(bwd ? size_t(128) * K * 2 : 16);
    Dev srq(small.q_bytes), srs(small.row_s_bytes), scq(small.q_bytes), scs(small.col_s_bytes);
    CUDA_OK(cudaMemcpy(sin.p, in.as<char>() + size_t(m0) * 2 * K * 2, size_t(128) * 2 * K * 2, cudaMemcpyDeviceToDevice));
    if (bwd) CUDA_OK(cudaMemcpy(sgrad.p, grad.as<char>() + size_t(m0) * K * 2, size_t(128) * K * 2, cudaMemcpyDeviceToDevice));
    CAKE_OK(bwd ? cake_swiglu_mxfp8_backward(h, &sd, sin.p, sgrad.p, srq.p, srs.p, scq.p, scs.p, nullptr)
                : cake_swiglu_mxfp8_forward(h, &sd, sin.p, srq.p, srs.p, scq.p, scs.p, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    // Rows: contiguous. Row scales: the group's 128-row band of tiles.
    const int64_t rcp = ((O / 32) + 3) / 4 * 4;  // row scale columns, padded
    std::vector<uint8_t> a(size_t(128) * O), b(size_t(128) * O);
    CUDA_OK(cudaMemcpy(a.data(), rq.as<char>() + size_t(m0) * O, a.size(), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(b.data(), srq.p, b.size(), cudaMemcpyDeviceToHost));
    if (a != b) {
      print_error("%s %s group %lld: row_q differs from the group alone\n", program.c_str(), bwd ? "bwd" : "fwd", (long long)m0);
      fail();
    }
    std::vector<uint8_t> sa(small.row_s_bytes), sb(small.row_s_bytes);
    CUDA_OK(cudaMemcpy(sa.data(), rs.as<char>() + swizzle(m0, 0, rcp), sa.size(), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(sb.data(), srs.p, sb.size(), cudaMemcpyDeviceToHost));
    if (sa != sb) {
      print_error("%s group %lld: row_s differs\n", program.c_str(), (long long)m0);
      fail();
    }
    // Columns: 128 bytes of each of the O stored rows. Column scales: one 512-byte tile per
    // 128 output columns, the group's tile column.
    CUDA_OK(cudaMemcpy2D(a.data(), 128, cq.as<char>() + m0, M, 128, O, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(b.data(), scq.p, b.size(), cudaMemcpyDeviceToHost));
    if (a != b) {
      print_error("%s group %lld: col_q differs\n", program.c_str(), (long long)m0);
      fail();
    }
    const int64_t ccp = ((M / 32) + 3) / 4 * 4;  // column scale columns of the big run, padded
    std::vector<uint8_t> ca(size_t(O / 128) * 512), cb(small.col_s_bytes);
    assert_int_equal(cb.size(), ca.size());
    CUDA_OK(cudaMemcpy2D(ca.data(), 512, cs.as<char>() + swizzle(0, m0 / 32, ccp), size_t(ccp / 4) * 512, 512, O / 128,
                         cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(cb.data(), scs.p, cb.size(), cudaMemcpyDeviceToHost));
    if (ca != cb) {
      print_error("%s group %lld: col_s differs\n", program.c_str(), (long long)m0);
      fail();
    }
  }
  print_message("swiglu_mxfp8 %s m %lld k %lld (%zu input elements) with %s: groups 0, 32768, 65536 equal to the "
                "groups alone\n",
                bwd ? "backward" : "forward", (long long)M, (long long)K, in_elems, program.c_str());
}

}  // namespace

static void test_swiglu_above_2_31(void **) {
  SKIP_WITHOUT_GPU();
  if (!rel::have_swiglu()) {
    print_message("SKIP: %s\n", REL_SWIGLU_ABSENT);
    skip();
  }
  const size_t in_bytes = size_t(65536 + 128) * 2 * 16384 * 2;
  if (!enough_memory(in_bytes * 3, "swiglu_mxfp8 above 2^31 elements")) skip();
  cake_handle_t h = nullptr;
  CAKE_OK(cake_create(&h, 0));
  swiglu_large(h, false);
  swiglu_large(h, true);
  cake_destroy(h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_normgate_above_2_31),
      cmocka_unit_test(test_swiglu_above_2_31),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
