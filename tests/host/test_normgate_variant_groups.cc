// The normgate variant programs' group sums (kernels/common/normgate_variant_group.cuh) run on
// the CPU, one OS thread per CUDA thread (cuda_host_emulation.h), in the CTA layouts of both
// variant programs (256 and 1024 threads, normgate_general_layout.h): for widths d and group
// sizes G where groups fit a warp, span warps, and cross the 32-leaf runs unaligned, every lane
// that holds a leaf gets its group's sum, and with random values the bits of the spec's
// canonical group order (docs/spec/normgate.md, "Variants: order of operations") computed here
// independently, the same for both thread counts.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cuda_host_emulation.h"

inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

#include "cmocka_cxx.h"
#include "normgate_general_layout.h"
#include "normgate_variant_group.cuh"

CAKE_EMULATION_GLOBALS

namespace {

// The kernels' row layout (GeneralGroup's fields the group sums read).
struct Lanes {
  int li, lanes, lane, group, n;
};

// The spec's order for one group of leaves v (its row-relative first leaf `start`): pieces cut
// at multiples of 32 leaves, each summed by the inclusive scan S_i += S_{i - 2^j}, the pieces
// added left to right.
float canonical_group_sum(const float *v, int start, int q) {
  float total = 0.0f;
  bool first = true;
  for (int p0 = start; p0 < start + q;) {
    const int p1 = std::min(start + q, (p0 / 32 + 1) * 32);  // the piece [p0, p1)
    std::vector<float> s(v + p0, v + p1);
    for (int off = 1; off < 32; off <<= 1) {
      std::vector<float> next = s;
      for (int i = off; i < static_cast<int>(s.size()); ++i) next[i] = s[i] + s[i - off];
      s = next;
    }
    total = first ? s.back() : total + s.back();
    first = false;
    p0 = p1;
  }
  return total;
}

// Runs the group sum of every row of one CTA of `threads` threads; out[row * n + leaf] per
// holding lane.
std::vector<float> run_cta(int threads, int d, int group, const std::vector<float> &leaves,
                           int rows) {
  const int n = d / 8, lanes = cake_ng_general_lanes(d, threads);
  std::vector<float> out(static_cast<size_t>(rows) * n, NAN);
  std::vector<float> red(threads);
  cake_emu::launch(
      [&] {
        const int t = static_cast<int>(threadIdx.x);
        Lanes g{t % lanes, lanes, t % 32, t / lanes, n};
        const cake::ng::VariantGroup vg = cake::ng::variant_group(g, group);
        const bool holds = g.li < n && g.group < rows;
        const float v = holds ? leaves[static_cast<size_t>(g.group) * n + g.li] : 0.0f;
        const float sum = cake::ng::variant_group_sum(v, g, vg, red.data());
        if (holds) out[static_cast<size_t>(g.group) * n + g.li] = sum;
      },
      1, threads);
  return out;
}

}  // namespace

