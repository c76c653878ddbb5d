/*
 * Weight loads for every storage width.  W is bound as HC_WINDOWS windows
 * (common.glsl); every function takes the window and a byte address inside
 * it.  With HC_FEAT_STORAGE16_8 bytes and halves load directly; otherwise
 * they are cut out of 32-bit words, which every device can read.
 *
 * Addresses: F32 elements are 4-aligned and F16 elements 2-aligned (the
 * plugin checks the weight offset); quantized blocks (34, 18 or 210 bytes)
 * may start at any byte, so their fp16 scale is assembled from two bytes.
 */
layout(std430, set = 0, binding = 0) readonly buffer WeightsU32 { uint v[]; } w_u32[HC_WINDOWS];
layout(std430, set = 0, binding = 0) readonly buffer WeightsF32 { float v[]; } w_f32[HC_WINDOWS];
#if defined(HC_FEAT_STORAGE16_8)
layout(std430, set = 0, binding = 0) readonly buffer WeightsU8 { uint8_t v[]; } w_u8[HC_WINDOWS];
layout(std430, set = 0, binding = 0) readonly buffer WeightsI8 { int8_t v[]; } w_i8[HC_WINDOWS];
layout(std430, set = 0, binding = 0) readonly buffer WeightsF16 { float16_t v[]; } w_f16[HC_WINDOWS];
#endif

uint load_u8(uint win, uint a)
{
#if defined(HC_FEAT_STORAGE16_8)
    return uint(w_u8[win].v[a]);
#else
    return bitfieldExtract(w_u32[win].v[a >> 2], int((a & 3u) * 8u), 8);
#endif
}

int load_i8(uint win, uint a)
{
#if defined(HC_FEAT_STORAGE16_8)
    return int(w_i8[win].v[a]);
#else
    return bitfieldExtract(int(w_u32[win].v[a >> 2]), int((a & 3u) * 8u), 8);
#endif
}

/* An fp16 value at any byte address (block scales). */
float load_half_unaligned(uint win, uint a)
{
    return unpackHalf2x16(load_u8(win, a) | (load_u8(win, a + 1u) << 8)).x;
}

/* An fp16 value at a 2-aligned byte address. */
float load_half(uint win, uint a)
{
#if defined(HC_FEAT_STORAGE16_8)
    return float(w_f16[win].v[a >> 1]);
#else
    return unpackHalf2x16(w_u32[win].v[a >> 2] >> ((a & 2u) * 8u)).x;
#endif
}

float load_f32(uint win, uint a)
{
    return w_f32[win].v[a >> 2];
}

/* Where row r lives: its window and the byte address of its first byte.
 * The caller has checked row_lo <= r < row_hi. */
void locate_row(uint r, out uint win, out uint base)
{
    uint rel = r - p.row_lo;
    /* rel / rows_per_win for the HC_WINDOWS (4) windows, without a
     * division: CPU drivers (lavapipe) run integer division lane by lane. */
    win = uint(rel >= p.rows_per_win) + uint(rel >= 2u * p.rows_per_win) +
          uint(rel >= 3u * p.rows_per_win);
    base = p.w_off[win] + (rel - win * p.rows_per_win) * p.row_bytes;
}

/* Element c of the row at `base`: one weight, decoded to float. */
float load_weight(uint win, uint base, uint c)
{
#if defined(HC_WTYPE_F32)
    return load_f32(win, base + c * 4u);
#elif defined(HC_WTYPE_F16)
    return load_half(win, base + c * 2u);
#elif defined(HC_WTYPE_Q8_0)
    uint blk = base + (c >> 5) * 34u;
    return load_half_unaligned(win, blk) * float(load_i8(win, blk + 2u + (c & 31u)));
#elif defined(HC_WTYPE_Q4_0)
    /* byte j of a block: element j in the low nibble, j + 16 in the high */
    uint blk = base + (c >> 5) * 18u;
    uint j = c & 31u;
    uint b = load_u8(win, blk + 2u + (j & 15u));
    int q = int(j < 16u ? (b & 15u) : (b >> 4)) - 8;
    return load_half_unaligned(win, blk) * float(q);
#elif defined(HC_WTYPE_Q6_K)
    /* element i = 128 h + 32 g + l of a super-block (plugin.h) */
    uint blk = base + (c >> 8) * 210u;
    uint i = c & 255u, h = i >> 7, g = (i >> 5) & 3u, l = i & 31u;
    uint lo = (load_u8(win, blk + 64u * h + 32u * (g & 1u) + l) >> (g < 2u ? 0u : 4u)) & 15u;
    uint hi = (load_u8(win, blk + 128u + 32u * h + l) >> (2u * g)) & 3u;
    return load_half_unaligned(win, blk + 208u) * float(load_i8(win, blk + 192u + (i >> 4))) *
           float(int(lo | (hi << 4)) - 32);
#else
#error "no weight type defined"
#endif
}
