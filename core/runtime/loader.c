/*
 * Plugin discovery and loading; the rules are in loader.h.
 *
 * hc_registry_load() works in five passes over one list of candidates:
 *   1. walk the search path, listing libhc-*.so files (sorted per directory),
 *      dropping second sightings of a real file and shadowing later files
 *      whose name was already seen;
 *   2. apply the $HOTCOLD_PLUGINS selection (filtered files are never opened);
 *   3. check each remaining file's ELF headers (a truncated file would
 *      crash dlopen), dlopen it, check its table's header, call probe();
 *      what passes is DEFERRED;
 *   4. copy the candidate records into the registry, with a plugin slot
 *      per family;
 *   5. unless init is deferred, activate every family: init() the best
 *      probe, falling back to the next best variant when init() fails; the
 *      others are SHADOWED.  hc_registry_activate() runs this step later,
 *      one family at a time, when init is deferred (the engine's mode).
 * Nothing is ever dlclose()d: see loader.h.
 */
#include "runtime/loader.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h> /* struct link_map, for dladdr1 */
#include <stdarg.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/elf_check.h"
#include "runtime/plugin_entries.h"
#include "util/log.h"

#ifndef HC_PLUGIN_INSTALL_DIR
#define HC_PLUGIN_INSTALL_DIR "/usr/local/lib/hotcold"
#endif
#ifndef HC_INSTALL_LIBDIR /* CMake's CMAKE_INSTALL_LIBDIR, relative to the prefix */
#define HC_INSTALL_LIBDIR "lib"
#endif

/* ---- search path ----------------------------------------------------------- */

typedef struct search_entry {
    char *path;
    const char *origin;
    int explicit_entry; /* named by the user: report problems at INFO */
} search_entry;

typedef struct search_path {
    search_entry *v;
    int n, cap;
} search_path;

