/*
 * hotcold — public library API (libhotcold).
 *
 * Objects and their lifetimes:
 *   hc_engine   the loaded device plugins and their devices (one per process
 *               is typical);
 *   hc_model    weights of one GGUF file placed on a device, plus its
 *               tokenizer; outlives its contexts;
 *   hc_context  a KV cache and scratch buffers for one sequence;
 *   hc_sampler  turns logits into a token id.
 *
 * Every function that can fail returns a negative value or NULL and leaves a
 * one-line message in hc_last_error().  No function aborts or exits.
 */
#ifndef HOTCOLD_H
#define HOTCOLD_H

#include <stddef.h>
#include <stdint.h>

#include "hotcold/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HOTCOLD_VERSION "0.1.0"

/* The public API: the only symbols libhotcold.so exports (the rest of the
 * library is built with -fvisibility=hidden). */
#if defined(__GNUC__) && !defined(HC_API)
#define HC_API __attribute__((visibility("default")))
#elif !defined(HC_API)
#define HC_API
#endif

/* The name of any ggml tensor type id a GGUF file may hold ("q4_0",
 * "iq3_xxs", ...; "type<N>" for one ggml does not know), whether hotcold
 * computes that type or not. */
HC_API const char *hc_ggml_type_name(uint32_t type);

/* ---- errors and logging ---------------------------------------------------- */
HC_API const char *hc_last_error(void);
typedef void (*hc_log_callback)(void *user, int level, const char *msg);
/* Route library (and plugin) messages; NULL restores the stderr default. */
HC_API void hc_log_set_callback(hc_log_callback cb, void *user);
/* Minimum level printed by the default stderr sink (default HC_LOG_WARN). */
HC_API void hc_log_set_level(int min_level);

/* ---- engine: plugins and devices ---------------------------------------- */
typedef struct hc_engine hc_engine;

typedef struct hc_engine_params {
    size_t size;             /* sizeof(hc_engine_params) */
    const char *plugin_path; /* NULL: $HOTCOLD_PLUGIN_PATH */
    const char *plugins;     /* NULL: $HOTCOLD_PLUGINS (e.g. "cpu,vulkan") */
    int n_threads;           /* CPU threads; 0 = number of cores */
} hc_engine_params;

HC_API hc_engine_params hc_engine_default_params(void);
/* Finds, checks and probes the plugins; a plugin family is initialised when
 * one of its devices is first asked for (hc_engine_find_device), or when
 * everything is listed (hc_engine_device_count, the plugin reports). */
HC_API hc_engine *hc_engine_open(const hc_engine_params *params);
HC_API void hc_engine_close(hc_engine *e);
/* Change the CPU plugins' worker-thread count. */
HC_API int hc_engine_set_threads(hc_engine *e, int n_threads);

typedef struct hc_plugin_report {
    const char *path;
    const char *family;
    const char *variant;
    const char *state;  /* "loaded", "rejected", "shadowed", "filtered" */
    const char *reason; /* why it is not loaded; for a loaded plugin without devices,
                           why it has none ("no devices: ..."); else "" */
    int probe;
} hc_plugin_report;
HC_API int hc_engine_plugin_count(const hc_engine *e);
HC_API int hc_engine_plugin_report(const hc_engine *e, int i, hc_plugin_report *out);

/* The plugin search path as the engine walked it, in order. */
typedef struct hc_search_dir {
    const char *path;
    const char *origin;  /* "$HOTCOLD_PLUGIN_PATH", "install dir", ... */
    int missing;         /* it does not exist (normal for a default dir) */
    const char *problem; /* why it exists but could not be searched; "" if it was */
} hc_search_dir;
HC_API int hc_engine_search_count(const hc_engine *e);
HC_API int hc_engine_search_dir(const hc_engine *e, int i, hc_search_dir *out);
/* What the plugin selection ($HOTCOLD_PLUGINS) named that matched no plugin,
 * and what was found instead; "" when every entry matched. */
HC_API const char *hc_engine_selection_note(const hc_engine *e);

