/*
 * GGUF reader (and writer) — internal to libhotcold.
 *
 * The reader memory-maps the file and hands out pointers into the mapping
 * (zero copy).  Every count, length and offset in the file is validated
 * against the file size with overflow-safe arithmetic before use, so a
 * truncated or corrupt file yields a one-line error naming the offending
 * field, never a crash.  Accepts magic "GGUF" and PowerInfer's "PWRI",
 * versions 2 and 3.
 */
#ifndef HC_CORE_GGUF_H
#define HC_CORE_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "hotcold/hotcold.h" /* hc_ggml_type_name */

typedef enum hc_gguf_vtype {
    HC_GGUF_U8 = 0,
    HC_GGUF_I8 = 1,
    HC_GGUF_U16 = 2,
    HC_GGUF_I16 = 3,
    HC_GGUF_U32 = 4,
    HC_GGUF_I32 = 5,
    HC_GGUF_F32 = 6,
    HC_GGUF_BOOL = 7,
    HC_GGUF_STRING = 8,
    HC_GGUF_ARRAY = 9,
    HC_GGUF_U64 = 10,
    HC_GGUF_I64 = 11,
    HC_GGUF_F64 = 12
} hc_gguf_vtype;

/* ggml's tensor type id of I32 (GGML_TYPE_I32; PWRI files store it as 18,
 * see hc_pwri_type_read). */
#define HC_GGML_TYPE_I32 26u

#define HC_GGUF_MAX_DIMS 4
#define HC_GGUF_DEFAULT_ALIGNMENT 32

/* One metadata key/value.  `key` is NUL-terminated (owned by the reader).
 * Scalars: `data` points at the little-endian value inside the mapping.
 * Strings: `str`/`str_len` (not NUL-terminated in the file; see accessors).
 * Arrays: `arr_type`, `arr_n`; `data` points at the first element;
 * arrays of strings are accessed with hc_gguf_arr_str(). */
typedef struct hc_gguf_kv {
    char *key;
    uint32_t type;     /* hc_gguf_vtype */
    uint32_t arr_type; /* element type when type == ARRAY */
    uint64_t arr_n;
    const void *data;
    const char *str;
    uint64_t str_len;
    uint64_t *str_offsets; /* arrays of strings: offset of each element's length field, from `data` */
} hc_gguf_kv;

typedef struct hc_gguf_tensor {
    char *name;        /* NUL-terminated (owned by the reader) */
    uint32_t n_dims;
    uint64_t ne[HC_GGUF_MAX_DIMS]; /* ne[0] contiguous; unused dims are 1 */
    uint32_t type;     /* ggml type id (hc_type values for the ones we compute) */
    uint64_t offset;   /* from the start of the data section */
    uint64_t n_elements;
    uint64_t n_bytes;
    const void *data;  /* into the mapping */
} hc_gguf_tensor;

typedef struct hc_gguf {
    char magic[5];     /* "GGUF" or "PWRI" */
    uint32_t version;
    uint64_t n_kv;
    hc_gguf_kv *kv;
    uint64_t n_tensors;
    hc_gguf_tensor *tensors;
    uint64_t alignment;
    uint64_t data_offset; /* file offset of the data section */
    const uint8_t *base;  /* whole file */
    uint64_t file_size;
    int mapped;           /* 1: base is the file mmap()ed; 2: the file read into huge-page
                             memory we own; 3: mapped and moving into huge pages (move);
                             0: borrowed memory */
    uint64_t map_len;     /* bytes to unmap (mapped 1 or 2) */
    struct hc_huge_move *move; /* mapped == 3 (util/hugemove.h) */
} hc_gguf;

/* Open and validate.  On failure returns NULL and, if err != NULL, writes a
 * one-line message naming the file and field (never longer than errlen). */
hc_gguf *hc_gguf_open(const char *path, char *err, size_t errlen);
/* The same, but the file is read into anonymous huge-page memory instead of
 * mapped (hugemem.h): for weights the CPU streams every token.  `progress`
 * (may be NULL) is called with the bytes read so far after every 64 MiB. */
typedef void (*hc_gguf_progress_fn)(void *user, uint64_t done, uint64_t total);
hc_gguf *hc_gguf_open_resident(const char *path, hc_gguf_progress_fn progress, void *user,
                               char *err, size_t errlen);
/* The same, but mapped, and moved into huge pages by a thread while the
 * model runs (util/hugemove.h): the first token does not wait for the
 * whole file.  Where the thread cannot start the file stays mapped. */
hc_gguf *hc_gguf_open_moving(const char *path, char *err, size_t errlen);
/* mapped == 3: wait for the move to end; the bytes moved and the errno
 * that stopped it (0: all moved).  Other files: 0, 0. */
uint64_t hc_gguf_move_wait(hc_gguf *g, int *error);
/* Parse a buffer the caller keeps alive (fuzzing, tests). */
hc_gguf *hc_gguf_open_memory(const void *buf, size_t len, char *err, size_t errlen);
void hc_gguf_close(hc_gguf *g);

int hc_gguf_is_pwri(const hc_gguf *g);

/* Metadata lookup: index or -1. */
int64_t hc_gguf_find_key(const hc_gguf *g, const char *key);
/* Typed getters: return 0 on success, -1 if the key is missing or has an
 * incompatible type.  Integer getters accept any integer type whose value
 * fits; f32 accepts F32 and F64. */
