/*
 * Can this CPU run the plugin?  Built WITHOUT ISA flags: the loader calls
 * probe() on every machine, including ones that would fault on an AVX
 * instruction, so nothing here may need the ISA the kernels are built for.
 */
#include "cpu_plugin.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#if defined(HC_CPU_VARIANT_AVX2)
/* The kernels use AVX2 integer ops, FMA and F16C conversions on YMM
 * registers.  The CPU must have them (CPUID) AND the OS must save the YMM
 * state on context switches (OSXSAVE + XCR0 bits 1 and 2), otherwise the
 * upper halves are lost or the instructions fault. */
#if defined(__x86_64__) || defined(__i386__)
/* The low word of XCR0: which register states the OS saves.  XGETBV is
 * only legal once CPUID.1:ECX.OSXSAVE is known to be set. */
static inline uint32_t xcr0_low(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return lo;
}
#endif

static int cpu_has_avx2_fma_f16c(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned int a, b, c, d;
    const unsigned int need1 = bit_AVX | bit_FMA | bit_F16C | bit_OSXSAVE;

    if (!__get_cpuid(1, &a, &b, &c, &d) || (c & need1) != need1)
        return 0;
    if ((xcr0_low() & 0x6u) != 0x6u)
        return 0;
    if (__get_cpuid_max(0, NULL) < 7 || !__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return 0;
    return (b & bit_AVX2) != 0;
#else
    return 0;
#endif
}
#endif

/* 1 when $name is "0": an optional kernel build switched off by the user. */
static inline int switched_off(const char *name)
{
    const char *env = getenv(name);
    return env && strcmp(env, "0") == 0;
}

int hc_cpu_use_vnni(void)
{
#if defined(HC_CPU_HAVE_VNNI) && (defined(__x86_64__) || defined(__i386__))
    unsigned int a, b, c, d;
    if (switched_off("HOTCOLD_CPU_VNNI"))
        return 0;
    /* AVX-VNNI (VEX-encoded vpdpbusd): CPUID.(7,1):EAX bit 4, on top of the
     * AVX2 state checks the probe already made. */
    if (!cpu_has_avx2_fma_f16c() || !__get_cpuid_count(7, 1, &a, &b, &c, &d))
        return 0;
    return (a & (1u << 4)) != 0;
#else
    return 0;
#endif
}

int hc_cpu_use_avx512(void)
{
#if defined(HC_CPU_HAVE_AVX512) && (defined(__x86_64__) || defined(__i386__))
    unsigned int a, b, c, d;
    if (switched_off("HOTCOLD_CPU_AVX512"))
        return 0;
    /* AVX512F (CPUID.(7,0):EBX bit 16), BW (bit 30), VL (bit 31), and the
     * OS saving the opmask and all 32 ZMM registers (XCR0 bits 5-7). */
    const unsigned int need = (1u << 16) | (1u << 30) | (1u << 31);
    if (!cpu_has_avx2_fma_f16c() || !__get_cpuid_count(7, 0, &a, &b, &c, &d) || (b & need) != need)
        return 0;
    return (xcr0_low() & 0xe6u) == 0xe6u;
#else
    return 0;
#endif
}

/* Scores: the loader keeps the highest non-zero probe of the "cpu" family,
 * so the generic build (1) is only chosen when avx2 (20) cannot run. */
int hc_cpu_probe(void)
{
#if defined(HC_CPU_VARIANT_AVX2)
    return cpu_has_avx2_fma_f16c() ? 20 : 0;
#else
    return 1;
#endif
}

const char *hc_cpu_variant(void)
{
#if defined(HC_CPU_VARIANT_AVX2)
    return "avx2";
#else
    return "generic";
#endif
}
