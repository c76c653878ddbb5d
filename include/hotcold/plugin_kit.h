/*
 * hotcold plugin kit: what every device plugin writes for itself, written
 * once.  Header-only (every function static inline) and over plugin.h
 * alone: a plugin that includes it still links nothing from hotcold.
 *
 *  - messages: a plugin keeps its own last_error (and its own locking); a
 *    check here formats its one-line message and hands it to the plugin's
 *    hc_kit_fail_fn, which records it and returns the status;
 *  - the host: logging through hc_plugin_host (checking its size first),
 *    copying the host struct and filling a caller's hc_device_info only as
 *    far as its size says;
 *  - sizes: products that cannot wrap, ranges that cannot wrap;
 *  - checks with the messages the core shows, naming the op, the argument
 *    and the offending numbers: a range inside its buffer, an element
 *    count, a row list, two ranges that must not overlap, a weight's type
 *    and shape.
 *
 * The buffer and handle checks themselves (is this one of mine? which
 * device?) stay in each plugin: only it knows its objects.  Nothing here
 * allocates, prints or keeps state.
 */
#ifndef HOTCOLD_PLUGIN_KIT_H
#define HOTCOLD_PLUGIN_KIT_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hotcold/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define HC_KIT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define HC_KIT_PRINTF(a, b)
#endif

/* The longest message a check formats (longer ones are cut). */
#define HC_KIT_MSG_LEN 320

/* The plugin's side of a failed check: record `msg` where last_error()
 * finds it (user is the plugin's context, or whatever it passed), log it
 * if it likes, and return st. */
typedef hc_status (*hc_kit_fail_fn)(void *user, hc_status st, const char *msg);

/* ---- messages ------------------------------------------------------------ */

static inline hc_status hc_kit_vfailf(hc_kit_fail_fn on_fail, void *user, hc_status st,
                                      const char *fmt, va_list ap)
{
    char msg[HC_KIT_MSG_LEN];
    vsnprintf(msg, sizeof msg, fmt, ap);
    return on_fail ? on_fail(user, st, msg) : st;
}

static inline hc_status hc_kit_failf(hc_kit_fail_fn on_fail, void *user, hc_status st,
                                     const char *fmt, ...) HC_KIT_PRINTF(4, 5);
static inline hc_status hc_kit_failf(hc_kit_fail_fn on_fail, void *user, hc_status st,
                                     const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    st = hc_kit_vfailf(on_fail, user, st, fmt, ap);
    va_end(ap);
    return st;
}

/* msg into a last_error buffer of len bytes (cut, always terminated). */
static inline void hc_kit_set_error(char *buf, size_t len, const char *msg)
{
    if (buf && len)
        snprintf(buf, len, "%s", msg ? msg : "");
}

/* What a status means, for messages: "invalid argument", ... */
static inline const char *hc_kit_status_name(hc_status st)
{
    switch (st) {
    case HC_OK: return "ok";
    case HC_E_UNSUPPORTED: return "unsupported";
    case HC_E_INVALID: return "invalid argument";
    case HC_E_NOMEM: return "out of memory";
    case HC_E_DEVICE: return "device error";
    case HC_E_NODEV: return "no device";
    case HC_E_INTERNAL: return "internal error";
    }
    return "unknown status";
}

/* ---- the host ------------------------------------------------------------ */

/* Does the host (of whatever size it was built with) give a log callback? */
static inline int hc_kit_host_has_log(const hc_plugin_host *host)
{
    return host && host->size >= offsetof(hc_plugin_host, log_user) + sizeof(void *) &&
           host->log != NULL;
}

/* msg to the host's log at `level` (HC_LOG_*), if it has one. */
static inline void hc_kit_host_log(const hc_plugin_host *host, int level, const char *msg)
{
    if (hc_kit_host_has_log(host))
        host->log(host->log_user, level, msg);
}

static inline void hc_kit_host_logf(const hc_plugin_host *host, int level, const char *fmt, ...)
    HC_KIT_PRINTF(3, 4);
static inline void hc_kit_host_logf(const hc_plugin_host *host, int level, const char *fmt, ...)
{
    char msg[HC_KIT_MSG_LEN];
    va_list ap;
    if (!hc_kit_host_has_log(host))
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    host->log(host->log_user, level, msg);
}

/* *dst = the fields of *src that src's size covers, the rest zero; dst's
 * size is then this header's (a plugin may keep the copy; an older host's
 * struct is shorter). */
static inline void hc_kit_host_copy(hc_plugin_host *dst, const hc_plugin_host *src)
{
    memset(dst, 0, sizeof *dst);
    if (src)
        memcpy(dst, src, src->size < sizeof *dst ? src->size : sizeof *dst);
    dst->size = sizeof *dst;
}

