#include "check.h"
#include "roast/phases.h"

enum { OPEN, READ, DECOMPRESS, INTERPRET, USER, OUTPUT, OTHER };

static roast_instant at(double wall, double cpu)
{
    return (roast_instant){wall, cpu};
}

static double sum(const double *seconds)
{
    double total = 0.0;
    for (int i = 0; i < ROAST_PHASE_COUNT; i++)
        total += seconds[i];
    return total;
}

/* Nested phases are exclusive and the phases add up to the time the clock ran. */
static void test_stretches_go_to_the_top_phase(void)
{
    roast_phase_clock c;
    CHECK(roast_phase_clock_init(&c, OTHER, at(10, 1), 0) == ROAST_OK);
    CHECK(roast_phase_enter(&c, INTERPRET, false, at(11, 1.5)) == ROAST_OK);
    CHECK(roast_phase_enter(&c, DECOMPRESS, false, at(13, 2.5)) == ROAST_OK);
    double stretch;
    CHECK(roast_phase_leave(&c, at(14, 3.25), -1, &stretch) == ROAST_OK);
    CHECK_EQ_D(stretch, 1.0);
    CHECK_EQ_D(c.cpu[DECOMPRESS], 0.75);
    CHECK(roast_phase_leave(&c, at(16, 3.5), -1, &stretch) == ROAST_OK);
    roast_phase_charge(&c, at(20, 4));
    CHECK_EQ_D(c.wall[OTHER], 1 + 4);
    CHECK_EQ_D(c.wall[INTERPRET], 2 + 2);
    CHECK_EQ_D(c.wall[DECOMPRESS], 1);
    CHECK_EQ_D(c.cpu[INTERPRET], 1 + 0.25);
    CHECK_EQ_D(sum(c.wall), 10);
    CHECK_EQ_D(sum(c.cpu), 3);
    CHECK_EQ_U(c.switches, 2);
    CHECK_EQ_U(c.nested, 0);
    roast_phase_clock_release(&c);
}

/* A call inside a call of its own phase reads no clock: the caller is told,
 * and the clocks it would pass are not used. */
static void test_a_call_nested_in_its_phase_charges_nothing(void)
{
    roast_phase_clock c;
    CHECK(roast_phase_clock_init(&c, OTHER, at(0, 0), 0) == ROAST_OK);
    CHECK(roast_phase_enter_switches(&c, READ, false));
    CHECK(roast_phase_enter(&c, READ, false, at(1, 1)) == ROAST_OK);
    CHECK(!roast_phase_enter_switches(&c, READ, false));
    CHECK(roast_phase_enter(&c, READ, false, at(99, 99)) == ROAST_OK);
    CHECK(!roast_phase_leave_switches(&c));
    double stretch;
    CHECK(roast_phase_leave(&c, at(99, 99), -1, &stretch) == ROAST_OK);
    CHECK_EQ_D(stretch, 0);
    CHECK(roast_phase_leave_switches(&c));
    CHECK(roast_phase_leave(&c, at(3, 2), -1, &stretch) == ROAST_OK);
    CHECK_EQ_D(stretch, 2);
    CHECK_EQ_D(c.wall[READ], 2);
    CHECK_EQ_D(c.cpu[OTHER], 1);
    CHECK_EQ_U(c.switches, 1);
    CHECK_EQ_U(c.nested, 1);
    roast_phase_clock_release(&c);
}

/* An opaque phase always switches, even inside its own phase, and counts
 * while it is on the stack. */
static void test_opaque_phases_switch_and_are_counted(void)
{
    roast_phase_clock c;
    CHECK(roast_phase_clock_init(&c, OTHER, at(0, 0), 0) == ROAST_OK);
    CHECK(roast_phase_enter_switches(&c, OTHER, true));
    CHECK(roast_phase_enter(&c, OTHER, true, at(1, 0)) == ROAST_OK);
    CHECK(roast_phase_enter(&c, OPEN, true, at(2, 0)) == ROAST_OK);
    CHECK_EQ_U(c.opaque, 2);
    double stretch;
    CHECK(roast_phase_leave_switches(&c));
    CHECK(roast_phase_leave(&c, at(5, 0), -1, &stretch) == ROAST_OK);
    CHECK_EQ_U(c.opaque, 1);
    CHECK(roast_phase_leave_switches(&c));
    CHECK(roast_phase_leave(&c, at(6, 0), -1, &stretch) == ROAST_OK);
    CHECK_EQ_D(stretch, 1);
    CHECK_EQ_U(c.opaque, 0);
    CHECK_EQ_D(c.wall[OPEN], 3);
    CHECK_EQ_D(c.wall[OTHER], 3);
    CHECK_EQ_U(c.switches, 2);
    roast_phase_clock_release(&c);
}

