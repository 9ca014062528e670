/* ring: fixed-size event records between the scheduler's transition hook
 * (producer) and the aggregator (consumer).
 *
 * The producer never allocates and never blocks: when the ring is full the
 * record is dropped and counted. One producer and one consumer; they may be
 * different threads (head and tail are atomics with acquire/release order). */
#ifndef ROAST_RING_H
#define ROAST_RING_H

#include <stdbool.h>

#include "roast/common.h"

/* Scheduler task states as seen by SchedulerPlugin.transition. */
typedef enum roast_task_state {
    ROAST_STATE_OTHER = 0, /* a state this build does not know by name */
    ROAST_STATE_RELEASED,
    ROAST_STATE_WAITING,
    ROAST_STATE_NO_WORKER,
    ROAST_STATE_QUEUED,
    ROAST_STATE_PROCESSING,
    ROAST_STATE_MEMORY,
    ROAST_STATE_ERRED,
    ROAST_STATE_FORGOTTEN,
    ROAST_STATE_COUNT
} roast_task_state;

/* One scheduler transition. Fields after `to` are filled only on
 * processing->memory (task done) and ->erred; they are zero otherwise. */
typedef struct roast_event {
    double time;        /* scheduler clock (seconds since epoch) when the hook ran */
    double start;       /* earliest "compute" start in startstops, or 0 */
    double stop;        /* latest "compute" stop in startstops, or 0 */
    double compute_seconds; /* sum of "compute" startstops durations */
    double transfer_seconds; /* sum of "transfer" startstops durations */
    uint64_t nbytes;    /* output size reported by the worker */
    roast_id prefix;    /* interned key_split(key) */
    roast_id worker;    /* interned worker address, or ROAST_ID_EMPTY */
    roast_id span;      /* interned span id of the task's group, or ROAST_ID_EMPTY */
    uint8_t from;       /* roast_task_state */
    uint8_t to;         /* roast_task_state */
} roast_event;

typedef struct roast_ring roast_ring;

/* capacity is rounded up to a power of two; returns NULL on ENOMEM or if
 * capacity is 0 or above 2^30. */
roast_ring *roast_ring_new(uint32_t capacity);
void roast_ring_free(roast_ring *ring);

/* O(1), no allocation. Returns false (and counts a drop) when full. */
bool roast_ring_push(roast_ring *ring, const roast_event *event);

/* Moves up to max records, oldest first, into out; returns how many. */
size_t roast_ring_pop(roast_ring *ring, roast_event *out, size_t max);

uint32_t roast_ring_capacity(const roast_ring *ring);
size_t roast_ring_size(const roast_ring *ring);
uint64_t roast_ring_pushed(const roast_ring *ring);  /* accepted since creation */
uint64_t roast_ring_dropped(const roast_ring *ring);  /* refused since creation */

#endif
