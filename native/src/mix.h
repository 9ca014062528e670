/* mix: the splitmix64 finalizer, shared by the byte hashes of keysplit and
 * intern (values never leave the process). */
#ifndef ROAST_MIX_H
#define ROAST_MIX_H

#include <stdint.h>

static inline uint64_t roast_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

#endif
