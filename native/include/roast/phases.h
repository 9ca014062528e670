/* A task's phase clock: every stretch of one thread's time charged to the
 * phase on top of a stack of entered phases, so nested phases are exclusive
 * and the phases of a task add up to the time the clock ran.
 *
 * Pure arithmetic: the caller reads its clocks (wall and thread CPU) and
 * passes them in, and reads them only when a call switches phase (what
 * roast_phase_enter_switches / roast_phase_leave_switches answer): a call
 * nested in its own phase reads no clock, its time goes to that phase
 * either way. The phases are small integers the caller names
 * (python/roastcoffea/instrument/phases.py: PHASES).
 *
 * The wall clock is read at every switch. The thread's CPU clock is a system
 * call that costs a busy thread microseconds in caches and predictors, so the
 * caller reads it only when roast_phase_wants_cpu_entering/_leaving say so:
 * once cpu_interval of wall has passed since its last read; on entering a
 * call the caller says may wait (an opaque call: opening, the output; a get
 * from an empty queue of arrived bytes), once ROAST_PHASE_WAIT_INTERVAL has,
 * so that a wait starts a window of its own; and on leaving a stretch the
 * thread may have waited in (of one of wait_phases, or of an opaque call)
 * that lasted ROAST_PHASE_WAIT_INTERVAL or more, so that it ends one. The CPU
 * of a window is split over its phases in proportion to their wall, after
 * the time the thread was off CPU has been charged to the window's waiting
 * stretches, as far as their wall goes: a wait is where a thread leaves the
 * CPU. The split is exact when the thread was off CPU only while waiting;
 * split_bound totals, per window, how much of the off-CPU time the split may
 * have put on the wrong phase (or codec) had the thread instead been
 * preempted, which bounds the error of each phase's (and codec's) CPU. The
 * phases' CPU always adds up to the CPU the clock ran.
 *
 * A phase's time off CPU is split into its causes with the thread's run-queue
 * delay (the kernel's, /proc/thread-self/schedstat): the time it was runnable
 * and waiting for a CPU. The caller reads it where the clock starts and ends,
 * and after a CPU read once the time off CPU since the last delay reading
 * reaches ROAST_PHASE_RUNQ_INTERVAL (roast_phase_wants_runq): a thread that
 * stays on its CPU reads it twice per task. The delay since the last reading
 * goes to the phases that were off CPU meanwhile, in proportion to their time
 * off CPU: exact when one phase was, and runq_bound totals what may have gone
 * to the wrong phase otherwise. The rest of a phase's time off CPU is time
 * blocked (I/O, locks, sleeps). */
#ifndef ROAST_PHASES_H
#define ROAST_PHASES_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "roast/common.h"

#define ROAST_PHASE_COUNT 7
/* The codecs a task's decompression is totalled by, small integers the
 * caller names (plugin/phaseclock.c: CODECS). */
#define ROAST_CODEC_COUNT 4

/* Wall and CPU seconds: a reading of the clocks, or a stretch between two.
 * A reading's cpu is ROAST_CPU_UNREAD when only the wall clock was read. */
typedef struct roast_instant {
    double wall, cpu;
} roast_instant;

#define ROAST_CPU_UNREAD NAN
/* The cpu_interval of the worker's clocks: at most one CPU clock read per
 * millisecond of a task besides the waits (python/roastcoffea/instrument/phases.py):
 * windows of several phases widen the split's bound when the thread is preempted. */
#define ROAST_PHASE_CPU_INTERVAL 1e-3
/* The interval at the start of a call that may wait, and the shortest
 * waiting stretch whose end reads the CPU clock (at most cpu_interval). */
#define ROAST_PHASE_WAIT_INTERVAL 50e-6
/* Seconds off CPU, since the last reading of the run-queue delay, that make
 * the next CPU read also read it. */
#define ROAST_PHASE_RUNQ_INTERVAL 200e-6
/* A run-queue delay that was not read (or cannot be, on this system). */
#define ROAST_RUNQ_UNREAD NAN

/* One codec's decompressions in a task: their stretches and bytes. */
typedef struct roast_codec_totals {
    double wall, cpu;
    uint64_t bytes_in, bytes_out;
    uint64_t calls;
} roast_codec_totals;