static int search_path_add(search_path *sp, const char *s, size_t len, const char *origin,
                           int explicit_entry)
{
    if (sp->n == sp->cap) {
        int cap = sp->cap ? sp->cap * 2 : 8;
        search_entry *v = realloc(sp->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        sp->v = v;
        sp->cap = cap;
    }
    char *copy = strndup(s, len);
    if (!copy)
        return -1;
    sp->v[sp->n].path = copy;
    sp->v[sp->n].origin = origin;
    sp->v[sp->n].explicit_entry = explicit_entry;
    sp->n++;
    return 0;
}

static void search_path_free(search_path *sp)
{
    for (int i = 0; i < sp->n; i++)
        free(sp->v[i].path);
    free(sp->v);
    memset(sp, 0, sizeof *sp);
}

/* Directory of the running executable, from /proc/self/exe. */
static int process_exe_dir(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    if (n <= 0 || (size_t)n >= len - 1)
        return -1;
    buf[n] = 0;
    char *slash = strrchr(buf, '/');
    if (!slash)
        return -1;
    if (slash == buf)
        slash[1] = 0; /* the executable sits in "/" */
    else
        *slash = 0;
    return 0;
}

/* A default directory, unless it is the same directory as an entry already
 * listed (the library's dir is the install dir in an unmoved install):
 * searched once, under the first name. */
static int add_default_dir(search_path *sp, const char *dir, const char *origin)
{
    char *real = realpath(dir, NULL);
    for (int i = 0; real && i < sp->n; i++) {
        char *other = realpath(sp->v[i].path, NULL);
        int same = other && strcmp(other, real) == 0;
        free(other);
        if (same) {
            HC_DEBUG("plugin dir %s (%s) is %s (%s): searched once", dir, origin, sp->v[i].path,
                     sp->v[i].origin);
            free(real);
            return 0;
        }
    }
    free(real);
    return search_path_add(sp, dir, strlen(dir), origin, 0);
}

/* <dir of libhotcold.so>/hotcold into dir, when this code runs from the
 * shared library; -1 when it is linked into the executable (the
 * executable's own dirs cover that case) or the library cannot be found. */
static int library_plugin_dir(char *dir, size_t len)
{
    static const char anchor; /* any address inside this object will do */
    Dl_info info;
    struct link_map *map = NULL;
    if (!dladdr1(&anchor, &info, (void **)&map, RTLD_DL_LINKMAP) || !map || !map->l_name ||
        !map->l_name[0]) /* the main program's link map has no name */
        return -1;
    char *real = realpath(map->l_name, NULL);
    if (!real)
        return -1;
    char *slash = strrchr(real, '/');
    int rc = -1;
    if (slash) {
        *slash = 0;
        int n = snprintf(dir, len, "%s/hotcold", real);
        rc = n > 0 && (size_t)n < len ? 0 : -1;
        if (rc == 0)
            HC_INFO("plugin loader: libhotcold is %s/%s, its plugin dir %s", real, slash + 1, dir);
    }
    free(real);
    return rc;
}

static int build_search_path(const hc_loader_options *opt, search_path *sp)
{
    const char *user = opt->plugin_path;
    const char *origin = "plugin_path option";
    if (!user) {
        user = getenv("HOTCOLD_PLUGIN_PATH");
        origin = "$HOTCOLD_PLUGIN_PATH";
    }
    for (const char *p = user; p && *p;) {
        const char *colon = strchrnul(p, ':');
        if (colon > p && search_path_add(sp, p, (size_t)(colon - p), origin, 1) != 0)
            return -1;
        p = *colon ? colon + 1 : colon;
    }
    if (!opt->use_default_dirs)
        return 0;

    /* An installed tree finds its own plugins wherever it was moved. */
    char lib_plugins[PATH_MAX];
    if (library_plugin_dir(lib_plugins, sizeof lib_plugins) == 0 &&
        add_default_dir(sp, lib_plugins, "libhotcold's dir") != 0)
        return -1;
    if (add_default_dir(sp, HC_PLUGIN_INSTALL_DIR, "install dir") != 0)
        return -1;

    char exe_dir[PATH_MAX];
    if (opt->exe_dir)
        snprintf(exe_dir, sizeof exe_dir, "%s", opt->exe_dir);
    else if (process_exe_dir(exe_dir, sizeof exe_dir) != 0)
        return 0; /* no /proc: nothing more to search, not an error */
    if (add_default_dir(sp, exe_dir, "executable's dir") != 0)
        return -1;

    /* The build tree puts the command in bin/ and plugins in lib/hotcold/;
     * an install under a prefix whose libdir is not "lib" (Debian's
     * lib/<triplet>) in <prefix>/<libdir>/hotcold. */
    static const char *const libdirs[] = {"lib", HC_INSTALL_LIBDIR};
    static const char *const origins[] = {"executable's ../lib/hotcold",
                                          "executable's ../" HC_INSTALL_LIBDIR "/hotcold"};
    int n_libdirs = strcmp(HC_INSTALL_LIBDIR, "lib") != 0 && HC_INSTALL_LIBDIR[0] != '/' ? 2 : 1;
    for (int i = 0; i < n_libdirs; i++) {
        char lib_dir[PATH_MAX + 64];
        snprintf(lib_dir, sizeof lib_dir, "%s/../%s/hotcold", exe_dir, libdirs[i]);
        char *norm = realpath(lib_dir, NULL); /* prettier in `hotcold devices` */
        int rc = add_default_dir(sp, norm ? norm : lib_dir, origins[i]);
        free(norm);
        if (rc != 0)
            return -1;
    }
    return 0;
}

int hc_loader_search_path(const hc_loader_options *opt, hc_search_path_fn fn, void *user)
{
    search_path sp = {0};
    int n = -1;
    if (build_search_path(opt, &sp) != 0)
        goto out;
    for (int i = 0; i < sp.n; i++)
        if (fn)
            fn(user, sp.v[i].path, sp.v[i].origin);
    n = sp.n;
out:
    search_path_free(&sp);
    return n;
}

/* ---- file names ------------------------------------------------------------ */

int hc_plugin_parse_name(const char *basename, char *family, size_t family_len, char *variant,
                         size_t variant_len)
{
    static const char prefix[] = "libhc-", suffix[] = ".so";
    const size_t np = sizeof prefix - 1, ns = sizeof suffix - 1;
    if (!basename)
        return -1;
    size_t n = strlen(basename);
    if (n <= np + ns || strncmp(basename, prefix, np) != 0 || strcmp(basename + n - ns, suffix) != 0)
        return -1;
    const char *stem = basename + np;
    size_t stem_len = n - np - ns;
    const char *dash = memchr(stem, '-', stem_len);
    size_t fam_len = dash ? (size_t)(dash - stem) : stem_len;
    size_t var_len = dash ? stem_len - fam_len - 1 : 0;
    if (fam_len == 0 || (dash && var_len == 0))
        return -1;
    for (size_t i = 0; i < fam_len; i++)
        if (!isalnum((unsigned char)stem[i]) && stem[i] != '_')
            return -1;
    for (size_t i = 0; i < var_len; i++) {
        char ch = dash[1 + i];
        if (!isalnum((unsigned char)ch) && ch != '_' && ch != '-')
            return -1;
    }
    if (fam_len >= family_len || var_len >= variant_len)
        return -1;
    memcpy(family, stem, fam_len);
    family[fam_len] = 0;
    if (var_len)
        memcpy(variant, dash + 1, var_len);
    variant[var_len] = 0;
    return 0;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* ---- candidates -------------------------------------------------------------- */

/* A candidate's state while the scan has not decided it yet. */
#define CAND_UNDECIDED (-1)

typedef struct item {
    hc_plugin_candidate c;     /* c.ops and c.dl are set once the table passed every check */
    char *real;                /* realpath(), what we dlopen; NULL if unresolved */
} item;

typedef struct scan {
    item *v;
    int n, cap;
} scan;

static const char *state_word(int state)
{
    switch (state) {
    case HC_CAND_LOADED: return "loaded";
    case HC_CAND_REJECTED: return "rejected";
    case HC_CAND_SHADOWED: return "shadowed";
    case HC_CAND_FILTERED: return "filtered";
    case HC_CAND_DEFERRED: return "deferred";
    }
    return "?";
}

static const char *status_word(hc_status st)
{
    switch (st) {
    case HC_OK: return "HC_OK";
    case HC_E_UNSUPPORTED: return "HC_E_UNSUPPORTED";
    case HC_E_INVALID: return "HC_E_INVALID";
    case HC_E_NOMEM: return "HC_E_NOMEM";
    case HC_E_DEVICE: return "HC_E_DEVICE";
    case HC_E_NODEV: return "HC_E_NODEV";
    case HC_E_INTERNAL: return "HC_E_INTERNAL";
    }
    return "unknown status";
}

/* Decide a candidate's state and log it: every outcome but "loaded" is an
 * INFO line with the reason, so `hotcold -v` style logs explain themselves. */
static void decide_c(hc_plugin_candidate *c, int state, const char *fmt, ...) HC_PRINTF(3, 4);
static void decide_c(hc_plugin_candidate *c, int state, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->reason, sizeof c->reason, fmt, ap);
    va_end(ap);
    c->state = state;
    if (state == HC_CAND_LOADED)
        HC_INFO("plugin %s loaded (probe %d)%s%s", c->path, c->probe, c->reason[0] ? ", " : "",
                c->reason);
    else
        HC_INFO("plugin %s %s: %s", c->path, state_word(state), c->reason);
}
/* The scan's items carry their candidate record. */
#define decide(it, ...) decide_c(&(it)->c, __VA_ARGS__)

static item *scan_push(scan *s)
{
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 16;
        item *v = realloc(s->v, (size_t)cap * sizeof *v);
        if (!v)
            return NULL;
        s->v = v;
        s->cap = cap;
    }
    item *it = &s->v[s->n++];
    memset(it, 0, sizeof *it);
    it->c.probe = -1;
    it->c.state = CAND_UNDECIDED;
    return it;
}

