/*
 * Internal contract of the Vulkan plugin: the objects behind the opaque ABI
 * handles and the functions its files share.  The plugin is built with
 * hidden visibility: these hc_vk_* functions are visible to the plugin's own
 * files only, and hc_plugin_entry is its one exported symbol.
 *
 * Vulkan is reached only through function tables (vk_functions.h) filled
 * from a dlopen'ed libvulkan.so.1, never by linking it.
 *
 * Environment (test and debugging knobs, read where named):
 *   HOTCOLD_VULKAN_DEVICE        which devices to list (instance.c)
 *   HOTCOLD_VULKAN_DISABLE       optional features to leave off (instance.c)
 *   HOTCOLD_VULKAN_WINDOW        a smaller binding limit (device.c)
 *   HOTCOLD_VULKAN_WG            the reduction workgroup size (device.c)
 *   HOTCOLD_VULKAN_MEMORY_LIMIT  bytes of device buffers allowed per device:
 *                                simulates a small GPU (memory.c)
 */
#ifndef HC_VK_PLUGIN_H
#define HC_VK_PLUGIN_H

#define VK_NO_PROTOTYPES
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#include "hotcold/plugin.h"
#include "hotcold/plugin_kit.h"
#include "vk_functions.h"

#if defined(__GNUC__)
#define HC_VK_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define HC_VK_PRINTF(a, b)
#endif

/* Tags at the start of every handle: a foreign or freed handle is refused
 * instead of being used. */
#define HC_VK_MAGIC_DEVICE 0x44564b48u /* "HKVD" */
#define HC_VK_MAGIC_BUFFER 0x42564b48u /* "HKVB" */
#define HC_VK_MAGIC_STREAM 0x53564b48u /* "HKVS" */
#define HC_VK_MAGIC_EVENT 0x45564b48u  /* "HKVE" */

#define HC_VK_ERR_LEN 320

/* ---- the kernel contract shared with shaders/common.glsl --------------- */

/* Descriptor set 0 of every kernel: binding 0 holds HC_VK_WINDOWS storage
 * buffers (consecutive windows of a weight matrix: one binding may cover at
 * most maxStorageBufferRange bytes), bindings 1..5 one storage buffer each
 * (E: the list length of a counted sparse op). */
#define HC_VK_WINDOWS 4
enum {
    HC_VK_BIND_W = 0,
    HC_VK_BIND_A = 1,
    HC_VK_BIND_B = 2,
    HC_VK_BIND_C = 3,
    HC_VK_BIND_D = 4,
    HC_VK_BIND_E = 5
};
#define HC_VK_N_BINDINGS 6
#define HC_VK_N_DESCRIPTORS (HC_VK_WINDOWS + 5)
/* The one push-constant range of the pipeline layout: the minimum every
 * device guarantees (maxPushConstantsSize >= 128). */
#define HC_VK_PUSH_BYTES 128

/* Push constants of the weight ops: `WeightParams` in common.glsl. */
typedef struct hc_vk_weight_params {
    uint32_t rows, cols, n, n_items, row_bytes;
    uint32_t row_lo, row_hi, rows_per_win;
    uint32_t w_off[HC_VK_WINDOWS];
    uint32_t a_off, b_off, c_off;
    uint32_t groups_x;
    uint32_t phase, n_slices, slice_items, d_off; /* axpy_rows' split over the list */
    /* The counted ops: n_items is then max_idx, the list's length is the
     * int32 at element e_off of E; axpy_rows slices by that length, at most
     * slice_fit slices (what a binding holds per token). */
    uint32_t counted, e_off, slice_fit;
} hc_vk_weight_params;

/* Push constants of the layer ops: `LayerParams` in common.glsl. */
typedef struct hc_vk_layer_params {
    uint32_t n, dim, op, n_head, n_head_kv, n_rot;
    uint32_t kv_lo, kv_hi, kv_total, flags;
    float f0, f1;
    uint32_t a_off, b_off, c_off, d_off, w0_off, w1_off;
    uint32_t groups_x;
} hc_vk_layer_params;

/* Output dimensions per invocation of attention.comp (ATT_DPI there). */
#define HC_VK_ATT_DPI 32

/* Kernel ids: shaders/variants.txt names them (op "matmul" = HC_VK_OP_MATMUL).
 * A new kernel is a line there, an id here and a case in hc_vk_kernel_wg(). */
