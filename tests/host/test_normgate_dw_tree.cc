// The deterministic dw reduction's central claim, on the host: building the FP64 tree over
// chunk sums from aligned subtrees (CTA blocks of G chunks, then levels of 64 nodes) gives the
// same bits as the one canonical tree, for every G a program may use and any chunk count. The
// layout the kernels and the size query share (normgate_workspace.h) is checked alongside:
// levels, node and counter regions disjoint and inside the reported size.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cmocka_cxx.h"
#include "normgate_workspace.h"

namespace {

// Adjacent pairs first over [first, first + n) (n a power of two), entries past `count` are +0:
// the order of the kernels' smem tree and of tree_sum<N> in normgate_dw.cuh.
double tree(const std::vector<double> &v, int64_t first, int64_t n) {
  if (n == 1) return first < static_cast<int64_t>(v.size()) ? v[first] : 0.0;
  return tree(v, first, n / 2) + tree(v, first + n / 2, n / 2);
}

int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

// The kernels' schedule: level 0 = blocks of G chunks, then levels of 64 nodes, root last.
double by_levels(const std::vector<double> &chunks, int64_t g, int64_t rows, int d) {
  const cake_ng_tree t = cake_ng_tree_of(rows, d, g);
  std::vector<double> level(t.blocks);
  for (int64_t b = 0; b < t.blocks; ++b) level[b] = tree(chunks, b * g, g);
  for (int l = 1; l < t.levels; ++l) {
    const int64_t n = cake_ng_level_nodes(t.blocks, l);
    std::vector<double> up(n);
    for (int64_t i = 0; i < n; ++i) up[i] = tree(level, i * CAKE_NG_TREE_FANOUT, CAKE_NG_TREE_FANOUT);
    level.swap(up);
  }
  assert_int_equal(level.size(), 1);
  return level[0] + 0.0;  // store_dw's normalisation of an exact zero
}

}  // namespace

static void test_every_schedule_gives_the_canonical_bits(void **) {
  std::mt19937_64 gen(12345);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (int64_t rows : {int64_t(1), int64_t(16), int64_t(17), int64_t(1000), int64_t(169632),
                       int64_t(800000), int64_t(1) << 22}) {
    const int64_t n = cake_ng_chunks(rows);
    std::vector<double> chunks(n);
    // FP32 chunk sums of mixed magnitude, so that the FP64 additions do round.
    for (auto &c : chunks) c = static_cast<double>(std::ldexp(dist(gen), static_cast<int>(gen() % 60) - 30));
    const double canonical = tree(chunks, 0, pow2_at_least(n)) + 0.0;
    for (int64_t g : {1, 2, 4, 8, 16, 32, 64}) {
      const double got = by_levels(chunks, g, rows, 128);
      if (std::memcmp(&got, &canonical, sizeof got) != 0) {
        print_error("rows %lld, G %lld: %.17g != canonical %.17g\n", (long long)rows, (long long)g,
                    got, canonical);
        fail();
      }
    }
  }
}

static void test_exact_zero_is_positive(void **) {
  // All chunk sums -0: whatever the padding, the result is +0 after normalisation.
  std::vector<double> chunks(37, -0.0);
  for (int64_t g : {1, 4, 32}) {
    const double got = by_levels(chunks, g, 37 * CAKE_NG_DW_CHUNK_ROWS, 8);
    assert_false(std::signbit(got));
  }
}

static void test_layout_is_disjoint_and_sized(void **) {
  for (int64_t rows : {int64_t(1), int64_t(16), int64_t(1025), int64_t(800000), int64_t(1) << 33}) {
    for (int d : {8, 128, 8192}) {
      for (int64_t g : {1, 8, 16, 32}) {
        const cake_ng_tree t = cake_ng_tree_of(rows, d, g);
        assert_true(t.levels >= 1 && t.levels <= CAKE_NG_MAX_LEVELS);
        assert_int_equal(cake_ng_level_nodes(t.blocks, t.levels - 1), 1);
        const int64_t bytes = cake_ng_tree_bytes(&t);
        int64_t end = 0;
        for (int l = 0; l < t.levels; ++l) {
          const cake_ng_level lv = cake_ng_level_of(&t, l);
          assert_true(lv.node_offset >= end);  // after everything of the level below
          assert_int_equal(lv.node_offset % 256, 0);
          end = lv.node_offset + lv.nodes * d * 8;
          if (l > 0) {
            assert_true(lv.counter_offset >= end);
            end = lv.counter_offset + lv.nodes * 4;
          }
          assert_true(end <= bytes);
        }
      }
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_schedule_gives_the_canonical_bits),
      cmocka_unit_test(test_exact_zero_is_positive),
      cmocka_unit_test(test_layout_is_disjoint_and_sized),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
