/*
 * The architectures hotcold runs (internal), found by their
 * general.architecture.  A new one is a file of its own (arch/<name>.c,
 * filling an hc_arch) and one line in registry.c.
 */
#ifndef HC_CORE_ARCH_REGISTRY_H
#define HC_CORE_ARCH_REGISTRY_H

#include "arch/arch.h"

/* The architecture called `name`, or NULL. */
const hc_arch *hc_arch_find(const char *name);
/* Their names, "llama, bamboo", for messages: into buf, which it returns. */
const char *hc_arch_names(char *buf, size_t size);

#endif /* HC_CORE_ARCH_REGISTRY_H */