/* The stack grows past its first allocation and unwinds exactly. */
static void test_deep_nesting(void)
{
    roast_phase_clock c;
    CHECK(roast_phase_clock_init(&c, OTHER, at(0, 0), 0) == ROAST_OK);
    for (int i = 0; i < 1000; i++)
        CHECK(roast_phase_enter(&c, i % 2 ? READ : INTERPRET, false, at(i + 1, 0)) == ROAST_OK);
    CHECK(c.cap >= 1001);
    double stretch;
    for (int i = 1000; i > 0; i--)
        CHECK(roast_phase_leave(&c, at(2000 - i + 1, 0), -1, &stretch) == ROAST_OK);
    CHECK_EQ_U(c.depth, 1);
    CHECK_EQ_D(sum(c.wall), 2000);
    CHECK_EQ_U(c.switches, 1000);
    roast_phase_clock_release(&c);
}

/* Past the deepest stack kept, calls are counted as lost, charge nothing of
 * their own, and unwind in order: the stack under them is intact. */
static void test_calls_past_the_deepest_stack_are_lost_and_unwound(void)
{
    roast_phase_clock c;
    CHECK(roast_phase_clock_init(&c, OTHER, at(0, 0), 0) == ROAST_OK);
    for (uint32_t i = 1; i < ROAST_PHASE_MAX_DEPTH; i++)
        CHECK(roast_phase_enter(&c, i % 2 ? READ : INTERPRET, false, at(i, 0)) == ROAST_OK);
    int top = roast_phase_top(&c);
    CHECK(!roast_phase_enter_switches(&c, OPEN, true));
    CHECK(roast_phase_enter(&c, OPEN, true, at(1e6, 0)) == ROAST_EFULL);
    CHECK(roast_phase_enter(&c, DECOMPRESS, false, at(1e6, 0)) == ROAST_EFULL);
    CHECK_EQ_U(c.lost, 2);
    CHECK_EQ_U(c.opaque, 0);
    double stretch;
    CHECK(!roast_phase_leave_switches(&c));
    CHECK(roast_phase_leave(&c, at(1e6, 0), -1, &stretch) == ROAST_OK);
    CHECK(roast_phase_leave(&c, at(1e6, 0), -1, &stretch) == ROAST_OK);
    CHECK_EQ_D(stretch, 0);
    CHECK_EQ_U(c.lost, 0);
    CHECK_EQ_U(c.depth, ROAST_PHASE_MAX_DEPTH);
    CHECK_EQ_U(roast_phase_top(&c), top);
    for (uint32_t i = ROAST_PHASE_MAX_DEPTH; i > 1; i--)
        CHECK(roast_phase_leave(&c, at(2e6, 0), -1, &stretch) == ROAST_OK);
    CHECK_EQ_U(c.depth, 1);
    roast_phase_charge(&c, at(2e6, 0));
    CHECK_EQ_D(sum(c.wall), 2e6);
    CHECK_EQ_D(c.wall[OPEN] + c.wall[DECOMPRESS], 0);
    roast_phase_clock_release(&c);
}

