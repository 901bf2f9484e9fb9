// kiln::attention on CUDA: softmax(Q K^T * scale + mask) V for 16-bit queries, keys and values, in
// one pass over the keys without the score matrix in memory (the flash-attention recurrence: a
// running row maximum and sum, the output rescaled as they move). Compiled by NVRTC at the first
// call for the device's architecture (kernels/cuda/attention.cpp), with these macros defined:
//   KILN_ATT_HALF   1: float16 (else bfloat16)
//   KILN_ATT_D      the head size, a multiple of 16 up to 128
//   KILN_ATT_MASK   0: no mask; 1: an additive mask of the queries' dtype; 2: of float32
//   KILN_ATT_CAUSAL 1: a query row weighs the keys after it 0 (top-left aligned, as PyTorch)
//   KILN_ATT_WARPS  the warps of a block (launched with 32 times as many threads)
//   KILN_ATT_MT     the 16-row tiles of queries a warp holds (each key fragment read from shared
//                   memory feeds that many products: shared memory's bandwidth, not the tensor
//                   cores, bounds a warp of one tile)
//   KILN_ATT_KEYS   the keys of a tile, a multiple of 16
//
// A block of KILN_ATT_WARPS warps takes 16 * KILN_ATT_MT query rows of one (batch, head) a warp, its
// queries held in registers as tensor-core fragments. Keys and values come through shared memory
// KILN_ATT_KEYS rows at a time (cp.async where rows are contiguous, the next tile's load under this
// one's arithmetic; any strides are read). Scores, the running maximum and sum, and the output
// accumulate in float32 (mma.sync m16n8k16 with float32 accumulators); the weights are rounded to
// the inputs' type for their product with the values, as flash kernels do. Scores are checked
// against the keys' end and the causal diagonal only in the tiles those cross. A 16-bit mask whose
// rows are 16-byte aligned comes through shared memory too, a tile with each tile of values (its
// loads would otherwise stall the scores); any other mask is read in place, two keys a load where
// its keys are adjacent.
//
// A 16-bit mask read through shared memory is first summarized (kiln_attention_mask_summary, once
// per call and per distinct (batch, head) of the mask: a broadcast [L, S] mask once): for each block
// of rows and tile of keys, whether its values are all -inf or all zero; and so are the keys and
// values (kiln_attention_kv_summary: per tile, the largest |k|, or inf where a key or a value is
// inf or NaN). A tile all zero adds no mask. A tile all -inf weighs every key 0, so the block skips
// it, loads included, when that changes nothing: its keys and values finite and the scores too small
// to overflow (max|q| max|k| D |scale| < 1e37), so each score is finite, plus -inf is -inf, and each
// weight exactly 0 times a finite value. Otherwise (a NaN, an inf, a huge value) the tile is
// computed as any other, and its NaN reaches the output.
//
// The values are those of softmax then a product: a row whose scores are all -inf is NaN (0 / 0),
// a NaN score makes its row NaN, and a key weighed 0 still multiplies its value (0 * inf = NaN). A
// causal block skips the tiles of keys after its last row (every weight there is 0): their values
// are only scanned, and a column holding inf or NaN is NaN in every row of the block. A row with no
// keys at all (S = 0) is 0, as an empty product is.

typedef unsigned short u16;
typedef unsigned int u32;
typedef long long i64;

#if !defined(KILN_ATT_D) || !defined(KILN_ATT_WARPS) || !defined(KILN_ATT_MT) || !defined(KILN_ATT_KEYS)
#error "KILN_ATT_D, KILN_ATT_WARPS, KILN_ATT_MT and KILN_ATT_KEYS must give the kernel's shape"
#endif

#define KILN_ATT_ROWS (16 * KILN_ATT_MT * KILN_ATT_WARPS)  // query rows per block
#define KILN_ATT_KT (KILN_ATT_KEYS / 16)  // 16-key steps of a tile
#define KILN_ATT_LD (KILN_ATT_D + 8)  // a tile row in shared memory, padded: ldmatrix rows hit distinct banks
#define KILN_ATT_MLD (KILN_ATT_KEYS + 8)  // a mask tile row in shared memory, padded likewise
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