/* Devices across all loaded plugins, numbered 0..count-1. */
typedef struct hc_device_report {
    const char *family;  /* plugin family, e.g. "cpu" */
    int index;           /* index within that plugin: "vulkan:1" */
    hc_device_info info;
} hc_device_report;
HC_API int hc_engine_device_count(const hc_engine *e);
HC_API int hc_engine_device_report(const hc_engine *e, int i, hc_device_report *out);
/* Find a device by "family" or "family:N"; -1 if none. */
HC_API int hc_engine_find_device(const hc_engine *e, const char *spec);

/* ---- model -------------------------------------------------------------- */
typedef struct hc_model hc_model;

/* How the FFN is computed.  AUTO: PREDICTOR when the file has predictors
 * (PowerInfer's PWRI files), else OFF. */
typedef enum hc_sparse_mode {
    HC_SPARSE_AUTO = 0,
    HC_SPARSE_OFF = 1,       /* dense: every neuron */
    HC_SPARSE_ORACLE = 2,    /* gate for every neuron, then only the ones that fire
                                (exactly dense for ReLU FFNs; needs no predictor) */
    HC_SPARSE_PREDICTOR = 3  /* PowerInfer: fc2.relu(fc1.x) >= threshold picks the rows */
} hc_sparse_mode;
/* The largest |threshold| accepted from any source (parameter, environment,
 * file): predictor logits are O(10); beyond this every neuron is on or off. */
#define HC_SPARSE_THRESHOLD_LIMIT 1e6f

/* What to do with PowerInfer's saved neuron split, <model>.generated.gpuidx. */
typedef enum hc_gpu_index_mode {
    HC_GPU_INDEX_USE = 0,     /* reuse it if it was solved for the room this budget leaves hot
                                 neurons (or a fresh solve gives the same split), else solve
                                 and save; a file that cannot be used is reported and left
                                 alone, and the split solved */
    HC_GPU_INDEX_RESET = 1,   /* solve and overwrite it (--reset-gpu-index) */
    HC_GPU_INDEX_DISABLE = 2  /* neither read nor write it (--disable-gpu-index) */
} hc_gpu_index_mode;

/* Where the weights live in host memory. */
typedef enum hc_weights_mode {
    HC_WEIGHTS_AUTO = 0, /* MOVE when the CPU computes everything, the kernel has transparent
                            huge pages and the file needs at most half the available memory;
                            else MMAP */
    HC_WEIGHTS_MMAP = 1, /* map the file: no copy, pages shared through the page cache */
    HC_WEIGHTS_READ = 2, /* read the file into memory backed by 2 MiB pages: decode streams
                            every weight per token, and 4 KiB pages cost it a TLB miss per
                            4 KiB (--no-mmap) */
    HC_WEIGHTS_MOVE = 3  /* map the file, then move it into 2 MiB pages in the background
                            while the model runs: the first token does not wait for the
                            whole file to be read, and decode ends up as with READ */
} hc_weights_mode;

/* How a GPU's share of the model is chosen under vram_budget. */
typedef enum hc_split_mode {
    HC_SPLIT_AUTO = 0,    /* NEURONS for files whose FFN splits by neuron (down_t:
                             PowerInfer files), LAYERS for plain GGUF */
    HC_SPLIT_NEURONS = 1, /* PowerInfer's: attention, predictors, norms, output and KV
                             cache first, then the hottest neurons of every layer; a
                             plain GGUF (down not transposed) cannot split a layer's
                             FFN, so its layers get all their neurons or none */
    HC_SPLIT_LAYERS = 2   /* llama.cpp's -ngl: whole layers (attention, FFN, predictor,
                             KV cache) from layer 0 while they fit, the rest whole on the
                             CPU; the output head once every layer is on the GPU.  No
                             neuron split, so no .generated.gpuidx is read or written */
} hc_split_mode;

