/* Winograd convolution F(m x m, 3 x 3) (see conv_winograd.h).
 *
 * Per m x m output tile (Lavin & Gray), with alpha = m + 2:
 *     Y = A^T [ (G g G^T) .* (B^T d B) ] A
 * where d is the alpha x alpha input patch. Summed over input channels,
 * the element-wise product becomes alpha^2 independent products, one per
 * "frequency" xi:
 *     Mx[xi] (M x T) = U[xi] (M x C) * V[xi] (C x T)
 * over all T output tiles of the batch. The lowering emits, in sequence
 * (kernel names "winoM_*", M the tile size):
 *  - "w": U = G g G^T in panels of 16 output channels, U[xi][oc/16][c][16]
 *    (only when the weights are not a constant the pack-weights pass
 *    transformed at compile time; both in double precision);
 *  - "in": V[xi][c][t] = B^T d B, vector lanes = consecutive tiles of a
 *    tile row, each patch row read as a run of columns (zeros outside x:
 *    the padding) and split into the tiles' elements by shuffles;
 *  - "mm": the alpha^2 products with the register-tiled micro-kernel,
 *    output channels as vectors (U's panels) and tiles broadcast from V, so
 *    no work is spent on padding tiles: Mx[xi][t][oc];
 *  - "out": Y = A^T Mx A for one tile and VL output channels, then channel
 *    by channel the bias, the node's fused epilogue and the store of the
 *    tile's rows, clipped at the right and bottom borders.
 * V and Mx live in the node's workspace (tile counts padded to 16, one
 * cache line between the xi so that a transform's alpha^2 loads or stores
 * do not all fall in one L1 set). Where all the tiles' V and Mx would be
 * too large, "in", "mm" and "out" are emitted once per block of tiles, in
 * the same block-sized V and Mx (the per-tile tables keep global indices).
 *
 * Interpolation points (and infinity): 0, 1, -1 for F(2,3); 0, 1, -1, 2,
 * -1/2 for F(4,3), whose error is then about 1e-6 of the output's scale
 * (twice the direct kernels'), half that of the usual 0, +-1, +-2.
 *
 * Stride 2 (F(2x2,3x3) with stride 2: a 2x2 output tile reads a 5x5 patch,
 * tiles 4 input columns apart). Along one axis, outputs y0 = d0 g0 + d1 g1
 * + d2 g2 and y1 = d2 g0 + d3 g1 + d4 g2 split into the even columns
 * (d0, d2, d4 with taps g0, g2: a stride-1 F(2,2), three products) and the
 * odd ones (d1, d3 with g1: two), five products for six:
 *     B^T d = (d0 - d2, d2, d4 - d2, d1, d3)
 *     G g   = (g0, g0 + g2, g2, g1, g1)
 *     y0 = m0 + m1 + m3,  y1 = m1 + m2 + m4
 * so alpha = 5 and 25 products per tile instead of 36 (0.69 of the direct
 * kernels' multiplies), all coefficients +-1: no rounding beyond the
 * direct sum's. The last two rows of G are equal, so U has 4 x 4 distinct
 * rows (the ones of F(2,3)'s size), and U[xi] for xi in row or column 4
 * is the one of row or column 3 (wino_mat.nud).
 */
#include "compiler/ops/conv_winograd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/backend/target.h"
#include "compiler/codegen/epilogue.h"
#include "compiler/ops/gemm_microkernel.h"
#include "compiler/ops/op.h"
#include "compiler/ops/prepack.h"

#define WINO_PAD 16 /* tile counts are padded to the widest vector */
/* Largest workspace (V and Mx) a Winograd convolution may use. */
#define HC_WINO_MAX_WORKSPACE ((uint64_t)3 << 20)
/* float16 convolutions transform their weights at run time (no packed U):
 * the largest U they may put in the workspace. */
#define HC_WINO_MAX_RUNTIME_U ((uint64_t)8 << 20)
#define HC_WINO_MAX_BLOCKS 256
#define HC_WINO_MAX_F16_BLOCK ((uint64_t)32 << 20)
/* Largest block of it when all the tiles do not fit: the shapes that need
 * blocks are the large planes where a CNN's activations peak. */
#define HC_WINO_BLOCK_WORKSPACE ((uint64_t)3 << 18)
/* The same for stride 2, whose products do less work per tile: blocks of
 * at least WINO_S2_MIN_BLOCK_TILES tiles or none (see choose_s2). */
#define HC_WINO_S2_BLOCK_WORKSPACE ((uint64_t)3 << 19)
/* Packed float32 U of at least this many bytes streams from memory once per
 * block: such a convolution's blocks grow towards WINO_STREAM_TILES tiles,
 * their workspace up to an eighth of U (see wino_geometry). */
#define HC_WINO_STREAMED_U ((uint64_t)16 << 20)
#define WINO_STREAM_TILES 64
#define WINO_MAX_A 6
#define WINO_PW 16  /* output channels per panel of U (one AVX-512 vector) */
/* Bytes of U one reduction block of the products reads per task (see plan_products). */
#define WINO_MM_L1_BYTES (16 * 1024)
/* Reduction steps per block of the products at most (see plan_products). */
#define WINO_MM_SLICE_STEPS 64
/* Tiles ahead the output transform prefetches its products (see emit_output). */
#define WINO_OUT_PREFETCH 2

/* Transform matrices of F(m, 3) with stride 1 or 2: B^T (alpha x alpha),
 * G (alpha x 3), A^T (m x alpha). step: input columns (rows) from one tile
 * to the next. nud: distinct rows of G; row i >= nud equals row nud - 1, so
 * U[i][j] is stored once, at U row min(i, nud-1) * nud + min(j, nud-1). */
typedef struct wino_mat {
  int m, a, stride, step, nud;
  double BT[WINO_MAX_A][WINO_MAX_A];
  double G[WINO_MAX_A][3];
  double AT[4][WINO_MAX_A];
} wino_mat;

/* alpha: the patch size of an m x m tile. */
static int wino_alpha(int m, int stride) { return stride == 2 ? 2 * m + 1 : m + 2; }

/* Copies row-major B^T (a x a), G (a x 3) and A^T (m x a) into w. */
static void set_matrices(wino_mat* w, const double* BT, const double* G, const double* AT) {
  int a = w->a;
  for (int i = 0; i < a; ++i) {
    for (int j = 0; j < a; ++j) w->BT[i][j] = BT[i * a + j];
    for (int j = 0; j < 3; ++j) w->G[i][j] = G[i * 3 + j];
  }
  for (int i = 0; i < w->m; ++i)
    for (int j = 0; j < a; ++j) w->AT[i][j] = AT[i * a + j];
}