static void test_contract_breaches_are_refused(void)
{
    roast_phase_clock c;
    CHECK(roast_phase_clock_init(&c, ROAST_PHASE_COUNT, at(0, 0), 0) == ROAST_EINVAL);
    roast_phase_clock_release(&c);
    CHECK(roast_phase_clock_init(&c, OTHER, at(0, 0), 0) == ROAST_OK);
    double stretch = 7;
    CHECK(!roast_phase_leave_switches(&c));
    CHECK(roast_phase_leave(&c, at(1, 1), -1, &stretch) == ROAST_EINVAL);
    CHECK_EQ_D(stretch, 0);
    CHECK(roast_phase_enter(&c, -1, false, at(1, 1)) == ROAST_EINVAL);
    CHECK(roast_phase_enter(&c, ROAST_PHASE_COUNT, false, at(1, 1)) == ROAST_EINVAL);
    CHECK(roast_phase_rebase(&c, 99, at(1, 1)) == ROAST_EINVAL);
    CHECK_EQ_U(c.depth, 1);
    CHECK_EQ_D(sum(c.wall), 0);
    roast_phase_clock_release(&c);
}

/* rebase charges the stretch so far to the old base, the rest to the new one. */
static void test_rebase(void)
{
    roast_phase_clock c;
    CHECK(roast_phase_clock_init(&c, OTHER, at(0, 0), 0) == ROAST_OK);
    CHECK(roast_phase_rebase(&c, USER, at(2, 1)) == ROAST_OK);
    CHECK(roast_phase_enter(&c, OUTPUT, true, at(5, 2)) == ROAST_OK);
    double stretch;
    CHECK(roast_phase_leave(&c, at(6, 3), -1, &stretch) == ROAST_OK);
    CHECK_EQ_U(roast_phase_top(&c), USER);
    roast_phase_charge(&c, at(7, 3));
    CHECK_EQ_D(c.wall[OTHER], 2);
    CHECK_EQ_D(c.wall[USER], 3 + 1);
    CHECK_EQ_D(c.wall[OUTPUT], 1);
    CHECK_EQ_D(c.cpu[USER], 1);
    roast_phase_clock_release(&c);
}

/* A codec's totals add the stretches of the decompressions it left and the
 * bytes of each call; a codec out of range is refused. */
static void test_codec_totals(void)
{
    roast_phase_clock c;
    CHECK(roast_phase_clock_init(&c, OTHER, at(0, 0), 0) == ROAST_OK);
    double stretch;
    CHECK(roast_phase_enter(&c, DECOMPRESS, false, at(1, 1)) == ROAST_OK);
    CHECK(roast_phase_leave(&c, at(1.5, 1.25), 1, &stretch) == ROAST_OK);
    CHECK(roast_phase_add_codec(&c, 1, 100, 400) == ROAST_OK);
    CHECK(roast_phase_enter(&c, DECOMPRESS, false, at(2, 1.5)) == ROAST_OK);
    CHECK(roast_phase_leave(&c, at(3.5, 2.75), 1, &stretch) == ROAST_OK);
    CHECK(roast_phase_add_codec(&c, 1, 50, 150) == ROAST_OK);
    CHECK(roast_phase_add_codec(&c, ROAST_CODEC_COUNT, 1, 1) == ROAST_EINVAL);
    CHECK(roast_phase_add_codec(&c, -1, 1, 1) == ROAST_EINVAL);
    CHECK(roast_phase_enter(&c, DECOMPRESS, false, at(4, 3)) == ROAST_OK);
    CHECK(roast_phase_leave(&c, at(5, 4), ROAST_CODEC_COUNT, &stretch) == ROAST_EINVAL);
    CHECK(roast_phase_leave(&c, at(5, 4), -2, &stretch) == ROAST_EINVAL);
    CHECK_EQ_U(c.depth, 2);
    CHECK(roast_phase_leave(&c, at(5, 4), -1, &stretch) == ROAST_OK);
    CHECK_EQ_D(c.codecs[1].wall, 2);
    CHECK_EQ_D(c.codecs[1].cpu, 1.5);
    CHECK_EQ_D(c.wall[DECOMPRESS], 3);
    CHECK_EQ_U(c.codecs[1].bytes_in, 150);
    CHECK_EQ_U(c.codecs[1].bytes_out, 550);
    CHECK_EQ_U(c.codecs[1].calls, 2);
    CHECK_EQ_U(c.codecs[0].calls + c.codecs[2].calls + c.codecs[3].calls, 0);
    CHECK_EQ_D(c.split_bound, 0);
    roast_phase_clock_release(&c);
}

/* The CPU clock is wanted once cpu_interval has passed since its last read;
 * on entering a call that may wait, or leaving a stretch the thread may have
 * waited in that lasted, once ROAST_PHASE_WAIT_INTERVAL has. */
