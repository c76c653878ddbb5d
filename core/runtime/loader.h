/*
 * Plugin discovery and loading (internal to libhotcold).
 *
 * Modelled on the Vulkan loader's driver discovery: a list of search
 * locations, environment overrides, and every rejected candidate recorded
 * with its reason so `hotcold devices` can explain what happened.
 *
 * Search order (first listed wins when the same file name appears twice):
 *   1. $HOTCOLD_PLUGIN_PATH: colon-separated files or directories;
 *   2. <dir of libhotcold.so>/hotcold, when the core runs from the shared
 *      library (dladdr1 on an address inside it): an installed tree that was
 *      moved, or unpacked under another prefix, finds its own plugins;
 *   3. the install plugin dir (HC_PLUGIN_INSTALL_DIR, set by CMake);
 *   4. the directory of the running executable, <exe_dir>/../lib/hotcold
 *      and, when the install libdir is not "lib" (lib/<triplet>),
 *      <exe_dir>/../<libdir>/hotcold.
 * A default directory (2-4) that is the same directory as an earlier entry
 * is searched once.  Every entry is logged at INFO with where it came from.
 * Candidates are files named libhc-<family>[-<variant>].so, sorted by name.
 * Each is checked against its ELF headers (elf_check.h: dlopen() of a
 * truncated file dies of SIGBUS), dlopen()ed (RTLD_NOW | RTLD_LOCAL), its
 * entry symbol called with our ABI version, the table's header checked
 * (major equal; size >= the 1.0 table; required entries non-NULL), and
 * probe() called.  Per family the highest non-zero probe wins (ties: first
 * in search order); its init() is called.  $HOTCOLD_PLUGINS=cpu,vulkan keeps
 * only the listed families (a family name or family-variant).  Plugins are
 * never dlclose()d while the process runs: the HIP runtime leaks ~800 bytes
 * when a plugin using it is dlclosed (LeakSanitizer reports them), and a
 * GPU runtime's threads and atexit handlers may outlive the unload.
 *
 * With defer_init (the engine's mode) no init() is called at load: every
 * usable candidate stays DEFERRED until hc_registry_activate() names its
 * family, which the engine does when a device of that family is asked for.
 * A tool that needs only the CPU then never creates, say, a Vulkan
 * instance.  The choice per family is the same either way.
 *
 * Details of the rules above:
 *  - "size >= the 1.0 table" means: every REQUIRED 1.0 entry (probe ...
 *    axpy_rows) lies inside `size`.  A table may stop earlier than the full
 *    1.0 struct: the optional entries it cuts (layer ops, op_cost,
 *    set_threads) are then simply absent (HC_OPS_HAS is false).  A larger
 *    size or a newer minor is accepted; the core uses only what it knows.
 *  - The table's family/variant strings must equal those of the file name.
 *  - The same real file reached twice (a directory listed twice, a symlink)
 *    is a single candidate.  A different file with a name already seen is
 *    SHADOWED by the earlier one and never opened.
 *  - Filtered candidates are never opened.  Naming a variant ("cpu-avx2")
 *    makes only that variant eligible for its family; the list is a union,
 *    so "cpu,cpu-avx2" keeps every cpu variant.  An empty list = no filter.
 *  - If the best variant's init() fails it is REJECTED (with the plugin's
 *    last_error(ctx) text; ctx is NULL when init left none, so last_error
 *    must accept NULL) and the next best variant of the family is tried.
 *  - A LOADED plugin whose device_count() is 0 right after init() has a
 *    reason too: "no devices: " and its no_device_reason() text (ABI 1.3),
 *    or "the plugin does not say why".
 *  - A $HOTCOLD_PLUGINS entry that matches no candidate found is named in
 *    select_note (and logged at WARN), with the names that were found.
 *  - An entry of the search path that exists but cannot be searched (a
 *    folder without read permission, a special file) keeps its problem in
 *    the registry's entry list, for `hotcold devices`.
 *  - Each loaded plugin gets its own hc_plugin_host, valid until
 *    hc_registry_free(); its log_user is the string "family[-variant]".
 *  - An explicitly listed file whose name does not match the pattern is
 *    REJECTED (so the user sees why); such files in a directory are ignored.
 */
#ifndef HC_CORE_LOADER_H
#define HC_CORE_LOADER_H

#include <stddef.h>

#include "hotcold/plugin.h"

#define HC_PLUGIN_PATH_MAX 1024

typedef enum hc_candidate_state {
    HC_CAND_LOADED = 0,   /* chosen for its family, init() succeeded */
    HC_CAND_REJECTED = 1, /* could not be used: see reason */
    HC_CAND_SHADOWED = 2, /* usable, but another variant of its family won */
    HC_CAND_FILTERED = 3, /* excluded by HOTCOLD_PLUGINS */
    HC_CAND_DEFERRED = 4  /* usable; init() waits for hc_registry_activate() */
} hc_candidate_state;

