/* aggregator.h: the Aggregator object, shared by aggregator.c (the type) and
 * transition.c (the hook). */
#ifndef ROASTPY_AGGREGATOR_H
#define ROASTPY_AGGREGATOR_H

#include "../roastpy.h"

typedef struct {
    PyObject_HEAD
    roast_agg *agg;
    roast_ring *ring;
    PyObject *last_key;   /* the last key (first element) split, held; NULL: none */
    roast_id last_prefix; /* its prefix */
    roastpy_span_lookup spans; /* set_span_lookup */
    roast_id other;        /* interned "Other" */
    size_t drain_above;    /* ring size above which the hook drains (3/4 full) */
    bool auto_drain;
    uint64_t hook_calls;
    uint64_t hook_errors;
    uint64_t timed_calls; /* hook calls timed, and their cost without drains */
    uint64_t timed_ns;
    uint64_t drain_ns; /* cost of every drain the hook made, spread over all calls */
    uint64_t timer_ns; /* cost of reading the clock, taken off each timed call */
    uint32_t timing_draw; /* xorshift32 state choosing the timed calls; never 0 */
    /* Per transition (from, to): calls, timed calls and their cost without
     * drains, for hook_profile(). */
    uint64_t kind_calls[ROAST_STATE_COUNT][ROAST_STATE_COUNT];
    uint64_t kind_timed[ROAST_STATE_COUNT][ROAST_STATE_COUNT];
    uint64_t kind_ns[ROAST_STATE_COUNT][ROAST_STATE_COUNT];
} Aggregator;

/* Applies the ring's records to the tables; returns how many. */
uint64_t roastpy_agg_drain(Aggregator *self);

/* Aggregator.transition(key, start, finish, *args, **kwargs): Dask's
 * SchedulerPlugin.transition. Never raises. */
PyObject *roastpy_agg_transition(PyObject *op, PyObject *args, PyObject *kwargs);

/* What a timed hook call pays for being timed (the least time between two
 * clock readings). */
uint64_t roastpy_timer_overhead_ns(void);

#endif