static void wino_matrices(int m, int stride, wino_mat* w) {
  memset(w, 0, sizeof *w);
  w->m = m;
  w->stride = stride == 2 ? 2 : 1;
  w->a = wino_alpha(m, w->stride);
  w->step = m * w->stride;
  w->nud = w->a;
  if (w->stride == 2) {
    /* F(2,3) with stride 2 (see the top of the file); m is 2. */
    static const double BT[5][5] = {
        {1, 0, -1, 0, 0}, {0, 0, 1, 0, 0}, {0, 0, -1, 0, 1}, {0, 1, 0, 0, 0}, {0, 0, 0, 1, 0}};
    static const double G[5][3] = {{1, 0, 0}, {1, 0, 1}, {0, 0, 1}, {0, 1, 0}, {0, 1, 0}};
    static const double AT[2][5] = {{1, 1, 0, 1, 0}, {0, 1, 1, 0, 1}};
    set_matrices(w, &BT[0][0], &G[0][0], &AT[0][0]);
    w->nud = 4;
  } else if (m == 4) {
    /* Points 0, 1, -1, 2, -1/2 (and infinity): half the float32 error of
     * the common 0, +-1, +-2 for a few more non-unit coefficients in B^T. */
    static const double BT[6][6] = {{1, 3.0 / 2, -2, -3.0 / 2, 1, 0},      {0, -1, -5.0 / 2, -1.0 / 2, 1, 0},
                                    {0, 1, 1.0 / 2, -5.0 / 2, 1, 0},       {0, -1.0 / 2, -1, 1.0 / 2, 1, 0},
                                    {0, 2, -1, -2, 1, 0},                  {0, 1, 3.0 / 2, -2, -3.0 / 2, 1}};
    static const double G[6][3] = {{1, 0, 0},
                                   {-1.0 / 3, -1.0 / 3, -1.0 / 3},
                                   {1.0 / 3, -1.0 / 3, 1.0 / 3},
                                   {1.0 / 15, 2.0 / 15, 4.0 / 15},
                                   {-16.0 / 15, 8.0 / 15, -4.0 / 15},
                                   {0, 0, 1}};
    static const double AT[4][6] = {
        {1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -0.5, 0}, {0, 1, 1, 4, 0.25, 0}, {0, 1, -1, 8, -0.125, 1}};
    set_matrices(w, &BT[0][0], &G[0][0], &AT[0][0]);
  } else {
    static const double BT[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
    static const double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
    static const double AT[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
    set_matrices(w, &BT[0][0], &G[0][0], &AT[0][0]);
  }
}

/* Tiling and workspace layout. */
typedef struct wino_geo {
  int m, a, nxi, nu; /* nu: rows of U (distinct xi) */
  int64_t th, tw, T, Tp, Mp; /* Mp: output channels padded to panels */
  int64_t Tb, nblk;          /* tiles per block (a multiple of WINO_PAD), blocks */
  int64_t vxs, mxs;          /* elements from one xi to the next in V and Mx */
  int lanes;                 /* 1, or 2: V and Mx twice, the blocks in two runs (hc_wino_shape.lanes) */
  uint64_t u_off, v_off, x_off, slot_bytes, total; /* bytes; slot_bytes: one lane's V and Mx */
} wino_geo;

static uint64_t align64(uint64_t x) { return (x + 63) / 64 * 64; }

/* grow: let blocks of a streamed U grow (every caller but the choice, which
 * judges a shape by its blocks under the arena caps). */
static void wino_geometry(const hc_wino_shape* s, int m, bool packed, bool grow, wino_geo* g) {
  memset(g, 0, sizeof *g);
  wino_mat t;
  wino_matrices(m, s->stride, &t);
  g->m = m;
  g->a = t.a;
  g->nxi = g->a * g->a;
  g->nu = t.nud * t.nud;
  g->th = (s->OH + m - 1) / m;
  g->tw = (s->OW + m - 1) / m;
  g->T = s->N * g->th * g->tw;
  g->Tp = (g->T + WINO_PAD - 1) / WINO_PAD * WINO_PAD;
  g->Mp = (s->M + WINO_PW - 1) / WINO_PW * WINO_PW;
  /* Tiles are transformed, multiplied and transformed back in blocks of Tb
   * (V and Mx hold one block): all of them when they fit in
   * HC_WINO_MAX_WORKSPACE, else as many as HC_WINO_BLOCK_WORKSPACE allows
   * (at least WINO_PAD), evened out over the blocks that takes (rounded up
   * to WINO_PAD, the last one ragged). 768 KiB blocks keep ResNet-50's
   * arena at 6.1 MiB (1 MiB: 6.2, 1.5 MiB: 6.8) and PP-OCRv4 det's at 27. */
  uint64_t per_tile = (uint64_t)(g->nxi * (s->C + g->Mp)) * 4u;
  uint64_t fixed = (uint64_t)(g->nxi * 2 * 16) * 4u + 128u;
  uint64_t block = s->stride == 2 ? HC_WINO_S2_BLOCK_WORKSPACE : HC_WINO_BLOCK_WORKSPACE;
  uint64_t cap = fixed + per_tile * (uint64_t)g->Tp <= HC_WINO_MAX_WORKSPACE ? HC_WINO_MAX_WORKSPACE : block;
  int64_t tb = cap > fixed ? (int64_t)((cap - fixed) / per_tile) : 0;
  tb = tb / WINO_PAD * WINO_PAD;
  if (tb < WINO_PAD) tb = WINO_PAD;
  /* A packed float32 U far larger than the caches (FCN-ResNet50's
   * 2048->512 head: 64 MB) is read from memory once per block, so blocks of
   * 16 tiles make the products wait on memory (13 blocks there: 82 ms, about
   * 80 GFLOP/s). Such blocks grow towards WINO_STREAM_TILES tiles, whose
   * products do enough work per byte of U to be bound by the FMAs again,
   * taking at most an eighth of U's bytes of workspace: the head's blocks
   * go from 16 tiles to 48 and the model from 268 to 234 ms at one
   * thread; its arena from 14.45 to 15.89 MB. Nothing with a U of L2 or
   * L3 size changes (ResNet-50's largest is 4.2 MB). */
  uint64_t ubytes = (uint64_t)(g->nu * s->C * g->Mp) * 4u;
  bool grown = false;
  if (grow && packed && s->dt == HX_DTYPE_FLOAT32 && s->wt == HX_DTYPE_UNDEFINED && ubytes >= HC_WINO_STREAMED_U &&
      tb < WINO_STREAM_TILES) {
    uint64_t room = ubytes / 8;
    int64_t fit = room > fixed ? (int64_t)((room - fixed) / per_tile) / WINO_PAD * WINO_PAD : 0;
    if (fit > WINO_STREAM_TILES) fit = WINO_STREAM_TILES;
    if (fit > tb) {
      tb = fit;
      grown = true;
    }
  }
  if (tb > g->Tp) tb = g->Tp;
  /* Stride 2 in at least two blocks, so that at two threads each lane
   * takes its own tiles through the three stages: in one block the three
   * stages split their work three different ways, and each read the other
   * core's lines (one-block shapes ran 1.03-1.29x the direct kernels' time
   * at two threads, 0.77-0.84x at one). */
  if (s->stride == 2) {
    int64_t half = ((g->T + 1) / 2 + WINO_PAD - 1) / WINO_PAD * WINO_PAD;
    if (tb > half) tb = half;
  }
  g->nblk = (g->T + tb - 1) / tb;
  /* float16 (new with this rule; float32 keeps the one above, see
   * docs/performance.md): at most HC_WINO_MAX_BLOCKS blocks, three kernels
   * each, the blocks growing instead. ISNet-medium's 1024x1024 layers would
   * take 4,800 blocks: 16,900 kernels, a 38 s compile even with the whole
   * blocks repeating one body (hc_kb_repeat); 256 ran as fast. */
  if (s->dt == HX_DTYPE_FLOAT16 && g->nblk > HC_WINO_MAX_BLOCKS) g->nblk = HC_WINO_MAX_BLOCKS;
  int64_t even = (g->T + g->nblk - 1) / g->nblk;
  g->Tb = (even + WINO_PAD - 1) / WINO_PAD * WINO_PAD;
  g->nblk = (g->T + g->Tb - 1) / g->Tb;
  uint64_t off = 0;
  g->u_off = off;
  if (!packed) off = align64(off + (uint64_t)(g->nu * s->C * g->Mp) * 4u);
  /* One cache line more than the matrices: the alpha^2 vectors a transform
   * task loads or stores, one per xi, would otherwise often lie a multiple
   * of 4 KiB apart and compete for one L1 set. */
  g->vxs = s->C * g->Tb + 16;
  g->mxs = g->Mp * g->Tb + 16;
  g->v_off = off;
  off = align64(off + (uint64_t)(g->nxi * g->vxs) * 4u);
  g->x_off = off;
  off = align64(off + (uint64_t)(g->nxi * g->mxs) * 4u);
  g->slot_bytes = off - g->v_off;
  /* Grown blocks run in one lane: a second would double their workspace,
   * and their products alone have tasks enough for the threads. */
  g->lanes = s->lanes > 1 && g->nblk > 1 && !grown ? 2 : 1;
  g->total = g->v_off + (uint64_t)g->lanes * g->slot_bytes;
}

/* Narrowed weights (hc_wino_shape.wt) take Winograd only where what it adds
 * to the artifact, the per-tile tables (6 int32 per tile) and the three
 * kernel entries of each block (the ABI record, its relocations and name,
 * about this many bytes), is at most a quarter of the weights' bytes: a
 * user who narrows weights asks for a small artifact. ResNet-50's layers
 * 1-3 qualify (1.17-1.24x -> 1.00-1.04x the float32 artifact's latency).
 * PP-OCRv4 det's five candidates (24 output channels on large planes, many
 * blocks) would have added 185 KB to its 1.5 MB int8 artifact for no
 * measurable speed; two of them qualify. */
#define WINO_KERNEL_ENTRY_BYTES 150

/* F(4,3) from this many 4x4 tiles per image batch (20x20 planes and up). */
#define WINO_F4_MIN_TILES 25
/* On 256-bit (AVX2) targets, whose products take twice the cycles of
 * AVX-512's per flop, F(4,3) already from 16 tiles (13x13 to 16x16 planes)
 * when both channel counts are at least 128: its products do 0.56-0.73 of
 * F(2,3)'s work for a U 2.25 times larger, which streams from memory once
 * per run, and on AVX2 the work saved outweighs it. On the Zen 3 guest
 * (docs/performance.md, "F(4,3) on 14x14 planes for AVX2"), ResNet-50's
 * layer-3 convolutions (256 channels on 14x14) in the model took 0.84-0.87
 * of F(2,3)'s time at one thread and 0.86-0.90 at two; one-layer models
 * with weights flushed from the caches, 128 to 512 channels: 0.58-0.89 at
 * one thread (128 on 14x14: 0.94-1.06 at two); 64 channels on 14x14 ran
 * 6-10% slower at one thread (the transforms outweigh the products). On
 * the Zen 5 guest with AVX-512 (stop 18), ResNet-50 ran 8% slower with
 * F(4,3) on its 14x14 layers, so 512-bit targets keep WINO_F4_MIN_TILES.
 * Only where pack-weights transforms U (its row count then tells the tile
 * size): the rule is the target's, and U a layout of that target's
 * variant. */
#define WINO_F4_AVX2_MIN_TILES 16
#define WINO_F4_AVX2_MIN_CHANNELS 128

/* F(2,3) from this many 2x2 tiles (7x7 planes and up). On the Zen 3 guest
 * (docs/performance.md, "3x3 convolutions on 7x7 planes") 7x7 and 8x8
 * planes ran in 0.45-0.9 of the direct kernels' time with 64-960
 * channels; 5x5 (9 tiles, 44% of their outputs padding) and 4x4 ran
 * slower. */
#define WINO_F2_MIN_TILES 16

/* 512-bit targets: F(2,3) from this many tiles (10x10 planes and up).
 * On an Intel Xeon (Emerald Rapids, AVX-512; docs/performance.md, "On an
 * Intel Xeon with AVX-512", stop 33) the channels kernel
 * ran 7x7 planes in 0.75-0.84 of F(2,3)'s time with 64-512 channels
 * (ResNet-50's layer 4: 0.77 alone, weights flushed; 0.85 at two
 * threads), and 8x8 in 0.91-1.05; from 10x10 (25 tiles) F(2,3) won by
 * 1.25-1.4x. */
#define WINO_F2_AVX512_MIN_TILES 25

/* Whether the tile offsets and tables fit 32 bits. */
static bool offsets_fit_i32(const hc_wino_shape* s) {
  return s->N * s->C * s->H * s->W < ((int64_t)1 << 31) && s->N * s->M * s->OH * s->OW < ((int64_t)1 << 31);
}

/* The geometry that decides a shape: packed U, one lane (the choice does
 * not depend on the lanes), blocks under the arena caps. */
static void choice_geometry(const hc_wino_shape* s, int m, wino_geo* g) {
  hc_wino_shape one = *s;
  one.lanes = 1;
  wino_geometry(&one, m, true, false, g);
}

/* Measured on one-Conv models and ResNet-50 (docs/performance.md, "Winograd
 * tile size"): F(4,3) wins from 25 tiles of 4x4 (20x20 planes: 2.2-3x
 * faster than F(2,3) with 256 channels, 1.5x on ResNet-50's 28x28 layer 2,
 * whose F(2,3) tiles (196) go in blocks that each stream the transformed
 * weights again); F(2,3) where the 4x4 tiles would be fewer (14x14, 16x16:
 * 16 tiles, and the 36 products stream 4x the weights for little work),
 * down to 7x7 planes. */
static int choose_from(const hc_wino_shape* s, int64_t f4_min_tiles) {
  if (s->C < 16 || s->M < 16 || s->OH < 4 || s->OW < 4) return 0;
  if (!offsets_fit_i32(s)) return 0;
  int64_t t4 = s->N * ((s->OH + 3) / 4) * ((s->OW + 3) / 4), t2 = s->N * ((s->OH + 1) / 2) * ((s->OW + 1) / 2);
  int m = t4 >= f4_min_tiles ? 4 : t2 >= WINO_F2_MIN_TILES ? 2 : 0;
  /* The transformed images (V and Mx, 4.5x (F(4,3)) to 8x (F(2,3)) the
   * input's bytes) must stay small: they are arena memory, and on the
   * large planes where a CNN's activations peak they would raise the
   * arena (ResNet-50's layer-1/2 transforms took it from 6.2 to 8.3 MiB,
   * PP-OCRv4 det's from 29 to 45 MiB, past ONNX Runtime's). About the L2
   * size, they also stay in cache between the three stages. So the tiles
   * go in blocks (wino_geometry); a shape is rejected only when one block
   * of WINO_PAD tiles does not fit. */
  for (; m >= 2; m -= 2) {
    if (m == 2 && t2 < WINO_F2_MIN_TILES) return 0;
    wino_geo g;
    choice_geometry(s, m, &g);
    /* float16: U is transformed at run time into the workspace (see
     * hc_wino_prepack), which must stay small too. */
    if (s->dt == HX_DTYPE_FLOAT16 && (uint64_t)(g.nxi * s->C * g.Mp) * 4u > HC_WINO_MAX_RUNTIME_U) continue;
    /* Nor blocks grown past HC_WINO_MAX_F16_BLOCK (see wino_geometry). */
    if (s->dt == HX_DTYPE_FLOAT16 && g.total > HC_WINO_MAX_F16_BLOCK) continue;
    if (s->wt != HX_DTYPE_UNDEFINED) {
      uint64_t wbytes = (uint64_t)(s->M * s->C * 9) * hx_dtype_size(s->wt);
      uint64_t extra = (uint64_t)g.Tp * 6u * 4u + (uint64_t)g.nblk * 3u * WINO_KERNEL_ENTRY_BYTES;
      if (4 * extra > wbytes) continue;
    }
    if (g.total <= HC_WINO_MAX_WORKSPACE) return m;
  }
  return 0;
}

/* Stride 2 in blocks of at least this many 2x2 tiles (65 tiles and up:
 * two blocks, see wino_geometry), and channel counts (see choose_s2). */
#define WINO_S2_MIN_BLOCK_TILES 48
#define WINO_S2_MIN_CHANNELS 64

/* Stride 2 (float32 weights packed at compile time, 256-bit targets):
 * F(2,3) where its tiles go in two or more blocks (wino_geometry) of at
 * least WINO_S2_MIN_BLOCK_TILES each: enough tiles to share U. */
static int choose_s2(const hc_wino_shape* s) {
  if (s->dt != HX_DTYPE_FLOAT32 || s->wt != HX_DTYPE_UNDEFINED) return 0;
  if (s->C < WINO_S2_MIN_CHANNELS || s->M < WINO_S2_MIN_CHANNELS || s->OH < 4 || s->OW < 4) return 0;
  if (!offsets_fit_i32(s)) return 0;
  wino_geo g;
  choice_geometry(s, 2, &g);
  return g.total <= HC_WINO_MAX_WORKSPACE && g.Tb >= WINO_S2_MIN_BLOCK_TILES && g.nblk >= 2 ? 2 : 0;
}

int hc_wino_choose(const hc_wino_shape* s) { return s->stride == 2 ? 0 : choose_from(s, WINO_F4_MIN_TILES); }

int hc_wino_choose_packed(const hc_wino_shape* s, const hc_target* target) {
  if (s->stride == 2) return target && target->vector_bits == 256 ? choose_s2(s) : 0;
  int m = hc_wino_choose(s);
  if (m == 2 && target && target->vector_bits == 512 &&
      s->N * ((s->OH + 1) / 2) * ((s->OW + 1) / 2) < WINO_F2_AVX512_MIN_TILES)
    return 0;
  /* 256-bit targets: F(4,3) from WINO_F4_AVX2_MIN_TILES where both channel
   * counts reach WINO_F4_AVX2_MIN_CHANNELS. */
  if (m == 2 && target && target->vector_bits == 256 && s->C >= WINO_F4_AVX2_MIN_CHANNELS &&
      s->M >= WINO_F4_AVX2_MIN_CHANNELS)
    m = choose_from(s, WINO_F4_AVX2_MIN_TILES);
  return m;
}

/* The weights were prepared at compile time (U, or a narrowed g): the
 * kernels need no run-time transform and no room for U. */
static bool weights_packed(const hc_node* n) {
  return hc_packed_is(n, 1, HC_PACK_WINOGRAD) || hc_packed_is(n, 1, HC_PACK_WINOGRAD_G);
}

uint64_t hc_wino_workspace(const hc_node* n, const hc_wino_shape* s, int m) {
  wino_geo g;
  wino_geometry(s, m, weights_packed(n), true, &g);
  return g.total;
}

/* Index of U[xi][c][oc] in the panel layout [xi][Mp/8][C][8]. */
static int64_t u_index(const hc_wino_shape* s, int64_t Mp, int64_t xi, int64_t c, int64_t oc) {
  return ((xi * (Mp / WINO_PW) + oc / WINO_PW) * s->C + c) * WINO_PW + oc % WINO_PW;
}

/* U[xi][c][oc] of float32 weights w[oc][c][3][3], in double, for the nud^2
 * distinct xi; U is zeroed. */
static void transform_weights(const float* w, const hc_wino_shape* s, const wino_mat* t, float* U) {
  int a = t->nud;
  for (int64_t oc = 0; oc < s->M; ++oc)
    for (int64_t c = 0; c < s->C; ++c) {
      const float* g = w + (oc * s->C + c) * 9;
      double tmp[WINO_MAX_A][3];
      for (int i = 0; i < a; ++i)
        for (int k = 0; k < 3; ++k) tmp[i][k] = t->G[i][0] * g[k] + t->G[i][1] * g[3 + k] + t->G[i][2] * g[6 + k];
      for (int i = 0; i < a; ++i)
        for (int j = 0; j < a; ++j) {
          double u = tmp[i][0] * t->G[j][0] + tmp[i][1] * t->G[j][1] + tmp[i][2] * t->G[j][2];
          U[u_index(s, (s->M + WINO_PW - 1) / WINO_PW * WINO_PW, i * t->nud + j, c, oc)] = (float)u;
        }
    }
}

/* Index of tap t of g[oc][c] in HC_PACK_WINOGRAD_G, [Mp/16][C][9][16]. */
static int64_t g_index(int64_t C, int64_t oc, int64_t c, int t) {
  return ((oc / WINO_PW * C + c) * 9 + t) * WINO_PW + oc % WINO_PW;
}

/* The precision pass's plain narrowed copy g[M][C][3][3] of n's weight in
 * HC_PACK_WINOGRAD_G, in its element type (INT8: then the scales, padded
 * with zeros to whole panels). */
static hx_status_t prepack_narrowed(hc_graph* g, hc_node* n, const hc_wino_shape* s, bool* out_done) {
  hc_value* src = n->inputs[1];
  hc_packed_input* plain = n->packed;
  hx_dtype_t elem = plain->elem;
  if (src->kind != HC_VALUE_CONST || !src->data || elem != s->wt) return HX_OK;
  size_t es = hx_dtype_size(elem);
  int64_t Mp = (s->M + WINO_PW - 1) / WINO_PW * WINO_PW;
  size_t bytes = (size_t)(Mp * s->C * 9) * es;
  hc_q8_scales sc = hc_packed_q8_scales(n, 1);
  size_t total = elem == HX_DTYPE_INT8 ? hc_q8_total_bytes(bytes, Mp, sc.elem) : bytes;
  uint8_t* data = hc_graph_alloc_data(g, total);
  if (!data) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory packing '%s'", src->name);
  memset(data, 0, total);
  const uint8_t* q = src->data;
  for (int64_t oc = 0; oc < s->M; ++oc)
    for (int64_t c = 0; c < s->C; ++c)
      for (int t = 0; t < 9; ++t)
        memcpy(data + (size_t)g_index(s->C, oc, c, t) * es, q + (size_t)((oc * s->C + c) * 9 + t) * es, es);
  if (elem == HX_DTYPE_INT8)
    memcpy(data + hc_q8_scales_offset(bytes), q + plain->scales_offset,
           (size_t)plain->scales_count * hx_dtype_size(sc.elem));
  char name[256];
  snprintf(name, sizeof name, "%s.winog", src->name);
  int64_t dims[4] = {Mp / WINO_PW, s->C, 9, WINO_PW}, flat[1] = {(int64_t)total};
  hc_packed_input* pk;
  HX_RETURN_IF_ERROR(hc_install_packed(g, n, plain->original, name, elem, elem == HX_DTYPE_INT8 ? 1 : 4,
                                       elem == HX_DTYPE_INT8 ? flat : dims, data, HC_PACK_WINOGRAD_G, &pk));
  pk->elem = elem;
  if (elem == HX_DTYPE_INT8) {
    pk->scales_count = Mp;
    pk->scales_offset = hc_q8_scales_offset(bytes);
    pk->scales_elem = sc.elem;
    pk->scales_exp = sc.exp;
  }
  *out_done = true;
  return HX_OK;
}

hx_status_t hc_wino_prepack(hc_graph* g, hc_node* n, const hc_wino_shape* s, int m, bool* out_done) {
  *out_done = false;
  if (s->wt != HX_DTYPE_UNDEFINED) return hc_packed_is(n, 1, HC_PACK_PLAIN) ? prepack_narrowed(g, n, s, out_done) : HX_OK;
  hc_value* w = n->inputs[1];
  /* float16 weights stay as they are: transformed in float32 they would be
   * 3.6x (F(2,3)) to 8x (F(4,3)) their bytes in the artifact (ISNet-medium:
   * 89 -> 332 MB); the run-time transform (winoM_w) costs a few percent. */
  if (n->packed || !w || w->kind != HC_VALUE_CONST || !w->data || w->dtype != HX_DTYPE_FLOAT32) return HX_OK;
  wino_mat t;
  wino_matrices(m, s->stride, &t);
  int64_t Mp = (s->M + WINO_PW - 1) / WINO_PW * WINO_PW;
  int64_t dims[4] = {(int64_t)t.nud * t.nud, Mp / WINO_PW, s->C, WINO_PW};
  size_t bytes = (size_t)(dims[0] * Mp * dims[2]) * 4u;
  float* data = hc_graph_alloc_data(g, bytes);
  if (!data) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory transforming '%s'", w->name);
  memset(data, 0, bytes);
  transform_weights(w->data, s, &t, data);
  char name[256];
  snprintf(name, sizeof name, "%s.wino%d%s", w->name, m, t.stride == 2 ? "s2" : "");
  HX_RETURN_IF_ERROR(hc_install_packed(g, n, w, name, HX_DTYPE_FLOAT32, 4, dims, data, HC_PACK_WINOGRAD, NULL));
  *out_done = true;
  return HX_OK;
}

/* ---- emission helpers ------------------------------------------------------ */

typedef struct wino_emit {
  hc_lower_ctx* lc;
  const hc_node* n;
  const hc_wino_shape* s;
  wino_mat t;
  wino_geo g;
  unsigned vl;
  bool packed;
  /* Narrowed weights (HC_PACK_WINOGRAD_G): their storage type and INT8
   * scales; UNDEFINED: U is float32. */
  hx_dtype_t wt;
  hc_q8_scales wsc;
  LLVMValueRef tab; /* i32 tables, see emit_tables */
  /* The block of tiles being emitted: global tiles [bt0, bt0 + tn), tnp
   * being tn padded to WINO_PAD; V and Mx index them from 0. */
  int64_t bt0, tn, tnp;
  /* Table entries of bt0 in the input and output transform kernels just
   * emitted (-1: none), for hc_kb_repeat. */
  int bt0_slot_in, bt0_slot_out;
  /* Two lanes (wino_geo.lanes): the byte offset of the block's V and Mx
   * from the lane-0 ones, and its table entry in the three kernels. */
  int64_t lane_off;
  int lane_slot[3];
} wino_emit;

/* The constant c as a value of type `type` (a float type or a vector of one). */
static LLVMValueRef fconst(double c, LLVMTypeRef type) {
  if (LLVMGetTypeKind(type) != LLVMVectorTypeKind) return LLVMConstReal(type, c);
  unsigned lanes = LLVMGetVectorSize(type);
  LLVMValueRef x = LLVMConstReal(LLVMGetElementType(type), c);
  LLVMValueRef e[64];
  for (unsigned i = 0; i < lanes; ++i) e[i] = x;
  return LLVMConstVector(e, lanes);
}

/* sum_k c[k] * x[k] (k < count; scalars or vectors of one type), zero
 * coefficients skipped and +-1 as additions. */
static LLVMValueRef lin(hc_kb* kb, const double* c, LLVMValueRef* x, int count) {
  LLVMBuilderRef b = kb->b;
  LLVMTypeRef type = LLVMTypeOf(x[0]);
  LLVMValueRef acc = NULL;
  for (int k = 0; k < count; ++k) {
    double ck = c[k];
    if (ck == 0) continue;
    if (!acc) {
      acc = ck == 1 ? x[k] : ck == -1 ? LLVMBuildFNeg(b, x[k], "") : LLVMBuildFMul(b, x[k], fconst(ck, type), "");
    } else if (ck == 1) {
      acc = LLVMBuildFAdd(b, acc, x[k], "");
    } else if (ck == -1) {
      acc = LLVMBuildFSub(b, acc, x[k], "");
    } else {
      LLVMValueRef args[3] = {x[k], fconst(ck, type), acc};
      acc = hc_kb_intrinsic(kb, "llvm.fmuladd", type, args, 3);
    }
  }
  return acc ? acc : fconst(0, type);
}

/* A stage kernel's name suffix: "wino4_in", "wino2s2_mm"... */
static const char* stage_name(const wino_mat* t, const char* stage, char name[24]) {
  snprintf(name, 24, "wino%d%s_%s", t->m, t->stride == 2 ? "s2" : "", stage);
  return name;
}

static LLVMValueRef ws_at(hc_kb* kb, uint64_t off) {
  return LLVMBuildGEP2(kb->b, kb->t_i8, hc_kb_workspace(kb), (LLVMValueRef[]){hc_kb_i64(kb, (int64_t)off)}, 1, "");
}

/* The block's V (off = v_off) or Mx (x_off) base, from its lane's copy. The
 * lane offset is a table parameter (entry *slot), so that the blocks of
 * both lanes share one body; one per kernel. */
static LLVMValueRef ws_block(hc_kb* kb, const wino_emit* e, uint64_t off, int* slot) {
  LLVMValueRef p = ws_at(kb, off);
  if (e->g.lanes <= 1) return p;
  LLVMValueRef lo = hc_kb_param(kb, e->lane_off);
  *slot = kb->last_param;
  return LLVMBuildGEP2(kb->b, kb->t_i8, p, &lo, 1, "lane_block");
}

/* Per-tile i32 tables, 6 rows of Tp entries: input offset of the patch's
 * top-left element (channel 0), its row and column (rows far negative past
 * the last tile), the image, and the output row and column of the tile. */
enum { TAB_XBASE, TAB_Y0, TAB_X0, TAB_IMG, TAB_OY, TAB_OX, TAB_ROWS };

static hx_status_t emit_tables(wino_emit* e) {
  const hc_wino_shape* s = e->s;
  const wino_geo* g = &e->g;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(e->lc->llctx);
  int64_t count = TAB_ROWS * g->Tp;
  LLVMValueRef* el = malloc(sizeof(LLVMValueRef) * (size_t)count);
  if (!el) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory");
  for (int64_t t = 0; t < g->Tp; ++t) {
    int64_t v[TAB_ROWS] = {0, -(1 << 20), 0, 0, 0, 0};
    if (t < g->T) {
      int64_t img = t / (g->th * g->tw), r = t % (g->th * g->tw), ty = r / g->tw, tx = r % g->tw;
      int64_t y0 = ty * e->t.step - s->pt, x0 = tx * e->t.step - s->pl;
      v[TAB_XBASE] = img * s->C * s->H * s->W + y0 * s->W + x0;
      v[TAB_Y0] = y0;
      v[TAB_X0] = x0;
      v[TAB_IMG] = img;
      v[TAB_OY] = ty * g->m;
      v[TAB_OX] = tx * g->m;
    }
    for (int k = 0; k < TAB_ROWS; ++k) el[k * g->Tp + t] = LLVMConstInt(i32, (unsigned long long)v[k], 1);
  }
  LLVMValueRef init = LLVMConstArray2(i32, el, (uint64_t)count);
  free(el);
  e->tab = hc_kb_const_table(e->lc, init, "wino_tiles", 64);
  return HX_OK;
}

static LLVMValueRef tab_at(hc_kb* kb, const wino_emit* e, int row, LLVMValueRef t) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(kb->lc->llctx);
  LLVMValueRef idx = hc_kb_iadd(kb, t, hc_kb_i64(kb, (int64_t)row * e->g.Tp));
  LLVMValueRef ld = LLVMBuildLoad2(kb->b, i32, LLVMBuildGEP2(kb->b, i32, e->tab, &idx, 1, ""), "");
  return LLVMBuildSExt(kb->b, ld, kb->t_i64, "");
}

static LLVMValueRef splat_i32(hc_kb* kb, int64_t x, unsigned lanes) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(kb->lc->llctx);
  return hc_kb_splat(kb, LLVMConstInt(i32, (unsigned long long)x, 1), lanes);
}