static void scan_free(scan *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->v[i].real);
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* One file found on the path.  Returns -1 only on out-of-memory. */
static int add_file(scan *s, const char *path, int named_explicitly)
{
    char family[sizeof s->v->c.family], variant[sizeof s->v->c.variant];
    int name_ok = hc_plugin_parse_name(base_name(path), family, sizeof family, variant,
                                       sizeof variant) == 0;
    if (!name_ok && !named_explicitly)
        return 0;

    char *real = realpath(path, NULL);
    int real_errno = errno;
    if (real) {
        for (int j = 0; j < s->n; j++) {
            if (s->v[j].real && strcmp(s->v[j].real, real) == 0) {
                HC_DEBUG("plugin %s: same file as %s, skipped", path, s->v[j].c.path);
                free(real);
                return 0;
            }
        }
    }
    item *it = scan_push(s);
    if (!it) {
        free(real);
        return -1;
    }
    snprintf(it->c.path, sizeof it->c.path, "%s", path);
    it->real = real;
    if (!name_ok) {
        decide(it, HC_CAND_REJECTED, "file name does not match libhc-<family>[-<variant>].so");
        return 0;
    }
    snprintf(it->c.family, sizeof it->c.family, "%s", family);
    snprintf(it->c.variant, sizeof it->c.variant, "%s", variant);
    if (!real) {
        decide(it, HC_CAND_REJECTED, "cannot resolve path: %s", strerror(real_errno));
        return 0;
    }
    /* First listed wins: a later file of the same name is never opened. */
    for (int j = 0; j < s->n - 1; j++) {
        if (strcmp(base_name(s->v[j].c.path), base_name(path)) == 0) {
            decide(it, HC_CAND_SHADOWED, "a file of the same name comes first in the search path: %s",
                   s->v[j].c.path);
            break;
        }
    }
    return 0;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int scan_dir(scan *s, const char *dir, hc_search_report *rep)
{
    char **names = NULL;
    int n = 0, cap = 0, rc = 0;
    DIR *d = opendir(dir);
    if (!d) {
        /* It exists (stat said so): not being able to list it is worth
         * saying, whoever named it. */
        snprintf(rep->problem, sizeof rep->problem, "cannot read the folder: %s", strerror(errno));
        HC_INFO("plugin dir %s (%s): %s", dir, rep->origin, rep->problem);
        return 0;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char family[32], variant[32];
        if (hc_plugin_parse_name(de->d_name, family, sizeof family, variant, sizeof variant) != 0)
            continue;
        if (n == cap) {
            int ncap = cap ? cap * 2 : 16;
            char **v = realloc(names, (size_t)ncap * sizeof *v);
            if (!v) {
                rc = -1;
                goto out;
            }
            names = v;
            cap = ncap;
        }
        if (!(names[n] = strdup(de->d_name))) {
            rc = -1;
            goto out;
        }
        n++;
    }
    /* Sorted so that the order (and the tie-break between equal probes)
     * does not depend on the file system. */
    if (n > 1)
        qsort(names, (size_t)n, sizeof *names, compare_names);
    size_t dlen = strlen(dir);
    while (dlen > 1 && dir[dlen - 1] == '/')
        dlen--;
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX];
        struct stat st;
        int len = snprintf(path, sizeof path, "%.*s/%s", (int)dlen, dir, names[i]);
        if (len < 0 || (size_t)len >= sizeof path) {
            HC_INFO("plugin dir %s: path of %s too long, skipped", dir, names[i]);
            continue;
        }
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (add_file(s, path, 0) != 0) {
            rc = -1;
            goto out;
        }
    }