typedef enum hc_vk_op {
    HC_VK_OP_MATMUL,
    HC_VK_OP_MATVEC_ROWS,
    HC_VK_OP_AXPY_ROWS,
    HC_VK_OP_RMSNORM,
    HC_VK_OP_ROPE,
    HC_VK_OP_ATTENTION,
    HC_VK_OP_UNARY,
    HC_VK_OP_BINARY,
    HC_VK_OP_GLU,
    HC_VK_OP_SELECT_ROWS,
    HC_VK_OP_SCATTER_ROWS,
    HC_VK_OP_COUNT
} hc_vk_op;

/* Pipelines per kernel: one per TILE (tokens per pass, specialization
 * constant 1 in common.glsl): 1, 2, 4, 8, the largest <= n being used. */
#define HC_VK_TILES 4

/* The weight type of a kernel without one (layer ops). */
#define HC_VK_NO_WTYPE (-1)

/* Optional device features.  The first two select shader variants (the
 * feature names of variants.txt); the others only change the host side.
 * HOTCOLD_VULKAN_DISABLE=subgroup,storage16_8,push_descriptors,host_map
 * turns them off to exercise the fallbacks on a device that has them. */
enum {
    HC_VK_FEAT_SUBGROUP = 1u << 0,         /* subgroupAdd in compute */
    HC_VK_FEAT_STORAGE16_8 = 1u << 1,      /* 16- and 8-bit storage buffers */
    HC_VK_FEAT_PUSH_DESCRIPTORS = 1u << 2, /* VK_KHR_push_descriptor */
    HC_VK_FEAT_HOST_MAP = 1u << 3          /* device buffers mapped for the host */
};

/* ---- loader.c: libvulkan and the function tables ------------------------- */

typedef struct hc_vk_global_fns {
#define HC_VK_DECLARE(f) PFN_##f f;
    HC_VK_GLOBAL_FUNCTIONS(HC_VK_DECLARE)
} hc_vk_global_fns;

typedef struct hc_vk_instance_fns {
    HC_VK_INSTANCE_FUNCTIONS(HC_VK_DECLARE)
} hc_vk_instance_fns;

typedef struct hc_vk_device_fns {
    HC_VK_DEVICE_FUNCTIONS(HC_VK_DECLARE)
    HC_VK_DEVICE_EXT_FUNCTIONS(HC_VK_DECLARE)
#undef HC_VK_DECLARE
} hc_vk_device_fns;

/* ---- objects ------------------------------------------------------------- */

/* What instance.c learned about one usable physical device. */
typedef struct hc_vk_physdev {
    VkPhysicalDevice pd;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties mem;
    uint32_t queue_family;      /* the first family with compute */
    uint32_t timestamp_bits;    /* its timestampValidBits; 0: no timestamps (events untimed) */
    uint32_t subgroup_size;
    uint32_t min_subgroup;      /* smallest subgroup a compute shader may get; 0 = unknown */
    uint32_t feats;             /* HC_VK_FEAT_* it has and may use */
    int float16;                /* shaderFloat16: HC_CAP_F16 */
    int need_8bit_ext;          /* Vulkan 1.1: VK_KHR_8bit_storage must be enabled */
    int has_budget;             /* VK_EXT_memory_budget */
    uint64_t max_alloc;         /* maxMemoryAllocationSize */
    atomic_uint_least64_t allocated; /* bytes our buffers hold: mem_free without a budget */
    /* HOTCOLD_VULKAN_MEMORY_LIMIT as of the last device_open (UINT64_MAX:
     * none), and the bytes of device buffers counted against it. */
    uint64_t mem_limit;
    atomic_uint_least64_t limited;
} hc_vk_physdev;

struct hc_plugin_ctx {
    hc_plugin_host host;        /* the host's table, zero-filled past its size */
    void *lib;                  /* libvulkan.so.1, or NULL: no devices */
    PFN_vkGetInstanceProcAddr get_instance_proc;
    hc_vk_global_fns g;
    hc_vk_instance_fns i;
    VkInstance instance;
    hc_vk_physdev *devs;
    int n_devs;
    uint32_t disabled;          /* HC_VK_FEAT_* from HOTCOLD_VULKAN_DISABLE */
    pthread_mutex_t err_lock;
    char err[HC_VK_ERR_LEN];
    char no_devices[HC_VK_ERR_LEN]; /* why n_devs is 0 (ABI 1.3 no_device_reason) */
};

