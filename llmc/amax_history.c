#include "amax_history.h"

#include <stdlib.h>
#include <string.h>

#include "utils.h"

void amax_history_init(AmaxHistory *h, int operands, int length) {
    h->operands = operands;
    h->length = length;
    h->steps = 0;
    h->values = length > 0 ? (float *)calloc_check((size_t)operands * length, sizeof(float)) : NULL;
}

void amax_history_free(AmaxHistory *h) {
    free(h->values);
    h->values = NULL;
}

float amax_history_amax(const AmaxHistory *h, int op, float current) {
    if (h->steps == 0) return current;
    // Non-negative floats order like their bit patterns, and NaN's patterns lie above Inf's:
    // the maximum of the patterns of |x| is the maximum amax, or NaN if any is NaN.
    const float *ring = h->values + (size_t)op * h->length;
    uint32_t max_bits = 0;
    for (int i = 0; i < h->length; i++) {
        uint32_t bits;
        memcpy(&bits, &ring[i], sizeof(bits));
        bits &= 0x7FFFFFFFu;
        max_bits = bits > max_bits ? bits : max_bits;
    }
    float amax;
    memcpy(&amax, &max_bits, sizeof(amax));
    return amax;
}

void amax_history_record(AmaxHistory *h, int op, float amax) {
    h->values[(size_t)op * h->length + h->steps % h->length] = amax;
}

void amax_history_step_done(AmaxHistory *h) {
    if (h->length > 0) h->steps++;
}

void amax_history_reset(AmaxHistory *h) {
    h->steps = 0;
    if (h->values) memset(h->values, 0, (size_t)h->operands * h->length * sizeof(float));
}