typedef struct hc_model_params {
    size_t size;
    /* "cpu" (default): everything on the CPU.  "vulkan", "vulkan:1", ...:
     * that device holds what fits in vram_budget in PowerInfer's order
     * (attention, predictors, norms, output, KV cache, then hot neurons), or
     * whole layers in order (split = HC_SPLIT_LAYERS); the CPU holds and
     * computes the rest (hybrid), or nothing if it all fits. */
    const char *device;
    int sparse;             /* hc_sparse_mode */
    float sparse_threshold; /* NAN: $LLAMA_SPARSE_PRED_THRESHOLD, else the file's
                               powerinfer.sparse_threshold, else 0; whichever is used
                               must lie within +-HC_SPARSE_THRESHOLD_LIMIT */
    /* --- grown after 0.1: read only when `size` covers them --- */
    double vram_budget;     /* bytes the GPU may hold; < 0: its free memory - 256 MiB */
    int gpu_index;          /* hc_gpu_index_mode */
    const char *gpu_index_path; /* NULL: <model>.generated.gpuidx */
    int n_ctx;              /* context the KV cache is planned for; 0: training context */
    int weights;            /* hc_weights_mode */
    /* Progress of the long steps of a load (step "reading": the file into
     * memory, --no-mmap), in bytes, after every 64 MiB; NULL = none. */
    void (*progress)(void *user, const char *step, uint64_t done, uint64_t total);
    void *progress_user;
    int split;              /* hc_split_mode */
} hc_model_params;

HC_API hc_model_params hc_model_default_params(void);
HC_API hc_model *hc_model_load(hc_engine *e, const char *path, const hc_model_params *params);
HC_API void hc_model_free(hc_model *m);

typedef struct hc_model_desc {
    const char *arch;
    const char *name;
    int n_vocab, n_embd, n_layer, n_head, n_head_kv, n_ff, n_ctx_train, n_rot;
    uint32_t weight_type;  /* ggml type of the big matrices */
    uint64_t weight_bytes; /* bytes of all tensors */
    uint64_t decode_bytes; /* bytes a decoded token must read (dense floor) */
    uint64_t ffn_bytes;    /* of those, the FFN matrices (gate, up, down) */
    uint64_t predictor_bytes; /* fc1 + fc2 of all layers (read only when sparse) */
    int is_pwri;           /* PowerInfer magic */
    int has_predictor;
    int sparse;            /* hc_sparse_mode in effect (never AUTO) */
    float sparse_threshold;
    int relu_ffn;          /* 1: a ReLU-family FFN (ReGLU, dReLU): inactive neurons are
                              exactly zero, so sparsity applies; 0: SwiGLU */
} hc_model_desc;
/* m == NULL gives an all-zero description with empty strings. */
HC_API void hc_model_describe(const hc_model *m, hc_model_desc *out);
/* HC_WEIGHTS_MMAP, _READ or _MOVE: how this model's weights were loaded. */
HC_API int hc_model_weights_mode(const hc_model *m);
/* Waits until the weights sit where they stay (a MOVE has ended: all in
 * 2 MiB pages, or the rest left mapped where memory ran out); at once for
 * the other modes.  The bench measures after it.  Returns the bytes moved. */
HC_API uint64_t hc_model_weights_wait(hc_model *m);

/* ---- tokenizer (from the model's tokenizer.ggml.* keys) ------------------ */
HC_API int hc_model_token_bos(const hc_model *m);
HC_API int hc_model_token_eos(const hc_model *m);
/* Encode UTF-8 text; returns the number of ids (may exceed max: call again
 * with a larger buffer), or -1 on error. */
HC_API int hc_model_tokenize(const hc_model *m, const char *text, size_t len, int add_bos,
                      int32_t *ids, int max);
/* Bytes of a token's text (byte-fallback tokens give one raw byte; the
 * SentencePiece space marker becomes ' ').  Returns its length, or -1. */
HC_API int hc_model_token_piece(const hc_model *m, int32_t id, char *buf, int bufsize);

/* ---- context: KV cache and evaluation ----------------------------------- */
typedef struct hc_context hc_context;

typedef struct hc_context_params {
    size_t size;
    int n_ctx;   /* 0 = the model's training context */
    int n_batch; /* prompt tokens per forward pass (default 64) */
    int sparse_check; /* predictor mode: also compute the true active set
                         (dense gate/up) to measure recall; slower */
    int no_graphs;    /* 1: issue every decode pass, never replay a captured one (the
                         GPU plugin's capture, ABI 1.3; HOTCOLD_CUDA_GRAPHS=0 also) */
    int logits_all;   /* 1: room for every token's logits, for hc_context_eval_all
                         (n_batch x n_vocab floats more on each device) */
} hc_context_params;