struct hc_device {
    uint32_t magic;
    hc_plugin_ctx *ctx;
    hc_vk_physdev *pd;
    VkDevice dev;
    hc_vk_device_fns f;
    VkQueue queue;
    pthread_mutex_t queue_lock; /* vkQueueSubmit: the queue is shared by all streams */
    pthread_mutex_t pipe_lock;  /* pipelines are created on first use */
    uint32_t feats;             /* HC_VK_FEAT_* in use on this device */
    uint32_t mem_type;          /* device buffers */
    int mem_mapped;             /* mem_type is host-visible and coherent, and mapped */
    uint32_t staging_type;      /* host-visible, coherent staging memory */
    uint64_t bind_align;        /* offsets of descriptor ranges: a multiple of this */
    uint64_t window;            /* largest descriptor range used, a multiple of 4 */
    uint32_t max_groups[2];     /* maxComputeWorkGroupCount x, y */
    uint32_t wg_dot, wg_axpy;   /* workgroup sizes (powers of two) */
    int single_subgroup;        /* a wg_dot workgroup is always one subgroup */
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline *pipes;          /* per kernel variant x HC_VK_TILES, created on first use */
};

struct hc_buffer {
    uint32_t magic;
    hc_device *dev;
    VkBuffer buf;
    VkDeviceMemory mem;
    uint64_t size;              /* what the caller asked for */
    uint64_t vk_size;           /* the VkBuffer: size rounded up, plus 16 */
    uint8_t *map;               /* host address when mapped, else NULL */
};

/* A download waiting for its frame to finish: staging -> host. */
typedef struct hc_vk_pending {
    void *dst;
    uint64_t off, bytes;
} hc_vk_pending;

enum { HC_VK_FRAME_IDLE = 0, HC_VK_FRAME_RECORDING = 1, HC_VK_FRAME_SUBMITTED = 2 };

/* One command buffer with what it needs until it has run: a stream has
 * two, so recording the next batch overlaps the device running this one. */
typedef struct hc_vk_frame {
    VkCommandPool cmd_pool;     /* the frame's own: reset whole when it is reused */
    VkCommandBuffer cmd;
    VkFence fence;
    int state;
    uint64_t seq;               /* submission order */
    uint32_t n_cmds;
    VkDescriptorPool pool;      /* without push descriptors: a set per dispatch */
    VkBuffer stage;
    VkDeviceMemory stage_mem;
    uint8_t *stage_map;
    uint64_t stage_cap, stage_used;
    hc_vk_pending *pend;
    size_t n_pend, cap_pend;
} hc_vk_frame;

struct hc_stream {
    uint32_t magic;
    hc_device *dev;
    hc_vk_frame fr[2];
    int cur;                    /* the frame being recorded */
    uint64_t next_seq;
    int lost;                   /* a submit or wait failed: the stream is dead */
    hc_buffer *scratch;         /* attention's running softmax state, or NULL */
    hc_graph *capture;          /* the recording under way (capture.c), or NULL */
};

/* A descriptor range and the work of one dispatch. */
typedef struct hc_vk_range {
    VkBuffer buf;
    uint64_t off, range;
} hc_vk_range;

typedef struct hc_vk_dispatch {
    int kernel;                          /* index into the variant table */
    uint32_t tile;                       /* tokens per pass: 1, 2, 4 or 8 */
    hc_vk_range w[HC_VK_WINDOWS];
    hc_vk_range a, b, c, d, e;           /* unset ranges repeat a */
    const void *push;
    uint32_t push_bytes;
    uint32_t groups_x, groups_y;
} hc_vk_dispatch;