typedef struct hc_plugin_candidate {
    char path[HC_PLUGIN_PATH_MAX];
    char family[32];
    char variant[32];
    int state;          /* hc_candidate_state */
    int probe;          /* probe() result, or -1 if never called */
    /* Why rejected / shadowed / filtered, or why a loaded plugin has no
     * devices ("no devices: ..."); "" for a loaded plugin with devices and
     * a deferred one. */
    char reason[512];
    const hc_plugin_ops *ops; /* the checked table once probed, else NULL */
    void *dl;                 /* its dlopen handle (kept open), else NULL */
} hc_plugin_candidate;

/* One entry of the search path, as the loader walked it. */
typedef struct hc_search_report {
    char path[HC_PLUGIN_PATH_MAX];
    const char *origin; /* "$HOTCOLD_PLUGIN_PATH", "install dir", ... (static text) */
    int missing;        /* it does not exist (normal for a default dir) */
    char problem[256];  /* why it exists but could not be searched; "" if it was */
} hc_search_report;

/* One loaded plugin (one per family). */
typedef struct hc_plugin {
    char path[HC_PLUGIN_PATH_MAX];
    char family[32];
    char variant[32];
    const hc_plugin_ops *ops;
    hc_plugin_ctx *ctx;
    void *dl;           /* dlopen handle (kept open) */
    int probe;
} hc_plugin;

typedef struct hc_loader_options {
    const char *plugin_path; /* overrides $HOTCOLD_PLUGIN_PATH when non-NULL */
    const char *select;      /* overrides $HOTCOLD_PLUGINS when non-NULL */
    const char *exe_dir;     /* where the executable lives; NULL = /proc/self/exe */
    int use_default_dirs;    /* 1: also search install dir and exe dir */
    int n_threads;           /* passed to plugins in hc_plugin_host */
    int defer_init;          /* 1: init() only in hc_registry_activate() */
} hc_loader_options;

typedef struct hc_registry {
    hc_plugin_candidate *candidates;
    int n_candidates;
    /* Loaded plugins, in the order their families were activated.  The
     * array has room for every family from the start, so a plugin never
     * moves once loaded. */
    hc_plugin *plugins;
    int n_plugins;
    hc_search_report *entries; /* the search path walked, in order */
    int n_entries;
    char select_note[512];  /* $HOTCOLD_PLUGINS entries that matched nothing; "" if none */
    int n_threads;          /* what plugins initialised from now on are told */
    void *hosts_;           /* each plugin slot's hc_plugin_host (internal) */
} hc_registry;

/* Discover and load plugins.  Always succeeds in the sense that a registry
 * with zero plugins is a valid answer (returns 0); returns -1 only on
 * out-of-memory.  Every rejection is logged at INFO level with its reason.
 * With opt->defer_init the usable candidates are left DEFERRED. */
int hc_registry_load(hc_registry *r, const hc_loader_options *opt);
/* init() the best deferred variant of `family` (NULL: of every family, in
 * the order they were found), falling back to the next variant when init()
 * fails, exactly as a load without defer_init does.  A family already
 * decided is left alone.  Returns the number of plugins it loaded. */
int hc_registry_activate(hc_registry *r, const char *family);
/* shutdown() every plugin and free the lists (libraries stay mapped). */
void hc_registry_free(hc_registry *r);
/* The loaded plugin of a family ("cpu"), or NULL.  Activates nothing. */
hc_plugin *hc_registry_find(hc_registry *r, const char *family);
/* One line on what became of `family`'s plugins, for an error that says why
 * there is no device of it: "no plugin of family 'x' was found ...", "every
 * cpu plugin found was filtered out: not selected by $HOTCOLD_PLUGINS=...",
 * or each candidate's state and reason. */
void hc_registry_explain(const hc_registry *r, const char *family, char *buf, size_t len);

/* The search path hc_registry_load() walks for these options, in order:
 * fn(user, entry, origin) is called for each entry (which may not exist);
 * origin says where it came from ("$HOTCOLD_PLUGIN_PATH", "install dir",
 * ...).  Returns the number of entries, or -1 on out-of-memory.  Without
 * loading anything (a registry's `entries` say what the walk found). */
typedef void (*hc_search_path_fn)(void *user, const char *entry, const char *origin);
int hc_loader_search_path(const hc_loader_options *opt, hc_search_path_fn fn, void *user);

/* Parse "libhc-<family>[-<variant>].so" (basename).  Returns 0 and fills
 * family/variant ("" if none) or -1 if the name does not match.  The family
 * runs to the first '-' and is letters, digits and '_'; the variant is the
 * rest (may contain '-').  Both must fit their buffers. */
int hc_plugin_parse_name(const char *basename, char *family, size_t family_len, char *variant,
                         size_t variant_len);

#endif /* HC_CORE_LOADER_H */