/* llvm.masked.gather of float32 lanes at ptrs (a vector of pointers). */
static LLVMValueRef gather(hc_kb* kb, hx_dtype_t dt, LLVMValueRef ptrs, LLVMValueRef mask, unsigned lanes) {
  const char* name = "llvm.masked.gather";
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  bool half = dt == HX_DTYPE_FLOAT16;
  LLVMTypeRef vt = LLVMVectorType(half ? kb->t_f16 : kb->t_f32, lanes);
  LLVMTypeRef tys[2] = {vt, LLVMTypeOf(ptrs)};
  LLVMValueRef decl = LLVMGetIntrinsicDeclaration(kb->lc->mod, id, tys, 2);
  LLVMValueRef args[4] = {ptrs, LLVMConstInt(kb->t_i32, half ? 2 : 4, 0), mask, LLVMConstNull(vt)};
  LLVMValueRef v = LLVMBuildCall2(kb->b, LLVMIntrinsicGetType(kb->lc->llctx, id, tys, 2), decl, args, 4, "");
  return half ? LLVMBuildFPExt(kb->b, v, LLVMVectorType(kb->t_f32, lanes), "") : v;
}

/* ---- kernels ----------------------------------------------------------------- */

/* "wino_w": U[xi][c][oc] from w at run time (weights that are a graph input,
 * or float16 ones, see hc_wino_prepack), one task per panel of WINO_PW
 * output channels: per input channel, the panel's 9 taps gathered as
 * vectors, transformed in double as at compile time, and each xi's row of
 * the panel stored whole. */