out:
    closedir(d);
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

/* Walk one entry of the search path, saying in rep what stopped it. */
static int scan_entry(scan *s, const search_entry *e, hc_search_report *rep)
{
    struct stat st;
    int level = e->explicit_entry ? HC_LOG_INFO : HC_LOG_DEBUG;
    snprintf(rep->path, sizeof rep->path, "%s", e->path);
    rep->origin = e->origin;
    if (stat(e->path, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            rep->missing = 1;
        else /* EACCES on a folder above it, ELOOP, ...: it may well exist */
            snprintf(rep->problem, sizeof rep->problem, "cannot look it up: %s", strerror(errno));
        hc_log(rep->missing ? level : HC_LOG_INFO, "plugin path entry %s (%s): %s", e->path,
               e->origin, strerror(errno));
        return 0;
    }
    if (S_ISDIR(st.st_mode))
        return scan_dir(s, e->path, rep);
    if (S_ISREG(st.st_mode))
        return add_file(s, e->path, 1);
    snprintf(rep->problem, sizeof rep->problem, "not a plugin file or a folder");
    hc_log(HC_LOG_INFO, "plugin path entry %s (%s): %s", e->path, e->origin, rep->problem);
    return 0;
}

/* ---- selection ------------------------------------------------------------- */

static int token_equals(const char *tok, size_t len, const char *a, const char *b)
{
    size_t la = strlen(a), lb = b ? strlen(b) : 0;
    if (!b)
        return len == la && strncmp(tok, a, la) == 0;
    return lb > 0 && len == la + 1 + lb && strncmp(tok, a, la) == 0 && tok[la] == '-' &&
           strncmp(tok + la + 1, b, lb) == 0;
}

/* The next entry of a comma list, spaces trimmed: its start (and *len), or
 * NULL at the end.  Empty entries are skipped.  *p moves past it. */
static const char *next_entry(const char **p, size_t *len)
{
    for (;;) {
        while (**p == ',' || isspace((unsigned char)**p))
            (*p)++;
        if (!**p)
            return NULL;
        const char *start = *p;
        while (**p && **p != ',')
            (*p)++;
        const char *end = *p;
        while (end > start && isspace((unsigned char)end[-1]))
            end--;
        if (end > start) {
            *len = (size_t)(end - start);
            return start;
        }
    }
}

/* Is family[-variant] named by the comma list?  Returns -1 if the list names
 * nothing at all (empty or only separators): then there is no filter. */
static int is_selected(const char *list, const char *family, const char *variant)
{
    int any = 0;
    size_t len;
    for (const char *p = list, *start; (start = next_entry(&p, &len)) != NULL;) {
        any = 1;
        if (token_equals(start, len, family, NULL) || token_equals(start, len, family, variant))
            return 1;
    }
    return any ? 0 : -1;
}

/* "cpu-avx2" for a candidate. */
static void candidate_name(const hc_plugin_candidate *c, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s", c->family, c->variant[0] ? "-" : "", c->variant);
}

/* The names of every candidate found (each once), comma-separated. */
static void names_found(const scan *s, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < s->n; i++) {
        char name[80], seen_name[80];
        if (!s->v[i].c.family[0])
            continue;
        candidate_name(&s->v[i].c, name, sizeof name);
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) {
            candidate_name(&s->v[j].c, seen_name, sizeof seen_name);
            seen = strcmp(name, seen_name) == 0;
        }
        int w = seen ? 0 : snprintf(buf + used, len - used, "%s%s", used ? ", " : "", name);
        if (w < 0 || (size_t)w >= len - used)
            break;
        used += (size_t)w;
    }
}