// Copies the mask's [rows row0.., keys key0..] tile (rows of `rows_total`, keys of `keys_total`;
// row stride `ld`, unit key stride, 16-byte aligned rows) into a shared tile by cp.async, zeros
// past either end.
template <int rows_n>
__device__ __forceinline__ void att_load_mask_tile(u16* tile, const u16* mask, i64 ld, int row0, int rows_total,
                                                   int key0, int keys_total) {
  const int chunks = KILN_ATT_KEYS / 8;
  for (int i = threadIdx.x; i < rows_n * chunks; i += blockDim.x) {
    const int r = i / chunks, k = (i % chunks) * 8, row = row0 + r, key = key0 + k;
    const int n = row < rows_total ? max(0, min(8, keys_total - key)) : 0;
    const u16* from = n > 0 ? mask + row * ld + key : mask;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(att_smem(tile + r * KILN_ATT_MLD + k)),
                 "l"(from), "r"(2 * n));
  }
}

__device__ __forceinline__ void att_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void att_wait_all_but_one() { asm volatile("cp.async.wait_group 1;\n" ::); }

// Whether a 16-bit value is inf or NaN (its exponent all ones).
__device__ __forceinline__ bool att_nonfinite(u16 x) {
#if KILN_ATT_HALF
  return (x & 0x7c00) == 0x7c00;
#else
  return (x & 0x7f80) == 0x7f80;
#endif
}

// The 16-bit pattern of -inf.
#if KILN_ATT_HALF
#define KILN_ATT_NEG_INF_BITS 0xfc00u
#else
#define KILN_ATT_NEG_INF_BITS 0xff80u
#endif

// |x| of a 16-bit value as a float (inf for inf and NaN).
__device__ __forceinline__ float att_magnitude(u16 x) {
  return att_nonfinite(x) ? __int_as_float(0x7f800000) : fabsf(att_to_float(x));
}

#if KILN_ATT_MASK == 1
// Flags of the summary: a tile's mask values all -inf, all zero (+0 or -0).
#define KILN_ATT_TILE_NEG_INF 1u
#define KILN_ATT_TILE_ZERO 2u

// One block per (batch, head, block of rows, tile of keys) of the mask's own extents (`batches`,
// `heads`: 1 where the mask is broadcast): summary[((b * heads + h) * row_blocks + rb) * tiles + t]
// flags the values of the rows and keys inside [L, S] (the padding past either end counts as
// neither).
extern "C" __global__ void __launch_bounds__(128) kiln_attention_mask_summary(
    const u16* __restrict__ mask, unsigned char* __restrict__ summary, i64 m_sb, i64 m_sh, i64 m_sl, int heads,
    int L, int S) {
  const int row_blocks = (L + KILN_ATT_ROWS - 1) / KILN_ATT_ROWS, tiles = (S + KILN_ATT_KEYS - 1) / KILN_ATT_KEYS;
  const int t = blockIdx.x % tiles, rb = (blockIdx.x / tiles) % row_blocks, bh = blockIdx.x / (tiles * row_blocks);
  const u16* m = mask + (bh / heads) * m_sb + (bh % heads) * m_sh;
  const int row0 = rb * KILN_ATT_ROWS, key0 = t * KILN_ATT_KEYS;
  const int rows = min(KILN_ATT_ROWS, L - row0), keys = min(KILN_ATT_KEYS, S - key0);
  bool neg_inf = true, zero = true;
  for (int i = threadIdx.x; i < rows * keys; i += blockDim.x) {
    const u16 x = m[(row0 + i / keys) * m_sl + key0 + i % keys];
    neg_inf = neg_inf && x == KILN_ATT_NEG_INF_BITS;
    zero = zero && (x & 0x7fffu) == 0;
  }
  neg_inf = __syncthreads_and(neg_inf);
  zero = __syncthreads_and(zero);
  if (threadIdx.x == 0) summary[blockIdx.x] = (neg_inf ? KILN_ATT_TILE_NEG_INF : 0u) | (zero ? KILN_ATT_TILE_ZERO : 0u);
}