static hx_status_t emit_weights(wino_emit* e) {
  const hc_wino_shape* s = e->s;
  const wino_mat* t = &e->t;
  int a = t->a;
  hc_kb kb;
  int64_t Mp = e->g.Mp, np = Mp / WINO_PW;
  char name[24];
  HX_RETURN_IF_ERROR(hc_kb_begin(e->lc, e->n, stage_name(&e->t, "w", name), np, &kb));
  LLVMBuilderRef b = kb.b;
  LLVMValueRef W = hc_kb_ptr(&kb, e->n->inputs[1]);
  LLVMValueRef U = ws_at(&kb, e->g.u_off);
  LLVMTypeRef vd = LLVMVectorType(kb.t_f64, WINO_PW);
  hc_loop task, cl;
  LLVMValueRef pn = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef oc0 = hc_kb_imul(&kb, pn, hc_kb_i64(&kb, WINO_PW));
  /* Lanes past M read nothing and are zeros (panel rows past M). */
  LLVMValueRef lane_e[WINO_PW], off_e[WINO_PW];
  for (int l = 0; l < WINO_PW; ++l) {
    lane_e[l] = LLVMConstInt(kb.t_i64, (unsigned long long)l, 0);
    off_e[l] = LLVMConstInt(kb.t_i64, (unsigned long long)(l * s->C * 9), 0);
  }
  LLVMValueRef lanes = LLVMConstVector(lane_e, WINO_PW), offs = LLVMConstVector(off_e, WINO_PW);
  LLVMValueRef real = LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildAdd(b, hc_kb_splat(&kb, oc0, WINO_PW), lanes, ""),
                                    hc_kb_splat(&kb, hc_kb_i64(&kb, s->M), WINO_PW), "");
  LLVMValueRef c = hc_loop_begin(&kb, &cl, hc_kb_i64(&kb, 0), hc_kb_i64(&kb, s->C), "c");
  LLVMValueRef base = hc_kb_imul(&kb, hc_kb_iadd(&kb, hc_kb_imul(&kb, oc0, hc_kb_i64(&kb, s->C)), c), hc_kb_i64(&kb, 9));
  LLVMTypeRef et = s->dt == HX_DTYPE_FLOAT16 ? kb.t_f16 : kb.t_f32;
  LLVMValueRef gv[9];
  for (int k = 0; k < 9; ++k) {
    LLVMValueRef idx = LLVMBuildAdd(b, hc_kb_splat(&kb, hc_kb_iadd(&kb, base, hc_kb_i64(&kb, k)), WINO_PW), offs, "");
    LLVMValueRef ptrs = LLVMBuildGEP2(b, et, W, &idx, 1, "");
    gv[k] = LLVMBuildFPExt(b, gather(&kb, s->dt, ptrs, real, WINO_PW), vd, "");
  }
  /* tmp = G g (alpha x 3), U = tmp G^T, in double as at compile time. */
  LLVMValueRef tmp[WINO_MAX_A][3];
  for (int i = 0; i < a; ++i)
    for (int k = 0; k < 3; ++k) {
      LLVMValueRef col[3] = {gv[k], gv[3 + k], gv[6 + k]};
      tmp[i][k] = lin(&kb, t->G[i], col, 3);
    }
  LLVMValueRef row = hc_kb_imul(&kb, hc_kb_iadd(&kb, hc_kb_imul(&kb, pn, hc_kb_i64(&kb, s->C)), c), hc_kb_i64(&kb, WINO_PW));
  for (int i = 0; i < t->nud; ++i)
    for (int j = 0; j < t->nud; ++j) {
      LLVMValueRef u = LLVMBuildFPTrunc(b, lin(&kb, t->G[j], tmp[i], 3), LLVMVectorType(kb.t_f32, WINO_PW), "");
      LLVMValueRef idx = hc_kb_iadd(&kb, row, hc_kb_i64(&kb, (int64_t)(i * t->nud + j) * Mp * s->C));
      hc_ukr_store(&kb, HX_DTYPE_FLOAT32, U, idx, u, WINO_PW, WINO_PW);
    }
  hc_loop_end(&kb, &cl);
  hc_loop_end(&kb, &task);
  hc_kb_end(&kb, (double)(s->M * s->C) * 150.0, (double)(s->M * s->C) * (9.0 + t->nud * t->nud) * 4.0);
  return HX_OK;
}

/* d[q] (q < a), lanes l = column q + m*l of the run of input columns held
 * by the VL-lane vectors piece[0..np): element q of the patch row of each
 * of VL consecutive tiles, m (the tiles' step) columns apart. With 8 lanes,
 * m = 4: the 4x4 transpose of the tiles' first four columns after a
 * 128-bit regrouping (12 shuffles for the first four d, a lane shift each
 * for the others: two for F(4,3), one for stride 2's F(2,3)); m = 2: even
 * and odd lanes, then shifts. Other widths: one shuffle of all the
 * columns, left to LLVM. */
static void deinterleave(hc_kb* kb, LLVMValueRef* piece, int np, int m, int a, unsigned vl, LLVMValueRef* d) {
  LLVMValueRef p[4] = {NULL};
  if (vl == 8 && m == 4 && np >= 5) {
    static const int lo[8] = {0, 1, 2, 3, 8, 9, 10, 11}, hi[8] = {4, 5, 6, 7, 12, 13, 14, 15};
    static const int ulo[8] = {0, 8, 1, 9, 4, 12, 5, 13}, uhi[8] = {2, 10, 3, 11, 6, 14, 7, 15};
    static const int dlo[8] = {0, 1, 8, 9, 4, 5, 12, 13}, dhi[8] = {2, 3, 10, 11, 6, 7, 14, 15};
    LLVMValueRef g0 = hc_kb_shuffle(kb, piece[0], piece[2], lo, 8), g1 = hc_kb_shuffle(kb, piece[0], piece[2], hi, 8);
    LLVMValueRef g2 = hc_kb_shuffle(kb, piece[1], piece[3], lo, 8), g3 = hc_kb_shuffle(kb, piece[1], piece[3], hi, 8);
    LLVMValueRef t0 = hc_kb_shuffle(kb, g0, g1, ulo, 8), t1 = hc_kb_shuffle(kb, g0, g1, uhi, 8);
    LLVMValueRef t2 = hc_kb_shuffle(kb, g2, g3, ulo, 8), t3 = hc_kb_shuffle(kb, g2, g3, uhi, 8);
    p[0] = hc_kb_shuffle(kb, t0, t2, dlo, 8);
    p[1] = hc_kb_shuffle(kb, t0, t2, dhi, 8);
    p[2] = hc_kb_shuffle(kb, t1, t3, dlo, 8);
    p[3] = hc_kb_shuffle(kb, t1, t3, dhi, 8);
  } else if (vl == 8 && m == 2 && np >= 3) {
    static const int ev[8] = {0, 2, 4, 6, 8, 10, 12, 14}, od[8] = {1, 3, 5, 7, 9, 11, 13, 15};
    p[0] = hc_kb_shuffle(kb, piece[0], piece[1], ev, 8);
    p[1] = hc_kb_shuffle(kb, piece[0], piece[1], od, 8);
  }
  if (p[0]) {
    /* Columns q >= m: column q - m of the next tile, the last lane's from
     * piece m (columns 8m and up). */
    for (int q = 0; q < a; ++q) {
      int sh[8] = {1, 2, 3, 4, 5, 6, 7, 8 + (q - m)};
      d[q] = q < m ? p[q] : hc_kb_shuffle(kb, p[q - m], piece[m], sh, 8);
    }
    return;
  }
  /* The pieces as one vector (their count padded to a power of 2). */
  LLVMTypeRef vt = LLVMTypeOf(piece[0]);
  int w = 1;
  while (w < np) w *= 2;
  LLVMValueRef cat[8];
  for (int k = 0; k < w; ++k) cat[k] = k < np ? piece[k] : LLVMConstNull(vt);
  for (unsigned len = vl; w > 1; w /= 2, len *= 2) {
    int idx[128];
    for (unsigned l = 0; l < 2 * len; ++l) idx[l] = (int)l;
    for (int k = 0; k < w / 2; ++k) cat[k] = hc_kb_shuffle(kb, cat[2 * k], cat[2 * k + 1], idx, 2 * len);
  }
  for (int q = 0; q < a; ++q) {
    int idx[64];
    for (unsigned l = 0; l < vl; ++l) idx[l] = q + m * (int)l;
    d[q] = hc_kb_shuffle(kb, cat[0], LLVMGetUndef(LLVMTypeOf(cat[0])), idx, vl);
  }
}

/* Lanes of the input transform: a chunk holds the tiles of one tile row,
 * so a row of at most 8 tiles (planes up to 32 wide for F(4,3), 16 for
 * F(2,3)) fills at most half of a 16-lane vector, and takes 8 lanes
 * instead, whose patch rows split into tiles by the short shuffles of
 * deinterleave. */
static unsigned input_lanes(const wino_emit* e) {
  return e->vl == 16 && e->g.tw <= 8 ? 8 : e->vl;
}

/* "wino_in": V[xi][c][t] = B^T d B, one task per channel of the block.
 * Vector lanes are consecutive tiles of one tile row (a chunk of at most
 * VL): patch row r of the chunk is one run of input columns, read as a few
 * masked vector loads (zeros outside x: the padding), and element q of
 * every tile's patch row is a stride-m shuffle of them. Gathering each
 * element (the first version) took 4x the time: on Zen 3 the 36 gathers of
 * an F(4,3) chunk cost three quarters of the kernel. A chunk's stores are
 * whole vectors; the lanes past its tiles land on the tiles of the chunks
 * the task writes next (or on the block's padding), and only a store that
 * would reach past the channel's row of V is masked. */
