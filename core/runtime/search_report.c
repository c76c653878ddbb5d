/* The engine's plugin search path as the public API reports it (hotcold.h). */
#include "runtime/engine.h"

#include <string.h>

#include "util/log.h"

int hc_engine_search_count(const hc_engine *e)
{
    return e ? e->reg.n_entries : 0;
}

int hc_engine_search_dir(const hc_engine *e, int i, hc_search_dir *out)
{
    memset(out, 0, sizeof *out);
    if (!e || i < 0 || i >= e->reg.n_entries) {
        hc_set_error("search path entry %d does not exist", i);
        return -1;
    }
    const hc_search_report *r = &e->reg.entries[i];
    *out = (hc_search_dir){r->path, r->origin, r->missing, r->problem};
    return 0;
}

const char *hc_engine_selection_note(const hc_engine *e)
{
    return e ? e->reg.select_note : "";
}