// One block per (batch, head, tile of keys): bound[(b * heads + h) * tiles + t] is the largest |k| of
// the tile's keys, or inf where one of its keys or values is inf or NaN.
extern "C" __global__ void __launch_bounds__(128) kiln_attention_kv_summary(
    const u16* __restrict__ k, const u16* __restrict__ v, float* __restrict__ bound, i64 k_sb, i64 k_sh, i64 k_sl,
    i64 k_sd, i64 v_sb, i64 v_sh, i64 v_sl, i64 v_sd, int heads, int S) {
  const int tiles = (S + KILN_ATT_KEYS - 1) / KILN_ATT_KEYS;
  const int t = blockIdx.x % tiles, bh = blockIdx.x / tiles, b = bh / heads, h = bh % heads;
  const u16* kb = k + b * k_sb + h * k_sh;
  const u16* vb = v + b * v_sb + h * v_sh;
  const int key0 = t * KILN_ATT_KEYS, n = min(KILN_ATT_KEYS, S - key0) * KILN_ATT_D;
  float mx = 0.f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const int key = key0 + i / KILN_ATT_D, d = i % KILN_ATT_D;
    const u16 vv = vb[key * v_sl + d * v_sd];
    mx = fmaxf(mx, att_nonfinite(vv) ? __int_as_float(0x7f800000) : att_magnitude(kb[key * k_sl + d * k_sd]));
  }
  __shared__ float block_max;
  if (threadIdx.x == 0) block_max = 0.f;
  __syncthreads();
  atomicMax(reinterpret_cast<int*>(&block_max), __float_as_int(mx));  // non-negative floats order as their bits
  __syncthreads();
  if (threadIdx.x == 0) bound[blockIdx.x] = block_max;
}
#endif

// The largest |x| of the tile's first `rows` rows (inf if any is inf or NaN), over the whole block.
__device__ __forceinline__ float att_tile_magnitude(const u16* tile, int rows, float* scratch) {
  float mx = 0.f;
  for (int i = threadIdx.x; i < rows * KILN_ATT_D; i += blockDim.x) {
    mx = fmaxf(mx, att_magnitude(tile[(i / KILN_ATT_D) * KILN_ATT_LD + i % KILN_ATT_D]));
  }
  __syncthreads();  // every thread has read the scratch's last value, and is done with the tile
  if (threadIdx.x == 0) *scratch = 0.f;
  __syncthreads();
  atomicMax(reinterpret_cast<int*>(scratch), __float_as_int(mx));  // non-negative floats order as their bits
  __syncthreads();
  return *scratch;
}

// The larger of a and b, NaN when either is (a NaN score makes its row NaN, as amax does).
__device__ __forceinline__ float att_max(float a, float b) { return (a > b || a != a) ? a : b; }

