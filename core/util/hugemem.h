/*
 * Memory for model weights that the CPU streams every token.
 *
 * Decode reads every weight once per token, so the cost of a TLB miss (a
 * page walk, two-dimensional under a hypervisor) is paid once per 4 KiB of
 * weights with ordinary pages.  A file mapping gets huge pages only if the
 * page cache happens to hold the file in 2 MiB folios (true after a cold
 * read on some filesystems, false right after the file was written), so the
 * same model measured 55-65% or 75-80% of the bandwidth floor depending on
 * how it got into the cache.  Reading the file into anonymous memory that
 * is 2 MiB aligned and advised for transparent huge pages takes the page
 * cache's layout out of the picture.
 */
#ifndef HC_HUGEMEM_H
#define HC_HUGEMEM_H

#include <stdint.h>

/* `bytes` of zeroed, writable memory, 2 MiB aligned and advised for huge
 * pages (best effort: without THP it is ordinary memory).  *len receives
 * what to pass to hc_huge_free.  NULL on failure (errno set). */
void *hc_huge_alloc(uint64_t bytes, uint64_t *len);
void hc_huge_free(void *p, uint64_t len);

/* 1 unless the kernel's transparent huge pages are off ("[never]") or
 * unknown (not Linux). */
int hc_huge_pages_enabled(void);

/* MemAvailable from /proc/meminfo in bytes; 0 if unknown. */
uint64_t hc_mem_available(void);

#endif /* HC_HUGEMEM_H */