static void test_the_cpu_clock_is_wanted_per_interval_and_around_waits(void)
{
    const double w = ROAST_PHASE_WAIT_INTERVAL;
    roast_phase_clock c;
    CHECK(roast_phase_clock_init(&c, OTHER, at(10, 1), 0.5) == ROAST_OK);
    c.wait_phases = 1u << READ;
    CHECK(!roast_phase_wants_cpu_entering(&c, 10.25, false));
    CHECK(roast_phase_wants_cpu_entering(&c, 10.5, false));
    CHECK(roast_phase_wants_cpu_leaving(&c, 10.5));
    /* a call that may wait starts a window of its own; one that may not, no */
    CHECK(!roast_phase_wants_cpu_entering(&c, 10 + w / 2, true));
    CHECK(roast_phase_wants_cpu_entering(&c, 10 + 2 * w, true));
    CHECK(!roast_phase_wants_cpu_entering(&c, 10 + 2 * w, false));
    CHECK(roast_phase_enter(&c, INTERPRET, false, at(10.25, ROAST_CPU_UNREAD)) == ROAST_OK);
    CHECK(roast_phase_enter(&c, READ, false, at(10.75, 1.5)) == ROAST_OK);
    CHECK(!roast_phase_wants_cpu_entering(&c, 11, false));
    /* leaving a read: only a stretch long enough to have waited */
    CHECK(!roast_phase_wants_cpu_leaving(&c, 10.75 + w / 2));
    CHECK(roast_phase_wants_cpu_leaving(&c, 10.75 + 2 * w));
    double stretch;
    CHECK(roast_phase_leave(&c, at(10.875, ROAST_CPU_UNREAD), -1, &stretch) == ROAST_OK);
    /* an opaque call may wait too; a call that is neither may not */
    CHECK(roast_phase_enter(&c, OPEN, true, at(10.9, ROAST_CPU_UNREAD)) == ROAST_OK);
    CHECK(roast_phase_top_waits(&c));
    CHECK(roast_phase_wants_cpu_leaving(&c, 11));
    CHECK(roast_phase_leave(&c, at(11, ROAST_CPU_UNREAD), -1, &stretch) == ROAST_OK);
    CHECK(!roast_phase_top_waits(&c));
    CHECK(!roast_phase_wants_cpu_leaving(&c, 11 + 2 * w));
    CHECK_EQ_U(c.cpu_reads, 2);
    roast_phase_clock_release(&c);
    CHECK(roast_phase_clock_init(&c, OTHER, at(0, 0), 0) == ROAST_OK);
    CHECK(roast_phase_wants_cpu_entering(&c, 0, false) && roast_phase_wants_cpu_leaving(&c, 0));
    roast_phase_clock_release(&c);
    CHECK(roast_phase_clock_init(&c, OTHER, at(0, 0), -1) == ROAST_EINVAL);
    roast_phase_clock_release(&c);
    CHECK(roast_phase_clock_init(&c, OTHER, at(0, 0), NAN) == ROAST_EINVAL);
    roast_phase_clock_release(&c);
}

/* Between two reads of the CPU clock, its CPU goes to the window's phases by
 * their wall: the sum stays exact, and the time off CPU in a window that
 * several phases shared bounds each phase's error. */
