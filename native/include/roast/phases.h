/* A task's phase clock: every stretch of one thread's time charged to the
 * phase on top of a stack of entered phases, so nested phases are exclusive
 * and the phases of a task add up to the time the clock ran.
 *
 * Pure arithmetic: the caller reads its clocks (wall and thread CPU) and
 * passes them in, and reads them only when a call switches phase (what
 * roast_phase_enter_switches / roast_phase_leave_switches answer): a call
 * nested in its own phase reads no clock, its time goes to that phase
 * either way. The phases are small integers the caller names
 * (python/roastcoffea/instrument/phases.py: PHASES). */
#ifndef ROAST_PHASES_H
#define ROAST_PHASES_H

#include <stdbool.h>
#include <stdint.h>

#include "roast/common.h"

#define ROAST_PHASE_COUNT 7
/* The codecs a task's decompression is totalled by, small integers the
 * caller names (plugin/phaseclock.c: CODECS). */
#define ROAST_CODEC_COUNT 4

/* Wall and CPU seconds: a reading of the clocks, or a stretch between two. */
typedef struct roast_instant {
    double wall, cpu;
} roast_instant;

/* One codec's decompressions in a task: their stretches and bytes. */
typedef struct roast_codec_totals {
    double wall, cpu;
    uint64_t bytes_in, bytes_out;
    uint64_t calls;
} roast_codec_totals;

typedef struct roast_phase_clock {
    double wall[ROAST_PHASE_COUNT], cpu[ROAST_PHASE_COUNT];
    roast_instant last; /* the clocks at the last switch */
    uint8_t *stack;     /* entered phases, each with ROAST_PHASE_OPAQUE when opaque; */
    uint32_t depth;     /* stack[0] is the base phase, never left */
    uint32_t cap;
    uint32_t lost;      /* calls entered beyond ROAST_PHASE_MAX_DEPTH (or with no memory to
                           grow the stack): not on it, their time goes to its top */
    uint32_t opaque;    /* opaque phases on the stack: their calls charge nothing of their own */
    uint64_t switches;  /* calls that read the clocks on entry and exit */
    uint64_t nested;    /* calls inside a call of the same phase */
    roast_codec_totals codecs[ROAST_CODEC_COUNT];
} roast_phase_clock;

#define ROAST_PHASE_OPAQUE 0x80u
/* Deepest stack kept; Python's recursion limit keeps real calls far below it. */
#define ROAST_PHASE_MAX_DEPTH 65536u

/* Starts the clock at now, charging to base. ENOMEM, or EINVAL for a phase
 * out of range; the clock needs roast_phase_clock_release either way. */
roast_status roast_phase_clock_init(roast_phase_clock *clock, int base, roast_instant now);
void roast_phase_clock_release(roast_phase_clock *clock);

/* The phase on top of the stack. */
int roast_phase_top(const roast_phase_clock *clock);

/* Whether entering phase ends a stretch (then pass the clocks to enter). */
bool roast_phase_enter_switches(const roast_phase_clock *clock, int phase, bool opaque);
/* Pushes phase; charges the stretch so far to the phase it covers when the
 * call switches (now is ignored otherwise). EINVAL for a phase out of range.
 * A call that cannot be pushed (EFULL past ROAST_PHASE_MAX_DEPTH, ENOMEM),
 * and every call inside it, is counted in lost and unwound by its leave, so
 * enters and leaves stay paired. */
roast_status roast_phase_enter(roast_phase_clock *clock, int phase, bool opaque, roast_instant now);

/* Whether leaving the top phase ends a stretch. */
bool roast_phase_leave_switches(const roast_phase_clock *clock);
/* Pops the top phase (or a lost call); when it switches, charges its last
 * stretch and returns it in *stretch (zero otherwise). EINVAL when only the
 * base is left. */
roast_status roast_phase_leave(roast_phase_clock *clock, roast_instant now, roast_instant *stretch);

/* Charges the stretch so far to the top phase; returns it. */
roast_instant roast_phase_charge(roast_phase_clock *clock, roast_instant now);
/* Charges the stretch so far, then charges time outside every entered phase
 * to base from now on. EINVAL for a phase out of range. */
roast_status roast_phase_rebase(roast_phase_clock *clock, int base, roast_instant now);

/* Adds one decompression by codec (its stretch, compressed bytes in, bytes
 * out) to the task's totals. EINVAL for a codec out of range. */
roast_status roast_phase_add_codec(roast_phase_clock *clock, int codec, roast_instant stretch,
                                   uint64_t bytes_in, uint64_t bytes_out);

#endif
