/* Switches callgrind's counting on and off from inside the counted process:
 * bench/chunk_instructions.py compiles this and each Dask worker under
 * valgrind loads it with ctypes. Outside valgrind the requests do nothing. */
#include <valgrind/callgrind.h>

void count_from_zero(void);
void stop_and_dump(const char *name);

void count_from_zero(void)
{
    CALLGRIND_ZERO_STATS;
    CALLGRIND_START_INSTRUMENTATION;
}

void stop_and_dump(const char *name)
{
    CALLGRIND_STOP_INSTRUMENTATION;
    CALLGRIND_DUMP_STATS_AT(name);
}