static void test_a_window_splits_its_cpu_by_wall(void)
{
    roast_phase_clock c;
    CHECK(roast_phase_clock_init(&c, OTHER, at(0, 0), 10) == ROAST_OK);
    double stretch;
    /* window 1: other 1 s, decompress (ZLIB, index 0) 2 s, interpret 1 s; 3 s of CPU */
    CHECK(roast_phase_enter(&c, INTERPRET, false, at(1, ROAST_CPU_UNREAD)) == ROAST_OK);
    CHECK(roast_phase_enter(&c, DECOMPRESS, false, at(1.5, ROAST_CPU_UNREAD)) == ROAST_OK);
    CHECK(roast_phase_leave(&c, at(3.5, ROAST_CPU_UNREAD), 0, &stretch) == ROAST_OK);
    CHECK_EQ_D(stretch, 2);
    CHECK(roast_phase_leave(&c, at(4, 3), -1, &stretch) == ROAST_OK);
    CHECK_EQ_D(c.cpu[OTHER], 0.75);
    CHECK_EQ_D(c.cpu[DECOMPRESS], 1.5);
    CHECK_EQ_D(c.codecs[0].cpu, 1.5);
    CHECK_EQ_D(c.cpu[INTERPRET], 0.75);
    CHECK_EQ_D(c.split_bound, 1);
    /* window 2: one phase, exact however long it waited */
    CHECK(roast_phase_enter(&c, READ, false, at(5, 3.5)) == ROAST_OK);
    CHECK_EQ_D(c.cpu[OTHER], 1.25);
    CHECK(roast_phase_leave(&c, at(9, 3.75), -1, &stretch) == ROAST_OK);
    CHECK_EQ_D(c.cpu[READ], 0.25);
    CHECK_EQ_D(c.split_bound, 1);
    /* no wall passed since the last read: the CPU goes to the top phase */
    roast_phase_charge(&c, at(9, 3.875));
    CHECK_EQ_D(c.cpu[OTHER], 1.375);
    CHECK_EQ_D(sum(c.cpu), 3.875);
    CHECK_EQ_D(sum(c.wall), 9);
    CHECK_EQ_U(c.cpu_reads, 5);
    roast_phase_clock_release(&c);
}

/* A window that is one codec's whole decompression splits nothing; one that
 * shares the phase with time outside the codec does. */
static void test_a_codec_window_is_exact_only_when_it_is_the_codec(void)
{
    roast_phase_clock c;
    CHECK(roast_phase_clock_init(&c, OTHER, at(0, 0), 10) == ROAST_OK);
    double stretch;
    CHECK(roast_phase_enter(&c, DECOMPRESS, false, at(0, 0)) == ROAST_OK);
    CHECK(roast_phase_leave(&c, at(2, 1), 2, &stretch) == ROAST_OK);
    CHECK_EQ_D(c.codecs[2].cpu, 1);
    CHECK_EQ_D(c.split_bound, 0);
    CHECK(roast_phase_enter(&c, DECOMPRESS, false, at(3, ROAST_CPU_UNREAD)) == ROAST_OK);
    CHECK(roast_phase_leave(&c, at(4, 1.5), 2, &stretch) == ROAST_OK);
    CHECK_EQ_D(c.codecs[2].cpu, 1.25);
    CHECK_EQ_D(c.cpu[DECOMPRESS], 1.25);
    CHECK_EQ_D(c.cpu[OTHER], 0.25);
    CHECK_EQ_D(c.split_bound, 1.5);
    roast_phase_clock_release(&c);
}

/* A window's time off CPU goes to its waiting stretches first, as far as
 * their wall goes: exact when the thread left the CPU only to wait, and the
 * bound is what would be wrong had it been preempted elsewhere instead. */
