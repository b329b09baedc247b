#include "kernels/cpu/norm.hpp"

#include <cmath>
#include <vector>

namespace tandem::kernels::cpu {
namespace {

using I64 = std::int64_t;

struct RowStats {
  float mean, rstd;
};

RowStats layer_stats(const float* x, I64 cols, float eps) {
  double sum = 0.0;
  for (I64 c = 0; c < cols; ++c) sum += x[c];
  const double mean = sum / static_cast<double>(cols);
  double var = 0.0;  // two-pass: no cancellation for rows with a large mean
  for (I64 c = 0; c < cols; ++c) {
    const double d = x[c] - mean;
    var += d * d;
  }
  var /= static_cast<double>(cols);
  return {static_cast<float>(mean), static_cast<float>(1.0 / std::sqrt(var + eps))};
}

float rms_rstd(const float* x, I64 cols, float eps) {
  double sq = 0.0;
  for (I64 c = 0; c < cols; ++c) sq += static_cast<double>(x[c]) * x[c];
  return static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(cols) + eps));
}

// Shared backward core. With xhat = (x − mean)·rstd (mean = 0 for RMSNorm) and
// g = dy·w (the gradient w.r.t. xhat):
//   LayerNorm  dx = rstd·(g − mean(g) − xhat·mean(g·xhat))
//   RMSNorm    dx = rstd·(g − xhat·mean(g·xhat))
// dweight += Σ_rows dy·xhat, dbias += Σ_rows dy, summed in double over rows.
void norm_backward(bool centered, float* dx, float* dweight, float* dbias, const float* dy,
                   const float* x, const float* weight, I64 rows, I64 cols, float eps) {
  std::vector<double> dw(dweight ? static_cast<std::size_t>(cols) : 0, 0.0);
  std::vector<double> db(dbias ? static_cast<std::size_t>(cols) : 0, 0.0);
  for (I64 r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    const float* dyr = dy + r * cols;
    float* dxr = dx + r * cols;
    float mean = 0.0f, rstd;
    if (centered) {
      const RowStats st = layer_stats(xr, cols, eps);
      mean = st.mean;
      rstd = st.rstd;
    } else {
      rstd = rms_rstd(xr, cols, eps);
    }
    double g_sum = 0.0, gx_sum = 0.0;
    for (I64 c = 0; c < cols; ++c) {
      const float xhat = (xr[c] - mean) * rstd;
      const float g = dyr[c] * weight[c];
      g_sum += g;
      gx_sum += static_cast<double>(g) * xhat;
      if (dweight) dw[static_cast<std::size_t>(c)] += static_cast<double>(dyr[c]) * xhat;
      if (dbias) db[static_cast<std::size_t>(c)] += dyr[c];
    }
    const float g_mean = centered ? static_cast<float>(g_sum / static_cast<double>(cols)) : 0.0f;
    const float gx_mean = static_cast<float>(gx_sum / static_cast<double>(cols));
    for (I64 c = 0; c < cols; ++c) {
      const float xhat = (xr[c] - mean) * rstd;
      const float g = dyr[c] * weight[c];
      dxr[c] = rstd * (g - g_mean - xhat * gx_mean);
    }
  }
  for (I64 c = 0; c < cols; ++c) {
    if (dweight) dweight[c] += static_cast<float>(dw[static_cast<std::size_t>(c)]);
    if (dbias) dbias[c] += static_cast<float>(db[static_cast<std::size_t>(c)]);
  }
}

}  // namespace

void layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* weight,
                       const float* bias, I64 rows, I64 cols, float eps) {
  for (I64 r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    const RowStats st = layer_stats(xr, cols, eps);
    for (I64 c = 0; c < cols; ++c) {
      const float v = (xr[c] - st.mean) * st.rstd * weight[c];
      yr[c] = bias ? v + bias[c] : v;
    }
    if (mean) mean[r] = st.mean;
    if (rstd) rstd[r] = st.rstd;
  }
}

void layernorm_backward(float* dx, float* dweight, float* dbias, const float* dy, const float* x,
                        const float* weight, I64 rows, I64 cols, float eps) {
  norm_backward(true, dx, dweight, dbias, dy, x, weight, rows, cols, eps);
}

void rmsnorm_forward(float* y, float* rstd, const float* x, const float* weight,
                     const float* bias, I64 rows, I64 cols, float eps) {
  for (I64 r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    const float rs = rms_rstd(xr, cols, eps);
    for (I64 c = 0; c < cols; ++c) {
      const float v = xr[c] * rs * weight[c];
      yr[c] = bias ? v + bias[c] : v;
    }
    if (rstd) rstd[r] = rs;
  }
}

void rmsnorm_backward(float* dx, float* dweight, float* dbias, const float* dy, const float* x,
                      const float* weight, I64 rows, I64 cols, float eps) {
  norm_backward(false, dx, dweight, dbias, dy, x, weight, rows, cols, eps);
}

}  // namespace tandem::kernels::cpu
