// The grouped programs' aligned col_q runs (kernels/common/swiglu_col_runs.cuh) on the CPU
// (tests/host/cuda_host_emulation.h): a warp's lane groups each store their pieces of two
// columns at every start offset within 16 bytes, with both columns' offsets differing (a row
// stride that is not a multiple of 16), for every count of valid rows from none to past the
// group; every byte of the group's run must be its piece's byte and every other byte keep the
// poison (a byte before the run or past the expert's rows belongs to another expert or CTA).
#include "cuda_host_emulation.h"

#include "swiglu_col_runs.cuh"

CAKE_EMULATION_GLOBALS

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <random>
#include <vector>

extern "C" {
#include <cmocka.h>
}

namespace {

constexpr uint8_t kPoison = 0xA5;

// One launch of one warp: 32 / L groups of L lanes, group g's run of column o at byte
// start[g] of row 2g, column o+1's at the same offset of row 2g + 1 (ld bytes a row), with
// valid[g] rows. Returns false (and says where) on the first wrong byte.
template <int L>
bool run_groups(const std::vector<int> &start, const std::vector<int> &valid, int64_t ld,
                std::mt19937 &rng) {
  constexpr int G = 32 / L;
  std::vector<uint8_t> buf((size_t)(2 * G * ld + 64), kPoison);
  std::vector<uint8_t> piece((size_t)(32 * 32));  // lane t: 16 bytes of column o, 16 of o+1
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t &b : piece) {
    do b = (uint8_t)byte(rng); while (b == kPoison);  // a stored byte never reads as poison
  }
  uint8_t *const base = buf.data() + (16 - (reinterpret_cast<uintptr_t>(buf.data()) & 15)) % 16;
  cake_emu::launch(
      [&] {
        const int t = threadIdx.x, g = t / L, li = t % L;
        uint4 lo, hi;
        memcpy(&lo, &piece[(size_t)t * 32], 16);
        memcpy(&hi, &piece[(size_t)t * 32 + 16], 16);
        uint8_t *const col = base + 2 * g * ld + start[(size_t)g] + 16 * li;
        const int64_t v = valid[(size_t)g] - 16 * li;
        cake::swiglu::store_col_runs<L>(col, ld, lo, hi, v > 0 ? v : 0, li);
      },
      1, 32);
  for (int g = 0; g < G; ++g) {
    const int64_t run = std::min<int64_t>(valid[(size_t)g], 16 * L);
    for (int c = 0; c < 2; ++c) {
      const uint8_t *row = base + (2 * g + c) * ld;
      for (int64_t i = 0; i < ld; ++i) {
        const int64_t r = i - start[(size_t)g];  // byte of the run
        const bool in = r >= 0 && r < run;
        const uint8_t want =
            in ? piece[(size_t)((g * L + r / 16) * 32 + c * 16 + r % 16)] : kPoison;
        if (row[i] != want) {
          fprintf(stderr, "L=%d ld=%lld group %d start %d valid %d column %d: byte %lld is 0x%02x, "
                  "want 0x%02x\n", L, (long long)ld, g, start[(size_t)g], valid[(size_t)g], c,
                  (long long)i, row[i], want);
          return false;
        }
      }
    }
  }
  return true;
}

// Every start offset 0..15 and every valid count 0..16L+1, in groups of one warp's launches;
// strides that keep both columns' offsets equal (multiple of 16) and ones that do not.
template <int L>
int sweep(std::mt19937 &rng) {
  constexpr int G = 32 / L;
  int runs = 0;
  for (int64_t ld : {int64_t(16 * L + 48), int64_t(16 * L + 53)}) {
    std::vector<int> starts, valids;
    for (int s = 0; s < 16; ++s) {
      for (int v = 0; v <= 16 * L + 1; ++v) {
        starts.push_back(s + 16);  // bytes of poison before every run
        valids.push_back(v);
      }
    }
    for (size_t i = 0; i < starts.size(); i += G) {
      std::vector<int> s(G, 16), v(G, 0);
      for (int g = 0; g < G && i + (size_t)g < starts.size(); ++g) {
        s[(size_t)g] = starts[i + (size_t)g];
        v[(size_t)g] = valids[i + (size_t)g];
      }
      assert_true(run_groups<L>(s, v, ld, rng));
      ++runs;
    }
  }
  return runs;
}

void test_runs(void **) {
  std::mt19937 rng(20261208u);
  const int n = sweep<2>(rng) + sweep<4>(rng) + sweep<8>(rng);
  print_message("%d warps of runs byte-exact (2, 4 and 8 lanes a group)\n", n);
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_runs),
  };
  return cmocka_run_group_tests_name("swiglu_col_runs_emulated", tests, NULL, NULL);
}
