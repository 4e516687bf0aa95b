// The deterministic dw reduction's central claim, on the host: building the FP64 tree over
// chunk sums from aligned subtrees (CTA blocks of G chunks, then levels of 64 nodes; or the
// tuned programs' units of G chunks, then spans of CAKE_NG_COLUMN_SPAN nodes) gives the same
// bits as the one canonical tree, for every G a program may use and any chunk count. The
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

// Level 0 = nodes0 blocks of G chunks, then levels - 1 levels of one node per `fanout` below:
// the schedule of both trees. Returns the top level.
std::vector<double> top_level(const std::vector<double> &chunks, int64_t g, int64_t nodes0,
                              int levels, int64_t fanout) {
  std::vector<double> level(nodes0);
  for (int64_t b = 0; b < nodes0; ++b) level[b] = tree(chunks, b * g, g);
  for (int l = 1; l < levels; ++l) {
    std::vector<double> up(cake_ng_nodes_above(nodes0, fanout, l));
    for (size_t i = 0; i < up.size(); ++i) up[i] = tree(level, int64_t(i) * fanout, fanout);
    level.swap(up);
  }
  return level;
}

// The general programs' tree: blocks of G chunks, then levels of 64 nodes, root last.
double by_levels(const std::vector<double> &chunks, int64_t g, int64_t rows, int d) {
  const cake_ng_tree t = cake_ng_tree_of(rows, d, g);
  const std::vector<double> top = top_level(chunks, g, t.blocks, t.levels, CAKE_NG_TREE_FANOUT);
  assert_int_equal(top.size(), 1);
  return top[0] + 0.0;  // store_dw's normalisation of an exact zero
}

// The tuned deterministic programs' column tree: units of G chunks, then levels of
// CAKE_NG_COLUMN_SPAN nodes, the last level (at most a span) reduced as one subtree.
double by_columns(const std::vector<double> &chunks, int64_t g, int64_t rows, int d) {
  const cake_ng_coltree t = cake_ng_coltree_of(rows, d, g);
  const std::vector<double> top = top_level(chunks, g, t.units, t.levels, CAKE_NG_COLUMN_SPAN);
  assert_true(static_cast<int64_t>(top.size()) <= CAKE_NG_COLUMN_SPAN);
  return tree(top, 0, CAKE_NG_COLUMN_SPAN) + 0.0;  // store_dw's normalisation of an exact zero
}

// The grouped tree as the kernels build it (normgate_workspace.h, group_node and reduce_span in
// normgate_dw.cuh): unit values (G chunks each); a group's units as their subtree; a leaf past
// the groups from its CAKE_NG_GROUP_UNITS singles (past the last +0);
// then the column tree's levels over the leaves.
double by_groups(const std::vector<double> &chunks, int64_t g, int64_t rows, int d, int64_t grid) {
  const int64_t units = cake_ng_units(rows, g);
  const cake_ng_grouping gr = cake_ng_grouping_of(units, grid);
  assert_int_equal(gr.groups * CAKE_NG_GROUP_UNITS + gr.singles, units);
  assert_true(gr.singles <= CAKE_NG_SINGLES_MAX && gr.singles <= cake_ng_singles_span(units));
  std::vector<double> unit(units);
  for (int64_t u = 0; u < units; ++u) unit[u] = tree(chunks, u * g, g);
  const cake_ng_coltree t = cake_ng_leaves_of(rows, d, g);
  std::vector<double> leaves(t.units);
  for (int64_t i = 0; i < t.units; ++i) {
    if (i < gr.groups) {  // the group's units, adjacent pairs first
      leaves[i] = tree(unit, i * CAKE_NG_GROUP_UNITS, CAKE_NG_GROUP_UNITS);
    } else {
      std::vector<double> singles(unit.begin() + gr.groups * CAKE_NG_GROUP_UNITS, unit.end());
      leaves[i] = tree(singles, (i - gr.groups) * CAKE_NG_GROUP_UNITS, CAKE_NG_GROUP_UNITS);
    }
  }
  const std::vector<double> top = top_level(leaves, 1, t.units, t.levels, CAKE_NG_COLUMN_SPAN);
  assert_true(static_cast<int64_t>(top.size()) <= CAKE_NG_COLUMN_SPAN);
  return tree(top, 0, CAKE_NG_COLUMN_SPAN) + 0.0;
}

}  // namespace

