/*
 * llama and the architectures that share its forward pass (internal):
 * bamboo (PowerInfer's Bamboo, Mistral-style attention) differs only in its
 * default FFN activation, dReLU.  arch/llama.c.
 */
#ifndef HC_CORE_ARCH_LLAMA_H
#define HC_CORE_ARCH_LLAMA_H

#include "arch/arch.h"

extern const hc_arch hc_arch_llama;
extern const hc_arch hc_arch_bamboo;

#endif /* HC_CORE_ARCH_LLAMA_H */
