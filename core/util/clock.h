/* Monotonic wall-clock seconds, for durations the core reports. */
#ifndef HC_CLOCK_H
#define HC_CLOCK_H

#include <time.h>

static inline double hc_time_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif /* HC_CLOCK_H */
