/*
 * A program built against an installed hotcold (pkg-config or CMake) that
 * prints what the library found: "<state> <family>[-<variant>] <path>" per
 * plugin file, then the device count.  tests/packaging.sh runs it after
 * moving the install prefix: the library must find its plugins next to
 * itself, not at the prefix it was configured for.
 */
#include <stdio.h>

#include <hotcold/hotcold.h>

int main(void)
{
    hc_engine *e = hc_engine_open(NULL);
    if (!e) {
        fprintf(stderr, "list_plugins: %s\n", hc_last_error());
        return 1;
    }
    for (int i = 0; i < hc_engine_plugin_count(e); i++) {
        hc_plugin_report r;
        if (hc_engine_plugin_report(e, i, &r) == 0)
            printf("%s %s%s%s %s\n", r.state, r.family, r.variant[0] ? "-" : "", r.variant,
                   r.path);
    }
    printf("devices %d\n", hc_engine_device_count(e));
    hc_engine_close(e);
    return 0;
}