/* Name the entries of the selection list that match no candidate found, so
 * a typo ("vulcan") or a missing plugin is said, not silently filtered. */
static void note_unmatched(hc_registry *r, const scan *s, const char *list, const char *src)
{
    char unmatched[256] = "";
    size_t used = 0;
    int n_tokens = 0, n_unmatched = 0;
    size_t len;
    for (const char *p = list, *start; (start = next_entry(&p, &len)) != NULL;) {
        n_tokens++;
        int matched = 0;
        for (int i = 0; i < s->n && !matched; i++)
            matched = s->v[i].c.family[0] &&
                      (token_equals(start, len, s->v[i].c.family, NULL) ||
                       token_equals(start, len, s->v[i].c.family, s->v[i].c.variant));
        if (matched)
            continue;
        n_unmatched++;
        int w = snprintf(unmatched + used, sizeof unmatched - used, "%s'%.*s'", used ? ", " : "",
                         (int)len, start);
        if (w > 0 && (size_t)w < sizeof unmatched - used)
            used += (size_t)w;
    }
    if (n_unmatched == 0)
        return;
    char found[256];
    names_found(s, found, sizeof found);
    if (!found[0])
        snprintf(found, sizeof found, "none");
    snprintf(r->select_note, sizeof r->select_note,
             "%s=%.100s: %.150s %s no plugin found%s (found: %.150s)", src, list, unmatched,
             n_unmatched == 1 ? "matches" : "match",
             n_unmatched == n_tokens ? ", so every plugin is filtered out" : "", found);
    HC_WARN("%s", r->select_note);
}

/* ---- opening and checking one candidate ------------------------------------ */

/* dlerror() text without the leading "<path>: " (the path is shown anyway). */
static const char *dl_reason(const char *path)
{
    const char *e = dlerror();
    if (!e)
        return "unknown dynamic loader error";
    size_t n = strlen(path);
    if (strncmp(e, path, n) == 0 && strncmp(e + n, ": ", 2) == 0)
        return e + n + 2;
    return e;
}