typedef struct roast_phase_clock {
    double wall[ROAST_PHASE_COUNT], cpu[ROAST_PHASE_COUNT];
    double last;        /* the wall clock at the last switch */
    double cpu_interval;
    roast_instant read; /* the clocks at the last CPU clock read */
    double window[ROAST_PHASE_COUNT];        /* wall per phase since then: CPU not split yet */
    double window_codecs[ROAST_CODEC_COUNT]; /* and per codec */
    double window_waits[ROAST_PHASE_COUNT];       /* of window, the waiting stretches' wall */
    double window_codec_waits[ROAST_CODEC_COUNT]; /* and of window_codecs */
    uint32_t wait_phases; /* bit p set: the thread may wait, off CPU, in phase p (none at init);
                             it may also in every opaque call */
    double split_bound; /* off-CPU seconds the split may have misplaced (see above) */
    uint64_t cpu_reads; /* reads of the CPU clock, the first included */
    double cpu_wait[ROAST_PHASE_COUNT]; /* run-queue delay charged per phase */
    double off_since[ROAST_PHASE_COUNT]; /* off-CPU seconds per phase since runq_read */
    double runq_read;   /* the run-queue delay at its last reading (ROAST_RUNQ_UNREAD: none) */
    double runq_bound;  /* run-queue seconds the split over phases may have misplaced */
    uint64_t runq_reads; /* readings of the run-queue delay, the first included */
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

/* Starts the clock at now (both clocks read), charging to base, reading the
 * CPU clock at most every cpu_interval seconds (0: at every switch). ENOMEM,
 * or EINVAL for a phase out of range or a negative interval; the clock needs
 * roast_phase_clock_release either way. */
roast_status roast_phase_clock_init(roast_phase_clock *clock, int base, roast_instant now,
                                    double cpu_interval);
void roast_phase_clock_release(roast_phase_clock *clock);

/* The phase on top of the stack. */
int roast_phase_top(const roast_phase_clock *clock);

/* Whether the thread may wait in the call on top of the stack: one of
 * wait_phases, or opaque. */
bool roast_phase_top_waits(const roast_phase_clock *clock);
/* Whether a switch at wall entering a call should also read the CPU clock;
 * may_wait: the caller expects the call may wait, off CPU. */
bool roast_phase_wants_cpu_entering(const roast_phase_clock *clock, double wall, bool may_wait);
/* Whether a switch at wall leaving the top call should also read it. */
bool roast_phase_wants_cpu_leaving(const roast_phase_clock *clock, double wall);

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
 * stretch, also to codec unless it is -1, and returns its wall seconds in
 * *stretch (zero otherwise). EINVAL when only the base is left or for a
 * codec out of range (nothing is popped). */
roast_status roast_phase_leave(roast_phase_clock *clock, roast_instant now, int codec,
                               double *stretch);

/* roast_phase_leave with the last stretch charged to phase instead of the
 * phase the call entered: a wait whose cause is known only when it ends (what
 * arrived). The stretch is a waiting one if the entered phase is; a call that
 * does not switch charges nothing of its own, as in roast_phase_leave. EINVAL
 * for a phase out of range (nothing is popped). */
roast_status roast_phase_leave_as(roast_phase_clock *clock, roast_instant now, int phase,
                                  double *stretch);

/* Charges the stretch so far to the top phase; returns its wall seconds. */
double roast_phase_charge(roast_phase_clock *clock, roast_instant now);
/* Charges the stretch so far, then charges time outside every entered phase
 * to base from now on. EINVAL for a phase out of range. */
roast_status roast_phase_rebase(roast_phase_clock *clock, int base, roast_instant now);

/* Whether the caller, having just passed a CPU reading, should read the
 * run-queue delay and pass it to roast_phase_add_runq. */
bool roast_phase_wants_runq(const roast_phase_clock *clock);
/* Takes a reading of the thread's cumulative run-queue delay (seconds): the
 * delay since the last one goes to the phases off CPU meanwhile (see above).
 * The first reading only starts the count; NAN (unreadable) changes nothing. */
void roast_phase_add_runq(roast_phase_clock *clock, double runq);

/* Counts one decompression by codec (compressed bytes in, bytes out; its
 * time came with its leave). EINVAL for a codec out of range. */
roast_status roast_phase_add_codec(roast_phase_clock *clock, int codec, uint64_t bytes_in,
                                   uint64_t bytes_out);

#endif
