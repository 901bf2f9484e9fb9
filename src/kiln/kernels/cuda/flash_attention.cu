// kiln::attention on CUDA: softmax(Q K^T * scale + mask) V for 16-bit queries, keys and values, in
// one pass over the keys without the score matrix in memory (the flash-attention recurrence: a
// running row maximum and sum, the output rescaled as they move). Compiled by NVRTC at the first
// call for the device's architecture (kernels/cuda/attention.cpp), with these macros defined:
//   KILN_ATT_HALF   1: float16 (else bfloat16)
//   KILN_ATT_D      the head size, a multiple of 16 up to 128
//   KILN_ATT_MASK   0: no mask; 1: an additive mask of the queries' dtype; 2: of float32
//   KILN_ATT_CAUSAL 1: a query row weighs the keys after it 0 (top-left aligned, as PyTorch)
//   KILN_ATT_WARPS  the warps of a block (launched with 32 times as many threads)
//
// A block of KILN_ATT_WARPS warps takes 16 query rows of one (batch, head) a warp, its queries
// held in registers as tensor-core fragments. Keys and values come through shared memory 64 rows at
// a time (cp.async where rows are contiguous, the next tile's load under this one's arithmetic;
// any strides are read). Scores, the running maximum
// and sum, and the output accumulate in float32 (mma.sync m16n8k16 with float32 accumulators); the
// weights are rounded to the inputs' type for their product with the values, as flash kernels do.
//
// The values are those of softmax then a product: a row whose scores are all -inf is NaN (0 / 0),
// a NaN score makes its row NaN, and a key weighed 0 still multiplies its value (0 * inf = NaN), so
// no tile of keys is skipped. A row with no keys at all (S = 0) is 0, as an empty product is.

typedef unsigned short u16;
typedef unsigned int u32;
typedef long long i64;

#if !defined(KILN_ATT_D) || !defined(KILN_ATT_WARPS)
#error "KILN_ATT_D and KILN_ATT_WARPS must give the head size and the warps of a block"
#endif

#define KILN_ATT_ROWS (16 * KILN_ATT_WARPS)  // query rows per block
#define KILN_ATT_KEYS 64  // keys per tile
#define KILN_ATT_LD (KILN_ATT_D + 8)  // a tile row in shared memory, padded: ldmatrix rows hit distinct banks
#define KILN_ATT_NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ u32 att_smem(const void* p) { return static_cast<u32>(__cvta_generic_to_shared(p)); }

// The inputs' type as PTX spells it.
#if KILN_ATT_HALF
#define KILN_ATT_PTX "f16"
#else
#define KILN_ATT_PTX "bf16"
#endif

// Two floats as a pair of 16-bit values, `lo` in the low half (the lower index of a fragment).
__device__ __forceinline__ u32 att_pack(float lo, float hi) {
  u32 r;
  asm("cvt.rn." KILN_ATT_PTX "x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

__device__ __forceinline__ float att_to_float(u16 x) {
#if KILN_ATT_HALF
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x));
  return f;
#else
  return __uint_as_float(static_cast<u32>(x) << 16);
#endif
}

// d += a b for one 16x8x16 tile: a 16x16 row-major fragment, b 16x8 column-major, d float32.
__device__ __forceinline__ void att_mma(float* d, const u32* a, u32 b0, u32 b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." KILN_ATT_PTX "." KILN_ATT_PTX
               ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void att_ldmatrix(u32* r, const u16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(att_smem(p)));
}

__device__ __forceinline__ void att_ldmatrix_trans(u32* r, const u16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(att_smem(p)));
}

// Copies rows [first, first + n) of a [rows, D] matrix (row stride `ld`, column stride `cs`, in
// elements) into a shared tile; rows past `rows` are zeros. A matrix whose rows are contiguous and
// 16-byte aligned (`vector`) comes in 16-byte pieces by cp.async, under the arithmetic that follows;
// any other (the keys of a transposed copy, a view with odd strides) element by element, the
// threads of a warp along whichever stride is 1.
template <int n>
__device__ __forceinline__ void att_load_tile(u16* tile, const u16* src, i64 ld, i64 cs, bool vector, int first,
                                              int rows) {
  if (vector) {
    const int chunks = KILN_ATT_D / 8;  // 16-byte pieces of a row
    for (int c = threadIdx.x; c < n * chunks; c += blockDim.x) {
      int r = c / chunks, col = (c % chunks) * 8;
      bool inside = first + r < rows;
      const u16* from = inside ? src + (first + r) * ld + col : src;
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(att_smem(tile + r * KILN_ATT_LD + col)),
                   "l"(from), "r"(inside ? 16 : 0));
    }
    return;
  }
  const bool along_rows = cs != 1;
  for (int i = threadIdx.x; i < n * KILN_ATT_D; i += blockDim.x) {
    int r = along_rows ? i % n : i / KILN_ATT_D, col = along_rows ? i / n : i % KILN_ATT_D;
    tile[r * KILN_ATT_LD + col] = first + r < rows ? src[(first + r) * ld + col * cs] : u16(0);
  }
}

