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

/* The sums hsum(v_0) .. hsum(v_7) of eight vectors as one vector, each lane added in hsum's own order
   (((x0 + x4) + (x2 + x6)) + ((x1 + x5) + (x3 + x7))), so lane i is bitwise hsum(v_i): a query's score
   does not depend on whether its key was summed alone or among eight. */
static inline __m256 hsum8(const __m256 *v) {
    __m256 p[4], q[2];
    /* p[i]: v_i's four sums x_j + x_{j+4} in the low half, v_{i+4}'s in the high half */
    for (int i = 0; i < 4; i++)
        p[i] = _mm256_add_ps(_mm256_permute2f128_ps(v[i], v[i + 4], 0x20),
                             _mm256_permute2f128_ps(v[i], v[i + 4], 0x31));
    /* q[i]: per half, (w0 + w2, w1 + w3) of p[2i], then of p[2i + 1] */
    for (int i = 0; i < 2; i++)
        q[i] = _mm256_add_ps(_mm256_shuffle_ps(p[2 * i], p[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm256_shuffle_ps(p[2 * i], p[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    /* (u0 + u1) per vector: lanes v_0, v_1, v_2, v_3 | v_4, v_5, v_6, v_7 */
    return _mm256_add_ps(_mm256_shuffle_ps(q[0], q[1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm256_shuffle_ps(q[0], q[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

/* q . k summed as in the linear kernel: two 8-wide accumulators over d (d % 16 < 8 and >= 8), added. */
static inline __attribute__((always_inline)) __m256 dot_lanes(const float *q, const float *k, int64_t D) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    for (int64_t d = 0; d < D; d += 16) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(k + d), _mm256_loadu_ps(q + d), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(k + d + 8), _mm256_loadu_ps(q + d + 8), a1);
    }
    return _mm256_add_ps(a0, a1);
}

/* The largest of a vector's lanes [i0, i0 + n), a NaN passed over as the scalar test `x > m` does. */
static inline float lanes_max(__m256 v, int i0, int n, float m) {
    float lanes[8];
    _mm256_storeu_ps(lanes, v);
    for (int i = i0; i < i0 + n; i++) m = lanes[i] > m ? lanes[i] : m;
    return m;
}

/* Scores s[j] = scale * hsum(q . k_j) of one query for keys j0 <= j < L, eight at a time (hsum8) then one
   at a time; returns max(m, those scores). */
static float scores_one(const float *q, const float *k, int64_t D, int64_t j0, int64_t L, float scale,
                        float *s, float m) {
    __m256 sc = _mm256_set1_ps(scale), mv = _mm256_set1_ps(-INFINITY);
    int64_t j = j0;
    for (; j + 8 <= L; j += 8) {
        __m256 dots[8];
        for (int i = 0; i < 8; i++) dots[i] = dot_lanes(q, k + (j + i) * D, D);
        __m256 sj = _mm256_mul_ps(hsum8(dots), sc);
        _mm256_storeu_ps(s + j, sj);
        mv = _mm256_max_ps(sj, mv); /* a NaN score is passed over (max_ps returns its second operand) */
    }
    m = lanes_max(mv, 0, 8, m);
    for (; j < L; j++) {
        s[j] = hsum(dot_lanes(q, k + j * D, D)) * scale;
        m = s[j] > m ? s[j] : m;
    }
    return m;
}

/* Scores of two queries for the keys both see (j < L), four keys at a time: each key's row is read once for
   both, and one hsum8 sums the eight (query, key) dots. The rest (L % 4 keys) is left to scores_one. */
static int64_t scores_two(const float *q0, const float *q1, const float *k, int64_t D, int64_t L,
                          float scale, float *s0, float *s1, float *m0, float *m1) {
    __m256 sc = _mm256_set1_ps(scale), mv = _mm256_set1_ps(-INFINITY);
    int64_t j = 0;
    for (; j + 4 <= L; j += 4) {
        __m256 dots[8];
        for (int i = 0; i < 4; i++) {
            dots[i] = dot_lanes(q0, k + (j + i) * D, D);
            dots[i + 4] = dot_lanes(q1, k + (j + i) * D, D);
        }
        __m256 sj = _mm256_mul_ps(hsum8(dots), sc); /* lanes: q0's four scores, then q1's */
        _mm_storeu_ps(s0 + j, _mm256_castps256_ps128(sj));
        _mm_storeu_ps(s1 + j, _mm256_extractf128_ps(sj, 1));
        mv = _mm256_max_ps(sj, mv);
    }
    *m0 = lanes_max(mv, 0, 4, *m0);
    *m1 = lanes_max(mv, 4, 4, *m1);
    return j;
}

/* p_j = exp(s_j - m) for j < L, in place, eight lanes at a time (lanes past L: computed, never used). */
static void softmax_weights(float *s, int64_t L, float m) {
    int64_t padded = (L + 7) / 8 * 8;
    for (int64_t j = L; j < padded; j++) s[j] = m;
    __m256 mv = _mm256_set1_ps(m);
    for (int64_t j = 0; j < padded; j += 8)
        _mm256_storeu_ps(s + j, exp8(_mm256_sub_ps(_mm256_loadu_ps(s + j), mv)));
}

/* acc[i] += p_j v_j[8i .. 8i + 8) for j0 <= j < j1 in j order, and *l += p_j when `with_l`; for one query
   (p1 NULL) or two sharing the values (p1, acc1, l1). W (accumulators per query) and `two` are compile-time
   constants after inlining, so the accumulators stay in registers; the scalar sum runs beside them. */
static inline __attribute__((always_inline)) void weighted_values(
    const float *p0, const float *p1, const float *v, int64_t D, int64_t j0, int64_t j1, __m256 *acc0,
    __m256 *acc1, float *l0, float *l1, const int W, const int two, const int with_l) {
    float s0 = *l0, s1 = two ? *l1 : 0.0f;
    for (int64_t j = j0; j < j1; j++) {
        const float *vr = v + j * D;
        __m256 a = _mm256_set1_ps(p0[j]), b = two ? _mm256_set1_ps(p1[j]) : a;
        for (int i = 0; i < W; i++) {
            __m256 vv = _mm256_loadu_ps(vr + 8 * i);
            acc0[i] = _mm256_fmadd_ps(a, vv, acc0[i]);
            if (two) acc1[i] = _mm256_fmadd_ps(b, vv, acc1[i]);
        }
        if (with_l) {
            s0 += p0[j];
            if (two) s1 += p1[j];
        }
    }
    *l0 = s0;
    if (two) *l1 = s1;
}

/* One chunk of W * 8 lanes of d from d0 (inside weighted_sums). */
#define VALUES_CHUNK(W, WITH_L)                                                                         \
    do {                                                                                                \
        __m256 a0[4], a1[4];                                                                            \
        for (int i = 0; i < W; i++) a0[i] = a1[i] = _mm256_setzero_ps();                                \
        if (n == 2) {                                                                                   \
            weighted_values(p[0], p[1], v + d0, D, 0, L[0], a0, a1, &l[0], &l[1], W, 1, WITH_L);       \
            weighted_values(p[1], 0, v + d0, D, L[0], L[1], a1, 0, &l[1], 0, W, 0, WITH_L);            \
        } else {                                                                                        \
            weighted_values(p[0], 0, v + d0, D, 0, L[0], a0, 0, &l[0], 0, W, 0, WITH_L);               \
        }                                                                                               \
        for (int i = 0; i < W; i++) {                                                                   \
            _mm256_storeu_ps(acc[0] + d0 + 8 * i, a0[i]);                                               \
            if (n == 2) _mm256_storeu_ps(acc[1] + d0 + 8 * i, a1[i]);                                   \
        }                                                                                               \
    } while (0)

/* out_t = (sum_j p_tj v_j) / l_t with l_t = sum_j p_tj for one or two queries (n = 1, 2; for two, L[0] <=
   L[1]) with weights p[t] over their first L[t] keys, every sum in j order: 32 lanes of d at a time (16 for
   the last when D % 32 == 16), l with the first; the keys both queries see are run once for both. */
static void weighted_sums(float *const *p, const int64_t *L, int n, const float *v, int64_t D,
                          float *const *acc, float *const *out) {
    float l[2] = {0.0f, 0.0f};
    int64_t d0 = 0;
    if (D >= 32)
        VALUES_CHUNK(4, 1);
    else
        VALUES_CHUNK(2, 1);
    for (d0 = 32; d0 < D; d0 += 32) {
        if (D - d0 >= 32)
            VALUES_CHUNK(4, 0);
        else
            VALUES_CHUNK(2, 0);
    }
    for (int t = 0; t < n; t++)
        for (int64_t d = 0; d < D; d++) out[t][d] = acc[t][d] / l[t];
}

/* Attention of one query row, written so that its result depends only on q, the keys and values it sees
   and their number: not on the other queries of the pass, the batch, or how many cache slots follow.
   q (B, H, T, D); k, v rows b at k + b * ldb, head g at + g * ldh, slot s at + s * D (a KV cache's rows or
   a pass's own k/v); visible[b * T + t] = number of keys query (b, t) sees: slots 0 .. visible - 1.
   Query head h reads key/value head h / (H / Hkv). out (B, T, H, D). D % 16 == 0.
   Per query: s_j = scale * (q . k_j) summed as in the linear kernel; m = max_j s_j; p_j = exp(s_j - m);
   l = sum_j p_j in j order; out = (sum_j p_j v_j in j order) / l.
   Speed without changing a single addition's operands or order: the queries of one (row, head) are taken
   two at a time, reading each key and value row once for both; scores are summed eight at a time (hsum8)
   and the weighted values accumulate in registers. */
void attention_f32(const float *q, int64_t B, int64_t H, int64_t T, int64_t D, const float *k,
                   const float *v, int64_t Hkv, int64_t ldb, int64_t ldh, const int64_t *visible, float scale,
                   float *out, int threads) {
    int64_t most = 0;
    for (int64_t i = 0; i < B * T; i++) most = visible[i] > most ? visible[i] : most;
    int64_t group = H / Hkv, width = (most + 7) / 8 * 8 + 8;
    _Pragma("omp parallel num_threads(threads)")
    {
        float *scratch = malloc((2 * width + 2 * D) * sizeof(float));
        float *s[2] = {scratch, scratch + width}, *acc[2] = {scratch + 2 * width, scratch + 2 * width + D};
        _Pragma("omp for schedule(static)")
        for (int64_t item = 0; item < B * H; item++) {
            int64_t b = item / H, h = item % H;
            const float *kh = k + b * ldb + (h / group) * ldh, *vh = v + b * ldb + (h / group) * ldh;
            for (int64_t t0 = 0; t0 < T; t0 += 2) {
                const float *qs[2];
                float *os[2], m[2] = {-INFINITY, -INFINITY};
                int64_t L[2];
                int n = 0;
                for (int64_t t = t0; t < t0 + 2 && t < T; t++) {
                    float *o = out + ((b * T + t) * H + h) * D;
                    if (visible[b * T + t] <= 0) { /* sees nothing */
                        for (int64_t d = 0; d < D; d++) o[d] = 0.0f;
                        continue;
                    }
                    qs[n] = q + ((b * H + h) * T + t) * D, os[n] = o, L[n] = visible[b * T + t];
                    n++;
                }
                if (n == 2 && L[1] < L[0]) { /* the query that sees fewer keys first */
                    const float *qt = qs[0];
                    float *ot = os[0];
                    int64_t lt = L[0];
                    qs[0] = qs[1], os[0] = os[1], L[0] = L[1];
                    qs[1] = qt, os[1] = ot, L[1] = lt;
                }
                int64_t j = 0; /* keys scored for both queries */
                if (n == 2) j = scores_two(qs[0], qs[1], kh, D, L[0], scale, s[0], s[1], &m[0], &m[1]);
                for (int t = 0; t < n; t++) {
                    m[t] = scores_one(qs[t], kh, D, j, L[t], scale, s[t], m[t]);
                    softmax_weights(s[t], L[t], m[t]);
                }
                if (n) weighted_sums(s, L, n, vh, D, acc, os);
            }
        }
        free(scratch);
    }
}