static hx_status_t emit_input(wino_emit* e) {
  const hc_wino_shape* s = e->s;
  const wino_mat* t = &e->t;
  const wino_geo* g = &e->g;
  int a = t->a, step = t->step;
  unsigned vl = input_lanes(e);
  /* Input columns of a chunk's patch rows, in whole vectors. */
  int npiece = (int)((step * (int64_t)(vl - 1) + a + vl - 1) / vl);
  hc_kb kb;
  char name[24];
  HX_RETURN_IF_ERROR(hc_kb_begin(e->lc, e->n, stage_name(&e->t, "in", name), s->C, &kb));
  hc_ukr_prefer_full_width(&kb);
  LLVMBuilderRef b = kb.b;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(kb.lc->llctx);
  bool half = s->dt == HX_DTYPE_FLOAT16;
  LLVMTypeRef et = half ? kb.t_f16 : kb.t_f32;
  LLVMTypeRef lvt = LLVMVectorType(et, vl), vt = LLVMVectorType(kb.t_f32, vl);
  LLVMValueRef X = hc_kb_ptr(&kb, e->n->inputs[0]);
  LLVMValueRef V = ws_block(&kb, e, g->v_off, &e->lane_slot[0]);
  /* The block's first tile comes from the kernel's table so that all whole
   * blocks share one body. */
  LLVMValueRef bt0 = hc_kb_param(&kb, e->bt0);
  e->bt0_slot_in = kb.last_param;
  LLVMValueRef iota[64];
  for (unsigned l = 0; l < vl; ++l) iota[l] = LLVMConstInt(i32, l, 0);
  LLVMValueRef lanes = LLVMConstVector(iota, vl);
  hc_loop task;
  LLVMValueRef c = hc_kb_task_loop_begin(&kb, &task);
  LLVMValueRef cplane = hc_kb_imul(&kb, c, hc_kb_i64(&kb, s->H * s->W));
  LLVMValueRef vrow = hc_kb_imul(&kb, c, hc_kb_i64(&kb, g->Tb));
  /* The next channel's rows of V, for writing: alpha^2 rows of the
   * block's tiles, which the stores would otherwise each wait for (V's
   * lines were last the products' of the convolution before, or another
   * lane's). ResNet-50's input transforms in 0.91 of the time at one
   * thread and 0.84 at two (kbench, 8 rounds, against 0.97-1.015 for the
   * 1x1 convolutions). */
  hc_if next;
  hc_if_begin(&kb, &next, LLVMBuildICmp(b, LLVMIntULT, hc_kb_iadd(&kb, c, hc_kb_i64(&kb, 1)), hc_kb_i64(&kb, s->C), ""));
  LLVMValueRef nrow = hc_kb_iadd(&kb, vrow, hc_kb_i64(&kb, g->Tb));
  for (int xi = 0; xi < a * a; ++xi)
    hc_kb_prefetch_write_span(&kb, HX_DTYPE_FLOAT32, V, hc_kb_iadd(&kb, nrow, hc_kb_i64(&kb, (int64_t)xi * g->vxs)), e->tn,
                              2);
  hc_if_end(&kb, &next);
  hc_loop chunk;
  LLVMValueRef end = hc_kb_iadd(&kb, bt0, hc_kb_i64(&kb, e->tn));
  LLVMValueRef t0 = hc_loop_begin(&kb, &chunk, bt0, end, "chunk");
  /* Tiles [t0, t0 + n): up to VL, within t0's tile row and the block. */
  LLVMValueRef row_end = hc_kb_imul(&kb, hc_kb_iadd(&kb, LLVMBuildUDiv(b, t0, hc_kb_i64(&kb, g->tw), ""), hc_kb_i64(&kb, 1)),
                                    hc_kb_i64(&kb, g->tw));
  LLVMValueRef n = hc_kb_imin(&kb, hc_kb_imin(&kb, hc_kb_i64(&kb, vl), LLVMBuildSub(b, row_end, t0, "")),
                              LLVMBuildSub(b, end, t0, ""));
  hc_loop_step_by(&chunk, n);
  LLVMValueRef xbase = hc_kb_iadd(&kb, tab_at(&kb, e, TAB_XBASE, t0), cplane);
  LLVMValueRef y0 = tab_at(&kb, e, TAB_Y0, t0), x0 = tab_at(&kb, e, TAB_X0, t0);
  /* The rows the next tile row's patches add below this chunk's (past the
   * plane's last: the next channel's first), one prefetch per line. */
  for (int r = a; r < a + step; ++r)
    for (int64_t o = 0; o < (int64_t)npiece * vl; o += 64 / (half ? 2 : 4))
      hc_kb_prefetch(&kb, hc_kb_gep(&kb, s->dt, X, hc_kb_iadd(&kb, xbase, hc_kb_i64(&kb, (int64_t)r * s->W + o))), 3);
  /* Columns x0 + p*VL + l inside [0, W), for every patch row. */
  LLVMValueRef colm[8];
  LLVMValueRef x0v = hc_kb_splat(&kb, LLVMBuildTrunc(b, x0, i32, ""), vl);
  for (int p = 0; p < npiece; ++p) {
    LLVMValueRef col = LLVMBuildAdd(b, LLVMBuildAdd(b, x0v, lanes, ""), splat_i32(&kb, (int64_t)p * vl, vl), "");
    colm[p] = LLVMBuildICmp(b, LLVMIntULT, col, splat_i32(&kb, s->W, vl), "");
  }
  LLVMValueRef interior = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSGE, x0, hc_kb_i64(&kb, 0), ""),
                                       LLVMBuildICmp(b, LLVMIntSLE, hc_kb_iadd(&kb, x0, hc_kb_i64(&kb, (int64_t)npiece * vl)),
                                                     hc_kb_i64(&kb, s->W), ""), "");
  /* Row transform of each patch row as it is read: u[r][j] = sum_s d[r][s] BT[j][s]. */
  LLVMValueRef u[WINO_MAX_A][WINO_MAX_A];
  for (int r = 0; r < a; ++r) {
    LLVMValueRef yr = hc_kb_iadd(&kb, y0, hc_kb_i64(&kb, r));
    LLVMValueRef inside = LLVMBuildICmp(b, LLVMIntULT, yr, hc_kb_i64(&kb, s->H), "");
    LLVMValueRef at = hc_kb_iadd(&kb, xbase, hc_kb_i64(&kb, (int64_t)r * s->W));
    /* Three ways to a patch row, by branches that rarely change: zeros
     * (a row of padding), plain loads (every column inside x), masked
     * loads (the border chunks). */
    LLVMBasicBlockRef bb[4];
    const char* names[4] = {"in_plain", "in_masked", "in_zero", "in_row"};
    for (int k = 0; k < 4; ++k) bb[k] = LLVMAppendBasicBlockInContext(kb.lc->llctx, kb.fn, names[k]);
    LLVMBasicBlockRef bb_test = LLVMAppendBasicBlockInContext(kb.lc->llctx, kb.fn, "in_cols");
    LLVMBuildCondBr(b, inside, bb_test, bb[2]);
    LLVMPositionBuilderAtEnd(b, bb_test);
    LLVMBuildCondBr(b, interior, bb[0], bb[1]);
    LLVMValueRef got[3][8];
    for (int way = 0; way < 3; ++way) {
      LLVMPositionBuilderAtEnd(b, bb[way]);
      for (int p = 0; p < npiece; ++p) {
        LLVMValueRef ptr = hc_kb_gep(&kb, s->dt, X, hc_kb_iadd(&kb, at, hc_kb_i64(&kb, (int64_t)p * vl)));
        LLVMValueRef v;
        if (way == 0) {
          v = LLVMBuildLoad2(b, lvt, ptr, "");
          LLVMSetAlignment(v, half ? 2 : 4);
        } else if (way == 1) {
          v = hc_kb_masked_load(&kb, lvt, ptr, half ? 2 : 4, colm[p]);
        } else {
          v = LLVMConstNull(lvt);
        }
        got[way][p] = half ? LLVMBuildFPExt(b, v, vt, "") : v;
      }
      LLVMBuildBr(b, bb[3]);
    }
    LLVMPositionBuilderAtEnd(b, bb[3]);
    LLVMValueRef piece[8];
    for (int p = 0; p < npiece; ++p) {
      piece[p] = LLVMBuildPhi(b, vt, "");
      LLVMValueRef vals[3] = {got[0][p], got[1][p], got[2][p]};
      LLVMAddIncoming(piece[p], vals, bb, 3);
    }
    LLVMValueRef d[WINO_MAX_A];
    deinterleave(&kb, piece, npiece, step, a, vl, d);
    for (int j = 0; j < a; ++j) u[r][j] = lin(&kb, t->BT[j], d, a);
  }
  /* Whole-vector stores unless one would pass the end of the channel's row
   * of V (Tb tiles): the block's last chunks. */
  LLVMValueRef tl = LLVMBuildSub(b, t0, bt0, "");
  LLVMValueRef whole = LLVMBuildICmp(b, LLVMIntSLE, hc_kb_iadd(&kb, tl, hc_kb_i64(&kb, vl)), hc_kb_i64(&kb, g->Tb), "");
  LLVMValueRef keep = LLVMBuildICmp(b, LLVMIntULT, lanes, hc_kb_splat(&kb, LLVMBuildTrunc(b, n, i32, ""), vl), "");
  LLVMValueRef vout[WINO_MAX_A * WINO_MAX_A];
  for (int i = 0; i < a; ++i)
    for (int j = 0; j < a; ++j) {
      LLVMValueRef col[WINO_MAX_A];
      for (int r = 0; r < a; ++r) col[r] = u[r][j];
      vout[i * a + j] = lin(&kb, t->BT[i], col, a);
    }
  LLVMBasicBlockRef bb_whole = LLVMAppendBasicBlockInContext(kb.lc->llctx, kb.fn, "in_whole");
  LLVMBasicBlockRef bb_masked = LLVMAppendBasicBlockInContext(kb.lc->llctx, kb.fn, "in_masked");
  LLVMBasicBlockRef bb_join = LLVMAppendBasicBlockInContext(kb.lc->llctx, kb.fn, "in_join");
  LLVMBuildCondBr(b, whole, bb_whole, bb_masked);
  for (int pass = 0; pass < 2; ++pass) {
    LLVMPositionBuilderAtEnd(b, pass == 0 ? bb_whole : bb_masked);
    for (int xi = 0; xi < a * a; ++xi) {
      LLVMValueRef idx = hc_kb_iadd(&kb, hc_kb_iadd(&kb, hc_kb_i64(&kb, (int64_t)xi * g->vxs), vrow), tl);
      if (pass == 0)
        hc_ukr_store(&kb, HX_DTYPE_FLOAT32, V, idx, vout[xi], vl, vl);
      else
        hc_kb_masked_store(&kb, vout[xi], hc_kb_gep(&kb, HX_DTYPE_FLOAT32, V, idx), 4, keep);
    }
    LLVMBuildBr(b, bb_join);
  }
  LLVMPositionBuilderAtEnd(b, bb_join);
  hc_loop_end(&kb, &chunk);
  hc_loop_end(&kb, &task);
  hc_kb_end(&kb, (double)(s->C * e->tnp) * 4.0 * a * a * 2.0,
            (double)hc_value_nbytes(e->n->inputs[0]) * (double)e->tn / (double)g->T +
                (double)(g->nxi * s->C * e->tnp) * 4.0);
  return HX_OK;
}

/* Register tile of the products: nv vectors of output channels x mr tiles. */
typedef struct mm_plan {
  int nv, mr, nv_last; /* nv_last: vectors of the last channel block */
  int64_t ncb;         /* channel blocks */
  int64_t nfull, rem;  /* whole mr-tile blocks, tiles left */
  int64_t kchunk, ntc; /* tile blocks per task, tile chunks */
  int64_t kc, nkb;     /* input channels per reduction block, blocks */
} mm_plan;

static void plan_products(const wino_emit* e, mm_plan* q) {
  int regs = hc_ukr_registers(e->lc);
  unsigned vl = e->vl;
  int64_t nvec = e->g.Mp / vl; /* channel vectors */
  if (regs >= 32) {
    q->nv = nvec >= 4 ? 4 : (int)nvec;
    q->mr = q->nv == 4 ? 6 : q->nv == 3 ? 8 : q->nv == 2 ? 12 : 24;
  } else {
    q->nv = nvec >= 2 ? 2 : 1;
    q->mr = q->nv == 2 ? 6 : 12;
  }
  q->ncb = (nvec + q->nv - 1) / q->nv;
  q->nv_last = (int)(nvec - (q->ncb - 1) * q->nv);
  q->nfull = e->tn / q->mr;
  q->rem = e->tn % q->mr;
  /* About 48 tiles per task. */
  q->kchunk = (48 + q->mr - 1) / q->mr;
  q->ntc = q->nfull > 0 ? (q->nfull + q->kchunk - 1) / q->kchunk : 1;
  /* Every tile block of a task reads the same kc x (nv x vl) block of U:
   * kept within WINO_MM_L1_BYTES it stays in L1 across them, else each
   * block streams it from L2 again (ResNet-50's 14x14 layers, C = 256 with
   * 64-channel tiles: 64 KB, 0.65x the speed of the 128-channel layers).
   * And the tile blocks share V's lines: each step broadcasts from one
   * line of V[xi][c] (16 tiles), which about three 6-tile blocks read in
   * turn. Blocks of at most WINO_MM_SLICE_STEPS input channels keep those
   * lines in L1 from one tile block to the next (4 KB of U and 4 KB of V on
   * AVX2), for a load and a store of the partial sums per tile and block.
   * ResNet-50's 14x14 and 7x7 products (256 and 512 channels, in blocks
   * of 256 before) ran in 0.95 and 0.93 of the time, its 28x28 ones (128)
   * in 0.98; blocks of 32 were 3-5% slower again (bench/compare/
   * ab_profile.py on one-Conv models, docs/performance.md, stop 26). */
  int64_t kmax = WINO_MM_L1_BYTES / ((int64_t)q->nv * vl * 4);
  if (kmax > WINO_MM_SLICE_STEPS) kmax = WINO_MM_SLICE_STEPS;
  if (kmax < 16) kmax = 16;
  q->nkb = (e->s->C + kmax - 1) / kmax;
  q->kc = (e->s->C + q->nkb - 1) / q->nkb;
}

/* Where the products read U[xi] for one channel block and reduction block:
 * the element of input channel k0 + k and vector v (of the block's nv) at
 * ptr[base + k * outer + vec[v]]. */
typedef struct u_view {
  LLVMValueRef ptr, base;
  int64_t outer;
  int64_t vec[HC_UKR_MAX_NV];
} u_view;

/* U[xi] packed at compile time (HC_PACK_WINOGRAD, or the workspace copy
 * the "w" kernel writes): channel block m0, from input channel k0. */
static u_view u_packed(hc_kb* kb, const wino_emit* e, LLVMValueRef U, LLVMValueRef xi, LLVMValueRef m0,
                       LLVMValueRef k0, int nv) {
  const hc_wino_shape* s = e->s;
  u_view u;
  memset(&u, 0, sizeof u);
  u.ptr = U;
  /* m0 is a multiple of nv * vl: of 16 unless a single 8-lane vector. */
  LLVMValueRef panel = LLVMBuildUDiv(kb->b, m0, hc_kb_i64(kb, WINO_PW), "");
  u.base = hc_kb_iadd(kb, hc_kb_imul(kb, hc_kb_iadd(kb, hc_kb_imul(kb, xi, hc_kb_i64(kb, e->g.Mp / WINO_PW)), panel),
                                     hc_kb_i64(kb, s->C * WINO_PW)),
                      hc_kb_iadd(kb, LLVMBuildURem(kb->b, m0, hc_kb_i64(kb, WINO_PW), ""),
                                 hc_kb_imul(kb, k0, hc_kb_i64(kb, WINO_PW))));
  u.outer = WINO_PW;
  for (int v = 0; v < nv; ++v) {
    int64_t col = (int64_t)v * e->vl;
    u.vec[v] = col / WINO_PW * s->C * WINO_PW + col % WINO_PW;
  }
  return u;
}

/* One micro-kernel call: tiles [t0, t0+mr) (broadcast from V[xi][c][t])
 * times nv vectors of output channels from m0 (U as *uv says), over input
 * channels [k0, k0 + kc), stored to Mx[xi][t][oc] (added to what is there
 * where the i1 `accumulate` is true; NULL = never). pf: U element whose line
 * to prefetch at step 0 (NULL = none). */
