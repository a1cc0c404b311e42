/* Inference products with fp32 activations and bf16, fp32 or int8 (+ one fp32 scale per row) weights, and
   attention over a KV cache, each computed in an order that does not depend on the shape of the pass.

   linear_*:  y (M, N) fp32 = x (M, K) fp32 . W (N, K)^T, for any M.
   moe_*:     a whole MoE layer's experts (routed + shared SwiGLU MLPs) for some rows in one call.
   attention: softmax(q k^T * scale) v per query over the keys it may see (attention_f32 below).

   Why: this CPU family (AVX2, no AVX512-BF16 / AMX) has no bf16 matrix unit, and torch's bf16 products run
   at a few GFLOP/s whatever the shape, so decoding (M = 1..8 rows) is bound by converting weights, not by
   reading them. Here each weight is read once per call, widened in registers (bf16 -> fp32 is a 16-bit
   shift; int8 -> fp32 a convert) and used for every row, so the cost follows the bytes of W.

   Each weight row is read once (prefetched ahead, see PREFETCH) and used for up to 4 x rows held in
   registers (more rows: again per group of 4, the weight row still in L1). Interleaving several weight
   rows (more FMA chains for a single x row) measured slower here (8-19% in CPU time), and 4 accumulators
   instead of 2 for one row no faster (the FMA latency is not the limit), so a block is one weight row
   against R x rows.

   Summation order: every output y[m, n] is two 8-wide accumulators over k (k % 16 < 8 and >= 8), added,
   then the same horizontal sum, whatever M is, so a row gives bit-identical results alone, in a batch, in
   a verify pass or in a prompt (docs/model.md "Weight formats"). Requires K % 16 == 0 (checked by the
   caller). Threads: OpenMP over blocks of 8 output rows. Many rows (a prompt) are taken MTILE at a time,
   so a tile of x stays in cache while every weight row passes over it; the order of each sum is unchanged. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

#define NBLK 8 /* output rows per thread work item */
#define MTILE 64 /* x rows per pass over the weights */
/* Software prefetch distance in bytes ahead of the weight being read, non-temporal (weights are read once
   per call). The hardware prefetcher alone left one row at 62% of a plain read's rate on this machine;
   with it a 1-row product ran 1.2-1.25x faster and a 4-row one 1.1x (1 KB to 8 KB measured alike). */
#define PREFETCH 2048

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

static inline __m256 load_f32(const float *p) { return _mm256_loadu_ps(p); }

/* R x rows (stride ldx) against one weight row: y[r * ldy] = scale * sum_k x[r, k] w[k]. R is a
   compile-time constant after inlining, so the 2 * R accumulators stay in registers. */
#define BLOCK(NAME, WTYPE, LOAD)                                                                        \
static inline __attribute__((always_inline)) void NAME(const float *x, int64_t ldx, const WTYPE *w,     \
                                                       int64_t K, float scale, float *y, int64_t ldy,   \
                                                       const int R) {                                   \
    __m256 a0[4], a1[4];                                                                                \
    for (int r = 0; r < R; r++) a0[r] = a1[r] = _mm256_setzero_ps();                                    \
    for (int64_t k = 0; k < K; k += 16) {                                                               \
        if (!(k & 31)) /* once per 64-byte line of bf16 (two lines of int8: harmless) */                \
            _mm_prefetch((const char *)(w + k) + PREFETCH, _MM_HINT_NTA);                               \
        __m256 w0 = LOAD(w + k), w1 = LOAD(w + k + 8);                                                  \
        for (int r = 0; r < R; r++) {                                                                   \
            a0[r] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + r * ldx + k), a0[r]);                       \
            a1[r] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + r * ldx + k + 8), a1[r]);                   \
        }                                                                                               \
    }                                                                                                   \
    for (int r = 0; r < R; r++) y[r * ldy] = hsum(_mm256_add_ps(a0[r], a1[r])) * scale;                \
}

/* Output rows [n0, n1) for all M x rows, in groups of 4 x rows (a group stays in L1 while the block's
   weight rows pass over it, so x is read once per block however many rows it has). */
