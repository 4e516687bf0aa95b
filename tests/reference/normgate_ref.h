// Float64 host reference of the normgate spec (docs/spec/normgate.md), on the same BF16 inputs.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include <vector>

namespace cake_test {

double bf16_to_double(uint16_t v);
float bf16_to_float(uint16_t v);
uint16_t float_to_bf16_rne(float f);
// Distance in BF16 ulps between two finite BF16 values (ordinal distance).
int64_t bf16_ordinal(uint16_t v);

struct NormgateShape {
  int64_t rows;
  int32_t d;
  int64_t x_stride, z_stride, y_stride;  // elements
  float eps;
};

// y[r, c] in float64 (before rounding), and rstd per row (float64).
void normgate_forward_ref(const NormgateShape &s, const uint16_t *x, const uint16_t *z,
                          const uint16_t *w, std::vector<double> *y, std::vector<double> *rstd);

// Checks a device y against the reference: every element equals the float64 value rounded to
// BF16 or one of its BF16 neighbours (NaN where the reference is NaN). Returns the number of
// failing elements and describes the first in `first` (if non-null).
int64_t check_forward_y(const NormgateShape &s, const std::vector<double> &ref,
                        const uint16_t *y, char *first, size_t first_len);

struct NormgateBwdShape {
  int64_t rows;
  int32_t d;
  int64_t dy_stride, x_stride, z_stride, dx_stride, dz_stride;  // elements
  float eps;
};

// Float64 backward: dx, dz [rows * d] (packed) and dw [d]; dw_abs (optional) [d], the sum over
// rows of |a*n|, what bounds the rounding error of dw's FP32 chunk sums.
void normgate_backward_ref(const NormgateBwdShape &s, const uint16_t *dy, const uint16_t *x,
                           const uint16_t *z, const uint16_t *w, std::vector<double> *dx,
                           std::vector<double> *dz, std::vector<double> *dw,
                           std::vector<double> *dw_abs = nullptr);

// The spec's contract for dx or dz (strided device tensor `got` against packed `ref`): every
// element within 1 BF16 ulp of the float64 value rounded, or within 2^-10 times the largest
// magnitude of that tensor in its row; NaN where the reference is NaN. Also the relative L2
// error (<= 2e-3, judged on >= 4096 finite elements). Returns failing elements; the first is
// described in `first`.
int64_t check_grad(const char *name, int64_t rows, int32_t d, const std::vector<double> &ref,
                   const uint16_t *got, int64_t stride, double *rel_l2, char *first,
                   size_t first_len, bool check_l2 = true);

uint16_t double_to_bf16(double v);

}  // namespace cake_test
