/*
 * A binary heap over an array of fixed-size elements, ordered by the
 * caller's `before` (a strict order: before(a, b) when a must come out
 * first).  The tokenizers' merge queues.  The caller owns the array and its
 * capacity; push never grows it.  Which of two elements that neither
 * comes before comes out first is fixed by the order of the calls, so the
 * same pushes and pops give the same sequence.
 */
#ifndef HC_UTIL_HEAP_H
#define HC_UTIL_HEAP_H

#include <stddef.h>

typedef int (*hc_heap_before_fn)(const void *a, const void *b);

typedef struct hc_heap {
    void *items;     /* capacity elements of `size` bytes */
    size_t n;        /* how many are in the heap */
    size_t size;     /* bytes of one element; at most HC_HEAP_MAX_ITEM */
    hc_heap_before_fn before;
} hc_heap;

#define HC_HEAP_MAX_ITEM 64

/* Adds a copy of *item (n < capacity: the caller's rule). */
void hc_heap_push(hc_heap *h, const void *item);
/* Removes the first element into *out (n > 0: the caller's rule). */
void hc_heap_pop(hc_heap *h, void *out);

#endif /* HC_UTIL_HEAP_H */
