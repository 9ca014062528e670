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
    clock->runq_read = ROAST_RUNQ_UNREAD;
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

bool roast_phase_top_waits(const roast_phase_clock *clock)
{
    uint8_t top = clock->stack[clock->depth - 1];
    return (top & ROAST_PHASE_OPAQUE) || ((clock->wait_phases >> PHASE_OF(top)) & 1u);
}

static bool interval_passed(const roast_phase_clock *clock, double wall)
{
    return wall - clock->read.wall >= clock->cpu_interval;
}

bool roast_phase_wants_cpu_entering(const roast_phase_clock *clock, double wall, bool may_wait)
{
    return interval_passed(clock, wall) ||
           (may_wait && wall - clock->read.wall >= ROAST_PHASE_WAIT_INTERVAL);
}

bool roast_phase_wants_cpu_leaving(const roast_phase_clock *clock, double wall)
{
    return interval_passed(clock, wall) ||
           (roast_phase_top_waits(clock) && wall - clock->last >= ROAST_PHASE_WAIT_INTERVAL);
}

/* Charges the wall since the last switch to phase (and codec); waits: the
 * thread may have waited in it. */
static double charge_wall(roast_phase_clock *clock, double wall, int phase, bool waits, int codec)
{
    double stretch = wall - clock->last;
    clock->wall[phase] += stretch;
    clock->window[phase] += stretch;
    clock->window_waits[phase] += waits ? stretch : 0.0;
    if (codec >= 0) {
        clock->codecs[codec].wall += stretch;
        clock->window_codecs[codec] += stretch;
        clock->window_codec_waits[codec] += waits ? stretch : 0.0;
    }
    clock->last = wall;
    return stretch;
}

/* A window's wall, split in the stretches the thread may have waited in and
 * the rest, and how many phases share each part. A codec with some but not
 * all of the window (or of a part) also shares it with time outside it. */
typedef struct {
    double waits, rest;
    int waiting_phases, other_phases;
    int shared_codecs, shared_wait_codecs, shared_rest_codecs;
} window_parts;

/* Whether a codec's seconds of a part share it: some of it, not all. */
static bool shares(double codec, double part)
{
    return codec > 0.0 && codec != part;
}

static window_parts parts_of(const roast_phase_clock *clock)
{
    window_parts parts = {0};
    for (int i = 0; i < ROAST_PHASE_COUNT; i++) {
        double waits = clock->window_waits[i], rest = clock->window[i] - waits;
        parts.waits += waits;
        parts.rest += rest;
        parts.waiting_phases += waits > 0.0;
        parts.other_phases += rest > 0.0;
    }
    double span = parts.waits + parts.rest;
    for (int i = 0; i < ROAST_CODEC_COUNT; i++) { /* a codec that is the whole part splits nothing */
        double waits = clock->window_codec_waits[i], rest = clock->window_codecs[i] - waits;
        parts.shared_codecs += shares(clock->window_codecs[i], span);
        parts.shared_wait_codecs += shares(waits, parts.waits);
        parts.shared_rest_codecs += shares(rest, parts.rest);
    }
    return parts;
}

/* Splits cpu by wall alone: the window had no waiting stretch, or no time off CPU. */
static void split_by_wall(roast_phase_clock *clock, double cpu, double span,
                          const window_parts *parts)
{
    for (int i = 0; i < ROAST_PHASE_COUNT; i++)
        clock->cpu[i] += cpu * (clock->window[i] / span);
    for (int i = 0; i < ROAST_CODEC_COUNT; i++) /* exact for a whole window, bit for bit */
        clock->codecs[i].cpu += cpu * (clock->window_codecs[i] / span);
    if ((parts->waiting_phases + parts->other_phases > 1 || parts->shared_codecs) && span > cpu)
        clock->split_bound += span - cpu;
}

/* Splits cpu with the window's off-CPU time (off > 0) on its waiting
 * stretches first. Had the thread been preempted in the rest instead, up to
 * min(off, rest) - off_rest of it went to the wrong side; within a side
 * shared by several phases (or codecs), its off-CPU time was split by wall. */
static void split_waits_first(roast_phase_clock *clock, double off, const window_parts *parts)
{
    double off_waits = fmin(off, parts->waits), off_rest = off - off_waits;
    double wait_rate = 1.0 - off_waits / parts->waits; /* CPU per second of wall */
    double rest_rate = parts->rest > 0.0 ? 1.0 - off_rest / parts->rest : 0.0;
    for (int i = 0; i < ROAST_PHASE_COUNT; i++) {
        double waits = clock->window_waits[i];
        clock->cpu[i] += waits * wait_rate + (clock->window[i] - waits) * rest_rate;
    }
    for (int i = 0; i < ROAST_CODEC_COUNT; i++) {
        double waits = clock->window_codec_waits[i];
        clock->codecs[i].cpu += waits * wait_rate + (clock->window_codecs[i] - waits) * rest_rate;
    }
    double wrong = fmin(off, parts->rest) - off_rest;
    if (parts->waiting_phases > 1 || parts->shared_wait_codecs)
        wrong += off_waits;
    if (parts->other_phases > 1 || parts->shared_rest_codecs)
        wrong += off_rest;
    clock->split_bound += fmin(wrong, off);
}

