// Float64 host reference of every normgate variant (docs/spec/normgate.md): the gate (SiLU,
// sigmoid, none), its placement (after or before the norm), mean-square groups of G columns, and
// BF16 / F16 / FP32 tensors, with the spec's accuracy contract per output dtype.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

namespace cake_test {

// Element codecs (cake_dtype_t values: 1 BF16, 2 FP32, 3 F16). Rounding is RNE, once, from the
// double (exact for every value these tests produce, whose doubles come from FP32 or the
// reference).
size_t dtype_size(int dtype);
double load_elem(int dtype, const void *base, size_t i);
void store_elem(int dtype, void *base, size_t i, double v);  // one RNE rounding from double
uint16_t double_to_f16(double v);
double f16_to_double(uint16_t h);
// Ordinal of a finite value of the dtype (adjacent values differ by 1; +0 and -0 equal).
int64_t dtype_ordinal(int dtype, double v_exact_in_dtype);
// Significand bits of the dtype (8, 11, 24).
int dtype_precision(int dtype);
const char *dtype_name(int dtype);

struct VariantSpec {
  int gate;       // cake_normgate_gate_t
  int placement;  // cake_normgate_placement_t
  int32_t d;
  int32_t group;  // columns per mean-square group (d: the whole row)
  double eps;
};

// Rows are packed [rows, d] doubles here (the caller decodes the device layout). z may be empty
// when there is no gate. y [rows * d]; rstd [rows * d / group].
void variant_forward_ref(const VariantSpec &s, int64_t rows, const std::vector<double> &x,
                         const std::vector<double> &z, const std::vector<double> &w,
                         std::vector<double> *y, std::vector<double> *rstd);

// dx, dz [rows * d] (dz zero without a gate), dw [d] the sum over rows, dw_abs [d] the sum of
// |terms| (what bounds the FP32 chunk sums' rounding).
void variant_backward_ref(const VariantSpec &s, int64_t rows, const std::vector<double> &dy,
                          const std::vector<double> &x, const std::vector<double> &z,
                          const std::vector<double> &w, std::vector<double> *dx,
                          std::vector<double> *dz, std::vector<double> *dw,
                          std::vector<double> *dw_abs);

// The spec's per-element contract for a row tensor of `dtype`, `got` [rows, stride] against the
// float64 `ref` [rows, d], NaN where the reference is NaN:
//   BF16, F16: the float64 value rounded to the dtype or a neighbour (1 ulp); for a tensor whose
//     formula cancels (dx, dz: cancels = true) also anything within 2^-(p+2) x the largest
//     |reference| of the tensor in its row (p: the dtype's precision, 8 or 11);
//   FP32: within 2^-16 x |reference|, or 2^-126 (underflow); with cancels also 2^-16 x the
//     row's largest |reference|.
// Also the relative L2 error per tensor (BF16 2e-3, F16 1e-3, FP32 1e-5), judged when check_l2
// and on >= 4096 finite elements. Returns the failing elements; the first is described in *first.
int64_t check_row_tensor(const char *name, int dtype, int64_t rows, int32_t d,
                         const std::vector<double> &ref, const void *got, int64_t stride,
                         bool cancels, bool check_l2, std::string *first, double *rel_l2 = nullptr);

// dw against the reference sum (plus dw0 when accumulating): FP32 relative L2 <= 1e-5 and each
// element within 1e-5 x (|sum| + dw_abs); BF16 / F16 each element within 1 ulp of the rounded
// float64 value, or within 20 * 2^-24 x dw_abs of it (a cancelling column). Returns failures.
int64_t check_dw(int dtype, int32_t d, const std::vector<double> &ref,
                 const std::vector<double> &dw_abs, const void *got, std::string *first);

}  // namespace cake_test