static void test_grouped_tree_gives_the_canonical_bits(void **) {
  std::mt19937_64 gen(777);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  // Units of 4 chunks (D = 128): no groups, a few, many; a grid of 1, 132 and past the cap.
  for (int64_t rows : {int64_t(1), int64_t(1000), int64_t(70000), int64_t(169632), int64_t(800000),
                       int64_t(1) << 23}) {
    const int64_t n = cake_ng_chunks(rows);
    std::vector<double> chunks(n);
    for (auto &c : chunks) c = static_cast<double>(std::ldexp(dist(gen), static_cast<int>(gen() % 60) - 30));
    const double canonical = tree(chunks, 0, pow2_at_least(n)) + 0.0;
    for (int64_t g : {2, 4, 8}) {
      for (int64_t grid : {1, 7, 132, 2000}) {
        if (rows > 1000000 && grid != 132) continue;  // the long case once
        const double got = by_groups(chunks, g, rows, 128, grid);
        if (std::memcmp(&got, &canonical, sizeof got) != 0) {
          print_error("rows %lld, G %lld, grid %lld: %.17g != canonical %.17g\n", (long long)rows,
                      (long long)g, (long long)grid, got, canonical);
          fail();
        }
      }
    }
  }
}

static void test_grouped_layout_is_disjoint_and_sized(void **) {
  for (int64_t rows : {int64_t(1), int64_t(1025), int64_t(800000), int64_t(1) << 28, int64_t(1) << 33}) {
    for (int d : {8, 128, 256}) {
      for (int64_t g : {2, 4, 8}) {
        const cake_ng_coltree leaves = cake_ng_leaves_of(rows, d, g);
        const int64_t units = cake_ng_units(rows, g);
        assert_int_equal(leaves.units, (units + CAKE_NG_GROUP_UNITS - 1) / CAKE_NG_GROUP_UNITS);
        const int64_t singles = cake_ng_singles_offset(rows, d, g);
        assert_int_equal(singles, cake_ng_coltree_words_offset(&leaves));  // after the leaves
        assert_int_equal(singles % 256, 0);
        const int64_t span = cake_ng_singles_span(units);
        assert_int_equal(span % 32, 0);
        for (int64_t grid : {1, 132, 1024, 5000}) {
          const cake_ng_grouping gr = cake_ng_grouping_of(units, grid);
          assert_true(gr.singles <= span);
          // Every leaf past the groups has at least one single; the groups fill their leaves.
          assert_int_equal(gr.groups + (gr.singles + CAKE_NG_GROUP_UNITS - 1) / CAKE_NG_GROUP_UNITS,
                           leaves.units);
        }
        const int64_t words = cake_ng_det_tuned_words_offset(rows, d, g, 2);
        assert_int_equal(words, singles + span * d * 8);
        assert_int_equal(cake_ng_det_tuned_bytes(rows, d, g, 2), words + 256);
        assert_true(4 * (2 + leaves.levels) <= 256);
      }
    }
  }
}

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
      const double col = by_columns(chunks, g, rows, 128);
      if (std::memcmp(&got, &canonical, sizeof got) != 0 || std::memcmp(&col, &canonical, sizeof col) != 0) {
        print_error("rows %lld, G %lld: %.17g (levels), %.17g (column tree) != canonical %.17g\n",
                    (long long)rows, (long long)g, got, col, canonical);
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
    assert_false(std::signbit(by_columns(chunks, g, 37 * CAKE_NG_DW_CHUNK_ROWS, 8)));
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

static void test_column_tree_layout_is_disjoint_and_sized(void **) {
  for (int64_t rows : {int64_t(1), int64_t(16), int64_t(1025), int64_t(800000), int64_t(1) << 28,
                       int64_t(1) << 33}) {
    for (int d : {8, 128, 256}) {
      for (int64_t g : {1, 2, 4, 8}) {
        const cake_ng_coltree t = cake_ng_coltree_of(rows, d, g);
        assert_int_equal(t.units, (cake_ng_chunks(rows) + g - 1) / g);
        assert_true(t.levels >= 1 && t.levels <= CAKE_NG_MAX_LEVELS);
        assert_true(cake_ng_collevel_nodes(t.units, t.levels - 1) <= CAKE_NG_COLUMN_SPAN);
        if (t.levels > 1) assert_true(cake_ng_collevel_nodes(t.units, t.levels - 2) > CAKE_NG_COLUMN_SPAN);
        int64_t end = 0;
        for (int l = 0; l < t.levels; ++l) {
          const cake_ng_collevel lv = cake_ng_collevel_of(&t, l);
          assert_true(lv.node_offset >= end);
          assert_int_equal(lv.node_offset % 256, 0);
          // Every node of every column inside the level, each index once.
          assert_true(lv.span == CAKE_NG_COLUMN_SPAN || (lv.span >= lv.nodes && lv.span % 32 == 0));
          const int64_t last = cake_ng_colnode_index(lv.nodes - 1, d, d - 1, lv.span);
          assert_true((last + 1) * 8 <= lv.bytes);
          assert_int_equal(cake_ng_colnode_index(0, d, 0, lv.span), 0);
          // A span of a column is contiguous and 256-byte aligned.
          for (int c = 0; c < d; c += 7) {
            const int64_t at = cake_ng_colnode_index(0, d, c, lv.span);
            assert_int_equal(at % 32, 0);
            if (lv.nodes > 1) assert_int_equal(cake_ng_colnode_index(1, d, c, lv.span), at + 1);
          }
          // The split form the walk stores with: column part + node part == the index.
          for (int64_t n : {int64_t(0), int64_t(1), lv.nodes / 2, lv.nodes - 1}) {
            for (int c : {0, 1, d / 2, d - 1}) {
              assert_int_equal(cake_ng_colnode_col_part(c, lv.span) + cake_ng_colnode_node_part(n, d, lv.span),
                               cake_ng_colnode_index(n, d, c, lv.span));
            }
          }
          if (lv.nodes <= 64 && d <= 8) {
            std::vector<char> seen(static_cast<size_t>(lv.bytes / 8), 0);
            for (int64_t n = 0; n < lv.nodes; ++n)
              for (int c = 0; c < d; ++c) assert_int_equal(seen[cake_ng_colnode_index(n, d, c, lv.span)]++, 0);
          }
          end = lv.node_offset + lv.bytes;
        }
        // The grid barriers' words (2 + levels) fit the 256 bytes after the last level.
        assert_int_equal(cake_ng_coltree_words_offset(&t), end);
        assert_true(4 * (2 + t.levels) <= 256);
        assert_int_equal(cake_ng_det_tuned_bytes(rows, d, g, 1), end + 256);
        const cake_ng_tree rt = cake_ng_tree_of(rows, d, g);  // the row tree: words after it
        assert_int_equal(cake_ng_det_tuned_bytes(rows, d, g, 0), cake_ng_tree_bytes(&rt) + 256);
      }
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_schedule_gives_the_canonical_bits),
      cmocka_unit_test(test_exact_zero_is_positive),
      cmocka_unit_test(test_layout_is_disjoint_and_sized),
      cmocka_unit_test(test_column_tree_layout_is_disjoint_and_sized),
      cmocka_unit_test(test_grouped_tree_gives_the_canonical_bits),
      cmocka_unit_test(test_grouped_layout_is_disjoint_and_sized),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