#define ROWS(NAME, BLOCKFN, WTYPE)                                                                      \
static void NAME(const float *x, int64_t M, const WTYPE *w, const float *scale, float *y, int64_t N,    \
                 int64_t K, int64_t n0, int64_t n1) {                                                   \
    for (int64_t m0 = 0; m0 < M; m0 += 4) {                                                             \
        for (int64_t n = n0; n < n1; n++) {                                                             \
            const WTYPE *wr = w + n * K;                                                                \
            float s = scale ? scale[n] : 1.0f;                                                          \
            const float *xr = x + m0 * K;                                                               \
            float *yr = y + m0 * N + n;                                                                 \
            switch (M - m0 < 4 ? M - m0 : 4) {                                                          \
            case 4: BLOCKFN(xr, K, wr, K, s, yr, N, 4); break;                                          \
            case 3: BLOCKFN(xr, K, wr, K, s, yr, N, 3); break;                                          \
            case 2: BLOCKFN(xr, K, wr, K, s, yr, N, 2); break;                                          \
            default: BLOCKFN(xr, K, wr, K, s, yr, N, 1);                                                \
            }                                                                                           \
        }                                                                                               \
    }                                                                                                   \
}

/* y = x W^T inside an enclosing parallel region (work shared over blocks of NBLK output rows). */
#define SHARED_LINEAR(NAME, ROWSFN, WTYPE)                                                              \
static void NAME(const float *x, int64_t M, const WTYPE *w, const float *scale, float *y, int64_t N,    \
                 int64_t K) {                                                                           \
    for (int64_t m0 = 0; m0 < M; m0 += MTILE) {                                                         \
        int64_t mt = M - m0 < MTILE ? M - m0 : MTILE;                                                   \
        _Pragma("omp for schedule(static)")                                                             \
        for (int64_t b = 0; b < (N + NBLK - 1) / NBLK; b++) {                                           \
            int64_t n0 = b * NBLK, n1 = n0 + NBLK < N ? n0 + NBLK : N;                                  \
            ROWSFN(x + m0 * K, mt, w, scale, y + m0 * N, N, K, n0, n1);                                 \
        }                                                                                               \
    }                                                                                                   \
}

#define LINEAR(NAME, SHAREDFN, WTYPE)                                                                   \
void NAME(const float *x, const WTYPE *w, const float *scale, float *y, int64_t M, int64_t N,           \
          int64_t K, int threads) {                                                                     \
    _Pragma("omp parallel num_threads(threads)")                                                        \
    SHAREDFN(x, M, w, scale, y, N, K);                                                                  \
}

/* One SwiGLU MLP on c rows (inside a parallel region): h = silu(x Wg^T) * (x Wu^T); y = h Wd^T.
   g, u: (c, I) scratch of this MLP alone; h is written over g. One barrier: the gate, up and SiLU of a block
   of outputs run in the same iteration, and the down product does not wait at its end (nowait), so the next
   MLP starts at once; its scratch and outputs are its own, and the caller puts a barrier before reading y. */
#define MLP(NAME, ROWSFN, WTYPE)                                                                        \
static void NAME(const float *x, int64_t c, int64_t D, int64_t I, const WTYPE *wg, const float *sg,     \
                 const WTYPE *wu, const float *su, const WTYPE *wd, const float *sd, float *g, float *u, \
                 float *y) {                                                                            \
    _Pragma("omp for schedule(static)")                                                                 \
    for (int64_t b = 0; b < (I + NBLK - 1) / NBLK; b++) {                                               \
        int64_t n0 = b * NBLK, n1 = n0 + NBLK < I ? n0 + NBLK : I;                                      \
        ROWSFN(x, c, wg, sg, g, I, D, n0, n1);                                                          \
        ROWSFN(x, c, wu, su, u, I, D, n0, n1);                                                          \
        for (int64_t r = 0; r < c; r++)                                                                 \
            for (int64_t n = n0; n < n1; n++) {                                                         \
                float v = g[r * I + n];                                                                 \
                g[r * I + n] = v / (1.0f + expf(-v)) * u[r * I + n];                                    \
            }                                                                                           \
    }                                                                                                   \
    _Pragma("omp for schedule(static) nowait")                                                          \
    for (int64_t b = 0; b < (D + NBLK - 1) / NBLK; b++) {                                               \
        int64_t n0 = b * NBLK, n1 = n0 + NBLK < D ? n0 + NBLK : D;                                      \
        ROWSFN(g, c, wd, sd, y, D, I, n0, n1);                                                          \
    }                                                                                                   \
}