static void test_a_window_charges_its_time_off_cpu_to_its_waits_first(void)
{
    roast_phase_clock c;
    CHECK(roast_phase_clock_init(&c, OTHER, at(0, 0), 10) == ROAST_OK);
    c.wait_phases = 1u << READ;
    double stretch;
    /* interpret 1 s, then a read of 2 s that waited 1.5 s: 1.5 s of CPU */
    CHECK(roast_phase_enter(&c, INTERPRET, false, at(0, 0)) == ROAST_OK);
    CHECK(roast_phase_enter(&c, READ, false, at(1, ROAST_CPU_UNREAD)) == ROAST_OK);
    CHECK(roast_phase_leave(&c, at(3, 1.5), -1, &stretch) == ROAST_OK);
    CHECK_EQ_D(c.cpu[INTERPRET], 1);
    CHECK_EQ_D(c.cpu[READ], 0.5);
    CHECK_EQ_D(c.split_bound, 1); /* had interpret been preempted instead: min(1.5, 1) */
    /* off CPU longer than the waits: the rest loses what is left, by wall */
    CHECK(roast_phase_enter(&c, DECOMPRESS, false, at(3, ROAST_CPU_UNREAD)) == ROAST_OK);
    CHECK(roast_phase_leave(&c, at(5, ROAST_CPU_UNREAD), 1, &stretch) == ROAST_OK);
    CHECK(roast_phase_enter(&c, READ, false, at(5, ROAST_CPU_UNREAD)) == ROAST_OK);
    CHECK(roast_phase_leave(&c, at(6, 2.5), -1, &stretch) == ROAST_OK);
    /* window: decompress (codec 1) 2 s, read 1 s; 1 s of CPU, 2 s off */
    CHECK_EQ_D(c.cpu[READ], 0.5);
    CHECK_EQ_D(c.cpu[DECOMPRESS], 1);
    CHECK_EQ_D(c.codecs[1].cpu, 1);
    CHECK_EQ_D(c.split_bound, 1 + 1); /* min(2, 2) - 1 */
    /* a window of two waiting phases splits their off-CPU time by wall */
    CHECK(roast_phase_enter(&c, OPEN, true, at(6, ROAST_CPU_UNREAD)) == ROAST_OK);
    CHECK(roast_phase_leave(&c, at(7, ROAST_CPU_UNREAD), -1, &stretch) == ROAST_OK);
    CHECK(roast_phase_enter(&c, READ, false, at(7, ROAST_CPU_UNREAD)) == ROAST_OK);
    CHECK(roast_phase_leave(&c, at(10, 3), -1, &stretch) == ROAST_OK);
    CHECK_EQ_D(c.cpu[OPEN], 0.125);
    CHECK_EQ_D(c.cpu[READ], 0.5 + 0.375);
    CHECK_EQ_D(c.split_bound, 2 + 3.5);
    /* no time off CPU: by wall, and nothing to bound */
    CHECK(roast_phase_enter(&c, READ, false, at(10, ROAST_CPU_UNREAD)) == ROAST_OK);
    CHECK(roast_phase_leave(&c, at(11, 4), -1, &stretch) == ROAST_OK);
    CHECK_EQ_D(c.cpu[READ], 0.875 + 1);
    CHECK_EQ_D(c.split_bound, 5.5);
    CHECK_EQ_D(sum(c.cpu), 4);
    CHECK_EQ_D(sum(c.wall), 11);
    roast_phase_clock_release(&c);
}

/* A wait charged, as it ends, to what it waited for: the stretch goes to that
 * phase, still a waiting stretch (the window's time off CPU goes to it first). */
static void test_a_wait_is_charged_to_what_ended_it(void)
{
    roast_phase_clock c;
    CHECK(roast_phase_clock_init(&c, OTHER, at(0, 0), 10) == ROAST_OK);
    c.wait_phases = 1u << READ;
    double stretch;
    /* interpret 1 s on CPU, then a 2 s wait for a decompressed basket, 0.5 s on CPU */
    CHECK(roast_phase_enter(&c, INTERPRET, false, at(0, 0)) == ROAST_OK);
    CHECK(roast_phase_enter(&c, READ, false, at(1, ROAST_CPU_UNREAD)) == ROAST_OK);
    CHECK(roast_phase_leave_as(&c, at(3, 1.5), DECOMPRESS, &stretch) == ROAST_OK);
    CHECK_EQ_D(stretch, 2);
    CHECK_EQ_D(c.wall[READ], 0);
    CHECK_EQ_D(c.wall[DECOMPRESS], 2);
    CHECK_EQ_D(c.cpu[DECOMPRESS], 0.5);
    CHECK_EQ_D(c.cpu[INTERPRET], 1);
    /* a wait nested in a read charges nothing of its own: the read's stretch is the read's */
    CHECK(roast_phase_enter(&c, READ, false, at(3, ROAST_CPU_UNREAD)) == ROAST_OK);
    CHECK(roast_phase_enter(&c, READ, false, at(4, ROAST_CPU_UNREAD)) == ROAST_OK);
    CHECK(roast_phase_leave_as(&c, at(5, ROAST_CPU_UNREAD), INTERPRET, &stretch) == ROAST_OK);
    CHECK_EQ_D(stretch, 0);
    CHECK(roast_phase_leave(&c, at(6, 2), -1, &stretch) == ROAST_OK);
    CHECK_EQ_D(c.wall[READ], 3);
    CHECK(roast_phase_leave_as(&c, at(6, ROAST_CPU_UNREAD), OTHER + 1, &stretch) == ROAST_EINVAL);
    CHECK_EQ_U(c.depth, 2);
    CHECK(roast_phase_leave(&c, at(7, 3), -1, &stretch) == ROAST_OK);
    CHECK_EQ_D(sum(c.wall), 7);
    CHECK_EQ_D(sum(c.cpu), 3);
    roast_phase_clock_release(&c);
}