extern "C" __global__ void __launch_bounds__(32 * KILN_ATT_WARPS) kiln_flash_attention(
    const u16* __restrict__ q, const u16* __restrict__ k, const u16* __restrict__ v, u16* __restrict__ out,
    const void* __restrict__ mask, i64 q_sb, i64 q_sh, i64 q_sl, i64 k_sb, i64 k_sh, i64 k_sl, i64 v_sb, i64 v_sh,
    i64 v_sl, i64 q_sd, i64 k_sd, i64 v_sd, int vector_loads, i64 m_sb, i64 m_sh, i64 m_sl, i64 m_ss,
    int mask_pairs, int mask_tiles, const unsigned char* __restrict__ summary, i64 sum_sb, i64 sum_sh,
    const float* __restrict__ kv_bound, int heads, int L, int S, float scale) {
  // The keys' tile; first, the block's queries.
  constexpr int kTileRows = KILN_ATT_ROWS > KILN_ATT_KEYS ? KILN_ATT_ROWS : KILN_ATT_KEYS;
  __shared__ __align__(16) u16 sk[kTileRows * KILN_ATT_LD];
  __shared__ __align__(16) u16 sv[KILN_ATT_KEYS * KILN_ATT_LD];
#if KILN_ATT_MASK == 1
  __shared__ __align__(16) u16 sm[KILN_ATT_ROWS * KILN_ATT_MLD];  // the mask's tile, where mask_tiles
#endif
  constexpr int D = KILN_ATT_D, KT = D / 16, MT = KILN_ATT_MT, NK = KILN_ATT_KEYS / 8;  // NK: 8-key tiles
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row_blocks = (L + KILN_ATT_ROWS - 1) / KILN_ATT_ROWS;
  const int rb = blockIdx.x % row_blocks, bh = blockIdx.x / row_blocks;  // a head's blocks together
  const int row0 = rb * KILN_ATT_ROWS;
  const int b = bh / heads, h = bh % heads;
  const u16* qb = q + b * q_sb + h * q_sh;
  const u16* kb = k + b * k_sb + h * k_sh;
  const u16* vb = v + b * v_sb + h * v_sh;
#if KILN_ATT_MASK == 1
  const u16* mask_bh = static_cast<const u16*>(mask) + b * m_sb + h * m_sh;
#endif
  // This thread's two rows of every fragment of row tile m: g and g + 8 of its 16; c: its column pair.
  const int g = lane / 4, c = lane % 4;
  int rows[MT][2];
  #pragma unroll
  for (int m = 0; m < MT; ++m) {
    rows[m][0] = row0 + (warp * MT + m) * 16 + g;
    rows[m][1] = rows[m][0] + 8;
  }
  const float log2e = 1.4426950408889634f, scale2 = scale * log2e;  // scores in log2 units

  // The warp's queries, as A fragments (16 x 16 each), through the key tile's memory.
  u32 qf[MT][KT][4];
  att_load_tile<KILN_ATT_ROWS>(sk, qb, q_sl, q_sd, vector_loads & 1, row0, L);
  att_commit();
  asm volatile("cp.async.wait_group 0;\n" ::);
  __syncthreads();
  #pragma unroll
  for (int m = 0; m < MT; ++m) {
    #pragma unroll
    for (int kk = 0; kk < KT; ++kk) {
      att_ldmatrix(qf[m][kk], sk + ((warp * MT + m) * 16 + lane % 16) * KILN_ATT_LD + kk * 16 + (lane / 16) * 8);
    }
  }
#if KILN_ATT_MASK == 1
  // Tiles the summary flags all -inf are skipped when their keys' bound is at most key_limit (the
  // header says why); never with queries or a scale not finite (key_limit -1).
  __shared__ float magnitude;
  float key_limit = -1.f;
  const int key_tiles = (S + KILN_ATT_KEYS - 1) / KILN_ATT_KEYS;
  if (summary != nullptr) {
    const float q_max = att_tile_magnitude(sk, KILN_ATT_ROWS, &magnitude);
    if (isfinite(q_max) && isfinite(scale2)) {
      key_limit = fminf(1e37f / (fmaxf(q_max, 1e-30f) * D * fmaxf(fabsf(scale2), 1.f)), 3e38f);
    }
  }
  const unsigned char* tile_flags =
      summary == nullptr ? nullptr
                         : summary + b * sum_sb + h * sum_sh + static_cast<i64>(rb) * key_tiles;
  const float* tile_bound = kv_bound == nullptr ? nullptr : kv_bound + static_cast<i64>(bh) * key_tiles;
#endif
  __syncthreads();

  // The tiles of keys the block weighs: a causal block none after its last row.
  const int last_row = min(row0 + KILN_ATT_ROWS, L) - 1;
  const int tiles = (S + KILN_ATT_KEYS - 1) / KILN_ATT_KEYS;
#if KILN_ATT_CAUSAL
  const int weighed = min(tiles, last_row / KILN_ATT_KEYS + 1);
#else
  const int weighed = tiles;
#endif
  // The next tile after j that is not skipped (weighed when none is left).
  auto next_tile = [&](int j) {
    ++j;
#if KILN_ATT_MASK == 1
    while (j < weighed && tile_flags != nullptr && (tile_flags[j] & KILN_ATT_TILE_NEG_INF) && tile_bound[j] <= key_limit) {
      ++j;
    }
#endif
    return j;
  };
  const int first = next_tile(-1);
  if (first < weighed) att_load_tile<KILN_ATT_KEYS>(sk, kb, k_sl, k_sd, vector_loads & 2, first * KILN_ATT_KEYS, S);
  att_commit();
  if (first < weighed) att_load_tile<KILN_ATT_KEYS>(sv, vb, v_sl, v_sd, vector_loads & 4, first * KILN_ATT_KEYS, S);
#if KILN_ATT_MASK == 1
  if (first < weighed && mask_tiles) {
    att_load_mask_tile<KILN_ATT_ROWS>(sm, mask_bh, m_sl, row0, L, first * KILN_ATT_KEYS, S);
  }
#endif
  att_commit();

  float o[MT][D / 8][4];
  float row_max[MT][2], row_sum[MT][2];  // row_max in log2 units
  #pragma unroll
  for (int m = 0; m < MT; ++m) {
    #pragma unroll
    for (int n = 0; n < D / 8; ++n) o[m][n][0] = o[m][n][1] = o[m][n][2] = o[m][n][3] = 0.f;
    row_max[m][0] = row_max[m][1] = KILN_ATT_NEG_INF;
    row_sum[m][0] = row_sum[m][1] = 0.f;
  }
#if KILN_ATT_MASK
  // Where each row's mask starts (rows past L read none).
  i64 mask_row[MT][2];
  #pragma unroll
  for (int m = 0; m < MT; ++m) {
    #pragma unroll
    for (int r = 0; r < 2; ++r) mask_row[m][r] = b * m_sb + h * m_sh + static_cast<i64>(rows[m][r]) * m_sl;
  }
#endif

#pragma unroll 1
  for (int j = first, next; j < weighed; j = next) {
    const int key0 = j * KILN_ATT_KEYS;
    next = next_tile(j);
    att_wait_all_but_one();  // this tile's keys
    __syncthreads();
#if KILN_ATT_MASK == 1
    const bool add_mask = tile_flags == nullptr || !(tile_flags[j] & KILN_ATT_TILE_ZERO);
#endif
    float s[MT][NK][4];
    #pragma unroll
    for (int m = 0; m < MT; ++m) {
      #pragma unroll
      for (int n = 0; n < NK; ++n) s[m][n][0] = s[m][n][1] = s[m][n][2] = s[m][n][3] = 0.f;
    }
    #pragma unroll
    for (int kk = 0; kk < KT; ++kk) {
      #pragma unroll
      for (int t = 0; t < KILN_ATT_KT; ++t) {  // keys 16t .. 16t + 15: two 8-key tiles
        u32 f[4];
        att_ldmatrix(f, sk + (t * 16 + (lane / 16) * 8 + lane % 8) * KILN_ATT_LD + kk * 16 + ((lane / 8) % 2) * 8);
        #pragma unroll
        for (int m = 0; m < MT; ++m) {
          att_mma(s[m][2 * t], qf[m][kk], f[0], f[1]);
          att_mma(s[m][2 * t + 1], qf[m][kk], f[2], f[3]);
        }
      }
    }
    __syncthreads();  // every warp is done with the keys: the next tile's load may overwrite them
    if (next < weighed) att_load_tile<KILN_ATT_KEYS>(sk, kb, k_sl, k_sd, vector_loads & 2, next * KILN_ATT_KEYS, S);
    att_commit();

#if KILN_ATT_MASK == 1
    if (add_mask) {
      att_wait_all_but_one();  // this tile's values and mask
      __syncthreads();
    }
#endif
    // Scores in log2 units, masked; the rows' new maxima. Only a tile past the keys' end or across
    // the causal diagonal checks each score's key.
    const bool edge = key0 + KILN_ATT_KEYS > S;
#if KILN_ATT_CAUSAL
    const bool check = edge || key0 + KILN_ATT_KEYS - 1 > row0;
#else
    const bool check = edge;
#endif
    float tile_max[MT][2];
    #pragma unroll
    for (int m = 0; m < MT; ++m) {
      tile_max[m][0] = tile_max[m][1] = KILN_ATT_NEG_INF;
      #pragma unroll
      for (int n = 0; n < NK; ++n) {
        #pragma unroll
        for (int e = 0; e < 4; ++e) s[m][n][e] *= scale2;
#if KILN_ATT_MASK
        #pragma unroll
        for (int r = 0; r < 2; ++r) {
#if KILN_ATT_MASK == 1
          if (!add_mask) break;  // the tile's mask is all zero
#endif
          if (rows[m][r] >= L) continue;
          const int key = key0 + n * 8 + 2 * c;
          float m0 = 0.f, m1 = 0.f;
#if KILN_ATT_MASK == 1
          if (mask_tiles) {  // the pair from the shared tile (zeros past the keys' end)
            const u32 pair = *reinterpret_cast<const u32*>(
                sm + ((warp * MT + m) * 16 + g + 8 * r) * KILN_ATT_MLD + n * 8 + 2 * c);
            m0 = att_to_float(static_cast<u16>(pair & 0xffffu));
            m1 = att_to_float(static_cast<u16>(pair >> 16));
          } else
#endif
          if (mask_pairs && !edge) {  // the pair's two keys side by side, aligned
#if KILN_ATT_MASK == 1
            const u32 pair = *reinterpret_cast<const u32*>(static_cast<const u16*>(mask) + mask_row[m][r] + key);
            m0 = att_to_float(static_cast<u16>(pair & 0xffffu));
            m1 = att_to_float(static_cast<u16>(pair >> 16));
#else
            const float2 pair = *reinterpret_cast<const float2*>(static_cast<const float*>(mask) + mask_row[m][r] + key);
            m0 = pair.x;
            m1 = pair.y;
#endif
          } else {
            const i64 at = mask_row[m][r] + key * m_ss;
#if KILN_ATT_MASK == 1
            const u16* mp = static_cast<const u16*>(mask);
            if (key < S) m0 = att_to_float(mp[at]);
            if (key + 1 < S) m1 = att_to_float(mp[at + m_ss]);
#else
            const float* mp = static_cast<const float*>(mask);
            if (key < S) m0 = mp[at];
            if (key + 1 < S) m1 = mp[at + m_ss];
#endif
          }
          s[m][n][2 * r] = fmaf(m0, log2e, s[m][n][2 * r]);
          s[m][n][2 * r + 1] = fmaf(m1, log2e, s[m][n][2 * r + 1]);
        }
#endif
        if (check) {
          #pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = key0 + n * 8 + 2 * c + e % 2;
#if KILN_ATT_CAUSAL
            if (key > rows[m][e / 2]) s[m][n][e] = KILN_ATT_NEG_INF;
#endif
            if (key >= S) s[m][n][e] = KILN_ATT_NEG_INF;  // past the keys: no part of the row
          }
        }
        #pragma unroll
        for (int e = 0; e < 4; ++e) tile_max[m][e / 2] = att_max(tile_max[m][e / 2], s[m][n][e]);
      }
    }
    float alpha[MT][2], shift[MT][2];
    #pragma unroll
    for (int m = 0; m < MT; ++m) {
      #pragma unroll
      for (int r = 0; r < 2; ++r) {
        float t = tile_max[m][r];
        t = att_max(t, __shfl_xor_sync(0xffffffffu, t, 1));
        t = att_max(t, __shfl_xor_sync(0xffffffffu, t, 2));
        const float next = att_max(row_max[m][r], t);
        shift[m][r] = next == KILN_ATT_NEG_INF ? 0.f : next;  // a row all -inf so far weighs its keys exp(-inf) = 0
        alpha[m][r] = exp2f(row_max[m][r] - shift[m][r]);
        row_max[m][r] = next;
        row_sum[m][r] *= alpha[m][r];
      }
    }
    // The weights, the rows' sums, and the weights as A fragments (16 rows x 16 keys each).
    u32 p[MT][KILN_ATT_KT][4];
    #pragma unroll
    for (int m = 0; m < MT; ++m) {
      #pragma unroll
      for (int n = 0; n < NK; ++n) {
        #pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[m][n][e] = exp2f(s[m][n][e] - shift[m][e / 2]);
          row_sum[m][e / 2] += s[m][n][e];
        }
      }
      #pragma unroll
      for (int t = 0; t < KILN_ATT_KT; ++t) {
        p[m][t][0] = att_pack(s[m][2 * t][0], s[m][2 * t][1]);
        p[m][t][1] = att_pack(s[m][2 * t][2], s[m][2 * t][3]);
        p[m][t][2] = att_pack(s[m][2 * t + 1][0], s[m][2 * t + 1][1]);
        p[m][t][3] = att_pack(s[m][2 * t + 1][2], s[m][2 * t + 1][3]);
      }
      #pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        o[m][n][0] *= alpha[m][0];
        o[m][n][1] *= alpha[m][0];
        o[m][n][2] *= alpha[m][1];
        o[m][n][3] *= alpha[m][1];
      }
    }