/* ---- validate.c ----------------------------------------------------------- */
/* Records a one-line message on ctx (NULL: the init message) and returns st. */
hc_status hc_vk_fail(hc_plugin_ctx *ctx, hc_status st, const char *fmt, ...) HC_VK_PRINTF(3, 4);
/* The same for a failed Vulkan call: names the call and the VkResult. */
hc_status hc_vk_fail_vk(hc_plugin_ctx *ctx, VkResult r, const char *what);
/* "VK_ERROR_INCOMPATIBLE_DRIVER", ...; "VkResult" for a code it does not know. */
const char *hc_vk_result_name(VkResult r);
/* Records why the plugin has no devices (no_device_reason) and logs it. */
void hc_vk_no_devices(hc_plugin_ctx *ctx, const char *fmt, ...) HC_VK_PRINTF(2, 3);
const char *hc_vk_init_error(void);
void hc_vk_log(hc_plugin_ctx *ctx, int level, const char *fmt, ...) HC_VK_PRINTF(3, 4);
/* The device of a stream, or HC_E_INVALID for NULL/foreign/dead streams. */
hc_status hc_vk_stream_dev(hc_stream *s, hc_device **dev);
/* `bytes` at r lie inside a buffer of dev, r.off a multiple of align. */
hc_status hc_vk_check_ref(hc_device *dev, const char *op, const char *name, hc_ref r,
                          uint64_t bytes, uint64_t align);
/* count1 * count2 elements of elem bytes at r (overflow-checked, elem-aligned). */
hc_status hc_vk_check_ref_n(hc_device *dev, const char *op, const char *name, hc_ref r,
                            int64_t count1, int64_t count2, uint64_t elem, uint64_t *bytes);
/* An output must not overlap an input: HC_E_INVALID if the ranges share bytes. */
hc_status hc_vk_check_disjoint(hc_device *dev, const char *op, const char *a_name, hc_ref a,
                               uint64_t na, const char *b_name, hc_ref b, uint64_t nb);
/* hc_vk_fail as the kit's hc_kit_fail_fn (user = the context). */
hc_status hc_vk_kit_fail(void *ctx, hc_status st, const char *msg);

/* ---- loader.c ------------------------------------------------------------- */
/* dlopens libvulkan and loads the global functions; 0 = not there (ctx->lib
 * stays NULL: no devices, no error). */
int hc_vk_load_library(hc_plugin_ctx *ctx);
/* Instance functions; 0 if one is missing. */
int hc_vk_load_instance(hc_plugin_ctx *ctx);
/* Device functions of dev->dev; 0 if a required one is missing. */
int hc_vk_load_device(hc_device *dev);

/* ---- pin.c: the driver stays mapped ----------------------------------------- */
/* The shared objects mapped now (their link-map names). */
typedef struct hc_vk_objects {
    char **names;
    size_t n, cap;
} hc_vk_objects;
/* 0 on out-of-memory (then nothing is listed). */
int hc_vk_objects_snapshot(hc_vk_objects *o);
void hc_vk_objects_free(hc_vk_objects *o);
/* Pins (RTLD_NODELETE) every object mapped now that `before` lacks: the
 * ICD and its libraries outlive vkDestroyInstance.  Returns how many. */
int hc_vk_pin_new_objects(hc_plugin_ctx *ctx, const hc_vk_objects *before);

/* ---- instance.c ----------------------------------------------------------- */
/* Creates the instance and lists the usable devices (HOTCOLD_VULKAN_DEVICE
 * restricts them).  No loader, no driver, no device: HC_OK with 0 devices. */
hc_status hc_vk_instance_create(hc_plugin_ctx *ctx);
void hc_vk_instance_destroy(hc_plugin_ctx *ctx);

/* ---- device_info.c -------------------------------------------------------- */
hc_status hc_vk_device_info(hc_plugin_ctx *ctx, int index, hc_device_info *out);

/* ---- device.c ------------------------------------------------------------- */
hc_status hc_vk_device_open(hc_plugin_ctx *ctx, int index, hc_device **out);
void hc_vk_device_close(hc_device *dev);
/* The workgroup grid for `count` workgroups within maxComputeWorkGroupCount. */
hc_status hc_vk_grid(hc_device *dev, const char *op, uint64_t count, uint32_t *gx, uint32_t *gy);

/* ---- memory.c ------------------------------------------------------------- */
/* The memory type for device buffers among type_bits, or -1; *mapped: the
 * plugin maps it for the host (UMA devices, HC_VK_FEAT_HOST_MAP on). */
int hc_vk_pick_device_memory(const hc_vk_physdev *d, uint32_t type_bits, int *mapped);
/* A host-visible, coherent type for staging (cached preferred), or -1. */
int hc_vk_pick_staging_memory(const hc_vk_physdev *d, uint32_t type_bits);
/* HOTCOLD_VULKAN_MEMORY_LIMIT now, in bytes; UINT64_MAX when unset (an
 * unreadable value is ignored with a warning). */