static void mm_tile(hc_kb* kb, const wino_emit* e, const u_view* uv, LLVMValueRef V, LLVMValueRef Mx, LLVMValueRef xi,
                    LLVMValueRef m0, LLVMValueRef t0, int mr, int nv, LLVMValueRef k0, LLVMValueRef kc,
                    LLVMValueRef accumulate, LLVMValueRef pf) {
  int64_t Tb = e->g.Tb, Mp = e->g.Mp;
  unsigned vl = e->vl;
  hc_ukr u;
  memset(&u, 0, sizeof u);
  u.dt = HX_DTYPE_FLOAT32;
  u.mr = mr;
  u.nv = nv;
  u.vl = vl;
  u.last_lanes = vl; /* U's panels are zero past M */
  u.a = V;
  u.b = uv->ptr;
  u.a_base = hc_kb_iadd(kb, hc_kb_iadd(kb, hc_kb_imul(kb, xi, hc_kb_i64(kb, e->g.vxs)), t0),
                        hc_kb_imul(kb, k0, hc_kb_i64(kb, Tb)));
  u.a_outer = Tb;
  for (int i = 0; i < mr; ++i) u.a_row[i] = i;
  u.b_base = uv->base;
  u.b_outer = uv->outer;
  for (int v = 0; v < nv; ++v) u.b_vec[v] = uv->vec[v];
  u.outer = kc;
  u.nterms = 1;
  if (pf) {
    u.pf_base = pf;
    u.pf_locality = 2;
  }
  LLVMValueRef acc[HC_UKR_MAX_MR * HC_UKR_MAX_NV] = {0};
  LLVMValueRef row0 = hc_kb_iadd(kb, hc_kb_imul(kb, xi, hc_kb_i64(kb, e->g.mxs)),
                                 hc_kb_iadd(kb, hc_kb_imul(kb, t0, hc_kb_i64(kb, Mp)), m0));
  /* One copy of the loop for every reduction block: the first block's
   * loads are of workspace it does not use (the select drops them), which
   * costs less than a second copy of the code. */
  if (accumulate)
    for (int i = 0; i < mr; ++i)
      for (int v = 0; v < nv; ++v) {
        LLVMValueRef old = hc_ukr_load(kb, HX_DTYPE_FLOAT32, Mx,
                                       hc_kb_iadd(kb, row0, hc_kb_i64(kb, (int64_t)i * Mp + (int64_t)v * vl)), vl, vl);
        acc[i * nv + v] = LLVMBuildSelect(kb->b, accumulate, old, LLVMConstNull(LLVMTypeOf(old)), "");
      }
  hc_ukr_emit(kb, &u, acc);
  for (int i = 0; i < mr; ++i)
    for (int v = 0; v < nv; ++v) {
      LLVMValueRef idx = hc_kb_iadd(kb, row0, hc_kb_i64(kb, (int64_t)i * Mp + (int64_t)v * vl));
      hc_ukr_store(kb, HX_DTYPE_FLOAT32, Mx, idx, acc[i * nv + v], vl, vl);
    }
}

/* Task tk of a kernel whose tasks are `units` units times `per` others,
 * ordered as two halves of the units (the first h of them, then the rest),
 * each half over all others. unit_fastest: within a half, consecutive
 * tasks take consecutive units (else consecutive others). The runtime hands
 * each of two threads a contiguous half of the tasks, so at two threads a
 * thread keeps to one half of the units. Sets *unit and *other. */
static void split_halves(hc_kb* kb, LLVMValueRef tk, int64_t units, int64_t h, int64_t per, bool unit_fastest,
                         LLVMValueRef* unit, LLVMValueRef* other) {
  LLVMBuilderRef b = kb->b;
  int64_t first = h * per;
  LLVMValueRef second = LLVMBuildICmp(b, LLVMIntUGE, tk, hc_kb_i64(kb, first), "");
  LLVMValueRef r = LLVMBuildSelect(b, second, LLVMBuildSub(b, tk, hc_kb_i64(kb, first), ""), tk, "");
  LLVMValueRef base = LLVMBuildSelect(b, second, hc_kb_i64(kb, h), hc_kb_i64(kb, 0), "");
  if (unit_fastest) {
    LLVMValueRef cnt = LLVMBuildSelect(b, second, hc_kb_i64(kb, units - h > 0 ? units - h : 1), hc_kb_i64(kb, h), "");
    *unit = hc_kb_iadd(kb, base, LLVMBuildURem(b, r, cnt, ""));
    *other = LLVMBuildUDiv(b, r, cnt, "");
  } else {
    *unit = hc_kb_iadd(kb, base, LLVMBuildUDiv(b, r, hc_kb_i64(kb, per), ""));
    *other = LLVMBuildURem(b, r, hc_kb_i64(kb, per), "");
  }
}

/* The tiles of chunk tc for one channel block of nv vectors over input
 * channels [k0, k0 + kc): its whole mr-tile blocks, and the last chunk also
 * the tiles left over. uxi: xi's row of U (wino_mat.nud). */
static void mm_kblock(hc_kb* kb, const wino_emit* e, const mm_plan* q, const u_view* uv, LLVMValueRef V,
                      LLVMValueRef Mx, LLVMValueRef xi, LLVMValueRef uxi, LLVMValueRef m0, LLVMValueRef tc, int nv,
                      LLVMValueRef k0, LLVMValueRef kc, LLVMValueRef accumulate) {
  LLVMBuilderRef b = kb->b;
  LLVMValueRef blk0 = hc_kb_imul(kb, tc, hc_kb_i64(kb, q->kchunk));
  LLVMValueRef blk1 = hc_kb_imin(kb, hc_kb_iadd(kb, blk0, hc_kb_i64(kb, q->kchunk)), hc_kb_i64(kb, q->nfull));
  hc_loop tl;
  LLVMValueRef tb = hc_loop_begin(kb, &tl, blk0, blk1, "tb");
  /* U streams from beyond L2 once per run (ResNet-50's 14x14 layers: 4 MB
   * of it, 49 tiles), and a task's panels follow the previous task's in
   * memory: tile block j prefetches rows [k0, k0 + kc) of panel j mod np of
   * the next task into L2, one line per reduction step, so that the next
   * task's first pass does not wait on the stream. (Narrowed weights: U
   * is the task's own panel on the stack, built from g in L1.) */
  LLVMValueRef pf = NULL;
  if (e->wt == HX_DTYPE_UNDEFINED) {
    int64_t np = ((int64_t)q->nv * e->vl + WINO_PW - 1) / WINO_PW;
    LLVMValueRef p0 = hc_kb_iadd(kb, hc_kb_imul(kb, uxi, hc_kb_i64(kb, e->g.Mp / WINO_PW)),
                                 LLVMBuildUDiv(b, m0, hc_kb_i64(kb, WINO_PW), ""));
    LLVMValueRef pj = LLVMBuildURem(b, LLVMBuildSub(b, tb, blk0, ""), hc_kb_i64(kb, np), "");
    pf = hc_kb_iadd(kb,
                    hc_kb_imul(kb, hc_kb_iadd(kb, p0, hc_kb_iadd(kb, pj, hc_kb_i64(kb, np))),
                               hc_kb_i64(kb, e->s->C * WINO_PW)),
                    hc_kb_imul(kb, k0, hc_kb_i64(kb, WINO_PW)));
  }
  mm_tile(kb, e, uv, V, Mx, xi, m0, hc_kb_imul(kb, tb, hc_kb_i64(kb, q->mr)), q->mr, nv, k0, kc, accumulate, pf);
  hc_loop_end(kb, &tl);
  if (q->rem > 0) {
    hc_if last;
    hc_if_begin(kb, &last, LLVMBuildICmp(b, LLVMIntEQ, tc, hc_kb_i64(kb, q->ntc - 1), ""));
    mm_tile(kb, e, uv, V, Mx, xi, m0, hc_kb_i64(kb, q->nfull * q->mr), (int)q->rem, nv, k0, kc, accumulate, NULL);
    hc_if_end(kb, &last);
  }
}

/* The terms of U[xi] = (G g G^T)[xi] = sum over taps of (G (x) G)[xi][tap]
 * g[tap], the zero ones left out (F(2,3): 4 of 9 on average, F(4,3) 5.4):
 * per xi its count, then up to 9 (tap offset in g's panel, coefficient)
 * pairs, as three constant tables, made once per tile size in a module and
 * shared by every products kernel of that size. */
typedef struct u_terms {
  LLVMValueRef count, tap, coef;
} u_terms;

static u_terms u_terms_tables(hc_lower_ctx* lc, const wino_mat* t) {
  char names[3][32];
  snprintf(names[0], sizeof names[0], "wino%d%s_u_terms", t->m, t->stride == 2 ? "s2" : "");
  snprintf(names[1], sizeof names[1], "wino%d%s_u_taps", t->m, t->stride == 2 ? "s2" : "");
  snprintf(names[2], sizeof names[2], "wino%d%s_u_coefs", t->m, t->stride == 2 ? "s2" : "");
  u_terms u = {LLVMGetNamedGlobal(lc->mod, names[0]), LLVMGetNamedGlobal(lc->mod, names[1]),
               LLVMGetNamedGlobal(lc->mod, names[2])};
  if (u.count && u.tap && u.coef) return u;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(lc->llctx), f32 = LLVMFloatTypeInContext(lc->llctx);
  int a = t->a, nxi = a * a;
  LLVMValueRef count[WINO_MAX_A * WINO_MAX_A], tap[WINO_MAX_A * WINO_MAX_A * 9], coef[WINO_MAX_A * WINO_MAX_A * 9];
  for (int x = 0; x < nxi; ++x) {
    int n = 0;
    for (int r = 0; r < 3; ++r)
      for (int k = 0; k < 3; ++k) {
        double c = t->G[x / a][r] * t->G[x % a][k];
        if (c == 0) continue;
        tap[x * 9 + n] = LLVMConstInt(i32, (unsigned long long)((r * 3 + k) * WINO_PW), 0);
        coef[x * 9 + n] = LLVMConstReal(f32, c);
        ++n;
      }
    count[x] = LLVMConstInt(i32, (unsigned long long)n, 0);
    for (int k = n; k < 9; ++k) {
      tap[x * 9 + k] = LLVMConstInt(i32, 0, 0);
      coef[x * 9 + k] = LLVMConstReal(f32, 0);
    }
  }
  u.count = hc_kb_const_table(lc, LLVMConstArray2(i32, count, (uint64_t)nxi), names[0], 4);
  u.tap = hc_kb_const_table(lc, LLVMConstArray2(i32, tap, (uint64_t)nxi * 9), names[1], 4);
  u.coef = hc_kb_const_table(lc, LLVMConstArray2(f32, coef, (uint64_t)nxi * 9), names[2], 4);
  return u;
}

/* Narrowed weights: U[xi] of the nv vectors of output channels from m0 for
 * input channels [k0, k0 + kc), built from g (HC_PACK_WINOGRAD_G at Wg)
 * into the stack panel S[v][k - k0][vl] (rows of kcs elements per vector)
 * and returned as a u_view: U[xi]'s terms (u_terms) summed in float32,
 * times the channel's scale (INT8: sc). So no float copy of the weights
 * exists beyond the task's panel, which the products then read from L1 for
 * all the task's tiles. The terms come from tables rather than from one
 * copy of the loop per xi with constant coefficients: as fast on ResNet-50,
 * and 36 copies made each F(4,3) products kernel 20 KB. */
