#include "normgate_quant_ref.h"

#include <cstdio>
#include <cstring>

#include "swiglu_fp8_ref.h"
#include "swiglu_mxfp8_ref.h"

namespace cake_ref {

void normgate_quant_model(const uint16_t *y, int64_t rows, int32_t d, int64_t y_stride,
                          int64_t heads, int format, int rule, NormgateQuantOut *out) {
  const int64_t T = rows / heads, K = heads * d;
  std::vector<uint16_t> packed((size_t)(rows * d));
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(packed.data() + r * d, y + r * y_stride, (size_t)d * 2);
  }
  if (format == 1) {
    Fp8Out f;
    fp8_blockwise_quantize(packed.data(), T, K, true, false, rule, &f);
    out->q = f.row_q;
    out->scale.resize(f.row_s.size() * 4);
    std::memcpy(out->scale.data(), f.row_s.data(), out->scale.size());
  } else {
    Mxfp8Out m;
    mxfp8_quantize(packed.data(), T, K, true, false, &m);
    out->q = m.row_q;
    out->scale = m.row_s;
  }
}

std::string normgate_quant_compare(const NormgateQuantOut &want, const uint8_t *q,
                                   const uint8_t *scale, int format, int64_t rows, int32_t d,
                                   int64_t heads) {
  std::string detail;
  char buf[200];
  int64_t bad = 0;
  for (size_t i = 0; i < want.q.size(); ++i) {
    if (q[i] != want.q[i] && bad++ < 4) {
      std::snprintf(buf, sizeof buf, "q[%zu] (row %lld col %lld) 0x%02x, want 0x%02x; ", i,
                    (long long)(i / d), (long long)(i % d), q[i], want.q[i]);
      detail += buf;
    }
  }
  const int64_t T = rows / heads;
  for (size_t i = 0; i < want.scale.size(); ++i) {
    if (scale[i] != want.scale[i] && bad++ < 8) {
      if (format == 1) {
        const int64_t e = (int64_t)(i / 4);
        std::snprintf(buf, sizeof buf, "scale byte %zu (t %lld, column %lld) 0x%02x, want 0x%02x; ",
                      i, (long long)(e % T), (long long)(e / T), scale[i], want.scale[i]);
      } else {
        std::snprintf(buf, sizeof buf, "scale byte %zu 0x%02x, want 0x%02x; ", i, scale[i],
                      want.scale[i]);
      }
      detail += buf;
    }
  }
  if (bad > 0) {
    std::snprintf(buf, sizeof buf, "%lld bytes differ", (long long)bad);
    detail += buf;
  }
  return detail;
}

}  // namespace cake_ref
