/* The list of architectures (see registry.h). */
#include "arch/registry.h"

#include <stdio.h>
#include <string.h>

#include "arch/llama.h"

static const hc_arch *const archs[] = {&hc_arch_llama, &hc_arch_bamboo};

const hc_arch *hc_arch_find(const char *name)
{
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (!strcmp(name, archs[i]->name))
            return archs[i];
    return NULL;
}

const char *hc_arch_names(char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof archs / sizeof archs[0] && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "", archs[i]->name);
    return buf;
}