static void open_candidate(item *it)
{
    char why[sizeof it->c.reason];
    if (hc_elf_check(it->real, why, sizeof why) != 0) {
        decide(it, HC_CAND_REJECTED, "%s", why);
        return;
    }
    dlerror();
    void *dl = dlopen(it->real, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        decide(it, HC_CAND_REJECTED, "dlopen: %s", dl_reason(it->real));
        return;
    }
    it->c.dl = dl;
    dlerror();
    void *sym = dlsym(dl, HC_PLUGIN_ENTRY_SYMBOL);
    if (!sym) {
        decide(it, HC_CAND_REJECTED, "no entry symbol %s: %s", HC_PLUGIN_ENTRY_SYMBOL,
               dl_reason(it->real));
        return;
    }
    hc_plugin_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry); /* object pointer -> function pointer, POSIX-style */

    const hc_plugin_ops *ops = entry(HC_PLUGIN_ABI_MAJOR, HC_PLUGIN_ABI_MINOR);
    if (!ops) {
        decide(it, HC_CAND_REJECTED, "%s(%d, %d) returned NULL: the plugin cannot serve ABI %d",
               HC_PLUGIN_ENTRY_SYMBOL, HC_PLUGIN_ABI_MAJOR, HC_PLUGIN_ABI_MINOR,
               HC_PLUGIN_ABI_MAJOR);
        return;
    }
    /* The header fields are fixed forever, so they can be read before the
     * size is trusted; major first, since a different major may mean a
     * different header. */
    if (ops->abi_major != HC_PLUGIN_ABI_MAJOR) {
        decide(it, HC_CAND_REJECTED, "plugin ABI major %u (built as %u.%u), this hotcold needs %d",
               ops->abi_major, ops->abi_major, ops->abi_minor, HC_PLUGIN_ABI_MAJOR);
        return;
    }
    /* The smallest acceptable table: every required entry inside `size`
     * (HC_PLUGIN_ENTRIES); the optional ones after the last of them may be
     * cut by an older or leaner plugin (HC_OPS_HAS then reports them
     * absent). */
    const hc_entry_info *last_required = NULL;
    size_t min_size = hc_entries_min_size(&last_required);
    if (ops->size < min_size) {
        decide(it, HC_CAND_REJECTED,
               "ops table too small: size %zu, ABI %d.0 needs at least %zu (through %s)",
               ops->size, HC_PLUGIN_ABI_MAJOR, min_size, last_required->name);
        return;
    }
    const char *fam = ops->family ? ops->family : "";
    const char *var = ops->variant ? ops->variant : "";
    if (strcmp(fam, it->c.family) != 0 || strcmp(var, it->c.variant) != 0) {
        decide(it, HC_CAND_REJECTED, "table says family '%s' variant '%s', file name says '%s' '%s'",
               fam, var, it->c.family, it->c.variant);
        return;
    }
    for (int i = 0; i < hc_n_entries; i++) {
        if (hc_entries[i].required && !hc_entry_present(ops, &hc_entries[i])) {
            decide(it, HC_CAND_REJECTED, "required entry %s is NULL", hc_entries[i].name);
            return;
        }
    }
    int probe = ops->probe();
    it->c.probe = probe < 0 ? 0 : probe;
    if (probe <= 0) {
        decide(it, HC_CAND_REJECTED, "probe: cannot run on this machine");
        return;
    }
    it->c.ops = ops;
}

/* ---- choosing one variant per family --------------------------------------- */

/* What each loaded plugin's hc_plugin_host points at.  It lives in the same
 * allocation as the plugin array, after it, so it stays put (plugins may
 * keep the host pointer) and is freed with the registry. */
typedef struct plugin_host {
    hc_plugin_host host;
    char name[sizeof(((hc_plugin *)0)->family) + sizeof(((hc_plugin *)0)->variant) + 1];
} plugin_host;

static int deferred_of(const hc_plugin_candidate *c, const char *family)
{
    return c->state == HC_CAND_DEFERRED && strcmp(c->family, family) == 0;
}

