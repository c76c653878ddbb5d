/* Huge-page memory for resident weights: see hugemem.h for why. */
#include "util/hugemem.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE (2ull << 20)

void *hc_huge_alloc(uint64_t bytes, uint64_t *len)
{
    *len = 0;
    if (bytes == 0)
        bytes = 1;
    if (bytes > UINT64_MAX - 2 * HUGE_PAGE || bytes + 2 * HUGE_PAGE > (uint64_t)SIZE_MAX) {
        errno = ENOMEM;
        return NULL;
    }
    const uint64_t want = (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    /* Over-allocate by one huge page and trim both ends to 2 MiB alignment:
     * mmap itself only promises 4 KiB. */
    const size_t span = (size_t)(want + HUGE_PAGE);
    uint8_t *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    uint8_t *p = (uint8_t *)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    if (p > raw)
        munmap(raw, (size_t)(p - raw));
    if (raw + span > p + want)
        munmap(p + want, (size_t)(raw + span - (p + want)));
#ifdef MADV_HUGEPAGE
    /* A hint: fails harmlessly where THP is compiled out. */
    (void)madvise(p, (size_t)want, MADV_HUGEPAGE);
#endif
    *len = want;
    return p;
}

void hc_huge_free(void *p, uint64_t len)
{
    if (p && len)
        munmap(p, (size_t)len);
}

int hc_huge_pages_enabled(void)
{
    char buf[128] = {0};
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strstr(buf, "[never]") == NULL && (strstr(buf, "[always]") || strstr(buf, "[madvise]"));
}

uint64_t hc_mem_available(void)
{
    char line[256];
    unsigned long long kib = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
            break;
    fclose(f);
    return (uint64_t)kib * 1024;
}
