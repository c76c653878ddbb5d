/*
 * hc_plugin_ops's entries as a table; see plugin_entries.h.
 */
#include "runtime/plugin_entries.h"

#include <string.h>

/* Every entry is a function pointer, and they follow the header without a
 * gap: entry i sits at FIRST + i pointers.  So a list that leaves a field
 * out, names one twice or has two in the wrong order fails to build. */
typedef void (*entry_fn)(void);
#define FIRST offsetof(hc_plugin_ops, probe)

enum {
#define HC_ENTRY_POS(name, op, need, minor) ENTRY_POS_##name,
    HC_PLUGIN_ENTRIES(HC_ENTRY_POS)
#undef HC_ENTRY_POS
    N_ENTRIES
};

#define HC_ENTRY_CHECK(name, op, need, minor)                                                 \
    _Static_assert(offsetof(hc_plugin_ops, name) == FIRST + ENTRY_POS_##name * sizeof(entry_fn), \
                   "HC_PLUGIN_ENTRIES: " #name " is not where the list puts it");              \
    _Static_assert(sizeof(((hc_plugin_ops *)0)->name) == sizeof(entry_fn),                   \
                   "HC_PLUGIN_ENTRIES: " #name " is not a function pointer");
HC_PLUGIN_ENTRIES(HC_ENTRY_CHECK)
#undef HC_ENTRY_CHECK
_Static_assert(FIRST + N_ENTRIES * sizeof(entry_fn) == sizeof(hc_plugin_ops),
               "HC_PLUGIN_ENTRIES does not reach the end of hc_plugin_ops");

const hc_entry_info hc_entries[] = {
#define HC_ENTRY_ROW(name, op, need, minor) {#name, op, need, minor, offsetof(hc_plugin_ops, name)},
    HC_PLUGIN_ENTRIES(HC_ENTRY_ROW)
#undef HC_ENTRY_ROW
};
const int hc_n_entries = N_ENTRIES;

const hc_entry_info *hc_entry_of_op(int op)
{
    for (int i = 0; op != HC_OP_NONE && i < N_ENTRIES; i++)
        if (hc_entries[i].op == op)
            return &hc_entries[i];
    return NULL;
}

const hc_entry_info *hc_entry_named(const char *name, size_t len)
{
    for (int i = 0; i < N_ENTRIES; i++)
        if (strlen(hc_entries[i].name) == len && strncmp(hc_entries[i].name, name, len) == 0)
            return &hc_entries[i];
    return NULL;
}

int hc_entry_present(const hc_plugin_ops *ops, const hc_entry_info *e)
{
    entry_fn fn;
    if (!ops || !e || ops->size < e->offset + sizeof fn)
        return 0;
    /* Every entry has the representation of a function pointer (checked
     * above); a copy of its bytes says whether it is NULL. */
    memcpy(&fn, (const char *)ops + e->offset, sizeof fn);
    return fn != NULL;
}

size_t hc_entries_min_size(const hc_entry_info **last_required)
{
    size_t end = 0;
    for (int i = 0; i < N_ENTRIES; i++)
        if (hc_entries[i].required && hc_entries[i].offset + sizeof(entry_fn) > end) {
            end = hc_entries[i].offset + sizeof(entry_fn);
            if (last_required)
                *last_required = &hc_entries[i];
        }
    return end;
}
