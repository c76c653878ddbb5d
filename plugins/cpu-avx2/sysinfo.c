/* What the device reports about the machine: CPU name, memory, CPU count. */
#include <ctype.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cpu_plugin.h"

void hc_cpu_model_name(char *dst, size_t cap)
{
    char line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");

    snprintf(dst, cap, "CPU");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        char *v = strchr(line, ':');
        if (!v)
            break;
        v++;
        while (*v && isspace((unsigned char)*v))
            v++;
        size_t len = strlen(v);
        while (len > 0 && isspace((unsigned char)v[len - 1]))
            v[--len] = '\0';
        if (len > 0)
            snprintf(dst, cap, "%s", v);
        break;
    }
    fclose(f);
}

int hc_cpu_meminfo(uint64_t *total, uint64_t *avail)
{
    char line[256];
    unsigned long long kb;
    int found = 0;
    FILE *f = fopen("/proc/meminfo", "r");

    *total = *avail = 0;
    if (f) {
        while (fgets(line, sizeof line, f)) {
            if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) {
                *total = (uint64_t)kb * 1024u;
                found |= 1;
            } else if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
                *avail = (uint64_t)kb * 1024u;
                found |= 2;
            }
        }
        fclose(f);
    }
    if (!(found & 1)) {
        /* No /proc (some containers): the page counts still work. */
        long pages = sysconf(_SC_PHYS_PAGES), avp = sysconf(_SC_AVPHYS_PAGES);
        long psz = sysconf(_SC_PAGESIZE);
        if (pages > 0 && psz > 0)
            *total = (uint64_t)pages * (uint64_t)psz;
        if (avp > 0 && psz > 0)
            *avail = (uint64_t)avp * (uint64_t)psz;
    } else if (!(found & 2)) {
        *avail = *total; /* kernels before 3.14 lack MemAvailable */
    }
    return *total > 0;
}

int hc_cpu_online_count(void)
{
    cpu_set_t set;
    int n = 0;

    /* The affinity mask, not the machine size: under taskset or a cgroup
     * cpuset more threads than allowed CPUs would only contend. */
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        n = CPU_COUNT(&set);
    if (n <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c > 0 ? (int)c : 1;
    }
    return n;
}