/* A MoE layer for N rows x (N, D): out (N, D) = sum over slots s of wts[n, s] * expert_{idx[n, s]}(x[n])
   (in slot order) + shared(x[n]). Each chosen expert runs once on all the rows that chose it, so its
   weights are read once per call. Per expert e: wg[e], wu[e] (I, D), wd[e] (D, I) and, for int8, the scales
   sg[e], su[e] (I,), sd[e] (D,) (NULL pointers for bf16). The shared MLP (width Is) is skipped when its
   gate pointer is NULL. Scratch: xs, ys (N * k, D); g, u (N * k * I + N * Is): every MLP its own part. */
#define MOE(NAME, MLPFN, WTYPE)                                                                         \
void NAME(const float *x, int64_t N, int64_t D, int64_t I, int64_t E, int64_t k, const int64_t *idx,    \
          const float *wts, const WTYPE *const *wg, const WTYPE *const *wu, const WTYPE *const *wd,     \
          const float *const *sg, const float *const *su, const float *const *sd, const WTYPE *shg,     \
          const WTYPE *shu, const WTYPE *shd, const float *ssg, const float *ssu, const float *ssd,     \
          int64_t Is, float *xs, float *ys, float *g, float *u, float *out, int threads) {               \
    int64_t P = N * k, *start = calloc(E + 1, sizeof(int64_t)), *at = malloc(P * sizeof(int64_t));      \
    for (int64_t p = 0; p < P; p++) start[idx[p] + 1]++;                                                \
    for (int64_t e = 0; e < E; e++) start[e + 1] += start[e];                                           \
    int64_t *fill = malloc(E * sizeof(int64_t));                                                        \
    memcpy(fill, start, E * sizeof(int64_t));                                                           \
    for (int64_t p = 0; p < P; p++) { /* pairs grouped by expert, in row order within an expert */      \
        at[p] = fill[idx[p]]++;                                                                         \
        memcpy(xs + at[p] * D, x + (p / k) * D, D * sizeof(float));                                     \
    }                                                                                                   \
    float *shared = shg ? malloc(N * D * sizeof(float)) : 0;                                            \
    _Pragma("omp parallel num_threads(threads)")                                                        \
    {                                                                                                   \
        for (int64_t e = 0; e < E; e++) {                                                               \
            int64_t c = start[e + 1] - start[e];                                                        \
            if (c == 0) continue;                                                                       \
            MLPFN(xs + start[e] * D, c, D, I, wg[e], sg ? sg[e] : 0, wu[e], su ? su[e] : 0, wd[e],      \
                  sd ? sd[e] : 0, g + start[e] * I, u + start[e] * I, ys + start[e] * D);               \
        }                                                                                               \
        if (shg)                                                                                        \
            MLPFN(x, N, D, Is, shg, ssg, shu, ssu, shd, ssd, g + P * I, u + P * I, shared);             \
        _Pragma("omp barrier")                                                                          \
        _Pragma("omp for schedule(static)")                                                             \
        for (int64_t n = 0; n < N; n++) {                                                               \
            float *o = out + n * D;                                                                     \
            for (int64_t d = 0; d < D; d++) o[d] = 0.0f;                                                \
            for (int64_t s = 0; s < k; s++) {                                                           \
                const float *yr = ys + at[n * k + s] * D, w = wts[n * k + s];                           \
                for (int64_t d = 0; d < D; d++) o[d] += yr[d] * w;                                      \
            }                                                                                           \
            if (shg)                                                                                    \
                for (int64_t d = 0; d < D; d++) o[d] += shared[n * D + d];                              \
        }                                                                                               \
    }                                                                                                   \
    free(start); free(at); free(fill); free(shared);                                                    \
}

BLOCK(block_bf16, uint16_t, load_bf16)
BLOCK(block_i8, int8_t, load_i8)
BLOCK(block_f32, float, load_f32)
ROWS(rows_bf16, block_bf16, uint16_t)
ROWS(rows_i8, block_i8, int8_t)
ROWS(rows_f32, block_f32, float)
SHARED_LINEAR(shared_bf16, rows_bf16, uint16_t)
SHARED_LINEAR(shared_i8, rows_i8, int8_t)
SHARED_LINEAR(shared_f32, rows_f32, float)
LINEAR(linear_bf16, shared_bf16, uint16_t)
LINEAR(linear_i8, shared_i8, int8_t)
LINEAR(linear_f32, shared_f32, float)
MLP(mlp_bf16, rows_bf16, uint16_t)
MLP(mlp_i8, rows_i8, int8_t)
MLP(mlp_f32, rows_f32, float)
MOE(moe_bf16, mlp_bf16, uint16_t)
MOE(moe_i8, mlp_i8, int8_t)
MOE(moe_f32, mlp_f32, float)

