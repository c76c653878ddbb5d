/* A binary heap of fixed-size elements (see heap.h). */
#include "util/heap.h"

#include <string.h>

static void *at(const hc_heap *h, size_t i)
{
    return (char *)h->items + i * h->size;
}

void hc_heap_push(hc_heap *h, const void *item)
{
    size_t i = h->n++;
    while (i > 0) {
        const size_t parent = (i - 1) / 2;
        if (!h->before(item, at(h, parent)))
            break;
        memcpy(at(h, i), at(h, parent), h->size);
        i = parent;
    }
    memcpy(at(h, i), item, h->size);
}

void hc_heap_pop(hc_heap *h, void *out)
{
    unsigned char last[HC_HEAP_MAX_ITEM];
    memcpy(out, at(h, 0), h->size);
    memcpy(last, at(h, --h->n), h->size);
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->before(at(h, c + 1), at(h, c)))
            c++;
        if (!h->before(at(h, c), last))
            break;
        memcpy(at(h, i), at(h, c), h->size);
        i = c;
    }
    if (h->n > 0)
        memcpy(at(h, i), last, h->size);
}