uint64_t hc_vk_memory_limit(hc_plugin_ctx *ctx);
hc_status hc_vk_buffer_alloc(hc_device *dev, uint64_t size, hc_buffer **out);
void hc_vk_buffer_free(hc_buffer *buf);
void *hc_vk_buffer_host_ptr(hc_buffer *buf);
/* A VkBuffer with its own memory of type `type`, mapped if map != NULL. */
hc_status hc_vk_raw_buffer(hc_device *dev, const char *op, uint64_t size, uint32_t type,
                           VkBuffer *buf, VkDeviceMemory *mem, uint8_t **map);
void hc_vk_raw_buffer_free(hc_device *dev, VkBuffer buf, VkDeviceMemory mem, uint64_t size);

/* ---- stream.c: command buffers, submission, completion --------------------- */
hc_status hc_vk_stream_create(hc_device *dev, hc_stream **out);
void hc_vk_stream_destroy(hc_stream *s);
hc_status hc_vk_stream_sync(hc_stream *s);
/* Nothing recorded and nothing running: the host may touch mapped memory. */
int hc_vk_stream_idle(hc_stream *s);
/* The frame being recorded (begun, after waiting for its previous use). */
hc_status hc_vk_stream_frame(hc_stream *s, hc_vk_frame **f);
/* The frame to record one command into, with a barrier after everything
 * before it already recorded. */
hc_status hc_vk_stream_cmd(hc_stream *s, const char *op, hc_vk_frame **f);
/* After a command: submits the frame when it is full. */
hc_status hc_vk_stream_cmd_done(hc_stream *s, const char *op);
/* Submits the frame being recorded (if it holds commands). */
hc_status hc_vk_stream_flush(hc_stream *s, const char *op);
/* The ABI's stream_flush: submits without waiting; later ops record into
 * the other frame. */
hc_status hc_vk_stream_submit(hc_stream *s);
/* Waits for the frame that was (or is being) recorded as number `seq` and
 * the frames before it, submitting it first if it is still recording:
 * later frames go on running. */
hc_status hc_vk_stream_sync_to(hc_stream *s, uint64_t seq);
/* Has frame `seq` completed (and every frame before it)? */
int hc_vk_stream_reached(const hc_stream *s, uint64_t seq);
/* A device buffer of at least `bytes` private to the stream, for state kept
 * between the dispatches of one op.  Growing it waits for the stream. */
hc_status hc_vk_stream_scratch(hc_stream *s, const char *op, uint64_t bytes, hc_buffer **out);

/* ---- transfer.c ------------------------------------------------------------ */
hc_status hc_vk_upload(hc_stream *s, hc_ref dst, const void *src, uint64_t bytes);
hc_status hc_vk_download(hc_stream *s, void *dst, hc_ref src, uint64_t bytes);
hc_status hc_vk_copy(hc_stream *s, hc_ref dst, hc_ref src, uint64_t bytes);
/* Frees a frame's staging memory and download list. */
void hc_vk_staging_free(hc_device *dev, hc_vk_frame *f);

/* ---- kernels.c: the variant table and the pipelines ------------------------ */
/* The variant of op for weight type wtype that matches the device, or -1. */
int hc_vk_kernel_find(const hc_device *dev, int op, int wtype);
const char *hc_vk_kernel_name(int kernel);
/* The workgroup size the kernels of op are compiled with on dev. */
uint32_t hc_vk_kernel_wg(const hc_device *dev, int op);
int hc_vk_kernel_count(void);
/* The TILE for n tokens: the largest of 1, 2, 4, 8 that is <= n. */
uint32_t hc_vk_tile_for(int64_t n);
hc_status hc_vk_pipeline(hc_device *dev, int kernel, uint32_t tile, VkPipeline *out);
void hc_vk_pipelines_destroy(hc_device *dev);

/* ---- dispatch.c ------------------------------------------------------------ */
/* A descriptor range for `bytes` at r (aligned down to bind_align; the
 * element offset of r inside it in *elem_off).  HC_E_UNSUPPORTED when the
 * range would be larger than a window. */
hc_status hc_vk_range_of(hc_device *dev, const char *op, const char *name, hc_ref r,
                         uint64_t bytes, uint32_t elem, hc_vk_range *out, uint32_t *elem_off);
/* Bytes one binding can hold for any offset: hc_vk_range_of aligns the
 * offset down (up to bind_align - 1 more bytes) and rounds the end up to a
 * word (up to 3 more), and the range must stay within a window. */