int hc_gguf_get_u32(const hc_gguf *g, const char *key, uint32_t *out);
int hc_gguf_get_i64(const hc_gguf *g, const char *key, int64_t *out);
int hc_gguf_get_f32(const hc_gguf *g, const char *key, float *out);
int hc_gguf_get_bool(const hc_gguf *g, const char *key, int *out);
/* String value: pointer into the mapping (not NUL-terminated) and length. */
int hc_gguf_get_str(const hc_gguf *g, const char *key, const char **s, uint64_t *len);
/* Copy a string value into buf (NUL-terminated, truncated to bufsize-1). */
int hc_gguf_get_strbuf(const hc_gguf *g, const char *key, char *buf, size_t bufsize);
/* Array metadata: element type and count. */
int hc_gguf_get_arr(const hc_gguf *g, const char *key, uint32_t *elem_type, uint64_t *n,
                    const void **data);
/* Element i of an array-of-strings kv. */
const char *hc_gguf_arr_str(const hc_gguf_kv *kv, uint64_t i, uint64_t *len);

/* Tensor lookup: pointer or NULL. */
const hc_gguf_tensor *hc_gguf_find_tensor(const hc_gguf *g, const char *name);

/* hc_ggml_type_name(): public, in hotcold.h ("type<N>" for ids ggml does not
 * know, in a thread-local buffer). */
/* Block size (elements) and bytes per block of a ggml type id; 0 if unknown. */
uint32_t hc_ggml_block_size(uint32_t type);
uint32_t hc_ggml_type_size(uint32_t type);

/* PWRI files number ggml's integer types as PowerInfer's ggml does (I8,
 * I16, I32 = 16, 17, 18; modern ggml: 24, 25, 26, and 16..18 are IQ
 * types).  The reader and writer translate; everything else sees modern
 * ids.  read: a PWRI file's type id as a modern one.  write: the id to store
 * for a modern one, 0, or -1 if PowerInfer's ggml has no id for it. */
uint32_t hc_pwri_type_read(uint32_t file_type);
int hc_pwri_type_write(uint32_t type, uint32_t *file_type);

/* ---- writer ---------------------------------------------------------------
 * Streaming writer: declare all metadata and tensor infos first, then write
 * the tensors' data in declaration order; the model never has to be in RAM.
 *
 *   hc_gguf_writer *w = hc_gguf_writer_new("GGUF", 3, 32);
 *   hc_gguf_writer_copy_kv(w, &reader->kv[i]);             // or set_* below
 *   hc_gguf_writer_add_tensor(w, "x.weight", 2, ne, HC_TYPE_Q4_0);
 *   if (hc_gguf_writer_begin(w, "out.gguf", err, sizeof err)) ...;   // header
 *   hc_gguf_writer_write_data(w, bytes, n) ... per tensor, in order
 *   hc_gguf_writer_finish(w, err, sizeof err);              // checks sizes
 *   hc_gguf_writer_free(w);
 * set_* / copy_kv replace an existing key of the same name (keeping its place).
 * One write_data call must not cross the end of the current tensor.
 * In a PWRI file tensor types are stored in PowerInfer's numbering
 * (hc_pwri_type_write; add_tensor refuses a type it has no id for).
 * The writer pads each tensor to the alignment itself.  Where the bytes go
 * follows core/format/output_file.h (a temporary file renamed on finish, so a
 * failure never leaves a partial file under the final name; devices and
 * FIFOs written directly; links written through); an existing file is
 * replaced, so a tool checks hc_output_check() before its work. */
typedef struct hc_gguf_writer hc_gguf_writer;
hc_gguf_writer *hc_gguf_writer_new(const char magic[4], uint32_t version, uint32_t alignment);
void hc_gguf_writer_free(hc_gguf_writer *w);
int hc_gguf_writer_copy_kv(hc_gguf_writer *w, const hc_gguf_kv *kv);
int hc_gguf_writer_set_u32(hc_gguf_writer *w, const char *key, uint32_t v);
int hc_gguf_writer_set_f32(hc_gguf_writer *w, const char *key, float v);
int hc_gguf_writer_set_str(hc_gguf_writer *w, const char *key, const char *v);
int hc_gguf_writer_set_arr(hc_gguf_writer *w, const char *key, uint32_t elem_type, uint64_t n,
                           const void *data); /* numeric element types only */
/* Any scalar type (U8..F64 except STRING/ARRAY); `value` points at a host
 * value of that type (BOOL: one byte, nonzero = true). */
int hc_gguf_writer_set_scalar(hc_gguf_writer *w, const char *key, uint32_t type,
                              const void *value);
/* Array of n NUL-terminated strings. */
int hc_gguf_writer_set_str_arr(hc_gguf_writer *w, const char *key, uint64_t n,
                               const char *const *strs);
int hc_gguf_writer_add_tensor(hc_gguf_writer *w, const char *name, uint32_t n_dims,
                              const uint64_t *ne, uint32_t type);
int hc_gguf_writer_begin(hc_gguf_writer *w, const char *path, char *err, size_t errlen);
int hc_gguf_writer_write_data(hc_gguf_writer *w, const void *data, uint64_t n, char *err,
                              size_t errlen);
int hc_gguf_writer_finish(hc_gguf_writer *w, char *err, size_t errlen);

#endif /* HC_CORE_GGUF_H */