/* exp on 8 lanes: Cephes' expf (range reduction by ln 2 in two parts, degree-5 polynomial, 2^n by the
   exponent bits); within 2 ulp of expf on [-87, 88]. One function for every lane, so a value's exp never
   depends on where it sits in a vector. */
static inline __m256 exp8(__m256 x) {
    x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(88.3762626647949f)), _mm256_set1_ps(-87.0f));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500E-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507E-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073E-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894E-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459E-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201E-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

/* Attention of one query row, written so that its result depends only on q, the keys and values it sees
   and their number: not on the other queries of the pass, the batch, or how many cache slots follow.
   q (B, H, T, D); k, v rows b at k + b * ldb, head g at + g * ldh, slot s at + s * D (a KV cache's rows or
   a pass's own k/v); visible[b * T + t] = number of keys query (b, t) sees: slots 0 .. visible - 1.
   Query head h reads key/value head h / (H / Hkv). out (B, T, H, D). D % 16 == 0.
   Per query: s_j = scale * (q . k_j) summed as in the linear kernel; m = max_j s_j; p_j = exp(s_j - m);
   l = sum_j p_j in j order; out = (sum_j p_j v_j in j order) / l. */
void attention_f32(const float *q, int64_t B, int64_t H, int64_t T, int64_t D, const float *k,
                   const float *v, int64_t Hkv, int64_t ldb, int64_t ldh, const int64_t *visible, float scale,
                   float *out, int threads) {
    int64_t most = 0;
    for (int64_t i = 0; i < B * T; i++) most = visible[i] > most ? visible[i] : most;
    int64_t group = H / Hkv;
    _Pragma("omp parallel num_threads(threads)")
    {
        float *s = malloc(((most + 7) / 8 * 8 + 8) * sizeof(float));
        float *acc = malloc(D * sizeof(float));
        _Pragma("omp for schedule(static)")
        for (int64_t item = 0; item < B * H * T; item++) {
            int64_t b = item / (H * T), h = (item / T) % H, t = item % T;
            int64_t L = visible[b * T + t];
            const float *qr = q + ((b * H + h) * T + t) * D;
            const float *kh = k + b * ldb + (h / group) * ldh, *vh = v + b * ldb + (h / group) * ldh;
            float *o = out + ((b * T + t) * H + h) * D;
            if (L <= 0) {
                for (int64_t d = 0; d < D; d++) o[d] = 0.0f;
                continue;
            }
            float m = -INFINITY;
            for (int64_t j = 0; j < L; j++) {
                const float *kr = kh + j * D;
                __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
                for (int64_t d = 0; d < D; d += 16) {
                    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(kr + d), _mm256_loadu_ps(qr + d), a0);
                    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(kr + d + 8), _mm256_loadu_ps(qr + d + 8), a1);
                }
                s[j] = hsum(_mm256_add_ps(a0, a1)) * scale;
                m = s[j] > m ? s[j] : m;
            }
            int64_t padded = (L + 7) / 8 * 8;
            for (int64_t j = L; j < padded; j++) s[j] = m; /* lanes past L: computed, never used */
            __m256 mv = _mm256_set1_ps(m);
            for (int64_t j = 0; j < padded; j += 8)
                _mm256_storeu_ps(s + j, exp8(_mm256_sub_ps(_mm256_loadu_ps(s + j), mv)));
            float l = 0.0f;
            for (int64_t j = 0; j < L; j++) l += s[j];
            for (int64_t d = 0; d < D; d++) acc[d] = 0.0f;
            for (int64_t j = 0; j < L; j++) {
                __m256 p = _mm256_set1_ps(s[j]);
                const float *vr = vh + j * D;
                for (int64_t d = 0; d < D; d += 8)
                    _mm256_storeu_ps(acc + d, _mm256_fmadd_ps(p, _mm256_loadu_ps(vr + d), _mm256_loadu_ps(acc + d)));
            }
            for (int64_t d = 0; d < D; d++) o[d] = acc[d] / l;
        }
        free(s);
        free(acc);
    }
}
