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

static bool codec_valid(int codec)
{
    return codec >= 0 && codec < ROAST_CODEC_COUNT;
}

roast_status roast_phase_clock_init(roast_phase_clock *clock, int base, roast_instant now,
                                    double cpu_interval)
{
    memset(clock, 0, sizeof *clock);
    if (!phase_valid(base) || !(cpu_interval >= 0.0))
        return ROAST_EINVAL;
    if (!(clock->stack = malloc(FIRST_CAP)))
        return ROAST_ENOMEM;
    clock->cap = FIRST_CAP;
    clock->stack[0] = (uint8_t)base;
    clock->depth = 1;
    clock->last = now.wall;
    clock->cpu_interval = cpu_interval;
    clock->read = now;
    clock->cpu_reads = 1;
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

bool roast_phase_wants_cpu(const roast_phase_clock *clock, double wall, bool waiting)
{
    double interval = clock->cpu_interval;
    if (waiting && interval > ROAST_PHASE_WAIT_INTERVAL)
        interval = ROAST_PHASE_WAIT_INTERVAL;
    return wall - clock->read.wall >= interval;
}

/* Charges the wall since the last switch to the top phase (and codec). */
static double charge_wall(roast_phase_clock *clock, double wall, int codec)
{
    int phase = roast_phase_top(clock);
    double stretch = wall - clock->last;
    clock->wall[phase] += stretch;
    clock->window[phase] += stretch;
    if (codec >= 0) {
        clock->codecs[codec].wall += stretch;
        clock->window_codecs[codec] += stretch;
    }
    clock->last = wall;
    return stretch;
}

/* Splits the CPU since the last read over the window's phases and codecs by
 * their wall, and starts a new window at now. */
static void split_cpu(roast_phase_clock *clock, roast_instant now)
{
    double cpu = now.cpu - clock->read.cpu, span = 0.0;
    int phases = 0, codecs = 0;
    for (int i = 0; i < ROAST_PHASE_COUNT; i++) {
        span += clock->window[i];
        phases += clock->window[i] > 0.0;
    }
    if (span > 0.0) {
        for (int i = 0; i < ROAST_PHASE_COUNT; i++)
            clock->cpu[i] += cpu * (clock->window[i] / span);
        for (int i = 0; i < ROAST_CODEC_COUNT; i++) {
            /* exact when its wall is the whole window (the same sums, bit for bit) */
            codecs += clock->window_codecs[i] > 0.0 && clock->window_codecs[i] != span;
            clock->codecs[i].cpu += cpu * (clock->window_codecs[i] / span);
        }
    } else {
        clock->cpu[roast_phase_top(clock)] += cpu; /* no wall passed: nothing to split */
    }
    if ((phases > 1 || codecs > 0) && span > cpu)
        clock->split_bound += span - cpu;
    memset(clock->window, 0, sizeof clock->window);
    memset(clock->window_codecs, 0, sizeof clock->window_codecs);
    clock->read = now;
    clock->cpu_reads++;
}

static double charge(roast_phase_clock *clock, roast_instant now, int codec)
{
    double stretch = charge_wall(clock, now.wall, codec);
    if (!isnan(now.cpu))
        split_cpu(clock, now);
    return stretch;
}

double roast_phase_charge(roast_phase_clock *clock, roast_instant now)
{
    return charge(clock, now, -1);
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

roast_status roast_phase_leave(roast_phase_clock *clock, roast_instant now, int codec,
                               double *stretch)
{
    *stretch = 0.0;
    if (codec != -1 && !codec_valid(codec))
        return ROAST_EINVAL;
    if (clock->lost) {
        clock->lost--;
        return ROAST_OK;
    }
    if (clock->depth < 2)
        return ROAST_EINVAL;
    if (roast_phase_leave_switches(clock))
        *stretch = charge(clock, now, codec);
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

roast_status roast_phase_add_codec(roast_phase_clock *clock, int codec, uint64_t bytes_in,
                                   uint64_t bytes_out)
{
    if (!codec_valid(codec))
        return ROAST_EINVAL;
    roast_codec_totals *totals = &clock->codecs[codec];
    totals->bytes_in += bytes_in;
    totals->bytes_out += bytes_out;
    totals->calls++;
    return ROAST_OK;
}