/* The run-queue delay goes to the phases that were off CPU since its last
 * reading, by their time off CPU; exact for one such phase, bounded otherwise. */
static void test_the_run_queue_delay_goes_to_the_phases_off_cpu(void)
{
    roast_phase_clock c;
    CHECK(roast_phase_clock_init(&c, OTHER, at(0, 0), 10) == ROAST_OK);
    c.wait_phases = 1u << READ;
    double stretch;
    CHECK(!roast_phase_wants_runq(&c)); /* no first reading: nothing to count from */
    roast_phase_add_runq(&c, 5.0);      /* the task starts 5 s into the thread's delay */
    CHECK_EQ_D(sum(c.cpu_wait), 0);
    CHECK_EQ_U(c.runq_reads, 1);
    /* interpret 2 s with 0.5 s of CPU: 1.5 s off CPU, 1 s of it waiting for a CPU */
    CHECK(roast_phase_enter(&c, INTERPRET, false, at(0, 0)) == ROAST_OK);
    CHECK(roast_phase_leave(&c, at(2, 0.5), -1, &stretch) == ROAST_OK);
    CHECK(roast_phase_wants_runq(&c));
    roast_phase_add_runq(&c, 6.0);
    CHECK_EQ_D(c.cpu_wait[INTERPRET], 1);
    CHECK_EQ_D(c.runq_bound, 0); /* one phase off CPU: exact */
    CHECK(!roast_phase_wants_runq(&c));
    /* a read off CPU 1 s and an interpret off CPU 3 s in one window: 2 s of delay
     * split 1:3, all of it possibly misplaced */
    CHECK(roast_phase_enter(&c, READ, false, at(2, ROAST_CPU_UNREAD)) == ROAST_OK);
    CHECK(roast_phase_leave(&c, at(3, ROAST_CPU_UNREAD), -1, &stretch) == ROAST_OK);
    CHECK(roast_phase_enter(&c, INTERPRET, false, at(3, ROAST_CPU_UNREAD)) == ROAST_OK);
    CHECK(roast_phase_leave(&c, at(7, 1.5), -1, &stretch) == ROAST_OK);
    CHECK_EQ_D(c.wall[READ], 1);
    roast_phase_add_runq(&c, 8.0);
    CHECK_EQ_D(c.cpu_wait[READ], 0.5);
    CHECK_EQ_D(c.cpu_wait[INTERPRET], 1 + 1.5);
    CHECK_EQ_D(c.runq_bound, 2);
    /* an unreadable delay changes nothing; a delay with no time off CPU is the top's */
    roast_phase_add_runq(&c, ROAST_RUNQ_UNREAD);
    CHECK_EQ_U(c.runq_reads, 3);
    roast_phase_add_runq(&c, 8.25);
    CHECK_EQ_D(c.cpu_wait[OTHER], 0.25);
    CHECK_EQ_D(sum(c.cpu_wait), 3.25);
    roast_phase_clock_release(&c);
}

int main(void)
{
    test_stretches_go_to_the_top_phase();
    test_a_call_nested_in_its_phase_charges_nothing();
    test_opaque_phases_switch_and_are_counted();
    test_deep_nesting();
    test_calls_past_the_deepest_stack_are_lost_and_unwound();
    test_contract_breaches_are_refused();
    test_rebase();
    test_codec_totals();
    test_the_cpu_clock_is_wanted_per_interval_and_around_waits();
    test_a_window_splits_its_cpu_by_wall();
    test_a_codec_window_is_exact_only_when_it_is_the_codec();
    test_a_window_charges_its_time_off_cpu_to_its_waits_first();
    test_a_wait_is_charged_to_what_ended_it();
    test_the_run_queue_delay_goes_to_the_phases_off_cpu();
    return check_failures ? 1 : 0;
}