__device__ __forceinline__ void att_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void att_wait_all_but_one() { asm volatile("cp.async.wait_group 1;\n" ::); }

// The larger of a and b, NaN when either is (a NaN score makes its row NaN, as amax does).
__device__ __forceinline__ float att_max(float a, float b) { return (a > b || a != a) ? a : b; }

extern "C" __global__ void __launch_bounds__(32 * KILN_ATT_WARPS) kiln_flash_attention(
    const u16* __restrict__ q, const u16* __restrict__ k, const u16* __restrict__ v, u16* __restrict__ out,
    const void* __restrict__ mask, i64 q_sb, i64 q_sh, i64 q_sl, i64 k_sb, i64 k_sh, i64 k_sl, i64 v_sb, i64 v_sh,
    i64 v_sl, i64 q_sd, i64 k_sd, i64 v_sd, int vector_loads, i64 m_sb, i64 m_sh, i64 m_sl, i64 m_ss, int heads,
    int L, int S, float scale) {
  // The keys' tile; first, the block's queries (KILN_ATT_ROWS >= KILN_ATT_KEYS rows).
  __shared__ __align__(16) u16 sk[KILN_ATT_ROWS * KILN_ATT_LD];
  __shared__ __align__(16) u16 sv[KILN_ATT_KEYS * KILN_ATT_LD];
  const int D = KILN_ATT_D, KT = D / 16;  // k-steps over the head size
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row_blocks = (L + KILN_ATT_ROWS - 1) / KILN_ATT_ROWS;
  const int bh = blockIdx.x / row_blocks, row0 = (blockIdx.x % row_blocks) * KILN_ATT_ROWS;
  const int b = bh / heads, h = bh % heads;
  const u16* qb = q + b * q_sb + h * q_sh;
  const u16* kb = k + b * k_sb + h * k_sh;
  const u16* vb = v + b * v_sb + h * v_sh;
  // This thread's two rows of every fragment: g and g + 8 of its warp's 16; c: its column pair.
  const int g = lane / 4, c = lane % 4;
  const int rows[2] = {row0 + warp * 16 + g, row0 + warp * 16 + g + 8};
  const float log2e = 1.4426950408889634f;

  // The warp's queries, as A fragments (16 x 16 each), through the key tile's memory.
  u32 qf[KT][4];
  att_load_tile<KILN_ATT_ROWS>(sk, qb, q_sl, q_sd, vector_loads & 1, row0, L);
  att_commit();
  asm volatile("cp.async.wait_group 0;\n" ::);
  __syncthreads();
  for (int kk = 0; kk < KT; ++kk) att_ldmatrix(qf[kk], sk + (warp * 16 + lane % 16) * KILN_ATT_LD + kk * 16 + (lane / 16) * 8);
  __syncthreads();

  const int tiles = (S + KILN_ATT_KEYS - 1) / KILN_ATT_KEYS;
  att_load_tile<KILN_ATT_KEYS>(sk, kb, k_sl, k_sd, vector_loads & 2, 0, S);
  att_commit();
  att_load_tile<KILN_ATT_KEYS>(sv, vb, v_sl, v_sd, vector_loads & 4, 0, S);
  att_commit();

  float o[D / 8][4];
  for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  float row_max[2] = {KILN_ATT_NEG_INF, KILN_ATT_NEG_INF}, row_sum[2] = {0.f, 0.f};  // row_max in log2 units

  for (int j = 0; j < tiles; ++j) {
    const int key0 = j * KILN_ATT_KEYS;
    att_wait_all_but_one();  // this tile's keys
    __syncthreads();
    float s[8][4];
    for (int n = 0; n < 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
    for (int kk = 0; kk < KT; ++kk) {
      for (int t = 0; t < 4; ++t) {  // keys 16t .. 16t + 15: two 8-key tiles
        u32 f[4];
        att_ldmatrix(f, sk + (t * 16 + (lane / 16) * 8 + lane % 8) * KILN_ATT_LD + kk * 16 + ((lane / 8) % 2) * 8);
        att_mma(s[2 * t], qf[kk], f[0], f[1]);
        att_mma(s[2 * t + 1], qf[kk], f[2], f[3]);
      }
    }
    __syncthreads();  // every warp is done with the keys: the next tile's load may overwrite them
    if (j + 1 < tiles) att_load_tile<KILN_ATT_KEYS>(sk, kb, k_sl, k_sd, vector_loads & 2, key0 + KILN_ATT_KEYS, S);
    att_commit();

    // Scores in log2 units, masked; the rows' new maxima.
    float tile_max[2] = {KILN_ATT_NEG_INF, KILN_ATT_NEG_INF};
    for (int n = 0; n < 8; ++n) {
      for (int e = 0; e < 4; ++e) {
        const int r = e / 2, key = key0 + n * 8 + 2 * c + e % 2;
        float x = s[n][e] * scale;
#if KILN_ATT_MASK
        if (key < S && rows[r] < L) {
          i64 at = b * m_sb + h * m_sh + rows[r] * m_sl + key * m_ss;
#if KILN_ATT_MASK == 1
          x += att_to_float(static_cast<const u16*>(mask)[at]);
#else
          x += static_cast<const float*>(mask)[at];
#endif
        }
#endif
#if KILN_ATT_CAUSAL
        if (key > rows[r]) x = KILN_ATT_NEG_INF;
#endif
        if (key >= S) x = KILN_ATT_NEG_INF;  // past the keys: no part of the row
        x *= log2e;
        s[n][e] = x;
        tile_max[r] = att_max(tile_max[r], x);
      }
    }
    float alpha[2], shift[2];
    for (int r = 0; r < 2; ++r) {
      tile_max[r] = att_max(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
      tile_max[r] = att_max(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
      float next = att_max(row_max[r], tile_max[r]);
      shift[r] = next == KILN_ATT_NEG_INF ? 0.f : next;  // a row all -inf so far weighs its keys exp(-inf) = 0
      alpha[r] = exp2f(row_max[r] - shift[r]);
      row_max[r] = next;
      row_sum[r] *= alpha[r];
    }
    // The weights, the rows' sums, and the weights as A fragments (16 rows x 16 keys each).
    u32 p[4][4];
    for (int n = 0; n < 8; ++n) {
      for (int e = 0; e < 4; ++e) {
        s[n][e] = exp2f(s[n][e] - shift[e / 2]);
        row_sum[e / 2] += s[n][e];
      }
    }
    for (int t = 0; t < 4; ++t) {
      p[t][0] = att_pack(s[2 * t][0], s[2 * t][1]);
      p[t][1] = att_pack(s[2 * t][2], s[2 * t][3]);
      p[t][2] = att_pack(s[2 * t + 1][0], s[2 * t + 1][1]);
      p[t][3] = att_pack(s[2 * t + 1][2], s[2 * t + 1][3]);
    }
    for (int n = 0; n < D / 8; ++n) {
      o[n][0] *= alpha[0];
      o[n][1] *= alpha[0];
      o[n][2] *= alpha[1];
      o[n][3] *= alpha[1];
    }

    att_wait_all_but_one();  // this tile's values
    __syncthreads();
    for (int t = 0; t < 4; ++t) {
      for (int dp = 0; dp < D / 16; ++dp) {  // head dims 16dp .. 16dp + 15: two 8-wide output tiles
        u32 f[4];
        att_ldmatrix_trans(f, sv + (t * 16 + ((lane / 8) % 2) * 8 + lane % 8) * KILN_ATT_LD + dp * 16 + (lane / 16) * 8);
        att_mma(o[2 * dp], p[t], f[0], f[1]);
        att_mma(o[2 * dp + 1], p[t], f[2], f[3]);
      }
    }
    __syncthreads();  // every warp is done with the values
    if (j + 1 < tiles) att_load_tile<KILN_ATT_KEYS>(sv, vb, v_sl, v_sd, vector_loads & 4, key0 + KILN_ATT_KEYS, S);
    att_commit();
  }

  // The rows' sums are spread over the 4 threads of a row; with no keys the row is 0.
  float inv[2];
  for (int r = 0; r < 2; ++r) {
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);
    inv[r] = S > 0 ? 1.f / row_sum[r] : 0.f;
  }
  for (int r = 0; r < 2; ++r) {
    if (rows[r] >= L) continue;
    u16* dst = out + (static_cast<i64>(bh) * L + rows[r]) * D + 2 * c;
    for (int n = 0; n < D / 8; ++n) {
      *reinterpret_cast<u32*>(dst + n * 8) = att_pack(o[n][2 * r] * inv[r], o[n][2 * r + 1] * inv[r]);
    }
  }
}