#if KILN_ATT_MASK == 1
    if (!add_mask)
#endif
    {
      att_wait_all_but_one();  // this tile's values
      __syncthreads();
    }
    #pragma unroll
    for (int t = 0; t < KILN_ATT_KT; ++t) {
      #pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {  // head dims 16dp .. 16dp + 15: two 8-wide output tiles
        u32 f[4];
        att_ldmatrix_trans(f, sv + (t * 16 + ((lane / 8) % 2) * 8 + lane % 8) * KILN_ATT_LD + dp * 16 + (lane / 16) * 8);
        #pragma unroll
        for (int m = 0; m < MT; ++m) {
          att_mma(o[m][2 * dp], p[m][t], f[0], f[1]);
          att_mma(o[m][2 * dp + 1], p[m][t], f[2], f[3]);
        }
      }
    }
    __syncthreads();  // every warp is done with the values
    if (next < weighed) {
      att_load_tile<KILN_ATT_KEYS>(sv, vb, v_sl, v_sd, vector_loads & 4, next * KILN_ATT_KEYS, S);
#if KILN_ATT_MASK == 1
      if (mask_tiles) att_load_mask_tile<KILN_ATT_ROWS>(sm, mask_bh, m_sl, row0, L, next * KILN_ATT_KEYS, S);
#endif
    }
    att_commit();
  }

