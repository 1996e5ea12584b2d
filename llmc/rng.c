#include "rng.h"

#include <math.h>

double rng_normal(uint64_t seed, uint64_t stream, uint64_t counter) {
    // u1 in (0, 1] so log(u1) is finite; u2 in [0, 1).
    double u1 = ((double)(rng_bits(seed, stream, 2 * counter) >> 11) + 1.0) * 0x1.0p-53;
    double u2 = (double)(rng_bits(seed, stream, 2 * counter + 1) >> 11) * 0x1.0p-53;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}