HC_API hc_context_params hc_context_default_params(void);
HC_API hc_context *hc_context_new(hc_model *m, const hc_context_params *params);
HC_API void hc_context_free(hc_context *c);
HC_API int hc_context_n_ctx(const hc_context *c);
HC_API int hc_context_n_past(const hc_context *c);
/* Forget the sequence (positions restart at 0). */
HC_API void hc_context_reset(hc_context *c);
/* Append n tokens and run them; returns 0 and, if logits != NULL, writes the
 * n_vocab logits of the LAST token.  Fails (negative) on context overflow. */
HC_API int hc_context_eval(hc_context *c, const int32_t *tokens, int n, float *logits);
/* The same, writing every token's logits: n x n_vocab floats, row i after
 * token i (what perplexity scores).  Needs a context made with logits_all. */
HC_API int hc_context_eval_all(hc_context *c, const int32_t *tokens, int n, float *logits);

/* Sparse FFN figures of one layer since the context was made or reset. */
typedef struct hc_layer_sparse_stats {
    int64_t forwards;        /* forward passes through this layer */
    double computed_frac;    /* mean fraction of neurons computed */
    int checked;             /* recall/precision below are measured */
    double recall;           /* true active neurons the predictor selected */
    double precision;        /* selected neurons that were truly active */
    double true_frac;        /* mean fraction truly active (checked runs) */
} hc_layer_sparse_stats;
HC_API int hc_context_sparse_stats(const hc_context *c, int layer, hc_layer_sparse_stats *out);

/* An observer sees every layer's FFN, for tools that profile activations or
 * train predictors.  While one is set the FFN runs densely so h is complete.
 * Pointers are host memory valid during the call only. */
typedef struct hc_ffn_observation {
    int layer;
    int n_tok;
    int n_embd;
    int n_ff;
    const float *p;       /* residual stream before ffn_norm [n_tok][n_embd] */
    const float *h;       /* FFN activation act(gate)*up      [n_tok][n_ff]  */
} hc_ffn_observation;
typedef void (*hc_ffn_observer)(void *user, const hc_ffn_observation *obs);
/* NULL removes it.  Returns 0, or -1 if its buffers cannot be allocated. */
HC_API int hc_context_set_ffn_observer(hc_context *c, hc_ffn_observer fn, void *user);

/* Where the work went since the context was made or reset. */
typedef struct hc_context_run_stats {
    int64_t tokens;          /* tokens evaluated */
    int64_t gpu_rows;        /* FFN neuron rows computed on the GPU (all layers, all passes) */
    int64_t cpu_rows;        /* ... on the CPU */
    uint64_t bytes_moved;    /* between devices and host (vectors, lists, logits) */
    uint64_t fallback_calls; /* GPU op calls run on the CPU: the plugin lacked or refused them */
    int64_t passes;          /* forward passes (a prompt chunk or one decoded token each) */
    uint64_t gpu_syncs;      /* times the host waited for the GPU: 1 per pass when the GPU
                                runs whole layers and selects their rows itself */
    int64_t graph_passes;    /* passes replayed from a captured graph (ABI 1.3 capture) */
    /* The overlap of the two devices (`hotcold run` prints it per token): */
    uint64_t wall_ns;        /* host time inside the passes */
    uint64_t gpu_busy_ns;    /* the GPU's work: from the first op after each wait (or flush)
                                to the next wait (or flush), by the device's clock (plugin ABI
                                1.4 event_elapsed) */
    uint64_t cpu_busy_ns;    /* host time inside the CPU device's ops and waits: its share of
                                the FFN, and the GPU ops that fell back to it */
    int gpu_busy_host_clock; /* 1: the plugin could not time some of that work, and the host's
                                clock did (from the first op's issue to the wait's return:
                                counts the host's own time in between) */
} hc_context_run_stats;
HC_API void hc_context_run_stats_get(const hc_context *c, hc_context_run_stats *out);

