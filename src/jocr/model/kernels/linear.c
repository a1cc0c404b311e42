/* y (M, N) fp32 = x (M, K) fp32 . W (N, K)^T, W stored as bfloat16 or as int8 with one fp32 scale per row.

   Why: this CPU family (AVX2, no AVX512-BF16 / AMX) has no bf16 matrix unit, and torch's bf16 products run
   at a few GFLOP/s whatever the shape, so decoding (M = 1..8 rows) is bound by converting weights, not by
   reading them. Here each weight is read once per call, widened in registers (bf16 -> fp32 is a 16-bit
   shift; int8 -> fp32 a convert) and used for every row, so the cost follows the bytes of W.

   Every output y[m, n] is summed in the same order whatever M is (two 8-wide accumulators over K, then the
   same horizontal sum), so a row gives bit-identical results alone, in a batch or in a verify pass.
   Requires K % 16 == 0 (checked by the caller). Threads: OpenMP over N. */
#include <immintrin.h>
#include <stdint.h>
#include <omp.h>

static inline float hsum(__m256 v) {
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
    return _mm_cvtss_f32(lo);
}

static inline __m256 load_bf16(const uint16_t *p) {
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

static inline __m256 load_i8(const int8_t *p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)));
}

/* R rows (a compile-time constant after inlining, so the accumulators stay in registers) against one weight
   row; the order of the sums for a given x row does not depend on R. */
#define DOT_ROWS(NAME, WTYPE, LOAD)                                                                     \
static inline __attribute__((always_inline)) void NAME(const float *x, const WTYPE *wr, int64_t K,      \
                                                       float *out, const int R) {                       \
    __m256 a0[4], a1[4];                                                                                \
    for (int r = 0; r < R; r++) { a0[r] = _mm256_setzero_ps(); a1[r] = _mm256_setzero_ps(); }          \
    for (int64_t k = 0; k < K; k += 16) {                                                               \
        __m256 w0 = LOAD(wr + k), w1 = LOAD(wr + k + 8);                                                \
        for (int r = 0; r < R; r++) {                                                                   \
            a0[r] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + r * K + k), a0[r]);                         \
            a1[r] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + r * K + k + 8), a1[r]);                     \
        }                                                                                               \
    }                                                                                                   \
    for (int r = 0; r < R; r++) out[r] = hsum(_mm256_add_ps(a0[r], a1[r]));                             \
}

#define KERNEL(NAME, DOT, WTYPE)                                                                        \
void NAME(const float *x, const WTYPE *w, const float *scale, float *y, int64_t M, int64_t N,           \
          int64_t K, int threads) {                                                                     \
    _Pragma("omp parallel for num_threads(threads) schedule(static)")                                   \
    for (int64_t n = 0; n < N; n++) {                                                                   \
        const WTYPE *wr = w + n * K;                                                                    \
        float s = scale ? scale[n] : 1.0f, out[4];                                                      \
        for (int64_t m0 = 0; m0 < M; m0 += 4) {                                                         \
            const float *xr = x + m0 * K;                                                               \
            int64_t rows = M - m0 < 4 ? M - m0 : 4;                                                     \
            switch (rows) {                                                                             \
            case 4: DOT(xr, wr, K, out, 4); break;                                                      \
            case 3: DOT(xr, wr, K, out, 3); break;                                                      \
            case 2: DOT(xr, wr, K, out, 2); break;                                                      \
            default: DOT(xr, wr, K, out, 1);                                                            \
            }                                                                                           \
            for (int64_t r = 0; r < rows; r++) y[(m0 + r) * N + n] = out[r] * s;                        \
        }                                                                                               \
    }                                                                                                   \
}

DOT_ROWS(dot_bf16, uint16_t, load_bf16)
DOT_ROWS(dot_i8, int8_t, load_i8)
KERNEL(linear_bf16, dot_bf16, uint16_t)
KERNEL(linear_i8, dot_i8, int8_t)