static void test_group_sums(void **) {
  std::mt19937 gen(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  struct Case {
    int d;
    std::vector<int> groups;
  };
  const Case cases[] = {
      {8, {8}},          {24, {8, 24}},         {128, {8, 32, 64, 128}},  {200, {8, 40, 200}},
      {256, {8, 256}},   {264, {8, 24, 264}},   {768, {96, 256, 768, 8}}, {1000, {40, 200, 1000}},
      {2048, {1024, 2048, 8, 16}}, {2056, {8, 2056}}, {5120, {1024, 640, 5120, 8}},
      {8192, {1024, 8192, 8}},
  };
  int checked = 0;
  for (const Case &c : cases) {
    for (int group : c.groups) {
      const int n = c.d / 8, q = group / 8;
      std::vector<float> results[2];
      int slot = 0;
      for (int threads : {256, 1024}) {
        if (!cake_ng_general_serves(c.d, threads)) {
          ++slot;
          continue;
        }
        const int rows = cake_ng_general_groups(c.d, threads);
        std::vector<float> leaves(static_cast<size_t>(rows) * n);
        gen.seed(static_cast<unsigned>(c.d * 131 + group));  // the same values for both programs
        for (float &v : leaves) v = dist(gen);
        const std::vector<float> got = run_cta(threads, c.d, group, leaves, rows);
        for (int r = 0; r < rows; ++r) {
          for (int k = 0; k < n / q; ++k) {
            const float want = canonical_group_sum(&leaves[static_cast<size_t>(r) * n], k * q, q);
            for (int l = k * q; l < (k + 1) * q; ++l) {
              const float g = got[static_cast<size_t>(r) * n + l];
              if (std::memcmp(&g, &want, 4) != 0) {
                print_error("d %d G %d threads %d row %d leaf %d: %.9g, canonical %.9g\n", c.d,
                            group, threads, r, l, g, want);
                fail();
              }
            }
          }
        }
        results[slot++] = std::vector<float>(got.begin(), got.begin() + n);  // row 0
        ++checked;
      }
      if (!results[0].empty() && !results[1].empty()) {
        assert_memory_equal(results[0].data(), results[1].data(), n * sizeof(float));
      }
    }
  }
  assert_true(checked > 30);
}

// Two sums a trip at two sites without the barrier after each sum's reads (kGuard false, as the
// non-deterministic backward calls them), over several trips with fresh values per trip and
// site: every lane's sum has the canonical bits, so no sum reads a site that the next trip has
// already written.
static void test_two_sites_over_trips(void **) {
  std::mt19937 gen(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  constexpr int kTrips = 6;
  struct Case {
    int threads, d, group;
  };
  const Case cases[] = {{1024, 8192, 8192}, {1024, 8192, 1024}, {1024, 5120, 640},
                        {256, 2048, 2048},  {256, 1000, 200},   {256, 512, 8}};
  for (const Case &c : cases) {
    const int n = c.d / 8, q = c.group / 8, lanes = cake_ng_general_lanes(c.d, c.threads);
    const int rows = cake_ng_general_groups(c.d, c.threads);
    const size_t per_sum = static_cast<size_t>(rows) * n;
    std::vector<float> leaves(per_sum * 2 * kTrips);
    for (float &v : leaves) v = dist(gen);
    std::vector<float> out(leaves.size(), NAN);
    std::vector<float> red(2 * c.threads);
    cake_emu::launch(
        [&] {
          const int t = static_cast<int>(threadIdx.x);
          Lanes g{t % lanes, lanes, t % 32, t / lanes, n};
          const cake::ng::VariantGroup vg = cake::ng::variant_group(g, c.group);
          const bool holds = g.li < n && g.group < rows;
          for (int k = 0; k < kTrips; ++k) {
            for (int site = 0; site < 2; ++site) {
              const size_t at = per_sum * (2 * k + site) + static_cast<size_t>(g.group) * n + g.li;
              const float v = holds ? leaves[at] : 0.0f;
              const float sum = cake::ng::variant_group_sum<true, false>(
                  v, g, vg, red.data() + site * c.threads);
              if (holds) out[at] = sum;
            }
          }
        },
        1, c.threads);
    for (int k = 0; k < 2 * kTrips; ++k) {
      for (int r = 0; r < rows; ++r) {
        const float *row = &leaves[per_sum * k + static_cast<size_t>(r) * n];
        for (int l = 0; l < n; ++l) {
          const float want = canonical_group_sum(row, l / q * q, q);
          const float got = out[per_sum * k + static_cast<size_t>(r) * n + l];
          if (std::memcmp(&got, &want, 4) != 0) {
            print_error("threads %d d %d G %d sum %d row %d leaf %d: %.9g, canonical %.9g\n",
                        c.threads, c.d, c.group, k, r, l, got, want);
            fail();
          }
        }
      }
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_group_sums),
                                     cmocka_unit_test(test_two_sites_over_trips)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