/* device_info's last step: as much of *info as the caller's out->size
 * says it has room for (the struct grows at the end); out->size is then
 * the size filled.  A plugin refuses an out->size below sizeof(size_t)
 * before it gets here. */
static inline void hc_kit_device_info_copy(hc_device_info *out, const hc_device_info *info)
{
    size_t n = out->size < sizeof *info ? out->size : sizeof *info;
    hc_device_info copy = *info;
    copy.size = n;
    memcpy(out, &copy, n);
}

/* ---- environment knobs ----------------------------------------------------- */

/* A count of bytes from environment variable `name` (a knob such as
 * HOTCOLD_VULKAN_MEMORY_LIMIT): 1 with *out the value; 0 when it is unset or
 * empty, -1 when it is not a decimal number that fits 64 bits (a sign, a
 * suffix, too many digits), both with *out = UINT64_MAX (no limit). */
static inline int hc_kit_env_bytes(const char *name, uint64_t *out)
{
    const char *env = getenv(name);
    char *end = NULL;

    *out = UINT64_MAX;
    if (!env || !*env)
        return 0;
    if (*env < '0' || *env > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(env, &end, 10);
    if (errno || *end)
        return -1;
    *out = (uint64_t)v;
    return 1;
}

/* ---- sizes ----------------------------------------------------------------- */

/* *out = a * b * c; 0 (and *out unchanged) when it does not fit 64 bits. */
static inline int hc_kit_mul3(uint64_t a, uint64_t b, uint64_t c, uint64_t *out)
{
    if ((b && a > UINT64_MAX / b) || (c && a * b > UINT64_MAX / c))
        return 0;
    *out = a * b * c;
    return 1;
}

/* Do `bytes` bytes at `off` lie inside a buffer of `size`?  Two comparisons,
 * so off + bytes is never formed and cannot wrap. */
static inline int hc_kit_range_inside(uint64_t off, uint64_t bytes, uint64_t size)
{
    return off <= size && bytes <= size - off;
}

/* Do [a, a + na) and [b, b + nb) share a byte?  Empty ranges share none.
 * Both must be ranges already checked to lie inside their buffers. */
static inline int hc_kit_overlap(uint64_t a, uint64_t na, uint64_t b, uint64_t nb)
{
    return na > 0 && nb > 0 && a < b + nb && b < a + na;
}

/* ---- argument checks ---------------------------------------------------------
 * Each returns HC_OK, or the status on_fail() returned. */

/* `bytes` at offset `off` of a buffer of `size` bytes, with (align_base +
 * off) a multiple of align: align_base is the buffer's address for a
 * plugin that needs aligned host addresses, 0 for one that needs aligned
 * offsets. */
static inline hc_status hc_kit_check_range(hc_kit_fail_fn on_fail, void *user, const char *op,
                                           const char *name, uint64_t off, uint64_t bytes,
                                           uint64_t size, uint64_t align, uint64_t align_base)
{
    if (!hc_kit_range_inside(off, bytes, size))
        return hc_kit_failf(on_fail, user, HC_E_INVALID,
                            "%s: %s: range [%llu, %llu + %llu) exceeds the buffer of %llu bytes",
                            op, name, (unsigned long long)off, (unsigned long long)off,
                            (unsigned long long)bytes, (unsigned long long)size);
    if (align > 1 && (align_base + off) % align != 0)
        return hc_kit_failf(on_fail, user, HC_E_INVALID, "%s: %s: offset %llu is not %llu-byte aligned",
                            op, name, (unsigned long long)off, (unsigned long long)align);
    return HC_OK;
}

/* count1 x count2 elements of `elem` bytes: *bytes, or a failure for a
 * negative count or a product that overflows. */
static inline hc_status hc_kit_check_count(hc_kit_fail_fn on_fail, void *user, const char *op,
                                           const char *name, int64_t count1, int64_t count2,
                                           uint64_t elem, uint64_t *bytes)
{
    *bytes = 0;
    if (count1 < 0 || count2 < 0)
        return hc_kit_failf(on_fail, user, HC_E_INVALID, "%s: %s: negative size (%lld x %lld)", op,
                            name, (long long)count1, (long long)count2);
    if (!hc_kit_mul3((uint64_t)count1, (uint64_t)count2, elem, bytes))
        return hc_kit_failf(on_fail, user, HC_E_INVALID, "%s: %s: size %lld x %lld x %llu overflows",
                            op, name, (long long)count1, (long long)count2,
                            (unsigned long long)elem);
    return HC_OK;
}

/* A row list in host memory: every idx[i] in [0, rows). */
static inline hc_status hc_kit_check_rows(hc_kit_fail_fn on_fail, void *user, const char *op,
                                          const int32_t *idx, int64_t n_idx, int64_t rows)
{
    for (int64_t i = 0; i < n_idx; i++)
        if (idx[i] < 0 || idx[i] >= rows)
            return hc_kit_failf(on_fail, user, HC_E_INVALID, "%s: idx[%lld] = %d is outside [0, %lld)",
                                op, (long long)i, (int)idx[i], (long long)rows);
    return HC_OK;
}

/* An output that must not overlap an input, at positions in one address
 * space (host addresses, or offsets in one buffer). */
static inline hc_status hc_kit_check_disjoint(hc_kit_fail_fn on_fail, void *user, const char *op,
                                              const char *a_name, uint64_t a, uint64_t na,
                                              const char *b_name, uint64_t b, uint64_t nb)
{
    if (hc_kit_overlap(a, na, b, nb))
        return hc_kit_failf(on_fail, user, HC_E_INVALID, "%s: %s overlaps %s", op, a_name, b_name);
    return HC_OK;
}

/* Element-wise ops may run in place: exactly the same range, or disjoint. */
static inline hc_status hc_kit_check_same_or_disjoint(hc_kit_fail_fn on_fail, void *user,
                                                      const char *op, const char *a_name,
                                                      uint64_t a, uint64_t na, const char *b_name,
                                                      uint64_t b, uint64_t nb)
{
    if ((a == b && na == nb) || !hc_kit_overlap(a, na, b, nb))
        return HC_OK;
    return hc_kit_failf(on_fail, user, HC_E_INVALID, "%s: %s partially overlaps %s", op, a_name,
                        b_name);
}

/* ---- weight types ------------------------------------------------------------ */

/* One of the weight types of this ABI (hc_type)? */
static inline int hc_kit_type_known(hc_type t)
{
    return t == HC_TYPE_F32 || t == HC_TYPE_F16 || t == HC_TYPE_Q4_0 || t == HC_TYPE_Q8_0 ||
           t == HC_TYPE_Q6_K;
}

/* Elements per block: cols must be a multiple of it (1 for F32 and F16). */
static inline int hc_kit_type_block(hc_type t)
{
    switch (t) {
    case HC_TYPE_Q4_0: return HC_QK4_0;
    case HC_TYPE_Q8_0: return HC_QK8_0;
    case HC_TYPE_Q6_K: return HC_QK_K;
    default: return 1;
    }
}

/* The alignment a weight's offset needs for whole-element loads: F32 4,
 * F16 2, the quantized types (read byte by byte) 1. */
static inline uint64_t hc_kit_weight_align(hc_type t)
{
    return t == HC_TYPE_F32 ? 4 : t == HC_TYPE_F16 ? 2 : 1;
}

/* A weight of rows x cols elements of type t: a type of this ABI (else
 * HC_E_UNSUPPORTED), a non-negative shape with cols a whole number of
 * blocks, and its size: *row_bytes per row, *bytes in all. */
static inline hc_status hc_kit_check_weights(hc_kit_fail_fn on_fail, void *user, const char *op,
                                             hc_type t, int64_t rows, int64_t cols,
                                             uint64_t *row_bytes, uint64_t *bytes)
{
    *row_bytes = *bytes = 0;
    if (!hc_kit_type_known(t))
        return hc_kit_failf(on_fail, user, HC_E_UNSUPPORTED,
                            "%s: weight type %d is not supported (F32, F16, Q4_0, Q8_0, Q6_K)", op,
                            (int)t);
    if (rows < 0 || cols < 0)
        return hc_kit_failf(on_fail, user, HC_E_INVALID, "%s: negative shape %lld x %lld", op,
                            (long long)rows, (long long)cols);
    *row_bytes = hc_type_row_size(t, cols);
    if (*row_bytes == 0 && cols > 0)
        return hc_kit_failf(on_fail, user, HC_E_INVALID,
                            "%s: cols %lld is not a multiple of %d for type %d", op,
                            (long long)cols, hc_kit_type_block(t), (int)t);
    if (!hc_kit_mul3((uint64_t)rows, *row_bytes, 1, bytes))
        return hc_kit_failf(on_fail, user, HC_E_INVALID, "%s: w: %lld rows of %llu bytes overflow",
                            op, (long long)rows, (unsigned long long)*row_bytes);
    return HC_OK;
}

#ifdef __cplusplus
}
#endif
#endif /* HOTCOLD_PLUGIN_KIT_H */