/* ---- placement: what a model with a GPU keeps where ----------------------- */
typedef struct hc_plan_info {
    uint64_t budget;        /* bytes the GPU was allowed */
    uint64_t capacity;      /* what that left for hot neurons once attention, predictors,
                               norms, the output head and the KV cache were placed (0 for
                               HC_SPLIT_LAYERS: neurons go with their layers) */
    uint64_t gpu_bytes, cpu_bytes; /* every byte of the model on each side, KV cache included */
    int n_layer;
    int64_t n_ff;
    int group;              /* neurons per placement group */
    int output_on_gpu;      /* the output head */
    int from_file;          /* the neuron split came from a saved .generated.gpuidx */
    double served;          /* share of the activation mass the GPU's neurons carry (mean
                               over layers) */
} hc_plan_info;
typedef struct hc_plan_layer_info {
    int attn, pred, ffn_norm, kv; /* 1 = on the GPU */
    int64_t n_hot;          /* FFN neurons on the GPU */
    double served;          /* share of this layer's activation mass they carry */
    uint64_t gpu_bytes, cpu_bytes;
} hc_plan_layer_info;
/* The placement in effect.  0, or -1 when the model has no GPU (everything
 * is on the CPU) or `layer` is out of range. */
HC_API int hc_model_plan_info(const hc_model *m, hc_plan_info *out);
HC_API int hc_model_plan_layer(const hc_model *m, int layer, hc_plan_layer_info *out);
/* How the neuron split was obtained ("solved", "reused <file>", ...). */
HC_API const char *hc_model_plan_note(const hc_model *m);
/* The split the placement in effect was made with: HC_SPLIT_NEURONS or
 * HC_SPLIT_LAYERS (never AUTO); -1 when the model has no GPU. */
HC_API int hc_model_split(const hc_model *m);

/* ---- sampler ------------------------------------------------------------- */
typedef struct hc_sampler hc_sampler;

typedef struct hc_sampler_params {
    size_t size;
    float temp;           /* 0 = greedy */
    int top_k;            /* 0 = off */
    float top_p;          /* 1 = off */
    float min_p;          /* 0 = off */
    float repeat_penalty; /* 1 = off */
    int repeat_last_n;    /* window for the penalty */
    uint64_t seed;
} hc_sampler_params;

HC_API hc_sampler_params hc_sampler_default_params(void);
HC_API hc_sampler *hc_sampler_new(const hc_sampler_params *p);
HC_API void hc_sampler_free(hc_sampler *s);
/* Pick a token from logits[n_vocab] (logits may be modified). */
HC_API int32_t hc_sampler_sample(hc_sampler *s, float *logits, int n_vocab);
/* Tell the sampler a token was emitted (for the repetition penalty). */
HC_API void hc_sampler_accept(hc_sampler *s, int32_t id);

/* ---- measurement ------------------------------------------------------------ */
/* Host memory read bandwidth in bytes/s: n_threads threads stream through
 * `bytes` of memory (0 = 512 MiB, far larger than any cache), best of
 * `reps` passes.  This is the floor a memory-bound decode is measured
 * against.  Returns a negative value on failure. */
HC_API double hc_host_read_bandwidth(int n_threads, uint64_t bytes, int reps);
/* The model's GPU memory bandwidth in bytes/s (read + written): the best of
 * `reps` device-to-device copies of `bytes` (0 = 256 MiB, halved while the
 * device has no room for two such buffers, down to 16 MiB), the floor a
 * decode wholly on the GPU is measured against.  0, or -1 with the error
 * set (no GPU, a plugin without copy, no memory). */
HC_API int hc_model_gpu_bandwidth(hc_model *m, uint64_t bytes, int reps, double *out);
/* Host <-> GPU transfers of the model's GPU, through page-locked host
 * memory where its plugin has it (what the per-layer vectors use): bytes/s
 * of the best of `reps` uploads and downloads of `bytes` (0 = 64 MiB,
 * halved down to 1 MiB while the device has no room), and the latency of a
 * 4-byte download waited for (the best of 20): what a hybrid layer's
 * crossings cost.  0, or -1 with the error set. */
typedef struct hc_gpu_transfer {
    double upload, download; /* bytes/s */
    double latency_s;        /* one small download, issued and waited for */
    int pinned;              /* 1: page-locked host memory (the plugin's host_alloc) */
} hc_gpu_transfer;
HC_API int hc_model_gpu_transfer(hc_model *m, uint64_t bytes, int reps, hc_gpu_transfer *out);

#ifdef __cplusplus
}
#endif
#endif /* HOTCOLD_H */