#if KILN_ATT_CAUSAL
  // The keys after the block's last row weigh 0 in every row: a column of their values holding inf
  // or NaN is NaN (0 * inf), any other adds nothing. Rows of values read 16 bytes at a time keep one
  // 8-column piece per thread (the block's threads are a multiple of a row's pieces), whose flags
  // reach shared memory once.
  __shared__ u32 nonfinite[(D + 31) / 32];
  if (threadIdx.x < (D + 31) / 32) nonfinite[threadIdx.x] = 0;
  __syncthreads();
  const int skipped0 = weighed * KILN_ATT_KEYS;
  if (vector_loads & 4) {
    constexpr int pieces = D / 8;
    const int col = (threadIdx.x % pieces) * 8;
    u32 bad = 0;
    for (int key = skipped0 + threadIdx.x / pieces; key < S; key += blockDim.x / pieces) {
      const uint4 w = *reinterpret_cast<const uint4*>(vb + key * v_sl + col);
      const u32 words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if (att_nonfinite(static_cast<u16>(words[i] & 0xffffu))) bad |= 1u << (2 * i);
        if (att_nonfinite(static_cast<u16>(words[i] >> 16))) bad |= 2u << (2 * i);
      }
    }
    if (bad) atomicOr(&nonfinite[col / 32], bad << (col % 32));
  } else {
    for (i64 i = threadIdx.x; i < static_cast<i64>(S - skipped0) * D; i += blockDim.x) {
      const int key = skipped0 + static_cast<int>(i / D), d = static_cast<int>(i % D);
      if (att_nonfinite(vb[key * v_sl + d * v_sd])) atomicOr(&nonfinite[d / 32], 1u << (d % 32));
    }
  }
  __syncthreads();
#pragma unroll
  for (int m = 0; m < MT; ++m) {
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int d = n * 8 + 2 * c + e % 2;
        if ((nonfinite[d / 32] >> (d % 32)) & 1u) o[m][n][e] = __int_as_float(0x7fffffff);
      }
    }
  }
#endif

  // The rows' sums are spread over the 4 threads of a row; with no keys the row is 0.
  #pragma unroll
  for (int m = 0; m < MT; ++m) {
    #pragma unroll
    for (int r = 0; r < 2; ++r) {
      float sum = row_sum[m][r];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const float inv = S > 0 ? 1.f / sum : 0.f;
      if (rows[m][r] >= L) continue;
      u16* dst = out + (static_cast<i64>(bh) * L + rows[m][r]) * D + 2 * c;
      #pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        *reinterpret_cast<u32*>(dst + n * 8) = att_pack(o[m][n][2 * r] * inv, o[m][n][2 * r + 1] * inv);
      }
    }
  }
}