/* init() c into the next plugin slot; 1 if it succeeded. */
static int try_init(hc_registry *r, hc_plugin_candidate *c)
{
    hc_plugin *pl = &r->plugins[r->n_plugins];
    plugin_host *ph = &((plugin_host *)r->hosts_)[r->n_plugins];
    memset(ph, 0, sizeof *ph);
    snprintf(ph->name, sizeof ph->name, "%s%s%s", c->family, c->variant[0] ? "-" : "",
             c->variant);
    ph->host.size = sizeof ph->host;
    ph->host.abi_major = HC_PLUGIN_ABI_MAJOR;
    ph->host.abi_minor = HC_PLUGIN_ABI_MINOR;
    ph->host.log = hc_log_from_plugin;
    ph->host.log_user = ph->name;
    ph->host.n_threads = r->n_threads;

    hc_plugin_ctx *ctx = NULL;
    hc_status st = c->ops->init(&ph->host, &ctx);
    if (st != HC_OK) {
        /* A failed init normally leaves no context; last_error(NULL) then
         * reports the failure (docs/PLUGINS.md). */
        const char *detail = c->ops->last_error(ctx);
        decide_c(c, HC_CAND_REJECTED, "init failed (%s)%s%s", status_word(st),
                 detail && *detail ? ": " : "", detail ? detail : "");
        return 0;
    }
    memset(pl, 0, sizeof *pl);
    snprintf(pl->path, sizeof pl->path, "%s", c->path);
    snprintf(pl->family, sizeof pl->family, "%s", c->family);
    snprintf(pl->variant, sizeof pl->variant, "%s", c->variant);
    pl->ops = c->ops;
    pl->ctx = ctx;
    pl->dl = c->dl;
    pl->probe = c->probe;
    r->n_plugins++;
    /* Zero devices is a valid answer, but the user will want to know why
     * (ABI 1.3 no_device_reason; the core's default without it). */
    const char *none = NULL;
    if (c->ops->device_count(ctx) == 0) {
        none = HC_OPS_HAS(c->ops, no_device_reason) ? c->ops->no_device_reason(ctx) : NULL;
        if (!none || !*none)
            none = "the plugin does not say why";
    }
    decide_c(c, HC_CAND_LOADED, "%s%s", none ? "no devices: " : "", none ? none : "");
    return 1;
}

/* Best probe first (ties: earliest in search order); on a failed init the
 * next best variant gets its chance; the others are shadowed by the one
 * that loaded.  Returns 1 if a variant loaded. */
static int activate_family(hc_registry *r, const char *family)
{
    hc_plugin_candidate *winner = NULL;
    while (!winner) {
        hc_plugin_candidate *best = NULL;
        for (int j = 0; j < r->n_candidates; j++) {
            hc_plugin_candidate *c = &r->candidates[j];
            if (deferred_of(c, family) && (!best || c->probe > best->probe))
                best = c;
        }
        if (!best)
            break;
        if (try_init(r, best))
            winner = best;
    }
    for (int j = 0; winner && j < r->n_candidates; j++) {
        hc_plugin_candidate *c = &r->candidates[j];
        if (deferred_of(c, family))
            decide_c(c, HC_CAND_SHADOWED, "%s%s%s (probe %d) was chosen", winner->family,
                     winner->variant[0] ? "-" : "", winner->variant, winner->probe);
    }
    return winner != NULL;
}

int hc_registry_activate(hc_registry *r, const char *family)
{
    int n = 0;
    if (family)
        return activate_family(r, family);
    /* Families in the order their first candidate was found. */
    for (int i = 0; i < r->n_candidates; i++) {
        char name[sizeof r->candidates->family];
        if (r->candidates[i].state != HC_CAND_DEFERRED)
            continue;
        snprintf(name, sizeof name, "%s", r->candidates[i].family); /* activation rewrites it */
        n += activate_family(r, name);
    }
    return n;
}

/* Room for one plugin per family that has a deferred candidate: plugins
 * never move once loaded, so the array is sized now. */
static int alloc_plugins(hc_registry *r)
{
    int n_families = 0;
    for (int i = 0; i < r->n_candidates; i++) {
        const hc_plugin_candidate *c = &r->candidates[i];
        int first = c->state == HC_CAND_DEFERRED;
        for (int j = 0; j < i && first; j++)
            first = !deferred_of(&r->candidates[j], c->family);
        n_families += first;
    }
    if (n_families == 0)
        return 0;
    size_t align = alignof(plugin_host);
    size_t pl_bytes = ((size_t)n_families * sizeof(hc_plugin) + align - 1) / align * align;
    void *block = calloc(1, pl_bytes + (size_t)n_families * sizeof(plugin_host));
    if (!block)
        return -1;
    r->plugins = block;
    r->hosts_ = (char *)block + pl_bytes;
    return 0;
}

/* ---- the registry -------------------------------------------------------------- */

