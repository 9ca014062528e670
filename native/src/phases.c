/* The phase clock's arithmetic (roast/phases.h). */
#include "roast/phases.h"

#include <stdlib.h>
#include <string.h>

#define PHASE_OF(entry) ((int)((entry) & ~ROAST_PHASE_OPAQUE))
#define FIRST_CAP 16u

static bool phase_valid(int phase)
{
    return phase >= 0 && phase < ROAST_PHASE_COUNT;
}

roast_status roast_phase_clock_init(roast_phase_clock *clock, int base, roast_instant now)
{
    memset(clock, 0, sizeof *clock);
    if (!phase_valid(base))
        return ROAST_EINVAL;
    if (!(clock->stack = malloc(FIRST_CAP)))
        return ROAST_ENOMEM;
    clock->cap = FIRST_CAP;
    clock->stack[0] = (uint8_t)base;
    clock->depth = 1;
    clock->last = now;
    return ROAST_OK;
}

void roast_phase_clock_release(roast_phase_clock *clock)
{
    free(clock->stack);
    clock->stack = NULL;
    clock->depth = clock->cap = 0;
}

int roast_phase_top(const roast_phase_clock *clock)
{
    return PHASE_OF(clock->stack[clock->depth - 1]);
}

roast_instant roast_phase_charge(roast_phase_clock *clock, roast_instant now)
{
    int phase = roast_phase_top(clock);
    roast_instant stretch = {now.wall - clock->last.wall, now.cpu - clock->last.cpu};
    clock->wall[phase] += stretch.wall;
    clock->cpu[phase] += stretch.cpu;
    clock->last = now;
    return stretch;
}

bool roast_phase_enter_switches(const roast_phase_clock *clock, int phase, bool opaque)
{
    return !clock->lost && clock->depth < ROAST_PHASE_MAX_DEPTH &&
           (opaque || phase != roast_phase_top(clock));
}

static roast_status grow(roast_phase_clock *clock)
{
    if (clock->depth == ROAST_PHASE_MAX_DEPTH)
        return ROAST_EFULL;
    if (clock->depth < clock->cap)
        return ROAST_OK;
    uint8_t *grown = realloc(clock->stack, clock->cap * 2u);
    if (!grown)
        return ROAST_ENOMEM;
    clock->stack = grown;
    clock->cap *= 2u;
    return ROAST_OK;
}

roast_status roast_phase_enter(roast_phase_clock *clock, int phase, bool opaque, roast_instant now)
{
    if (!phase_valid(phase))
        return ROAST_EINVAL;
    roast_status st = clock->lost ? ROAST_EFULL : grow(clock);
    if (st != ROAST_OK) {
        clock->lost++;
        return st;
    }
    if (roast_phase_enter_switches(clock, phase, opaque)) {
        roast_phase_charge(clock, now);
        clock->switches++;
    } else {
        clock->nested++;
    }
    clock->stack[clock->depth++] = (uint8_t)(phase | (opaque ? ROAST_PHASE_OPAQUE : 0u));
    clock->opaque += opaque;
    return ROAST_OK;
}

bool roast_phase_leave_switches(const roast_phase_clock *clock)
{
    if (clock->lost || clock->depth < 2)
        return false;
    uint8_t top = clock->stack[clock->depth - 1];
    return (top & ROAST_PHASE_OPAQUE) || PHASE_OF(top) != PHASE_OF(clock->stack[clock->depth - 2]);
}

roast_status roast_phase_leave(roast_phase_clock *clock, roast_instant now, roast_instant *stretch)
{
    *stretch = (roast_instant){0.0, 0.0};
    if (clock->lost) {
        clock->lost--;
        return ROAST_OK;
    }
    if (clock->depth < 2)
        return ROAST_EINVAL;
    if (roast_phase_leave_switches(clock))
        *stretch = roast_phase_charge(clock, now);
    if (clock->stack[--clock->depth] & ROAST_PHASE_OPAQUE)
        clock->opaque--;
    return ROAST_OK;
}

roast_status roast_phase_rebase(roast_phase_clock *clock, int base, roast_instant now)
{
    if (!phase_valid(base))
        return ROAST_EINVAL;
    roast_phase_charge(clock, now);
    clock->stack[0] = (uint8_t)base;
    return ROAST_OK;
}

roast_status roast_phase_add_codec(roast_phase_clock *clock, int codec, roast_instant stretch,
                                   uint64_t bytes_in, uint64_t bytes_out)
{
    if (codec < 0 || codec >= ROAST_CODEC_COUNT)
        return ROAST_EINVAL;
    roast_codec_totals *totals = &clock->codecs[codec];
    totals->wall += stretch.wall;
    totals->cpu += stretch.cpu;
    totals->bytes_in += bytes_in;
    totals->bytes_out += bytes_out;
    totals->calls++;
    return ROAST_OK;
}