static inline uint64_t hc_vk_usable_window(const hc_device *dev)
{
    return dev->window - dev->bind_align - 4;
}
/* Records the dispatch (pipeline, descriptors, push constants) on s. */
hc_status hc_vk_record_dispatch(hc_stream *s, const char *op, const hc_vk_dispatch *d);

/* ---- ops_weight.c ----------------------------------------------------------- */
hc_status hc_vk_matmul(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows, int64_t cols,
                       hc_ref x, int64_t n, hc_ref y);
hc_status hc_vk_matvec_rows(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows, int64_t cols,
                            hc_ref x, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y);
hc_status hc_vk_axpy_rows(hc_stream *s, hc_type wtype, hc_ref wt, int64_t rows, int64_t cols,
                          hc_ref h, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y);
hc_status hc_vk_matvec_rows_counted(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows,
                                    int64_t cols, hc_ref x, int64_t n, hc_ref idx, hc_ref count,
                                    int64_t max_idx, hc_ref y);
hc_status hc_vk_axpy_rows_counted(hc_stream *s, hc_type wtype, hc_ref wt, int64_t rows,
                                  int64_t cols, hc_ref h, int64_t n, hc_ref idx, hc_ref count,
                                  int64_t max_idx, hc_ref y);
/* The weight-op limits op_cost must agree with: HC_OK if op can run this
 * shape on dev (`rows` = all rows of the weight), else why not. */
hc_status hc_vk_weight_shape_ok(hc_device *dev, int op, hc_type wtype, int64_t rows,
                                int64_t cols, int64_t n, char *why, size_t why_len);

/* ---- ops_layer.c: rmsnorm, rope, attention, unary, binary, glu ------------ */
hc_status hc_vk_rmsnorm(hc_stream *s, hc_ref x, hc_ref w, hc_ref y, int64_t n, int64_t dim,
                        float eps);
hc_status hc_vk_rope(hc_stream *s, hc_ref x, int64_t n_tok, int64_t n_head, int64_t head_dim,
                     int64_t n_rot, hc_ref pos, float freq_base, float freq_scale, int mode);
hc_status hc_vk_attention(hc_stream *s, hc_ref q, hc_ref k, hc_ref v, hc_ref out, int64_t n_tok,
                          hc_ref pos, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                          float scale);
hc_status hc_vk_unary(hc_stream *s, int op, hc_ref x, hc_ref y, int64_t n, float param);
hc_status hc_vk_binary(hc_stream *s, int op, hc_ref a, hc_ref b, hc_ref y, int64_t n);
hc_status hc_vk_glu(hc_stream *s, int act, hc_ref g, hc_ref u, hc_ref h, int64_t n, float shift);
/* Records one dispatch of layer kernel kop over `groups` workgroups; ranges
 * the kernel does not use repeat ones it does. */
hc_status hc_vk_record_layer(hc_stream *s, const char *op, int kop, hc_vk_dispatch *d,
                             hc_vk_layer_params *p, uint64_t groups);
/* The largest head_dim attention runs on dev. */
int64_t hc_vk_attention_max_head_dim(const hc_device *dev);

/* ---- ops_select.c: device-side selection (ABI 1.3) -------------------------- */
hc_status hc_vk_select_rows(hc_stream *s, hc_ref scores, int64_t n_tok, int64_t n_rows,
                            float cut, hc_ref map, hc_ref idx, hc_ref count);
/* Whether select_rows takes n_tok x n_rows scores here (one binding). */
int hc_vk_select_fits(const hc_device *dev, int64_t n_tok, int64_t n_rows);

/* ---- ops_scatter.c: rows to positions in device memory (ABI 1.3) ---------- */
hc_status hc_vk_scatter_rows(hc_stream *s, hc_ref src, hc_ref dst, uint64_t row_bytes, int64_t n,
                             hc_ref pos, int64_t dst_rows);
/* Whether one row of row_bytes fits a binding (else scatter_rows refuses). */
int hc_vk_scatter_fits(const hc_device *dev, uint64_t row_bytes);
/* Dispatches scatter_rows records for this shape (0: none, or it refuses). */
uint64_t hc_vk_scatter_dispatches(const hc_device *dev, uint64_t row_bytes, int64_t n,
                                  int64_t dst_rows);

