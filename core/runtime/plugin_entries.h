/*
 * The entries of hc_plugin_ops as data, made from HC_PLUGIN_ENTRIES
 * (include/hotcold/plugin.h): what the loader checks a table against, the
 * op names HOTCOLD_DISABLE_OPS takes, and how the core's op wrappers
 * (core/exec/device.c) find and name an op.  plugin_entries.c checks at
 * build time that the list names every field of the struct, in order.
 */
#ifndef HC_CORE_PLUGIN_ENTRIES_H
#define HC_CORE_PLUGIN_ENTRIES_H

#include <stddef.h>

#include "hotcold/plugin.h"

typedef struct hc_entry_info {
    const char *name; /* the field, "axpy_rows" */
    int op;           /* hc_op_id, or HC_OP_NONE */
    int required;     /* HC_ENTRY_REQUIRED or HC_ENTRY_OPTIONAL */
    int minor;        /* the ABI minor that appended it */
    size_t offset;    /* offsetof(hc_plugin_ops, name) */
} hc_entry_info;

/* Every entry, in table order. */
extern const hc_entry_info hc_entries[];
extern const int hc_n_entries;

/* The entry of op id `op`, or NULL for HC_OP_NONE and unknown ids. */
const hc_entry_info *hc_entry_of_op(int op);
/* The entry named by the first `len` bytes of `name`, or NULL. */
const hc_entry_info *hc_entry_named(const char *name, size_t len);
/* HC_OPS_HAS for an entry known at run time: inside ops->size, non-NULL. */
int hc_entry_present(const hc_plugin_ops *ops, const hc_entry_info *e);
/* Bytes a table must have to hold every required entry, and the last of
 * them (the loader's "too small" check). */
size_t hc_entries_min_size(const hc_entry_info **last_required);

#endif /* HC_CORE_PLUGIN_ENTRIES_H */