int hc_registry_load(hc_registry *r, const hc_loader_options *opt)
{
    static const hc_loader_options defaults = {NULL, NULL, NULL, 1, 0, 0};
    search_path sp = {0};
    scan s = {0};
    int rc = -1;

    memset(r, 0, sizeof *r);
    if (!opt)
        opt = &defaults;
    if (build_search_path(opt, &sp) != 0)
        goto out;
    if (sp.n > 0 && !(r->entries = calloc((size_t)sp.n, sizeof *r->entries)))
        goto out;
    for (int i = 0; i < sp.n; i++) {
        HC_INFO("plugin search path %d: %s (%s)", i + 1, sp.v[i].path, sp.v[i].origin);
        r->n_entries++;
        if (scan_entry(&s, &sp.v[i], &r->entries[i]) != 0)
            goto out;
    }

    const char *select = opt->select;
    const char *select_src = "the plugins option";
    if (!select) {
        select = getenv("HOTCOLD_PLUGINS");
        select_src = "$HOTCOLD_PLUGINS";
    }
    for (int i = 0; i < s.n && select; i++) {
        item *it = &s.v[i];
        if (it->c.state == CAND_UNDECIDED && is_selected(select, it->c.family, it->c.variant) == 0)
            decide(it, HC_CAND_FILTERED, "not selected by %s=%s", select_src, select);
    }
    if (select)
        note_unmatched(r, &s, select, select_src);

    for (int i = 0; i < s.n; i++) {
        if (s.v[i].c.state != CAND_UNDECIDED)
            continue;
        open_candidate(&s.v[i]);
        if (s.v[i].c.state == CAND_UNDECIDED) { /* probed: its init waits for activation */
            s.v[i].c.state = HC_CAND_DEFERRED;
            HC_DEBUG("plugin %s probed (%d), init deferred", s.v[i].c.path, s.v[i].c.probe);
        }
    }

    if (s.n > 0) {
        r->candidates = malloc((size_t)s.n * sizeof *r->candidates);
        if (!r->candidates)
            goto out;
        for (int i = 0; i < s.n; i++)
            r->candidates[i] = s.v[i].c;
    }
    r->n_candidates = s.n;
    r->n_threads = opt->n_threads;
    if (alloc_plugins(r) != 0)
        goto out;
    if (!opt->defer_init)
        hc_registry_activate(r, NULL);
    rc = 0;
out:
    if (rc != 0) {
        hc_set_error("plugin loader: out of memory");
        hc_registry_free(r);
    }
    scan_free(&s);
    search_path_free(&sp);
    return rc;
}

void hc_registry_free(hc_registry *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n_plugins; i++)
        if (r->plugins[i].ops)
            r->plugins[i].ops->shutdown(r->plugins[i].ctx);
    free(r->candidates);
    free(r->entries);
    free(r->plugins); /* also frees the hc_plugin_host blocks behind it */
    memset(r, 0, sizeof *r);
}

hc_plugin *hc_registry_find(hc_registry *r, const char *family)
{
    if (!r || !family)
        return NULL;
    for (int i = 0; i < r->n_plugins; i++)
        if (strcmp(r->plugins[i].family, family) == 0)
            return &r->plugins[i];
    return NULL;
}

void hc_registry_explain(const hc_registry *r, const char *family, char *buf, size_t len)
{
    int n = 0, n_filtered = 0;
    const hc_plugin_candidate *filtered = NULL;
    for (int i = 0; i < r->n_candidates; i++) {
        const hc_plugin_candidate *c = &r->candidates[i];
        if (strcmp(c->family, family) != 0)
            continue;
        n++;
        if (c->state == HC_CAND_FILTERED) {
            n_filtered++;
            filtered = c;
        }
    }
    if (n == 0) {
        snprintf(buf, len, "no plugin of family '%s' was found on the plugin search path", family);
        return;
    }
    if (n == n_filtered) {
        snprintf(buf, len, "%s %s plugin%s filtered out: %s", n == 1 ? "the" : "every", family,
                 n == 1 ? " was" : " found was", filtered->reason);
        return;
    }
    /* Each candidate that was not filtered, with what became of it. */
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < r->n_candidates; i++) {
        const hc_plugin_candidate *c = &r->candidates[i];
        if (strcmp(c->family, family) != 0 || c->state == HC_CAND_FILTERED)
            continue;
        char name[80];
        candidate_name(c, name, sizeof name);
        int loaded = c->state == HC_CAND_LOADED; /* then it has no devices */
        const char *why = loaded && !c->reason[0] ? "no devices" : c->reason;
        int w = snprintf(buf + used, len - used, "%s%s %s%s%s", used ? "; " : "", name,
                         state_word(c->state), loaded ? ", " : why[0] ? ": " : "", why);
        if (w < 0 || (size_t)w >= len - used)
            break;
        used += (size_t)w;
    }
}