/* Adds each phase's time off CPU in the window (its wall less the CPU just
 * split to it) to the time off CPU since the last run-queue reading. */
static void note_off_cpu(roast_phase_clock *clock, const double *cpu_before)
{
    for (int i = 0; i < ROAST_PHASE_COUNT; i++) {
        double off = clock->window[i] - (clock->cpu[i] - cpu_before[i]);
        clock->off_since[i] += off > 0.0 ? off : 0.0;
    }
}

/* Splits the CPU since the last read over the window's phases and codecs,
 * and starts a new window at now. */
static void split_cpu(roast_phase_clock *clock, roast_instant now)
{
    double cpu = now.cpu - clock->read.cpu;
    double cpu_before[ROAST_PHASE_COUNT];
    memcpy(cpu_before, clock->cpu, sizeof cpu_before);
    window_parts parts = parts_of(clock);
    double span = parts.waits + parts.rest;
    if (span <= 0.0)
        clock->cpu[roast_phase_top(clock)] += cpu; /* no wall passed: nothing to split */
    else if (parts.waits > 0.0 && span > cpu)
        split_waits_first(clock, span - cpu, &parts);
    else
        split_by_wall(clock, cpu, span, &parts);
    note_off_cpu(clock, cpu_before);
    memset(clock->window, 0, sizeof clock->window);
    memset(clock->window_codecs, 0, sizeof clock->window_codecs);
    memset(clock->window_waits, 0, sizeof clock->window_waits);
    memset(clock->window_codec_waits, 0, sizeof clock->window_codec_waits);
    clock->read = now;
    clock->cpu_reads++;
}

/* Charges the stretch so far to phase (-1: the top phase) and codec. */
static double charge(roast_phase_clock *clock, roast_instant now, int phase, int codec)
{
    if (phase < 0)
        phase = roast_phase_top(clock);
    double stretch = charge_wall(clock, now.wall, phase, roast_phase_top_waits(clock), codec);
    if (!isnan(now.cpu))
        split_cpu(clock, now);
    return stretch;
}

double roast_phase_charge(roast_phase_clock *clock, roast_instant now)
{
    return charge(clock, now, -1, -1);
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

/* Pops the top call, its last stretch charged to phase (-1: its own) and codec. */
static roast_status leave(roast_phase_clock *clock, roast_instant now, int phase, int codec,
                          double *stretch)
{
    *stretch = 0.0;
    if ((codec != -1 && !codec_valid(codec)) || (phase != -1 && !phase_valid(phase)))
        return ROAST_EINVAL;
    if (clock->lost) {
        clock->lost--;
        return ROAST_OK;
    }
    if (clock->depth < 2)
        return ROAST_EINVAL;
    if (roast_phase_leave_switches(clock))
        *stretch = charge(clock, now, phase, codec);
    if (clock->stack[--clock->depth] & ROAST_PHASE_OPAQUE)
        clock->opaque--;
    return ROAST_OK;
}

roast_status roast_phase_leave(roast_phase_clock *clock, roast_instant now, int codec,
                               double *stretch)
{
    return leave(clock, now, -1, codec, stretch);
}

roast_status roast_phase_leave_as(roast_phase_clock *clock, roast_instant now, int phase,
                                  double *stretch)
{
    if (!phase_valid(phase)) {
        *stretch = 0.0;
        return ROAST_EINVAL;
    }
    return leave(clock, now, phase, -1, stretch);
}

roast_status roast_phase_rebase(roast_phase_clock *clock, int base, roast_instant now)
{
    if (!phase_valid(base))
        return ROAST_EINVAL;
    roast_phase_charge(clock, now);
    clock->stack[0] = (uint8_t)base;
    return ROAST_OK;
}

bool roast_phase_wants_runq(const roast_phase_clock *clock)
{
    if (isnan(clock->runq_read))
        return false;
    double off = 0.0;
    for (int i = 0; i < ROAST_PHASE_COUNT; i++)
        off += clock->off_since[i];
    return off >= ROAST_PHASE_RUNQ_INTERVAL;
}

void roast_phase_add_runq(roast_phase_clock *clock, double runq)
{
    if (isnan(runq))
        return;
    double delay = isnan(clock->runq_read) ? 0.0 : runq - clock->runq_read;
    double off = 0.0;
    int off_phases = 0;
    for (int i = 0; i < ROAST_PHASE_COUNT; i++) {
        off += clock->off_since[i];
        off_phases += clock->off_since[i] > 0.0;
    }
    if (delay > 0.0 && off > 0.0) {
        for (int i = 0; i < ROAST_PHASE_COUNT; i++)
            clock->cpu_wait[i] += delay * (clock->off_since[i] / off);
        if (off_phases > 1)
            clock->runq_bound += delay;
    } else if (delay > 0.0) { /* off CPU too briefly to show in the clocks: the top's */
        clock->cpu_wait[roast_phase_top(clock)] += delay;
    }
    memset(clock->off_since, 0, sizeof clock->off_since);
    clock->runq_read = runq;
    clock->runq_reads++;
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