static u_view build_u(hc_kb* kb, const wino_emit* e, const u_terms* terms, LLVMValueRef Wg, LLVMValueRef S,
                      int64_t kcs, LLVMValueRef xi, LLVMValueRef m0, LLVMValueRef k0, LLVMValueRef kc, int nv,
                      const hc_ukr_scales* sc) {
  LLVMBuilderRef b = kb->b;
  const int64_t C = e->s->C;
  const unsigned vl = e->vl;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(kb->lc->llctx);
  LLVMTypeRef vt = LLVMVectorType(kb->t_f32, vl);
  /* g's index of tap 0 of input channel k0 for each vector, and INT8's
   * scales of its channels (padded with zeros to whole panels). */
  LLVMValueRef gbase[HC_UKR_MAX_NV], scale[HC_UKR_MAX_NV] = {0}, acc[HC_UKR_MAX_NV];
  for (int v = 0; v < nv; ++v) {
    LLVMValueRef oc = hc_kb_iadd(kb, m0, hc_kb_i64(kb, (int64_t)v * vl));
    if (sc && sc->ptr) scale[v] = hc_ukr_load_scales(kb, sc, oc, vl, vl);
    LLVMValueRef pan = LLVMBuildUDiv(b, oc, hc_kb_i64(kb, WINO_PW), "");
    gbase[v] = hc_kb_iadd(kb,
                          hc_kb_imul(kb, hc_kb_iadd(kb, hc_kb_imul(kb, pan, hc_kb_i64(kb, C)), k0),
                                     hc_kb_i64(kb, 9 * WINO_PW)),
                          LLVMBuildURem(b, oc, hc_kb_i64(kb, WINO_PW), ""));
    acc[v] = hc_kb_alloca(kb, vt, "u_acc");
  }
  LLVMValueRef n = LLVMBuildZExt(b, LLVMBuildLoad2(b, i32, LLVMBuildGEP2(b, i32, terms->count, &xi, 1, ""), ""),
                                 kb->t_i64, "");
  LLVMValueRef first = hc_kb_imul(kb, xi, hc_kb_i64(kb, 9));
  hc_loop kl;
  LLVMValueRef kk = hc_loop_begin(kb, &kl, hc_kb_i64(kb, 0), kc, "uk");
  LLVMValueRef koff = hc_kb_imul(kb, kk, hc_kb_i64(kb, 9 * WINO_PW));
  for (int v = 0; v < nv; ++v) LLVMBuildStore(b, LLVMConstNull(vt), acc[v]);
  hc_loop tl;
  LLVMValueRef j = hc_kb_iadd(kb, first, hc_loop_begin(kb, &tl, hc_kb_i64(kb, 0), n, "term"));
  LLVMValueRef tap =
      LLVMBuildZExt(b, LLVMBuildLoad2(b, i32, LLVMBuildGEP2(b, i32, terms->tap, &j, 1, ""), ""), kb->t_i64, "");
  LLVMValueRef c = hc_kb_splat(kb, LLVMBuildLoad2(b, kb->t_f32, LLVMBuildGEP2(b, kb->t_f32, terms->coef, &j, 1, ""), ""),
                               vl);
  for (int v = 0; v < nv; ++v) {
    LLVMValueRef w = hc_ukr_load_st(kb, e->wt, Wg, hc_kb_iadd(kb, hc_kb_iadd(kb, gbase[v], koff), tap), vl, vl);
    LLVMValueRef sum = LLVMBuildLoad2(b, vt, acc[v], "");
    LLVMBuildStore(b, hc_kb_intrinsic(kb, "llvm.fmuladd", vt, (LLVMValueRef[]){w, c, sum}, 3), acc[v]);
  }
  hc_loop_end(kb, &tl);
  for (int v = 0; v < nv; ++v) {
    LLVMValueRef u = LLVMBuildLoad2(b, vt, acc[v], "");
    if (scale[v]) u = LLVMBuildFMul(b, u, scale[v], "");
    LLVMValueRef si = hc_kb_iadd(kb, hc_kb_imul(kb, kk, hc_kb_i64(kb, vl)), hc_kb_i64(kb, (int64_t)v * kcs * vl));
    hc_ukr_store(kb, HX_DTYPE_FLOAT32, S, si, u, vl, vl);
  }
  hc_loop_end(kb, &kl);
  u_view u;
  memset(&u, 0, sizeof u);
  u.ptr = S;
  u.base = hc_kb_i64(kb, 0);
  u.outer = vl;
  for (int v = 0; v < nv; ++v) u.vec[v] = (int64_t)v * kcs * vl;
  return u;
}

/* U for the products: what the weights hold (narrowed: S is the task's
 * panel, scale the INT8 scales or NULL). */
typedef struct u_source {
  LLVMValueRef U, S;
  int64_t kcs;
  const hc_ukr_scales* scales;
  u_terms terms;
} u_source;

static u_view u_block(hc_kb* kb, const wino_emit* e, const u_source* src, LLVMValueRef xi, LLVMValueRef uxi,
                      LLVMValueRef m0, LLVMValueRef k0, LLVMValueRef kc, int nv) {
  if (e->wt == HX_DTYPE_UNDEFINED) return u_packed(kb, e, src->U, uxi, m0, k0, nv);
  return build_u(kb, e, &src->terms, src->U, src->S, src->kcs, xi, m0, k0, kc, nv, src->scales);
}

/* Chunk tc for one channel block: the first reduction block writes Mx, the
 * others add to it. */
static void mm_chunk(hc_kb* kb, const wino_emit* e, const mm_plan* q, const u_source* src, LLVMValueRef V,
                     LLVMValueRef Mx, LLVMValueRef xi, LLVMValueRef uxi, LLVMValueRef m0, LLVMValueRef tc, int nv) {
  int64_t C = e->s->C;
  if (q->nkb < 2) {
    LLVMValueRef k0 = hc_kb_i64(kb, 0), kc = hc_kb_i64(kb, C);
    u_view uv = u_block(kb, e, src, xi, uxi, m0, k0, kc, nv);
    mm_kblock(kb, e, q, &uv, V, Mx, xi, uxi, m0, tc, nv, k0, kc, NULL);
    return;
  }
  hc_loop kl;
  LLVMValueRef kbi = hc_loop_begin(kb, &kl, hc_kb_i64(kb, 0), hc_kb_i64(kb, q->nkb), "kb");
  LLVMValueRef k0 = hc_kb_imul(kb, kbi, hc_kb_i64(kb, q->kc));
  LLVMValueRef kc = hc_kb_imin(kb, hc_kb_i64(kb, q->kc), LLVMBuildSub(kb->b, hc_kb_i64(kb, C), k0, ""));
  u_view uv = u_block(kb, e, src, xi, uxi, m0, k0, kc, nv);
  mm_kblock(kb, e, q, &uv, V, Mx, xi, uxi, m0, tc, nv, k0, kc,
            LLVMBuildICmp(kb->b, LLVMIntNE, kbi, hc_kb_i64(kb, 0), ""));
  hc_loop_end(kb, &kl);
}

/* "wino_mm": Mx[xi] = U[xi] x V[xi], output channels as vectors and tiles
 * broadcast (no work on padding tiles), one task per (xi, channel block,
 * chunk of tiles). */
static hx_status_t emit_products(wino_emit* e) {
  const hc_wino_shape* s = e->s;
  const wino_geo* g = &e->g;
  mm_plan q;
  plan_products(e, &q);
  hc_kb kb;
  char name[24];
  HX_RETURN_IF_ERROR(hc_kb_begin(e->lc, e->n, stage_name(&e->t, "mm", name), g->nxi * q.ncb * q.ntc, &kb));
  hc_ukr_prefer_full_width(&kb);
  LLVMBuilderRef b = kb.b;
  LLVMValueRef U = e->packed ? hc_kb_ptr(&kb, e->n->inputs[1]) : ws_at(&kb, g->u_off);
  u_source src = {U, NULL, q.kc, NULL, {0}};
  hc_ukr_scales sc = {0};
  if (e->wt != HX_DTYPE_UNDEFINED) {
    src.terms = u_terms_tables(e->lc, &e->t);
    src.S = hc_kb_alloca(&kb, LLVMArrayType2(kb.t_f32, (uint64_t)(q.nv * q.kc) * e->vl), "u_panel");
    if (e->wt == HX_DTYPE_INT8) {
      sc = hc_ukr_scales_at(&kb, &e->wsc, U);
      src.scales = &sc;
    }
  }
  LLVMValueRef V = ws_block(&kb, e, g->v_off, &e->lane_slot[1]);
  LLVMValueRef Mx = LLVMBuildGEP2(b, kb.t_i8, V, (LLVMValueRef[]){hc_kb_i64(&kb, (int64_t)(g->x_off - g->v_off))}, 1, "");
  hc_loop task;
  LLVMValueRef tk = hc_kb_task_loop_begin(&kb, &task);
  /* Tasks in two halves of the tile chunks (where there are two), each over
   * every xi and channel block, the channel block fastest (U's panels in
   * memory order). Where there is one chunk, two threads split xi: the
   * output transform then reads half of a tile's products from the other
   * core, which costs less than either thread streaming all of U (split by
   * tiles) or reading all of V (split by channels; ResNet-50's 14x14 and
   * 28x28 products 1.4x slower at two threads). */
  LLVMValueRef tc, rest;
  split_halves(&kb, tk, q.ntc, (q.ntc + 1) / 2, g->nxi * q.ncb, true, &tc, &rest);
  LLVMValueRef cb = LLVMBuildURem(b, rest, hc_kb_i64(&kb, q.ncb), "");
  LLVMValueRef xi = LLVMBuildUDiv(b, rest, hc_kb_i64(&kb, q.ncb), "");
  LLVMValueRef m0 = hc_kb_imul(&kb, cb, hc_kb_i64(&kb, (int64_t)q.nv * e->vl));
  /* U's row of xi = (i, j): (min(i, nud-1), min(j, nud-1)). */
  LLVMValueRef uxi = xi;
  if (e->t.nud < e->t.a) {
    LLVMValueRef last = hc_kb_i64(&kb, e->t.nud - 1), a = hc_kb_i64(&kb, e->t.a);
    LLVMValueRef ui = hc_kb_imin(&kb, LLVMBuildUDiv(b, xi, a, ""), last);
    LLVMValueRef uj = hc_kb_imin(&kb, LLVMBuildURem(b, xi, a, ""), last);
    uxi = hc_kb_iadd(&kb, hc_kb_imul(&kb, ui, hc_kb_i64(&kb, e->t.nud)), uj);
  }
  if (q.nv_last == q.nv) {
    mm_chunk(&kb, e, &q, &src, V, Mx, xi, uxi, m0, tc, q.nv);
  } else {
    LLVMBasicBlockRef full = LLVMAppendBasicBlockInContext(kb.lc->llctx, kb.fn, "full_cols");
    LLVMBasicBlockRef last = LLVMAppendBasicBlockInContext(kb.lc->llctx, kb.fn, "last_cols");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(kb.lc->llctx, kb.fn, "cols_done");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, cb, hc_kb_i64(&kb, q.ncb - 1), ""), last, full);
    LLVMPositionBuilderAtEnd(b, full);
    mm_chunk(&kb, e, &q, &src, V, Mx, xi, uxi, m0, tc, q.nv);
    LLVMBuildBr(b, join);
    LLVMPositionBuilderAtEnd(b, last);
    mm_chunk(&kb, e, &q, &src, V, Mx, xi, uxi, m0, tc, q.nv_last);
    LLVMBuildBr(b, join);
    LLVMPositionBuilderAtEnd(b, join);
  }
  hc_loop_end(&kb, &task);
  hc_kb_end(&kb, 2.0 * (double)(g->nxi * g->Mp * s->C * e->tn),
            (double)(g->nu * g->Mp * s->C + g->nxi * (s->C * e->tn + g->Mp * e->tn)) * 4.0);
  return HX_OK;
}

/* "wino_out": Y = A^T Mx A for one tile and VL output channels, then per
 * channel the bias, the fused epilogue and the store of the tile's rows,
 * clipped at the right and bottom borders. */
