/*
 * torch.save() reader: zip container (or the legacy pickle stream), a restricted pickle
 * interpreter, and the conversion of the referenced storage into plain arrays.
 * See torch_pt.h for what is accepted.
 *
 * Why no zip library: torch writes every entry "stored" (uncompressed, data aligned to 64
 * bytes so storages can be mapped), so all we need is the end-of-central-directory record,
 * its zip64 twin and the central/local headers — about 150 lines.  libzip would add a run-time
 * dependency to libhotcold and to tools/install-deps.sh for code that never inflates
 * anything; a deflated entry (a .pt repacked by a zip tool) is reported by name instead.
 * CRCs are not verified: torch can be told not to write them (set_crc32_options), and every
 * structural field is validated anyway.
 */
#include "format/torch_pt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

/* Largest tensor we expand into double + int64 arrays (16 bytes a value).  Activation
 * statistics are tens of thousands of values; the bound only stops a tiny file with
 * zero strides from asking for terabytes.  The fuzz build lowers it. */
#ifndef HC_PT_MAX_NUMEL
#define HC_PT_MAX_NUMEL ((int64_t)1 << 27)
#endif

/* Bounds on the pickle machine: far above anything torch writes for one tensor. */
#define PK_MAX_VALUES (1u << 22)
#define PK_MAX_STACK (1u << 20)
#define PK_MAX_MEMO (1u << 20)
#define PK_MAX_ITEMS (1u << 22)
#define PK_NIL UINT32_MAX

/* ---- error context ------------------------------------------------------------------- */
typedef struct pt_ctx {
    char err[512];
    int failed;
} pt_ctx;

static int fail(pt_ctx *c, const char *fmt, ...) HC_PRINTF(2, 3);
static int fail(pt_ctx *c, const char *fmt, ...)
{
    /* The first fault is the informative one; later ones are consequences. */
    if (!c->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, sizeof c->err, fmt, ap);
        va_end(ap);
        c->failed = 1;
    }
    return -1;
}

/* Printable, bounded copy of untrusted bytes for a message: names in a damaged file may
 * hold newlines or anything else, and messages must stay one line. */
static const char *san(const uint8_t *s, size_t n, char *buf, size_t bufsz)
{
    size_t j = 0, keep = bufsz > 4 ? bufsz - 4 : 0;
    for (size_t i = 0; i < n && j < keep; i++)
        buf[j++] = (s[i] >= 0x20 && s[i] < 0x7f) ? (char)s[i] : '?';
    if (n > keep && bufsz >= 4) {
        memcpy(buf + j, "...", 3);
        j += 3;
    }
    if (bufsz)
        buf[j < bufsz ? j : bufsz - 1] = 0;
    return buf;
}

static uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}
static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const uint8_t *p)
{
    return rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static int bytes_eq(const uint8_t *s, size_t n, const char *lit)
{
    return n == strlen(lit) && memcmp(s, lit, n) == 0;
}

/* ---- dtypes -------------------------------------------------------------------------- */
const char *hc_pt_dtype_name(hc_pt_dtype dtype)
{
    switch (dtype) {
    case HC_PT_BOOL: return "bool";
    case HC_PT_U8: return "uint8";
    case HC_PT_I8: return "int8";
    case HC_PT_I16: return "int16";
    case HC_PT_I32: return "int32";
    case HC_PT_I64: return "int64";
    case HC_PT_F16: return "float16";
    case HC_PT_BF16: return "bfloat16";
    case HC_PT_F32: return "float32";
    case HC_PT_F64: return "float64";
    default: return "invalid";
    }
}

size_t hc_pt_dtype_size(hc_pt_dtype dtype)
{
    switch (dtype) {
    case HC_PT_BOOL:
    case HC_PT_U8:
    case HC_PT_I8: return 1;
    case HC_PT_I16:
    case HC_PT_F16:
    case HC_PT_BF16: return 2;
    case HC_PT_I32:
    case HC_PT_F32: return 4;
    case HC_PT_I64:
    case HC_PT_F64: return 8;
    default: return 0;
    }
}

static int dtype_is_float(hc_pt_dtype d)
{
    return d == HC_PT_F16 || d == HC_PT_BF16 || d == HC_PT_F32 || d == HC_PT_F64;
}

/* torch.<X>Storage, the class a typed storage is pickled as. */
static hc_pt_dtype storage_class_dtype(const uint8_t *s, size_t n)
{
    static const struct { const char *name; hc_pt_dtype dt; } map[] = {
        {"DoubleStorage", HC_PT_F64}, {"FloatStorage", HC_PT_F32}, {"HalfStorage", HC_PT_F16},
        {"BFloat16Storage", HC_PT_BF16}, {"LongStorage", HC_PT_I64}, {"IntStorage", HC_PT_I32},
        {"ShortStorage", HC_PT_I16}, {"CharStorage", HC_PT_I8}, {"ByteStorage", HC_PT_U8},
        {"BoolStorage", HC_PT_BOOL}, {"UntypedStorage", HC_PT_U8},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (bytes_eq(s, n, map[i].name))
            return map[i].dt;
    return HC_PT_INVALID;
}

/* torch.<dtype> as pickled for _rebuild_tensor_v3 (torch >= 2.x). */
static hc_pt_dtype dtype_by_name(const uint8_t *s, size_t n)
{
    static const struct { const char *name; hc_pt_dtype dt; } map[] = {
        {"float64", HC_PT_F64}, {"double", HC_PT_F64}, {"float32", HC_PT_F32},
        {"float", HC_PT_F32}, {"float16", HC_PT_F16}, {"half", HC_PT_F16},
        {"bfloat16", HC_PT_BF16}, {"int64", HC_PT_I64}, {"long", HC_PT_I64},
        {"int32", HC_PT_I32}, {"int", HC_PT_I32}, {"int16", HC_PT_I16}, {"short", HC_PT_I16},
        {"int8", HC_PT_I8}, {"uint8", HC_PT_U8}, {"bool", HC_PT_BOOL},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (bytes_eq(s, n, map[i].name))
            return map[i].dt;
    return HC_PT_INVALID;
}

/* ---- zip container ------------------------------------------------------------------- */
typedef struct zip_entry {
    const uint8_t *name;
    size_t name_len;
    uint16_t flags, method;
    uint64_t csize, usize, lho;
} zip_entry;

typedef struct zip_archive {
    const uint8_t *buf;
    uint64_t len;
    uint64_t cd_off;   /* entries' data must end before this */
    uint64_t n;
    zip_entry *e;
} zip_archive;

#define ZIP_EOCD_SIG 0x06054b50u
#define ZIP64_LOC_SIG 0x07064b50u
#define ZIP64_EOCD_SIG 0x06064b50u
#define ZIP_CDIR_SIG 0x02014b50u
#define ZIP_LOCAL_SIG 0x04034b50u

/* The zip64 extra field replaces exactly the header fields that hold 0xFFFFFFFF. */
static int zip_extra(pt_ctx *c, const uint8_t *x, size_t xlen, zip_entry *e, uint64_t i)
{
    while (xlen >= 4) {
        uint16_t id = rd16(x), sz = rd16(x + 2);
        if (sz > xlen - 4)
            return fail(c, "zip central directory entry %llu: extra field runs past its record",
                        (unsigned long long)i);
        if (id == 1) {
            const uint8_t *f = x + 4;
            size_t left = sz;
            uint64_t *fields[3] = {&e->usize, &e->csize, &e->lho};
            for (int k = 0; k < 3; k++) {
                if (*fields[k] != 0xFFFFFFFFu)
                    continue;
                if (left < 8)
                    return fail(c, "zip central directory entry %llu: zip64 field too short",
                                (unsigned long long)i);
                *fields[k] = rd64(f);
                f += 8;
                left -= 8;
            }
        }
        x += 4 + (size_t)sz;
        xlen -= 4 + (size_t)sz;
    }
    return 0;
}

static int zip_open(pt_ctx *c, zip_archive *z, const uint8_t *buf, uint64_t len)
{
    uint64_t eocd = UINT64_MAX, lo, n, cd_size, cd_off, cd_limit;
    uint32_t disk, cd_disk;
    const uint8_t *e;

    memset(z, 0, sizeof *z);
    z->buf = buf;
    z->len = len;
    if (len < 22)
        return fail(c, "too short for a zip archive (%llu bytes)", (unsigned long long)len);
    /* The end record sits in the last 22 + 65535 (comment) bytes; take the last one whose
     * comment fits in the file. */
    lo = len > 22 + 65535 ? len - 22 - 65535 : 0;
    for (uint64_t p = len - 22;; p--) {
        if (rd32(buf + p) == ZIP_EOCD_SIG && p + 22 + rd16(buf + p + 20) <= len) {
            eocd = p;
            break;
        }
        if (p == lo)
            break;
    }
    if (eocd == UINT64_MAX)
        return fail(c, "no zip end-of-central-directory record (truncated file?)");
    e = buf + eocd;
    disk = rd16(e + 4);
    cd_disk = rd16(e + 6);
    n = rd16(e + 10);
    cd_size = rd32(e + 12);
    cd_off = rd32(e + 16);
    cd_limit = eocd;
    if (eocd >= 20 && rd32(buf + eocd - 20) == ZIP64_LOC_SIG) {
        /* torch (via miniz) always writes the zip64 records; they are authoritative. */
        const uint8_t *l = buf + eocd - 20, *r;
        uint64_t z64 = rd64(l + 8);
        if (rd32(l + 4) != 0 || rd32(l + 16) > 1)
            return fail(c, "multi-disk zip archives are not supported");
        if (z64 > eocd - 20 || eocd - 20 - z64 < 56)
            return fail(c, "zip64 end record offset %llu is out of range",
                        (unsigned long long)z64);
        r = buf + z64;
        if (rd32(r) != ZIP64_EOCD_SIG)
            return fail(c, "bad zip64 end record signature at offset %llu",
                        (unsigned long long)z64);
        disk = rd32(r + 16);
        cd_disk = rd32(r + 20);
        n = rd64(r + 32);
        cd_size = rd64(r + 40);
        cd_off = rd64(r + 48);
        cd_limit = z64;
    } else if (n == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_off == 0xFFFFFFFFu) {
        return fail(c, "zip end record needs zip64 values but has no zip64 locator");
    }
    if (disk != 0 || cd_disk != 0)
        return fail(c, "multi-disk zip archives are not supported");
    if (cd_off > cd_limit || cd_size > cd_limit - cd_off)
        return fail(c, "zip central directory (%llu bytes at offset %llu) lies outside the file",
                    (unsigned long long)cd_size, (unsigned long long)cd_off);
    if (n > cd_size / 46)
        return fail(c, "zip central directory claims %llu entries in %llu bytes",
                    (unsigned long long)n, (unsigned long long)cd_size);
    z->cd_off = cd_off;
    z->e = calloc(n ? n : 1, sizeof *z->e);
    if (!z->e)
        return fail(c, "out of memory (%llu zip entries)", (unsigned long long)n);
    z->n = n;

    uint64_t p = cd_off, end = cd_off + cd_size;
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *q = buf + p;
        zip_entry *ze = &z->e[i];
        uint64_t rec;
        uint16_t nlen, xlen, clen;
        if (end - p < 46)
            return fail(c, "zip central directory entry %llu is truncated", (unsigned long long)i);
        if (rd32(q) != ZIP_CDIR_SIG)
            return fail(c, "zip central directory entry %llu has a bad signature",
                        (unsigned long long)i);
        ze->flags = rd16(q + 8);
        ze->method = rd16(q + 10);
        ze->csize = rd32(q + 20);
        ze->usize = rd32(q + 24);
        nlen = rd16(q + 28);
        xlen = rd16(q + 30);
        clen = rd16(q + 32);
        ze->lho = rd32(q + 42);
        rec = 46 + (uint64_t)nlen + xlen + clen;
        if (rec > end - p)
            return fail(c, "zip central directory entry %llu runs past the directory",
                        (unsigned long long)i);
        ze->name = q + 46;
        ze->name_len = nlen;
        if (zip_extra(c, q + 46 + nlen, xlen, ze, i))
            return -1;
        p += rec;
    }
    return 0;
}

/* 0: found (*out set), 1: absent, -1: error (a name present twice is ambiguous). */
static int zip_find(pt_ctx *c, const zip_archive *z, const char *name, const zip_entry **out)
{
    size_t n = strlen(name);
    const zip_entry *hit = NULL;
    char b[96];
    for (uint64_t i = 0; i < z->n; i++) {
        if (z->e[i].name_len != n || memcmp(z->e[i].name, name, n) != 0)
            continue;
        if (hit)
            return fail(c, "zip entry %s appears twice", san((const uint8_t *)name, n, b, sizeof b));
        hit = &z->e[i];
    }
    *out = hit;
    return hit ? 0 : 1;
}

static int zip_data(pt_ctx *c, const zip_archive *z, const zip_entry *e, const uint8_t **data,
                    uint64_t *size)
{
    char b[96];
    const char *nm = san(e->name, e->name_len, b, sizeof b);
    const uint8_t *q;
    uint64_t at;
    if (e->flags & 1)
        return fail(c, "zip entry %s is encrypted", nm);
    if (e->method == 8)
        return fail(c, "zip entry %s is deflate-compressed; only stored entries are read "
                       "(torch.save never compresses: was the file repacked by a zip tool?)", nm);
    if (e->method != 0)
        return fail(c, "zip entry %s uses compression method %u; only stored entries are read",
                    nm, e->method);
    if (e->csize != e->usize)
        return fail(c, "stored zip entry %s has compressed size %llu != size %llu", nm,
                    (unsigned long long)e->csize, (unsigned long long)e->usize);
    if (e->lho > z->cd_off || z->cd_off - e->lho < 30)
        return fail(c, "zip entry %s: local header offset %llu is out of range", nm,
                    (unsigned long long)e->lho);
    q = z->buf + e->lho;
    if (rd32(q) != ZIP_LOCAL_SIG)
        return fail(c, "zip entry %s: bad local header signature", nm);
    /* Sizes in the local header may be 0 (torch sets the data-descriptor flag): the
     * central directory's are the ones to use. */
    at = e->lho + 30 + (uint64_t)rd16(q + 26) + rd16(q + 28);
    if (at > z->cd_off || e->csize > z->cd_off - at)
        return fail(c, "zip entry %s: data (%llu bytes) runs past the central directory", nm,
                    (unsigned long long)e->csize);
    if (rd16(q + 26) != e->name_len || memcmp(q + 30, e->name, e->name_len) != 0)
        return fail(c, "zip entry %s: local header names a different file", nm);
    *data = z->buf + at;
    *size = e->csize;
    return 0;
}

/* ---- the pickle machine -------------------------------------------------------------- */
enum pk_kind {
    PK_NONE, PK_BOOL, PK_INT, PK_BIGINT, PK_FLOAT, PK_STR, PK_BYTES, PK_TUPLE, PK_LIST,
    PK_DICT, PK_GLOBAL, PK_STORAGE, PK_TENSOR
};

static const char *pk_kind_name(int k)
{
    static const char *names[] = {"None", "bool", "int", "big int", "float", "str", "bytes",
                                  "tuple", "list", "dict", "global", "storage", "tensor"};
    return k >= 0 && k <= PK_TENSOR ? names[k] : "?";
}

typedef struct pk_val {
    uint8_t kind;
    uint8_t dtype;       /* STORAGE */
    uint8_t untyped;     /* STORAGE: torch.UntypedStorage, numel counts bytes */
    int64_t i;           /* BOOL, INT; STORAGE: numel; TENSOR: index into tensors */
    double f;
    const uint8_t *s;    /* STR, BYTES, BIGINT: bytes; GLOBAL: module; STORAGE: key */
    const uint8_t *s2;   /* GLOBAL: name */
    uint32_t slen, s2len;
    uint32_t *items;     /* TUPLE, LIST: n ids; DICT: n key/value pairs (2n ids) */
    uint32_t n, cap;
} pk_val;

typedef struct pk_tensor {
    uint32_t storage;    /* id of a PK_STORAGE */
    hc_pt_dtype dtype;
    int ndim;
    int64_t offset, numel, elems; /* elems: elements of `dtype` the storage holds */
    int64_t size[HC_PT_MAX_DIMS], stride[HC_PT_MAX_DIMS];
} pk_tensor;

typedef struct pk_vm {
    pt_ctx *c;
    const char *what;    /* "data.pkl", ... for messages */
    const uint8_t *p;
    size_t len, pos;
    pk_val *vals;
    uint32_t n_vals, cap_vals;
    uint32_t *stack;
    uint32_t sp, cap_stack;
    uint32_t *marks;
    uint32_t n_marks, cap_marks;
    uint32_t *memo;
    uint32_t cap_memo, n_memo; /* n_memo: distinct slots set (MEMOIZE's next index) */
    pk_tensor *tens;
    uint32_t n_tens, cap_tens;
} pk_vm;

static int grow(void **p, uint32_t *cap, uint64_t need, size_t elsz, uint32_t limit)
{
    uint64_t nc;
    void *q;
    if (need <= *cap)
        return 0;
    if (need > limit)
        return -1;
    nc = *cap ? (uint64_t)*cap * 2 : 16;
    while (nc < need)
        nc *= 2;
    if (nc > limit)
        nc = limit;
    q = realloc(*p, (size_t)nc * elsz);
    if (!q)
        return -1;
    *p = q;
    *cap = (uint32_t)nc;
    return 0;
}

static void pk_free(pk_vm *vm)
{
    for (uint32_t i = 0; i < vm->n_vals; i++)
        free(vm->vals[i].items);
    free(vm->vals);
    free(vm->stack);
    free(vm->marks);
    free(vm->memo);
    free(vm->tens);
    memset(vm, 0, sizeof *vm);
}

static int pk_fail(pk_vm *vm, size_t at, const char *msg)
{
    return fail(vm->c, "%s: %s at offset %zu", vm->what, msg, at);
}

static uint32_t pk_new(pk_vm *vm, int kind)
{
    pk_val *v;
    if (grow((void **)&vm->vals, &vm->cap_vals, (uint64_t)vm->n_vals + 1, sizeof *vm->vals,
             PK_MAX_VALUES)) {
        fail(vm->c, "%s: too many pickle values (out of memory or over %u)", vm->what,
             PK_MAX_VALUES);
        return PK_NIL;
    }
    v = &vm->vals[vm->n_vals];
    memset(v, 0, sizeof *v);
    v->kind = (uint8_t)kind;
    return vm->n_vals++;
}

static int pk_push(pk_vm *vm, uint32_t id)
{
    if (id == PK_NIL)
        return -1;
    if (grow((void **)&vm->stack, &vm->cap_stack, (uint64_t)vm->sp + 1, sizeof *vm->stack,
             PK_MAX_STACK))
        return fail(vm->c, "%s: pickle stack deeper than %u", vm->what, PK_MAX_STACK);
    vm->stack[vm->sp++] = id;
    return 0;
}

static int pk_pop(pk_vm *vm, size_t at, uint32_t *id)
{
    /* Items below the innermost mark belong to an enclosing construct. */
    uint32_t floor = vm->n_marks ? vm->marks[vm->n_marks - 1] : 0;
    if (vm->sp <= floor)
        return pk_fail(vm, at, "pickle stack underflow");
    *id = vm->stack[--vm->sp];
    return 0;
}

static int pk_top(pk_vm *vm, size_t at, uint32_t *id)
{
    uint32_t floor = vm->n_marks ? vm->marks[vm->n_marks - 1] : 0;
    if (vm->sp <= floor)
        return pk_fail(vm, at, "pickle stack underflow");
    *id = vm->stack[vm->sp - 1];
    return 0;
}

static int pk_pop_mark(pk_vm *vm, size_t at, uint32_t *start)
{
    if (!vm->n_marks)
        return pk_fail(vm, at, "no MARK on the pickle stack");
    *start = vm->marks[--vm->n_marks];
    return 0;
}

static int pk_add_items(pk_vm *vm, uint32_t id, const uint32_t *items, uint32_t n)
{
    pk_val *v = &vm->vals[id];
    if (n == 0) /* an empty container may have no array at all */
        return 0;
    if (grow((void **)&v->items, &v->cap, (uint64_t)v->n + n, sizeof *v->items, PK_MAX_ITEMS))
        return fail(vm->c, "%s: pickle container larger than %u items", vm->what, PK_MAX_ITEMS);
    memcpy(v->items + v->n, items, (size_t)n * sizeof *items);
    v->n += n;
    return 0;
}

/* A new tuple/list/dict from stack[start..sp), which is then dropped. */
static int pk_collect(pk_vm *vm, size_t at, int kind, uint32_t start)
{
    uint32_t n = vm->sp - start, id;
    if (kind == PK_DICT && n % 2)
        return pk_fail(vm, at, "odd number of items for a dict");
    id = pk_new(vm, kind);
    if (id == PK_NIL || (n && pk_add_items(vm, id, vm->stack + start, n)))
        return -1;
    if (kind == PK_DICT)
        vm->vals[id].n = n / 2;
    vm->sp = start;
    return pk_push(vm, id);
}

/* APPEND(S)/SETITEM(S): stack[start..sp) into the container at stack[start - 1]. */
static int pk_extend(pk_vm *vm, size_t at, int kind, uint32_t start)
{
    uint32_t n = vm->sp - start, id;
    uint32_t floor = vm->n_marks ? vm->marks[vm->n_marks - 1] : 0;
    if (start == 0 || start - 1 < floor)
        return pk_fail(vm, at, "no container below the items");
    id = vm->stack[start - 1];
    if (vm->vals[id].kind != kind)
        return fail(vm->c, "%s: %s into a %s at offset %zu", vm->what,
                    kind == PK_LIST ? "APPEND" : "SETITEM", pk_kind_name(vm->vals[id].kind), at);
    if (kind == PK_DICT && n % 2)
        return pk_fail(vm, at, "odd number of items for SETITEMS");
    if (kind == PK_DICT) {
        /* dict items are stored as flat pairs; n counts pairs */
        pk_val *v = &vm->vals[id];
        uint32_t pairs = v->n;
        v->n = pairs * 2;
        if (pk_add_items(vm, id, vm->stack + start, n))
            return -1;
        vm->vals[id].n /= 2;
    } else if (pk_add_items(vm, id, vm->stack + start, n)) {
        return -1;
    }
    vm->sp = start;
    return 0;
}

static int pk_memo_put(pk_vm *vm, size_t at, uint64_t idx)
{
    uint32_t top = PK_NIL;
    if (idx >= PK_MAX_MEMO)
        return pk_fail(vm, at, "memo index too large");
    if (pk_top(vm, at, &top))
        return -1;
    if (idx >= vm->cap_memo) {
        uint32_t old = vm->cap_memo;
        if (grow((void **)&vm->memo, &vm->cap_memo, idx + 1, sizeof *vm->memo, PK_MAX_MEMO))
            return fail(vm->c, "%s: out of memory (memo)", vm->what);
        for (uint32_t k = old; k < vm->cap_memo; k++)
            vm->memo[k] = PK_NIL;
    }
    if (vm->memo[idx] == PK_NIL)
        vm->n_memo++;
    vm->memo[idx] = top;
    return 0;
}

static int pk_memo_get(pk_vm *vm, size_t at, uint64_t idx)
{
    if (idx >= vm->cap_memo || vm->memo[idx] == PK_NIL)
        return pk_fail(vm, at, "memo lookup of an unset index");
    return pk_push(vm, vm->memo[idx]);
}

static int pk_str(pk_vm *vm, int kind, uint64_t n, size_t at)
{
    uint32_t id;
    if (n > vm->len - vm->pos)
        return pk_fail(vm, at, "string runs past the end of the pickle");
    if (n > UINT32_MAX)
        return pk_fail(vm, at, "string too long");
    id = pk_new(vm, kind);
    if (id == PK_NIL)
        return -1;
    vm->vals[id].s = vm->p + vm->pos;
    vm->vals[id].slen = (uint32_t)n;
    vm->pos += (size_t)n;
    return pk_push(vm, id);
}

static int pk_int(pk_vm *vm, int64_t v)
{
    uint32_t id = pk_new(vm, PK_INT);
    if (id == PK_NIL)
        return -1;
    vm->vals[id].i = v;
    return pk_push(vm, id);
}

/* LONG1/LONG4: little-endian two's complement of n bytes. */
static int pk_long(pk_vm *vm, uint64_t n, size_t at)
{
    uint32_t id;
    if (n > vm->len - vm->pos)
        return pk_fail(vm, at, "integer runs past the end of the pickle");
    if (n <= 8) {
        uint64_t u = 0;
        for (uint64_t k = 0; k < n; k++)
            u |= (uint64_t)vm->p[vm->pos + k] << (8 * k);
        if (n && n < 8 && (vm->p[vm->pos + n - 1] & 0x80))
            u |= ~(uint64_t)0 << (8 * n); /* sign-extend */
        vm->pos += (size_t)n;
        return pk_int(vm, (int64_t)u);
    }
    /* Wider than int64: kept as bytes (the legacy magic number is one). */
    if (n > UINT32_MAX)
        return pk_fail(vm, at, "integer too long");
    id = pk_new(vm, PK_BIGINT);
    if (id == PK_NIL)
        return -1;
    vm->vals[id].s = vm->p + vm->pos;
    vm->vals[id].slen = (uint32_t)n;
    vm->pos += (size_t)n;
    return pk_push(vm, id);
}

static int pk_global(pk_vm *vm, const uint8_t *mod, size_t mlen, const uint8_t *name,
                     size_t nlen)
{
    uint32_t id = pk_new(vm, PK_GLOBAL);
    if (id == PK_NIL)
        return -1;
    vm->vals[id].s = mod;
    vm->vals[id].slen = (uint32_t)mlen;
    vm->vals[id].s2 = name;
    vm->vals[id].s2len = (uint32_t)nlen;
    return pk_push(vm, id);
}

/* GLOBAL: "module\nname\n". */
static int pk_op_global(pk_vm *vm, size_t at)
{
    const uint8_t *mod = vm->p + vm->pos, *nl1, *name, *nl2;
    size_t left = vm->len - vm->pos;
    nl1 = memchr(mod, '\n', left);
    if (!nl1)
        return pk_fail(vm, at, "GLOBAL runs past the end of the pickle");
    name = nl1 + 1;
    left -= (size_t)(name - mod);
    nl2 = memchr(name, '\n', left);
    if (!nl2)
        return pk_fail(vm, at, "GLOBAL runs past the end of the pickle");
    vm->pos = (size_t)(nl2 + 1 - vm->p);
    return pk_global(vm, mod, (size_t)(nl1 - mod), name, (size_t)(nl2 - name));
}

/* BINPERSID: ('storage', torch.<T>Storage, key, location, numel[, view_metadata]). */
static int pk_persid(pk_vm *vm, size_t at)
{
    uint32_t pid = PK_NIL, id;
    const pk_val *t, *cls, *key, *loc, *num;
    hc_pt_dtype dt;
    char b[96];
    if (pk_pop(vm, at, &pid))
        return -1;
    t = &vm->vals[pid];
    if (t->kind != PK_TUPLE || (t->n != 5 && t->n != 6))
        return fail(vm->c, "%s: persistent id at offset %zu is a %s of %u items, expected a "
                    "('storage', type, key, location, numel) tuple", vm->what, at,
                    pk_kind_name(t->kind), t->n);
    cls = &vm->vals[t->items[1]];
    key = &vm->vals[t->items[2]];
    loc = &vm->vals[t->items[3]];
    num = &vm->vals[t->items[4]];
    if (vm->vals[t->items[0]].kind != PK_STR ||
        !bytes_eq(vm->vals[t->items[0]].s, vm->vals[t->items[0]].slen, "storage"))
        return pk_fail(vm, at, "persistent id is not a 'storage' record");
    if (cls->kind != PK_GLOBAL || key->kind != PK_STR || loc->kind != PK_STR ||
        num->kind != PK_INT || num->i < 0)
        return pk_fail(vm, at, "malformed storage record (type, key, location, numel)");
    if (!bytes_eq(cls->s, cls->slen, "torch") && !bytes_eq(cls->s, cls->slen, "torch.cuda"))
        return fail(vm->c, "%s: storage type %s.%s at offset %zu is not a torch storage",
                    vm->what, san(cls->s, cls->slen, b, 40), san(cls->s2, cls->s2len, b + 48, 40),
                    at);
    dt = storage_class_dtype(cls->s2, cls->s2len);
    if (dt == HC_PT_INVALID)
        return fail(vm->c, "%s: unsupported storage type torch.%s (offset %zu)", vm->what,
                    san(cls->s2, cls->s2len, b, sizeof b), at);
    if (t->n == 6 && vm->vals[t->items[5]].kind != PK_NONE)
        return pk_fail(vm, at, "storage views (legacy view_metadata) are not supported");
    id = pk_new(vm, PK_STORAGE);
    if (id == PK_NIL)
        return -1;
    /* t/key/num may have moved with the pool: reload through ids. */
    t = &vm->vals[pid];
    vm->vals[id].dtype = (uint8_t)dt;
    vm->vals[id].untyped = bytes_eq(vm->vals[t->items[1]].s2, vm->vals[t->items[1]].s2len,
                                    "UntypedStorage");
    vm->vals[id].s = vm->vals[t->items[2]].s;
    vm->vals[id].slen = vm->vals[t->items[2]].slen;
    vm->vals[id].i = vm->vals[t->items[4]].i;
    return pk_push(vm, id);
}

static int pk_int_arg(const pk_val *v, int64_t *out)
{
    if (v->kind != PK_INT && v->kind != PK_BOOL)
        return -1;
    *out = v->i;
    return 0;
}

/* _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata]) and
 * _rebuild_tensor_v3(..., hooks, dtype[, metadata]): check everything the data walk will
 * rely on, so that it cannot step outside the storage. */
static int pk_rebuild(pk_vm *vm, size_t at, const pk_val *args, int v3, uint32_t *out)
{
    const pk_val *st = &vm->vals[args->items[0]], *sz = &vm->vals[args->items[2]],
                 *sd = &vm->vals[args->items[3]];
    pk_tensor tn;
    size_t es;
    int64_t maxi = 0;
    uint32_t id;
    memset(&tn, 0, sizeof tn);
    if (st->kind != PK_STORAGE)
        return fail(vm->c, "%s: tensor at offset %zu is built on a %s, not a storage", vm->what,
                    at, pk_kind_name(st->kind));
    tn.storage = args->items[0];
    tn.dtype = (hc_pt_dtype)st->dtype;
    if (v3) {
        const pk_val *d = &vm->vals[args->items[6]];
        char b[64];
        if (d->kind != PK_GLOBAL || !bytes_eq(d->s, d->slen, "torch"))
            return pk_fail(vm, at, "tensor dtype is not a torch dtype");
        tn.dtype = dtype_by_name(d->s2, d->s2len);
        if (tn.dtype == HC_PT_INVALID)
            return fail(vm->c, "%s: unsupported dtype torch.%s (offset %zu)", vm->what,
                        san(d->s2, d->s2len, b, sizeof b), at);
        if (!st->untyped && tn.dtype != (hc_pt_dtype)st->dtype)
            return pk_fail(vm, at, "tensor dtype differs from its typed storage");
    }
    es = hc_pt_dtype_size(tn.dtype);
    tn.elems = st->untyped ? st->i / (int64_t)es : st->i;
    if (pk_int_arg(&vm->vals[args->items[1]], &tn.offset) || tn.offset < 0)
        return pk_fail(vm, at, "tensor storage offset is not a non-negative int");
    if (sz->kind != PK_TUPLE || sd->kind != PK_TUPLE || sz->n != sd->n)
        return pk_fail(vm, at, "tensor size and stride are not tuples of the same length");
    if (sz->n > HC_PT_MAX_DIMS)
        return fail(vm->c, "%s: tensor has %u dimensions, at most %d are supported", vm->what,
                    sz->n, HC_PT_MAX_DIMS);
    tn.ndim = (int)sz->n;
    tn.numel = 1;
    for (int d = 0; d < tn.ndim; d++) {
        if (pk_int_arg(&vm->vals[sz->items[d]], &tn.size[d]) || tn.size[d] < 0 ||
            pk_int_arg(&vm->vals[sd->items[d]], &tn.stride[d]) || tn.stride[d] < 0)
            return pk_fail(vm, at, "tensor size or stride is not a non-negative int");
        if (tn.size[d] && tn.numel > HC_PT_MAX_NUMEL / tn.size[d])
            return fail(vm->c, "%s: tensor has more than %lld elements (offset %zu)", vm->what,
                        (long long)HC_PT_MAX_NUMEL, at);
        tn.numel *= tn.size[d];
    }
    if (tn.numel > 0) {
        /* Highest element index touched: offset + sum (size - 1) * stride. */
        maxi = tn.offset;
        for (int d = 0; d < tn.ndim; d++) {
            int64_t span = tn.size[d] - 1;
            if (span && tn.stride[d] > (INT64_MAX - maxi) / span)
                return pk_fail(vm, at, "tensor strides overflow");
            maxi += span * tn.stride[d];
        }
        if (maxi >= tn.elems)
            return fail(vm->c, "%s: tensor reaches element %lld of a storage of %lld %s "
                        "elements (offset %zu)", vm->what, (long long)maxi,
                        (long long)tn.elems, hc_pt_dtype_name(tn.dtype), at);
    }
    if (vm->vals[args->items[5]].kind != PK_DICT && vm->vals[args->items[5]].kind != PK_NONE)
        return pk_fail(vm, at, "tensor backward hooks are not a dict");
    if (grow((void **)&vm->tens, &vm->cap_tens, (uint64_t)vm->n_tens + 1, sizeof *vm->tens,
             PK_MAX_VALUES))
        return fail(vm->c, "%s: too many tensors", vm->what);
    id = pk_new(vm, PK_TENSOR);
    if (id == PK_NIL)
        return -1;
    vm->tens[vm->n_tens] = tn;
    vm->vals[id].i = vm->n_tens++;
    *out = id;
    return 0;
}

/* REDUCE: only the callables torch uses to pickle one tensor. */
static int pk_reduce(pk_vm *vm, size_t at)
{
    uint32_t argid = PK_NIL, fid = PK_NIL, res = PK_NIL;
    const pk_val *f, *a;
    char b1[64], b2[64];
    if (pk_pop(vm, at, &argid) || pk_pop(vm, at, &fid))
        return -1;
    f = &vm->vals[fid];
    a = &vm->vals[argid];
    if (f->kind != PK_GLOBAL)
        return fail(vm->c, "%s: REDUCE calls a %s at offset %zu", vm->what,
                    pk_kind_name(f->kind), at);
    if (a->kind != PK_TUPLE)
        return pk_fail(vm, at, "REDUCE arguments are not a tuple");
    if (bytes_eq(f->s, f->slen, "torch._utils")) {
        if (bytes_eq(f->s2, f->s2len, "_rebuild_tensor_v2") && (a->n == 6 || a->n == 7)) {
            if (pk_rebuild(vm, at, a, 0, &res))
                return -1;
        } else if (bytes_eq(f->s2, f->s2len, "_rebuild_tensor_v3") && (a->n == 7 || a->n == 8)) {
            if (pk_rebuild(vm, at, a, 1, &res))
                return -1;
        } else if ((bytes_eq(f->s2, f->s2len, "_rebuild_parameter") && a->n == 3) ||
                   (bytes_eq(f->s2, f->s2len, "_rebuild_parameter_with_state") && a->n == 4)) {
            /* nn.Parameter: the data tensor is all we want. */
            res = a->items[0];
            if (vm->vals[res].kind != PK_TENSOR)
                return pk_fail(vm, at, "parameter data is not a tensor");
        }
    } else if (bytes_eq(f->s, f->slen, "collections") &&
               bytes_eq(f->s2, f->s2len, "OrderedDict") && a->n == 0) {
        res = pk_new(vm, PK_DICT);
        if (res == PK_NIL)
            return -1;
    }
    if (res == PK_NIL)
        return fail(vm->c, "%s: pickle calls %s.%s with %u arguments at offset %zu, which is "
                    "not part of a saved tensor", vm->what, san(f->s, f->slen, b1, sizeof b1),
                    san(f->s2, f->s2len, b2, sizeof b2), a->n, at);
    return pk_push(vm, res);
}

/* Run one pickle from vm->pos to its STOP; *result = the value it returns. */
static int pk_run(pk_vm *vm, uint32_t *result)
{
#define NEED(n)                                                                                \
    do {                                                                                       \
        if ((uint64_t)(n) > vm->len - vm->pos)                                                 \
            return pk_fail(vm, at, "pickle truncated");                                        \
    } while (0)
    while (vm->pos < vm->len) {
        size_t at = vm->pos;
        uint8_t op = vm->p[vm->pos++];
        const uint8_t *q = vm->p + vm->pos;
        uint32_t a = PK_NIL, b = PK_NIL, start = 0;
        switch (op) {
        case 0x80: /* PROTO */
            NEED(1);
            if (q[0] > 5)
                return pk_fail(vm, at, "unsupported pickle protocol");
            vm->pos += 1;
            break;
        case 0x95: /* FRAME: a length hint only */
            NEED(8);
            vm->pos += 8;
            break;
        case '.': /* STOP */
            if (pk_pop(vm, at, result))
                return -1;
            return 0;
        case '(': /* MARK */
            if (grow((void **)&vm->marks, &vm->cap_marks, (uint64_t)vm->n_marks + 1,
                     sizeof *vm->marks, PK_MAX_STACK))
                return pk_fail(vm, at, "too many MARKs");
            vm->marks[vm->n_marks++] = vm->sp;
            break;
        case ')': /* EMPTY_TUPLE */
            if (pk_push(vm, pk_new(vm, PK_TUPLE)))
                return -1;
            break;
        case 't': /* TUPLE */
        case 'l': /* LIST */
        case 'd': /* DICT */
            if (pk_pop_mark(vm, at, &start) ||
                pk_collect(vm, at, op == 't' ? PK_TUPLE : op == 'l' ? PK_LIST : PK_DICT, start))
                return -1;
            break;
        case 0x85: /* TUPLE1..3 */
        case 0x86:
        case 0x87: {
            uint32_t n = (uint32_t)(op - 0x84);
            uint32_t floor = vm->n_marks ? vm->marks[vm->n_marks - 1] : 0;
            if (vm->sp < floor + n)
                return pk_fail(vm, at, "pickle stack underflow");
            if (pk_collect(vm, at, PK_TUPLE, vm->sp - n))
                return -1;
            break;
        }
        case ']': /* EMPTY_LIST */
            if (pk_push(vm, pk_new(vm, PK_LIST)))
                return -1;
            break;
        case '}': /* EMPTY_DICT */
            if (pk_push(vm, pk_new(vm, PK_DICT)))
                return -1;
            break;
        case 'a': /* APPEND */
            if (vm->sp < 2 || pk_extend(vm, at, PK_LIST, vm->sp - 1))
                return vm->sp < 2 ? pk_fail(vm, at, "pickle stack underflow") : -1;
            break;
        case 's': /* SETITEM */
            if (vm->sp < 3 || pk_extend(vm, at, PK_DICT, vm->sp - 2))
                return vm->sp < 3 ? pk_fail(vm, at, "pickle stack underflow") : -1;
            break;
        case 'e': /* APPENDS */
        case 'u': /* SETITEMS */
            if (pk_pop_mark(vm, at, &start) ||
                pk_extend(vm, at, op == 'e' ? PK_LIST : PK_DICT, start))
                return -1;
            break;
        case 'N': /* NONE */
            if (pk_push(vm, pk_new(vm, PK_NONE)))
                return -1;
            break;
        case 0x88: /* NEWTRUE */
        case 0x89: /* NEWFALSE */
            a = pk_new(vm, PK_BOOL);
            if (a == PK_NIL)
                return -1;
            vm->vals[a].i = op == 0x88;
            if (pk_push(vm, a))
                return -1;
            break;
        case 'J': /* BININT */
            NEED(4);
            vm->pos += 4;
            if (pk_int(vm, (int32_t)rd32(q)))
                return -1;
            break;
        case 'K': /* BININT1 */
            NEED(1);
            vm->pos += 1;
            if (pk_int(vm, q[0]))
                return -1;
            break;
        case 'M': /* BININT2 */
            NEED(2);
            vm->pos += 2;
            if (pk_int(vm, rd16(q)))
                return -1;
            break;
        case 0x8a: /* LONG1 */
            NEED(1);
            vm->pos += 1;
            if (pk_long(vm, q[0], at))
                return -1;
            break;
        case 0x8b: /* LONG4 */
            NEED(4);
            vm->pos += 4;
            if ((int32_t)rd32(q) < 0)
                return pk_fail(vm, at, "negative LONG4 length");
            if (pk_long(vm, rd32(q), at))
                return -1;
            break;
        case 'G': { /* BINFLOAT, big-endian */
            uint64_t u = 0;
            double d;
            NEED(8);
            for (int k = 0; k < 8; k++)
                u = u << 8 | q[k];
            vm->pos += 8;
            memcpy(&d, &u, sizeof d);
            a = pk_new(vm, PK_FLOAT);
            if (a == PK_NIL)
                return -1;
            vm->vals[a].f = d;
            if (pk_push(vm, a))
                return -1;
            break;
        }
        case 'X': /* BINUNICODE */
        case 'B': /* BINBYTES */
            NEED(4);
            vm->pos += 4;
            if (pk_str(vm, op == 'X' ? PK_STR : PK_BYTES, rd32(q), at))
                return -1;
            break;
        case 0x8c: /* SHORT_BINUNICODE */
        case 'C':  /* SHORT_BINBYTES */
            NEED(1);
            vm->pos += 1;
            if (pk_str(vm, op == 0x8c ? PK_STR : PK_BYTES, q[0], at))
                return -1;
            break;
        case 0x8d: /* BINUNICODE8 */
        case 0x8e: /* BINBYTES8 */
            NEED(8);
            vm->pos += 8;
            if (pk_str(vm, op == 0x8d ? PK_STR : PK_BYTES, rd64(q), at))
                return -1;
            break;
        case 'c': /* GLOBAL */
            if (pk_op_global(vm, at))
                return -1;
            break;
        case 0x93: { /* STACK_GLOBAL */
            const pk_val *m, *n;
            if (pk_pop(vm, at, &b) || pk_pop(vm, at, &a))
                return -1;
            m = &vm->vals[a];
            n = &vm->vals[b];
            if (m->kind != PK_STR || n->kind != PK_STR)
                return pk_fail(vm, at, "STACK_GLOBAL needs two strings");
            if (pk_global(vm, m->s, m->slen, n->s, n->slen))
                return -1;
            break;
        }
        case 'q': /* BINPUT */
            NEED(1);
            vm->pos += 1;
            if (pk_memo_put(vm, at, q[0]))
                return -1;
            break;
        case 'r': /* LONG_BINPUT */
            NEED(4);
            vm->pos += 4;
            if (pk_memo_put(vm, at, rd32(q)))
                return -1;
            break;
        case 0x94: /* MEMOIZE */
            if (pk_memo_put(vm, at, vm->n_memo))
                return -1;
            break;
        case 'h': /* BINGET */
            NEED(1);
            vm->pos += 1;
            if (pk_memo_get(vm, at, q[0]))
                return -1;
            break;
        case 'j': /* LONG_BINGET */
            NEED(4);
            vm->pos += 4;
            if (pk_memo_get(vm, at, rd32(q)))
                return -1;
            break;
        case 'Q': /* BINPERSID */
            if (pk_persid(vm, at))
                return -1;
            break;
        case 'R': /* REDUCE */
            if (pk_reduce(vm, at))
                return -1;
            break;
        case 'b': /* BUILD: state is ignored (none matters for the values) */
            if (pk_pop(vm, at, &a) || pk_top(vm, at, &b))
                return -1;
            if (vm->vals[b].kind != PK_TENSOR && vm->vals[b].kind != PK_DICT)
                return fail(vm->c, "%s: BUILD on a %s at offset %zu", vm->what,
                            pk_kind_name(vm->vals[b].kind), at);
            break;
        case '0': /* POP */
            if (pk_pop(vm, at, &a))
                return -1;
            break;
        case '1': /* POP_MARK */
            if (pk_pop_mark(vm, at, &start))
                return -1;
            if (start > vm->sp)
                return pk_fail(vm, at, "MARK above the stack top");
            vm->sp = start;
            break;
        case '2': /* DUP */
            if (pk_top(vm, at, &a) || pk_push(vm, a))
                return -1;
            break;
        default:
            return fail(vm->c, "%s: unsupported pickle opcode 0x%02x at offset %zu", vm->what,
                        op, at);
        }
    }
    return fail(vm->c, "%s: pickle ends without STOP", vm->what);
#undef NEED
}

static int pk_start(pk_vm *vm, pt_ctx *c, const char *what, const uint8_t *p, size_t len)
{
    memset(vm, 0, sizeof *vm);
    vm->c = c;
    vm->what = what;
    vm->p = p;
    vm->len = len;
    return 0;
}

/* ---- values -------------------------------------------------------------------------- */
static double f16_to_double(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 0)
        v = ldexp(m, -24);
    else if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

static void load_elem(hc_pt_dtype dt, const uint8_t *p, double *f, int64_t *i)
{
    float fl;
    uint32_t u;
    uint64_t u64;
    double d;
    int64_t iv = 0;
    switch (dt) {
    case HC_PT_BOOL: iv = p[0] != 0; break;
    case HC_PT_U8: iv = p[0]; break;
    case HC_PT_I8: iv = (int8_t)p[0]; break;
    case HC_PT_I16: iv = (int16_t)rd16(p); break;
    case HC_PT_I32: iv = (int32_t)rd32(p); break;
    case HC_PT_I64: iv = (int64_t)rd64(p); break;
    case HC_PT_F16: *f = f16_to_double(rd16(p)); return;
    case HC_PT_BF16:
        u = (uint32_t)rd16(p) << 16;
        memcpy(&fl, &u, sizeof fl);
        *f = fl;
        return;
    case HC_PT_F32:
        u = rd32(p);
        memcpy(&fl, &u, sizeof fl);
        *f = fl;
        return;
    case HC_PT_F64:
        u64 = rd64(p);
        memcpy(&d, &u64, sizeof d);
        *f = d;
        return;
    default: return;
    }
    *i = iv;
    *f = (double)iv;
}

/* Copy the tensor's elements (in logical row-major order) out of its storage bytes. */
static int fill_tensor(pt_ctx *c, const pk_tensor *tn, const uint8_t *data, uint64_t nbytes,
                       hc_pt_tensor *out)
{
    size_t es = hc_pt_dtype_size(tn->dtype);
    int64_t idx[HC_PT_MAX_DIMS] = {0}, off = tn->offset;
    size_t n = tn->numel ? (size_t)tn->numel : 1;
    /* The rebuild check proved every index < elems; the caller proved the bytes exist. */
    if ((uint64_t)tn->elems > nbytes / es)
        return fail(c, "storage holds %lld elements but only %llu bytes", (long long)tn->elems,
                    (unsigned long long)nbytes);
    out->dtype = tn->dtype;
    out->n_dims = tn->ndim;
    for (int d = 0; d < tn->ndim; d++)
        out->shape[d] = tn->size[d];
    out->numel = tn->numel;
    out->storage_offset = tn->offset;
    out->f64 = malloc(n * sizeof *out->f64);
    if (!dtype_is_float(tn->dtype))
        out->i64 = malloc(n * sizeof *out->i64);
    if (!out->f64 || (!dtype_is_float(tn->dtype) && !out->i64))
        return fail(c, "out of memory for %lld values", (long long)tn->numel);
    for (int64_t k = 0; k < tn->numel; k++) {
        int64_t iv = 0;
        load_elem(tn->dtype, data + (size_t)off * es, &out->f64[k], &iv);
        if (out->i64)
            out->i64[k] = iv;
        for (int d = tn->ndim - 1; d >= 0; d--) {
            if (++idx[d] < tn->size[d]) {
                off += tn->stride[d];
                break;
            }
            off -= tn->stride[d] * (tn->size[d] - 1);
            idx[d] = 0;
        }
    }
    return 0;
}

/* The pickle's top-level object must be a tensor. */
static int top_tensor(pt_ctx *c, pk_vm *vm, uint32_t top, const pk_tensor **tn,
                      const pk_val **st)
{
    if (vm->vals[top].kind != PK_TENSOR)
        return fail(c, "%s: the pickled object has type %s, not tensor", vm->what,
                    pk_kind_name(vm->vals[top].kind));
    *tn = &vm->tens[vm->vals[top].i];
    *st = &vm->vals[(*tn)->storage];
    return 0;
}

/* Does a storage of st->i elements fit in nbytes?  (Multiplying could overflow.) */
static int storage_fits(const pk_val *st, uint64_t nbytes)
{
    uint64_t es = st->untyped ? 1 : hc_pt_dtype_size((hc_pt_dtype)st->dtype);
    return (uint64_t)st->i <= nbytes / es;
}

/* ---- zip-format file ----------------------------------------------------------------- */
static int read_zip(pt_ctx *c, const uint8_t *buf, size_t len, hc_pt_tensor *out)
{
    zip_archive z;
    pk_vm vm;
    const zip_entry *e = NULL, *pkl = NULL;
    const uint8_t *d;
    uint64_t dn;
    size_t plen = 0;
    char *nm = NULL, b[96];
    uint32_t top = PK_NIL;
    const pk_tensor *tn = NULL;
    const pk_val *st = NULL;
    int rc = -1;

    pk_start(&vm, c, "data.pkl", NULL, 0);
    if (zip_open(c, &z, buf, len))
        goto out;
    /* torch names every record <archive>/...; the archive name is free (the file's stem
     * in torch 1.x, "archive" in 2.x), so find it from the one <archive>/data.pkl. */
    for (uint64_t i = 0; i < z.n; i++) {
        const zip_entry *x = &z.e[i];
        if (x->name_len > 9 && memcmp(x->name + x->name_len - 9, "/data.pkl", 9) == 0 &&
            !memchr(x->name, '/', x->name_len - 9)) {
            if (pkl) {
                fail(c, "zip holds more than one <name>/data.pkl record");
                goto out;
            }
            pkl = x;
        }
    }
    if (!pkl) {
        fail(c, "zip holds no <name>/data.pkl record: not a torch.save() file");
        goto out;
    }
    plen = pkl->name_len - 8; /* "<archive>/" */
    nm = malloc(plen + 5 + 65536 + 1);
    if (!nm) {
        fail(c, "out of memory");
        goto out;
    }
    memcpy(nm, pkl->name, plen);

    strcpy(nm + plen, "version");
    rc = zip_find(c, &z, nm, &e);
    if (rc == 1)
        fail(c, "zip holds no %s record", san((const uint8_t *)nm, strlen(nm), b, sizeof b));
    if (rc || zip_data(c, &z, e, &d, &dn))
        goto fail;
    {
        /* A small decimal number, maybe newline-terminated ("3\n" from torch 1.13). */
        uint64_t k = 0, v = 0;
        while (k < dn && k < 8 && d[k] >= '0' && d[k] <= '9')
            v = v * 10 + (uint64_t)(d[k++] - '0');
        while (k < dn && (d[k] == '\n' || d[k] == '\r'))
            k++;
        if (k == 0 || k != dn || v == 0) {
            fail(c, "version record is not a number");
            goto fail;
        }
    }
    strcpy(nm + plen, "byteorder");
    rc = zip_find(c, &z, nm, &e);
    if (rc < 0)
        goto fail;
    if (rc == 0) {
        if (zip_data(c, &z, e, &d, &dn))
            goto fail;
        if (bytes_eq(d, dn, "big")) {
            fail(c, "big-endian archive (byteorder \"big\") is not supported");
            goto fail;
        }
        if (!bytes_eq(d, dn, "little")) {
            fail(c, "byteorder record is \"%s\", expected \"little\"", san(d, dn, b, 32));
            goto fail;
        }
    }

    if (zip_data(c, &z, pkl, &d, &dn))
        goto fail;
    vm.p = d;
    vm.len = (size_t)dn;
    if (pk_run(&vm, &top) || top_tensor(c, &vm, top, &tn, &st))
        goto fail;

    memcpy(nm + plen, "data/", 5);
    memcpy(nm + plen + 5, st->s, st->slen > 65536 ? 65536 : st->slen);
    nm[plen + 5 + (st->slen > 65536 ? 65536 : st->slen)] = 0;
    if (st->slen > 65536 || memchr(st->s, 0, st->slen)) {
        fail(c, "storage key \"%s\" is not a valid record name", san(st->s, st->slen, b, 32));
        goto fail;
    }
    rc = zip_find(c, &z, nm, &e);
    if (rc == 1)
        fail(c, "storage key \"%s\" has no %s record", san(st->s, st->slen, b, 32),
             san((const uint8_t *)nm, strlen(nm), b + 40, 56));
    if (rc || zip_data(c, &z, e, &d, &dn))
        goto fail;
    if (!storage_fits(st, dn)) {
        fail(c, "storage \"%s\" holds %lld %s elements but its record has only %llu bytes",
             san(st->s, st->slen, b, 32), (long long)st->i,
             st->untyped ? "byte" : hc_pt_dtype_name((hc_pt_dtype)st->dtype),
             (unsigned long long)dn);
        goto fail;
    }
    rc = fill_tensor(c, tn, d, dn, out);
    goto out;
fail:
    rc = -1;
out:
    free(nm);
    free(z.e);
    pk_free(&vm);
    return rc;
}

/* ---- legacy stream file -------------------------------------------------------------- */
/* 0x1950a86a20f9469cfc6c, the first pickle of every legacy torch file (LONG1 bytes). */
static const uint8_t legacy_magic[10] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

static int legacy_header(pt_ctx *c, const uint8_t *buf, size_t len, size_t *pos)
{
    static const char *what[3] = {"legacy magic pickle", "legacy protocol pickle",
                                  "legacy sys_info pickle"};
    int rc = -1;
    for (int k = 0; k < 3; k++) {
        pk_vm vm;
        uint32_t v;
        const pk_val *x;
        pk_start(&vm, c, what[k], buf, len);
        vm.pos = *pos;
        if (pk_run(&vm, &v))
            goto next;
        x = &vm.vals[v];
        if (k == 0 && (x->kind != PK_BIGINT || x->slen != sizeof legacy_magic ||
                       memcmp(x->s, legacy_magic, sizeof legacy_magic) != 0)) {
            fail(c, "not a torch file: the legacy magic number is missing");
            goto next;
        }
        if (k == 1 && (x->kind != PK_INT || x->i != 1001)) {
            fail(c, "legacy protocol version is not 1001");
            goto next;
        }
        if (k == 2) {
            if (x->kind != PK_DICT) {
                fail(c, "legacy sys_info is a %s, not a dict", pk_kind_name(x->kind));
                goto next;
            }
            for (uint32_t j = 0; j < x->n; j++) {
                const pk_val *kk = &vm.vals[x->items[2 * j]], *vv = &vm.vals[x->items[2 * j + 1]];
                if (kk->kind == PK_STR && bytes_eq(kk->s, kk->slen, "little_endian") &&
                    vv->kind == PK_BOOL && !vv->i) {
                    fail(c, "big-endian legacy file is not supported");
                    goto next;
                }
            }
        }
        *pos = vm.pos;
        pk_free(&vm);
        continue;
    next:
        pk_free(&vm);
        return rc;
    }
    return 0;
}

static int read_legacy(pt_ctx *c, const uint8_t *buf, size_t len, hc_pt_tensor *out)
{
    pk_vm vm, kvm;
    size_t pos = 0;
    uint32_t top = PK_NIL, keys = PK_NIL;
    const pk_tensor *tn = NULL;
    const pk_val *st = NULL, *kl;
    const uint8_t *data = NULL;
    uint64_t dn = 0;
    char b[64];
    int rc = -1;

    pk_start(&vm, c, "legacy tensor pickle", buf, len);
    pk_start(&kvm, c, "legacy storage-key pickle", buf, len);
    if (legacy_header(c, buf, len, &pos))
        goto out;
    vm.pos = pos;
    if (pk_run(&vm, &top) || top_tensor(c, &vm, top, &tn, &st))
        goto out;
    kvm.pos = vm.pos;
    if (pk_run(&kvm, &keys))
        goto out;
    kl = &kvm.vals[keys];
    if (kl->kind != PK_LIST) {
        fail(c, "legacy storage keys are a %s, not a list", pk_kind_name(kl->kind));
        goto out;
    }
    /* Storages follow in list order, each an int64 element count and the raw bytes; walk
     * them up to ours, sizing each by the storage record the tensor pickle gave its key. */
    pos = kvm.pos;
    for (uint32_t j = 0; j < kl->n && !data; j++) {
        const pk_val *k = &kvm.vals[kl->items[j]], *rec = NULL;
        uint64_t cnt, es;
        if (k->kind != PK_STR) {
            fail(c, "legacy storage key %u is a %s, not a str", j, pk_kind_name(k->kind));
            goto out;
        }
        for (uint32_t i = 0; i < vm.n_vals && !rec; i++)
            if (vm.vals[i].kind == PK_STORAGE && vm.vals[i].slen == k->slen &&
                memcmp(vm.vals[i].s, k->s, k->slen) == 0)
                rec = &vm.vals[i];
        if (!rec) {
            fail(c, "legacy storage key \"%s\" is not used by the tensor pickle",
                 san(k->s, k->slen, b, sizeof b));
            goto out;
        }
        es = rec->untyped ? 1 : hc_pt_dtype_size((hc_pt_dtype)rec->dtype);
        if (len - pos < 8) {
            fail(c, "legacy storage \"%s\": file truncated before its size",
                 san(k->s, k->slen, b, sizeof b));
            goto out;
        }
        cnt = rd64(buf + pos);
        pos += 8;
        if (cnt > (len - pos) / es) {
            fail(c, "legacy storage \"%s\": %llu elements run past the end of the file",
                 san(k->s, k->slen, b, sizeof b), (unsigned long long)cnt);
            goto out;
        }
        if (k->slen == st->slen && memcmp(k->s, st->s, st->slen) == 0) {
            if (!storage_fits(st, cnt * es)) {
                fail(c, "legacy storage \"%s\" holds %llu elements, the pickle says %lld",
                     san(k->s, k->slen, b, sizeof b), (unsigned long long)cnt,
                     (long long)st->i);
                goto out;
            }
            data = buf + pos;
            dn = cnt * es;
        }
        pos += (size_t)(cnt * es);
    }
    if (!data) {
        fail(c, "legacy storage \"%s\" is missing from the storage list",
             san(st->s, st->slen, b, sizeof b));
        goto out;
    }
    rc = fill_tensor(c, tn, data, dn, out);
    if (rc == 0)
        out->legacy = 1;
out:
    pk_free(&vm);
    pk_free(&kvm);
    return rc;
}

/* ---- public entry points ------------------------------------------------------------- */
void hc_pt_tensor_free(hc_pt_tensor *t)
{
    if (!t)
        return;
    free(t->f64);
    free(t->i64);
    memset(t, 0, sizeof *t);
}

int hc_pt_read_memory(const void *buf, size_t len, const char *name, hc_pt_tensor *out)
{
    const uint8_t *p = buf;
    pt_ctx c;
    int rc;
    memset(&c, 0, sizeof c);
    memset(out, 0, sizeof *out);
    if (len >= 4 && p[0] == 'P' && p[1] == 'K' && (p[2] == 3 || p[2] == 5))
        rc = read_zip(&c, p, len, out);
    else if (len >= 2 && p[0] == 0x80 && p[1] >= 2 && p[1] <= 5)
        rc = read_legacy(&c, p, len, out);
    else
        rc = fail(&c, "not a torch file: neither a zip archive nor a legacy pickle stream");
    if (rc) {
        hc_pt_tensor_free(out);
        hc_set_error("%s: %s", name, c.err);
        return -1;
    }
    return 0;
}

int hc_pt_read(const char *path, hc_pt_tensor *out)
{
    struct stat sb;
    void *map = MAP_FAILED;
    int fd, rc = -1;
    memset(out, 0, sizeof *out);
    /* O_NONBLOCK: opening a FIFO must not wait for a writer before fstat
     * refuses it (reads of a regular file ignore the flag). */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        hc_set_error("%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        hc_set_error("%s: not a regular file", path);
        goto out;
    }
    if (sb.st_size == 0) {
        hc_set_error("%s: empty file", path);
        goto out;
    }
    map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        hc_set_error("%s: cannot map: %s", path, strerror(errno));
        goto out;
    }
    rc = hc_pt_read_memory(map, (size_t)sb.st_size, path, out);
out:
    if (map != MAP_FAILED)
        munmap(map, (size_t)sb.st_size);
    close(fd);
    return rc;
}

int hc_pt_read_1d(const char *path, hc_pt_tensor *out)
{
    if (hc_pt_read(path, out))
        return -1;
    if (out->n_dims != 1) {
        char shape[160] = "";
        size_t k = 0;
        for (int d = 0; d < out->n_dims && k < sizeof shape - 24; d++)
            k += (size_t)snprintf(shape + k, sizeof shape - k, "%s%lld", d ? ", " : "",
                                  (long long)out->shape[d]);
        if (out->n_dims == 0)
            hc_set_error("%s: holds a scalar (0-D tensor), expected a 1-D tensor", path);
        else
            hc_set_error("%s: holds a %d-D tensor [%s], expected a 1-D tensor", path,
                         out->n_dims, shape);
        hc_pt_tensor_free(out);
        return -1;
    }
    return 0;
}

/* ---- activation/ directory ----------------------------------------------------------- */
typedef struct act_file {
    int64_t layer;
    char name[64];
} act_file;

static int act_cmp(const void *a, const void *b)
{
    const act_file *x = a, *y = b;
    if (x->layer != y->layer)
        return x->layer < y->layer ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* "activation_<digits>.pt" -> layer number, else -1. */
static int64_t act_layer(const char *name)
{
    const char *p;
    int64_t v = 0;
    int nd = 0;
    if (strncmp(name, "activation_", 11) != 0)
        return -1;
    p = name + 11;
    while (*p >= '0' && *p <= '9') {
        if (++nd > 9)
            return -1;
        v = v * 10 + (*p++ - '0');
    }
    return nd && strcmp(p, ".pt") == 0 ? v : -1;
}

void hc_pt_activation_free(hc_pt_activation *a)
{
    if (!a)
        return;
    free(a->counts);
    memset(a, 0, sizeof *a);
}

int hc_pt_read_activation_dir(const char *dir, int n_layer, int64_t n_ff,
                              hc_pt_activation *out)
{
    DIR *d;
    struct dirent *de;
    act_file *files = NULL;
    size_t n = 0, cap = 0;
    hc_pt_tensor t;
    char *path = NULL;
    int rc = -1;

    memset(out, 0, sizeof *out);
    memset(&t, 0, sizeof t);
    d = opendir(dir);
    if (!d) {
        hc_set_error("%s: cannot open directory: %s", dir, strerror(errno));
        return -1;
    }
    while ((de = readdir(d)) != NULL) {
        int64_t layer = act_layer(de->d_name);
        if (layer < 0 || strlen(de->d_name) >= sizeof files->name)
            continue;
        if (n == cap) {
            act_file *nf = realloc(files, (cap ? cap * 2 : 32) * sizeof *files);
            if (!nf) {
                hc_set_error("%s: out of memory", dir);
                closedir(d);
                goto out;
            }
            files = nf;
            cap = cap ? cap * 2 : 32;
        }
        files[n].layer = layer;
        strcpy(files[n].name, de->d_name);
        n++;
    }
    closedir(d);
    if (n == 0) {
        hc_set_error("%s: no activation_<i>.pt files", dir);
        goto out;
    }
    /* By number, never by name: "activation_10" < "activation_2" as text. */
    qsort(files, n, sizeof *files, act_cmp);
    for (size_t i = 1; i < n; i++)
        if (files[i].layer == files[i - 1].layer) {
            hc_set_error("%s: layer %lld appears twice (%s and %s)", dir,
                         (long long)files[i].layer, files[i - 1].name, files[i].name);
            goto out;
        }
    for (size_t i = 0; i < n; i++)
        if (files[i].layer != (int64_t)i) {
            /* Sorted and distinct, so the first mismatch is the first missing layer. */
            if (n_layer > 0 && i >= (size_t)n_layer)
                hc_set_error("%s: %s is beyond the model's %d layers", dir, files[i].name,
                             n_layer);
            else
                hc_set_error("%s: no activation_%zu.pt (found %zu files up to %s; layers must "
                             "be 0..L-1 without gaps)", dir, i, n, files[n - 1].name);
            goto out;
        }
    if (n_layer > 0 && n != (size_t)n_layer) {
        if (n > (size_t)n_layer)
            hc_set_error("%s: %s is beyond the model's %d layers", dir, files[n_layer].name,
                         n_layer);
        else
            hc_set_error("%s: no activation_%zu.pt: the model has %d layers", dir, n, n_layer);
        goto out;
    }
    if (n > INT32_MAX) {
        hc_set_error("%s: too many activation files", dir);
        goto out;
    }
    path = malloc(strlen(dir) + 1 + sizeof files->name);
    if (!path) {
        hc_set_error("%s: out of memory", dir);
        goto out;
    }
    out->n_layer = (int)n;
    out->whole = 1;
    for (size_t i = 0; i < n; i++) {
        sprintf(path, "%s/%s", dir, files[i].name);
        if (hc_pt_read_1d(path, &t))
            goto out;
        if (i == 0 && n_ff <= 0) {
            if (t.numel == 0) {
                hc_set_error("%s: holds no values", path);
                goto out;
            }
            n_ff = t.numel;
        }
        if (t.numel != n_ff) {
            hc_set_error("%s: %lld values, expected %lld (n_ff)", path, (long long)t.numel,
                         (long long)n_ff);
            goto out;
        }
        if (i == 0) {
            if ((uint64_t)n_ff > SIZE_MAX / sizeof(double) / n) {
                hc_set_error("%s: %zu x %lld counts do not fit in memory", dir, n,
                             (long long)n_ff);
                goto out;
            }
            out->n_ff = n_ff;
            out->counts = malloc(n * (size_t)n_ff * sizeof *out->counts);
            if (!out->counts) {
                hc_set_error("%s: out of memory for %zu x %lld counts", dir, n, (long long)n_ff);
                goto out;
            }
        }
        for (int64_t r = 0; r < n_ff; r++) {
            double v = t.f64[r];
            if (!isfinite(v) || v < 0) {
                hc_set_error("%s: value %g at [%lld] is not a count (negative or not finite)",
                             path, v, (long long)r);
                goto out;
            }
            if (v != floor(v))
                out->whole = 0;
            out->counts[i * (size_t)n_ff + (size_t)r] = v;
        }
        hc_pt_tensor_free(&t);
    }
    rc = 0;
out:
    hc_pt_tensor_free(&t);
    free(path);
    free(files);
    if (rc)
        hc_pt_activation_free(out);
    return rc;
}
