/*
 * GPT-2's byte-to-unicode map (tokenizer_pretok.h), in closed form: the 68
 * bytes that are not printable are 0x00..0x20, 0x7F..0xA0 and 0xAD, and the
 * k-th of them (from 0) maps to U+0100 + k.
 */
#include "runtime/tokenizer_pretok.h"

static int printable(unsigned b)
{
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

static uint32_t code_point(uint8_t b)
{
    if (printable(b))
        return b;
    if (b <= 0x20)
        return 0x100u + b;
    if (b <= 0xA0)
        return 0x100u + 33 + (b - 0x7Fu);
    return 0x100u + 67; /* 0xAD, soft hyphen */
}

size_t hc_bytelevel_char(uint8_t b, char out[2])
{
    uint32_t cp = code_point(b);
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

int hc_bytelevel_byte(uint32_t cp)
{
    uint32_t k;
    if (cp < 0x100)
        return printable(cp) ? (int)cp : -1;
    k = cp - 0x100;
    if (k < 33)
        return (int)k;
    if (k < 67)
        return (int)(0x7F + (k - 33));
    return k == 67 ? 0xAD : -1;
}