static hx_status_t emit_output(wino_emit* e) {
  const hc_wino_shape* s = e->s;
  const wino_mat* t = &e->t;
  const wino_geo* g = &e->g;
  int a = t->a, m = t->m;
  unsigned vl = e->vl;
  int64_t ncv = (s->M + vl - 1) / vl;
  hc_kb kb;
  char name[24];
  HX_RETURN_IF_ERROR(hc_kb_begin(e->lc, e->n, stage_name(&e->t, "out", name), e->tn * ncv, &kb));
  hc_ukr_prefer_full_width(&kb);
  LLVMBuilderRef b = kb.b;
  const hc_node* n = e->n;
  LLVMValueRef Mx = ws_block(&kb, e, g->x_off, &e->lane_slot[2]);
  LLVMValueRef Y = hc_kb_ptr(&kb, n->outputs[0]);
  LLVMValueRef B = hc_input(n, 2) ? hc_kb_ptr(&kb, hc_input(n, 2)) : NULL;
  hc_epilogue epi;
  const int split[2] = {1, 2};
  HX_RETURN_IF_ERROR(hc_epilogue_begin(&kb, n, split, &epi));
  LLVMTypeRef buft = LLVMArrayType2(kb.t_f32, (uint64_t)(m * m) * vl);
  LLVMValueRef buf = hc_kb_alloca(&kb, buft, "ytile");
  hc_loop task;
  LLVMValueRef tk = hc_kb_task_loop_begin(&kb, &task);
  /* Tasks in two halves of the channel vectors, each over all tiles with
   * the tile fastest (stores run along the output rows). At two threads a
   * thread writes whole planes of the output, as the convolutions and
   * element-wise kernels that read it split them: split by tiles, each
   * thread's stores hit lines the other core had read in the previous run,
   * and ResNet-50's output transforms ran 1.5-1.9x slower at two threads
   * than at one (0.9-1.0x split by channels). */
  LLVMValueRef tt, cv; /* tt: tile in the block */
  split_halves(&kb, tk, ncv, (ncv + 1) / 2, e->tn, false, &cv, &tt);
  LLVMValueRef m0 = hc_kb_imul(&kb, cv, hc_kb_i64(&kb, vl));
  /* A tile's alpha^2 vectors lie in alpha^2 planes of Mx, too many streams
   * for the hardware prefetchers; at two threads half of them were written
   * by the other core (the products split xi), and each such load waited
   * on a transfer: ResNet-50's output transforms ran 1.5-1.9x slower at two
   * threads than at one. Prefetch the vectors of the tile WINO_OUT_PREFETCH
   * tasks ahead (the next tasks take the next tiles). */
  for (int x = 0; x < a * a; ++x) {
    LLVMValueRef idx = hc_kb_iadd(
        &kb, hc_kb_i64(&kb, (int64_t)x * g->mxs),
        hc_kb_iadd(&kb, hc_kb_imul(&kb, hc_kb_iadd(&kb, tt, hc_kb_i64(&kb, WINO_OUT_PREFETCH)), hc_kb_i64(&kb, g->Mp)),
                   m0));
    hc_kb_prefetch(&kb, hc_kb_gep(&kb, HX_DTYPE_FLOAT32, Mx, idx), 3);
  }
  LLVMValueRef q[4][WINO_MAX_A];
  for (int j = 0; j < a; ++j) {
    LLVMValueRef col[WINO_MAX_A];
    for (int r = 0; r < a; ++r) {
      LLVMValueRef idx = hc_kb_iadd(&kb, hc_kb_i64(&kb, (int64_t)(r * a + j) * g->mxs),
                                    hc_kb_iadd(&kb, hc_kb_imul(&kb, tt, hc_kb_i64(&kb, g->Mp)), m0));
      col[r] = hc_ukr_load(&kb, HX_DTYPE_FLOAT32, Mx, idx, vl, vl);
    }
    for (int i = 0; i < m; ++i) q[i][j] = lin(&kb, t->AT[i], col, a);
  }
  /* Row i of the tile for every channel, interleaved in registers so that
   * channel l's m pixels lie together: buf[i][l][j]. */
  for (int i = 0; i < m; ++i) {
    LLVMValueRef y[4];
    for (int j = 0; j < m; ++j) y[j] = lin(&kb, t->AT[j], q[i], a);
    LLVMValueRef mask[64];
    if (m == 4) {
      for (unsigned k = 0; k < 2 * vl; ++k) mask[k] = LLVMConstInt(kb.t_i32, k, 0);
      LLVMValueRef y01 = LLVMBuildShuffleVector(b, y[0], y[1], LLVMConstVector(mask, 2 * vl), "");
      LLVMValueRef y23 = LLVMBuildShuffleVector(b, y[2], y[3], LLVMConstVector(mask, 2 * vl), "");
      y[0] = y01;
      y[1] = y23;
    }
    for (unsigned l = 0; l < vl; ++l)
      for (int j = 0; j < m; ++j) mask[l * m + j] = LLVMConstInt(kb.t_i32, (unsigned)j * vl + l, 0);
    LLVMValueRef rows = LLVMBuildShuffleVector(b, y[0], y[1], LLVMConstVector(mask, (unsigned)m * vl), "");
    hc_ukr_store(&kb, HX_DTYPE_FLOAT32, buf, hc_kb_i64(&kb, (int64_t)i * m * vl), rows, (unsigned)m * vl,
                 (unsigned)m * vl);
  }
  LLVMValueRef gt = hc_kb_iadd(&kb, tt, hc_kb_param(&kb, e->bt0)); /* as in emit_input */
  e->bt0_slot_out = kb.last_param;
  LLVMValueRef img = tab_at(&kb, e, TAB_IMG, gt), oy = tab_at(&kb, e, TAB_OY, gt), ox = tab_at(&kb, e, TAB_OX, gt);
  int64_t rw = s->OW - (g->tw - 1) * m; /* columns of the last tile of a row */
  LLVMValueRef isfull = rw == m ? NULL
                                : LLVMBuildICmp(b, LLVMIntSLE, hc_kb_iadd(&kb, ox, hc_kb_i64(&kb, m)),
                                                hc_kb_i64(&kb, s->OW), "");
  /* Channel by channel: rows of m pixels. */
  LLVMValueRef nl = hc_kb_imin(&kb, hc_kb_i64(&kb, vl), LLVMBuildSub(b, hc_kb_i64(&kb, s->M), m0, ""));
  hc_loop ll;
  LLVMValueRef l = hc_loop_begin(&kb, &ll, hc_kb_i64(&kb, 0), nl, "chan");
  LLVMValueRef oc = hc_kb_iadd(&kb, m0, l);
  LLVMValueRef plane0 = hc_kb_imul(&kb, hc_kb_iadd(&kb, hc_kb_imul(&kb, img, hc_kb_i64(&kb, s->M)), oc),
                                   hc_kb_i64(&kb, s->OH * s->OW));
  LLVMValueRef bias = B ? hc_kb_splat(&kb, hc_kb_load(&kb, s->dt, B, oc), (unsigned)m) : NULL;
  /* At a tile row's first tile, the lines of this channel's next tile row,
   * for writing: the output is cold when the transform runs (the arena
   * slot was last another tensor's, and the products just streamed U
   * through L2), and its stores of m pixels a row each waited for their
   * line. ResNet-50's output transforms in 0.83 of the time at one thread
   * and 0.91 at two (kbench, 8 rounds, against 1.005-1.008 for the other
   * convolutions). */
  hc_if first;
  hc_if_begin(&kb, &first, LLVMBuildICmp(b, LLVMIntEQ, ox, hc_kb_i64(&kb, 0), ""));
  for (int i = 0; i < m; ++i) {
    LLVMValueRef y = hc_kb_imin(&kb, hc_kb_iadd(&kb, oy, hc_kb_i64(&kb, m + i)), hc_kb_i64(&kb, s->OH - 1));
    LLVMValueRef row = hc_kb_iadd(&kb, plane0, hc_kb_imul(&kb, y, hc_kb_i64(&kb, s->OW)));
    hc_kb_prefetch_write_span(&kb, s->dt, Y, row, s->OW, 2);
  }
  hc_if_end(&kb, &first);
  for (int i = 0; i < m; ++i) {
    LLVMValueRef y = hc_kb_iadd(&kb, oy, hc_kb_i64(&kb, i));
    hc_if rowok;
    bool rcheck = s->OH % m != 0 && i >= s->OH % m;
    if (rcheck) hc_if_begin(&kb, &rowok, LLVMBuildICmp(b, LLVMIntSLT, y, hc_kb_i64(&kb, s->OH), ""));
    LLVMValueRef row = hc_ukr_load(&kb, HX_DTYPE_FLOAT32, buf,
                                   hc_kb_iadd(&kb, hc_kb_i64(&kb, (int64_t)i * m * vl), hc_kb_imul(&kb, l, hc_kb_i64(&kb, m))),
                                   (unsigned)m, (unsigned)m);
    if (bias) row = LLVMBuildFAdd(b, row, bias, "");
    LLVMValueRef pix = hc_kb_iadd(&kb, hc_kb_imul(&kb, y, hc_kb_i64(&kb, s->OW)), ox);
    LLVMValueRef yidx = hc_kb_iadd(&kb, plane0, pix);
    LLVMValueRef coord[3] = {img, oc, pix};
    if (!isfull) {
      LLVMValueRef v = hc_epilogue_apply_vec(&kb, &epi, row, coord, 2, (unsigned)m);
      hc_ukr_store_st(&kb, s->dt, Y, yidx, v, (unsigned)m, (unsigned)m);
    } else {
      LLVMBasicBlockRef full = LLVMAppendBasicBlockInContext(kb.lc->llctx, kb.fn, "full_tile");
      LLVMBasicBlockRef part = LLVMAppendBasicBlockInContext(kb.lc->llctx, kb.fn, "part_tile");
      LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(kb.lc->llctx, kb.fn, "tile_row_done");
      LLVMBuildCondBr(b, isfull, full, part);
      LLVMPositionBuilderAtEnd(b, full);
      LLVMValueRef v = hc_epilogue_apply_vec(&kb, &epi, row, coord, 2, (unsigned)m);
      hc_ukr_store_st(&kb, s->dt, Y, yidx, v, (unsigned)m, (unsigned)m);
      LLVMBuildBr(b, join);
      LLVMPositionBuilderAtEnd(b, part);
      v = hc_epilogue_apply_vec(&kb, &epi, row, coord, 2, (unsigned)rw);
      hc_ukr_store_st(&kb, s->dt, Y, yidx, v, (unsigned)m, (unsigned)rw);
      LLVMBuildBr(b, join);
      LLVMPositionBuilderAtEnd(b, join);
    }
    if (rcheck) hc_if_end(&kb, &rowok);
  }
  hc_loop_end(&kb, &ll);
  hc_loop_end(&kb, &task);
  double share = (double)e->tn / (double)g->T;
  double points = (double)(s->N * s->M * s->OH * s->OW) * share;
  hc_kb_end(&kb, (double)(g->Mp * e->tn) * (double)(a * a + m * m) * 2.0 + points * hc_epilogue_flops_per_element(n),
            (double)(g->nxi * g->Mp * e->tn) * 4.0 + points * 4.0 + hc_epilogue_bytes(n) * share);
  return HX_OK;
}

hx_status_t hc_wino_emit(hc_lower_ctx* lc, const hc_node* n, const hc_wino_shape* s, int m) {
  wino_emit e;
  memset(&e, 0, sizeof e);
  e.lc = lc;
  e.n = n;
  e.s = s;
  e.packed = weights_packed(n);
  if (hc_packed_is(n, 1, HC_PACK_WINOGRAD_G)) {
    e.wt = hc_packed_elem(n, 1);
    e.wsc = hc_packed_q8_scales(n, 1);
  }
  if (e.wt != s->wt)
    return hc_node_error(n, HX_STATUS_INTERNAL, "Winograd weights of type %s, %s planned", hx_dtype_name(e.wt),
                         hx_dtype_name(s->wt));
  e.vl = hc_ukr_lanes(lc, HX_DTYPE_FLOAT32);
  wino_matrices(m, s->stride, &e.t);
  wino_geometry(s, m, e.packed, true, &e.g);
  HX_RETURN_IF_ERROR(emit_tables(&e));
  if (!e.packed) HX_RETURN_IF_ERROR(emit_weights(&e));
  /* The three stages once per block of tiles, all in the same V and Mx.
   * Whole blocks differ only in their first tile bt0 (a table entry of the
   * transforms; the products are the same kernel): the first whole block
   * is emitted, the others repeat its three kernels with their own bt0, so
   * their bodies are built and compiled once (a 768x768 plane has 2,300
   * blocks). The ragged last block is emitted on its own. */
  int proto = -1; /* kernel index of the first whole block's input transform */
  int slot_in = -1, slot_out = -1, lane_slot[3] = {-1, -1, -1};
  if (e.g.total > n->workspace_bytes)
    return hc_node_error(n, HX_STATUS_INTERNAL, "Winograd workspace of %llu bytes, %llu planned",
                         (unsigned long long)e.g.total, (unsigned long long)n->workspace_bytes);
  /* Two lanes take the blocks in two runs of about half the tiles each
   * (the first block whose tiles start at or past the middle opens the
   * second), so that each lane covers one half of the image rows: the
   * threads of the GEMMs around the convolution split their pixels the
   * same way, so each lane mostly reads and writes its own core's lines. */
  int64_t lane1_t0 = (e.g.T / 2 + e.g.Tb - 1) / e.g.Tb * e.g.Tb;
  if (lane1_t0 - e.g.T / 2 > e.g.Tb / 2) lane1_t0 -= e.g.Tb;
  for (int64_t blk = 0; blk < e.g.nblk; ++blk) {
    e.bt0 = blk * e.g.Tb;
    e.tn = e.g.T - e.bt0 < e.g.Tb ? e.g.T - e.bt0 : e.g.Tb;
    e.tnp = (e.tn + WINO_PAD - 1) / WINO_PAD * WINO_PAD;
    int lane = e.g.lanes > 1 && e.bt0 >= lane1_t0 ? 1 : 0;
    e.lane_off = (int64_t)((uint64_t)lane * e.g.slot_bytes);
    bool whole = e.tn == e.g.Tb;
    int first = lc->num_kernels;
    if (whole && proto >= 0) {
      HX_RETURN_IF_ERROR(hc_kb_repeat(lc, proto, 2, (int[]){slot_in, lane_slot[0]}, (int64_t[]){e.bt0, e.lane_off}));
      HX_RETURN_IF_ERROR(hc_kb_repeat(lc, proto + 1, 1, (int[]){lane_slot[1]}, (int64_t[]){e.lane_off}));
      HX_RETURN_IF_ERROR(hc_kb_repeat(lc, proto + 2, 2, (int[]){slot_out, lane_slot[2]}, (int64_t[]){e.bt0, e.lane_off}));
    } else {
      e.bt0_slot_in = e.bt0_slot_out = -1;
      e.lane_slot[0] = e.lane_slot[1] = e.lane_slot[2] = -1;
      HX_RETURN_IF_ERROR(emit_input(&e));
      HX_RETURN_IF_ERROR(emit_products(&e));
      HX_RETURN_IF_ERROR(emit_output(&e));
      bool lanes_ok = e.g.lanes <= 1 || (e.lane_slot[0] >= 0 && e.lane_slot[1] >= 0 && e.lane_slot[2] >= 0);
      if (whole && proto < 0 && lane == 0 && lc->num_kernels == first + 3 && e.bt0_slot_in >= 0 &&
          e.bt0_slot_out >= 0 && lanes_ok) {
        proto = first;
        slot_in = e.bt0_slot_in;
        slot_out = e.bt0_slot_out;
        memcpy(lane_slot, e.lane_slot, sizeof lane_slot);
      }
    }
    if (e.g.lanes > 1)
      for (int k = first; k < lc->num_kernels; ++k) lc->kernels[k].sublane = lane + 1;
  }
  return HX_OK;
}
