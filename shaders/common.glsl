/*
 * Shared by every kernel: the extensions a variant's features need, the
 * workgroup size, the descriptor layout and the push constants of the
 * weight and layer ops.  The plugin's side of this contract is
 * plugins/vulkan/vk_plugin.h (HC_VK_BIND_*, HC_VK_WINDOWS,
 * hc_vk_weight_params, hc_vk_layer_params): change both together.
 *
 * Variant defines (from shaders/variants.txt): HC_OP_<OP>, HC_WTYPE_<TYPE>,
 * HC_FEAT_SUBGROUP, HC_FEAT_STORAGE16_8; HC_LAYER_OP from the layer kernels.
 */
#extension GL_EXT_control_flow_attributes : enable
#if defined(HC_FEAT_STORAGE16_8)
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#endif
#if defined(HC_FEAT_SUBGROUP)
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

/* Specialization constants, set by the plugin per device and dispatch
 * (kernels.c; the defaults here are never used):
 *   0  WG: the workgroup size, a power of two.  Kernels must not assume a
 *      value.
 *   1  TILE: tokens one pass of a kernel carries in registers (1, 2, 4 or
 *      8: the plugin picks by n).  More tokens run more passes over the
 *      same weight row (from cache).  A pass for fewer tokens than TILE
 *      leaves the rest idle, so n = 1 gets TILE = 1.
 *   2  SINGLE_SUBGROUP: the workgroup is one subgroup, so a subgroupAdd is
 *      the whole reduction.  Code behind it then folds away, barriers
 *      included (which matters on lavapipe: a shader with a barrier runs
 *      its invocations as coroutines). */
layout(local_size_x_id = 0) in;
#define WG gl_WorkGroupSize.x
layout(constant_id = 1) const uint TILE = 4u;
layout(constant_id = 2) const bool SINGLE_SUBGROUP = false;

/* Descriptor set 0, the same for every kernel (one pipeline layout):
 *   binding 0: HC_WINDOWS storage buffers, consecutive windows of the
 *              weight matrix (a matrix larger than maxStorageBufferRange is
 *              split into windows of whole rows; unused ones repeat the
 *              first), binding 1..5: one storage buffer each (A, B, C, D,
 *              E; E holds the list length of the counted ops). */
#define HC_WINDOWS 4

#if !defined(HC_LAYER_OP)
/* Push constants of the weight ops (hc_vk_weight_params on the host). */
layout(push_constant) uniform WeightParams {
    uint rows;         /* rows of W: the row stride of y (dot) and h (axpy) */
    uint cols;         /* columns of W: the row stride of x (dot) and y (axpy) */
    uint n;            /* tokens */
    uint n_items;      /* work items of this dispatch: rows or list entries */
    uint row_bytes;    /* bytes of one row of W */
    uint row_lo;       /* first row window 0 holds; rows below are skipped */
    uint row_hi;       /* rows at or past this are skipped */
    uint rows_per_win; /* rows in each window */
    uint w_off[HC_WINDOWS]; /* byte offset of each window's first row in its binding */
    uint a_off;        /* element offsets of the operands in bindings 1..3 */
    uint b_off;
    uint c_off;
    uint groups_x;     /* workgroups per row of the dispatch grid */
    /* axpy_rows split over the list (axpy_rows.comp): */
    uint phase;        /* 0: one pass; 1: slices into D; 2: D's slices into y */
    uint n_slices;
    uint slice_items;  /* list entries per slice (the last may have fewer) */
    uint d_off;        /* element offset of D, the slices' partial sums */
    /* The counted ops (matvec_rows_counted, axpy_rows_counted): */
    uint counted;      /* 1: the list's length is E[e_off], clamped to n_items */
    uint e_off;
    uint slice_fit;    /* axpy_rows: at most this many slices fit a binding per token */
} p;
#else
/* Push constants of the layer ops (hc_vk_layer_params on the host); a
 * layer kernel defines HC_LAYER_OP before including this file.  Their
 * meaning per op is documented in the kernel that reads them. */
layout(push_constant) uniform LayerParams {
    uint n;            /* elements (element-wise ops) or tokens */
    uint dim;          /* rmsnorm: row length; rope, attention: head_dim */
    uint op;           /* unary/binary op, glu activation, rope mode */
    uint n_head;
    uint n_head_kv;
    uint n_rot;
    uint kv_lo;        /* attention: positions [kv_lo, kv_hi) of this dispatch */
    uint kv_hi;
    uint kv_total;     /* attention: positions the KV bindings can hold */
    uint flags;        /* attention: 1 = first dispatch of the call, 2 = last */
    float f0;          /* eps, param, shift, log2(freq_base), scale */
    float f1;          /* rope: freq_scale */
    uint a_off;        /* element offsets of the operands in bindings 1..4 */
    uint b_off;
    uint c_off;
    uint d_off;
    uint w0_off;       /* element offsets in binding 0, windows 0 and 1 */
    uint w1_off;
    uint groups_x;     /* workgroups per row of the dispatch grid */
} p;
#endif

/* The linear index of this workgroup in a grid of groups_x x ceil(count / groups_x):
 * counts beyond maxComputeWorkGroupCount[0] spill into y. */
uint work_item()
{
    return gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x;
}

#if !defined(HC_LAYER_OP)
layout(std430, set = 0, binding = 5) readonly buffer Count { int count_buf[]; };

/* Entries of the list this call reads: n_items, or for a counted op the
 * count in E, clamped to [0, n_items] (plugin.h). */
uint list_length()
{
    if (p.counted == 0u)
        return p.n_items;
    return uint(clamp(count_buf[p.e_off], 0, int(p.n_items)));
}
#endif