/* ---- events.c: ABI 1.4 events (frame numbers and timestamp queries) ------ */
hc_status hc_vk_event_create(hc_device *dev, hc_event **out);
void hc_vk_event_destroy(hc_event *ev);
hc_status hc_vk_event_record(hc_stream *s, hc_event *ev);
hc_status hc_vk_event_sync(hc_event *ev);
hc_status hc_vk_event_elapsed(const hc_event *a, const hc_event *b, double *ms);

/* ---- capture.c: record a stream's calls, replay them (ABI 1.3) ------------ */
hc_status hc_vk_capture_begin(hc_stream *s);
hc_status hc_vk_capture_end(hc_stream *s, hc_graph **out);
hc_status hc_vk_graph_launch(hc_stream *s, hc_graph *g);
void hc_vk_graph_free(hc_graph *g);
/* The table's stream entries: record while capturing, else the op. */
hc_status hc_vk_cap_stream_sync(hc_stream *s);
hc_status hc_vk_cap_stream_flush(hc_stream *s);
hc_status hc_vk_cap_upload(hc_stream *s, hc_ref dst, const void *src, uint64_t bytes);
hc_status hc_vk_cap_download(hc_stream *s, void *dst, hc_ref src, uint64_t bytes);
hc_status hc_vk_cap_copy(hc_stream *s, hc_ref dst, hc_ref src, uint64_t bytes);
hc_status hc_vk_cap_matmul(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows, int64_t cols,
                           hc_ref x, int64_t n, hc_ref y);
hc_status hc_vk_cap_matvec_rows(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows,
                                int64_t cols, hc_ref x, int64_t n, hc_ref idx, int64_t n_idx,
                                hc_ref y);
hc_status hc_vk_cap_axpy_rows(hc_stream *s, hc_type wtype, hc_ref wt, int64_t rows, int64_t cols,
                              hc_ref h, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y);
hc_status hc_vk_cap_rmsnorm(hc_stream *s, hc_ref x, hc_ref w, hc_ref y, int64_t n, int64_t dim,
                            float eps);
hc_status hc_vk_cap_rope(hc_stream *s, hc_ref x, int64_t n_tok, int64_t n_head, int64_t head_dim,
                         int64_t n_rot, hc_ref pos, float freq_base, float freq_scale, int mode);
hc_status hc_vk_cap_attention(hc_stream *s, hc_ref q, hc_ref k, hc_ref v, hc_ref out,
                              int64_t n_tok, hc_ref pos, int64_t n_head, int64_t n_head_kv,
                              int64_t head_dim, float scale);
hc_status hc_vk_cap_unary(hc_stream *s, int op, hc_ref x, hc_ref y, int64_t n, float param);
hc_status hc_vk_cap_binary(hc_stream *s, int op, hc_ref a, hc_ref b, hc_ref y, int64_t n);
hc_status hc_vk_cap_glu(hc_stream *s, int act, hc_ref g, hc_ref u, hc_ref h, int64_t n,
                        float shift);
hc_status hc_vk_cap_select_rows(hc_stream *s, hc_ref scores, int64_t n_tok, int64_t n_rows,
                                float cut, hc_ref map, hc_ref idx, hc_ref count);
hc_status hc_vk_cap_matvec_rows_counted(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows,
                                        int64_t cols, hc_ref x, int64_t n, hc_ref idx,
                                        hc_ref count, int64_t max_idx, hc_ref y);
hc_status hc_vk_cap_axpy_rows_counted(hc_stream *s, hc_type wtype, hc_ref wt, int64_t rows,
                                      int64_t cols, hc_ref h, int64_t n, hc_ref idx,
                                      hc_ref count, int64_t max_idx, hc_ref y);
hc_status hc_vk_cap_scatter_rows(hc_stream *s, hc_ref src, hc_ref dst, uint64_t row_bytes,
                                 int64_t n, hc_ref pos, int64_t dst_rows);

/* ---- memory.c: host memory for capture (ABI 1.3 host_alloc) --------------- */
hc_status hc_vk_host_alloc(hc_device *dev, uint64_t size, void **out);
void hc_vk_host_free(hc_device *dev, void *ptr);

/* ---- op_cost.c -------------------------------------------------------------- */
double hc_vk_op_cost(hc_device *dev, int op, hc_type wtype, int64_t rows, int64_t cols, int64_t n);

#endif /* HC_VK_PLUGIN_H */
