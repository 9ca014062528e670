/* ring: single-producer single-consumer ring of roast_event records.
 *
 * head and tail count records popped and pushed since creation; they only
 * grow (wrapping at 2^32, harmless with a power-of-two capacity <= 2^30), so
 * tail - head is the fill and (index & mask) the slot. The producer owns tail
 * and publishes a record with a release store of tail after writing it; the
 * consumer owns head and frees slots with a release store of head after
 * reading them. Each side reads the other's index with acquire, and keeps a
 * private copy of it so that it touches the other's cache line only when its
 * copy says the ring is full (producer) or empty (consumer). */
#include "roast/ring.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define RING_MAX_CAPACITY ((uint32_t)1 << 30)
#define CACHE_LINE 64

struct roast_ring {
    roast_event *slots; /* owned */
    uint32_t mask;      /* capacity - 1 */

    /* Padding keeps the producer's and the consumer's fields on separate
     * cache lines, so neither side's writes evict the other's reads. */
    char pad0[CACHE_LINE];
    _Atomic uint32_t tail;          /* written by the producer */
    uint32_t head_seen;             /* producer's copy of head */
    _Atomic uint64_t pushed;        /* written by the producer */
    _Atomic uint64_t dropped;       /* written by the producer */

    char pad1[CACHE_LINE];
    _Atomic uint32_t head;          /* written by the consumer */
    uint32_t tail_seen;             /* consumer's copy of tail */
};

roast_ring *roast_ring_new(uint32_t capacity)
{
    if (capacity == 0 || capacity > RING_MAX_CAPACITY)
        return NULL;
    uint32_t cap = 1;
    while (cap < capacity)
        cap <<= 1;
    roast_ring *ring = calloc(1, sizeof *ring);
    if (!ring)
        return NULL;
    ring->slots = calloc(cap, sizeof *ring->slots);
    if (!ring->slots) {
        free(ring);
        return NULL;
    }
    ring->mask = cap - 1;
    atomic_init(&ring->tail, 0);
    atomic_init(&ring->head, 0);
    atomic_init(&ring->pushed, 0);
    atomic_init(&ring->dropped, 0);
    return ring;
}

void roast_ring_free(roast_ring *ring)
{
    if (!ring)
        return;
    free(ring->slots);
    free(ring);
}

bool roast_ring_push(roast_ring *ring, const roast_event *event)
{
    uint32_t tail = atomic_load_explicit(&ring->tail, memory_order_relaxed);
    if (tail - ring->head_seen > ring->mask) {
        ring->head_seen = atomic_load_explicit(&ring->head, memory_order_acquire);
        if (tail - ring->head_seen > ring->mask) {
            /* Only the producer writes the counters: a plain increment
             * published with relaxed order is enough for readers. */
            atomic_store_explicit(&ring->dropped,
                                  atomic_load_explicit(&ring->dropped, memory_order_relaxed) + 1,
                                  memory_order_relaxed);
            return false;
        }
    }
    ring->slots[tail & ring->mask] = *event;
    atomic_store_explicit(&ring->tail, tail + 1, memory_order_release);
    atomic_store_explicit(&ring->pushed,
                          atomic_load_explicit(&ring->pushed, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    return true;
}

size_t roast_ring_pop(roast_ring *ring, roast_event *out, size_t max)
{
    uint32_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);
    if (ring->tail_seen - head < max)
        ring->tail_seen = atomic_load_explicit(&ring->tail, memory_order_acquire);
    size_t n = ring->tail_seen - head;
    if (n > max)
        n = max;
    if (n == 0)
        return 0;
    /* Copy in at most two runs: up to the end of the array, then from 0. */
    size_t first = head & ring->mask;
    size_t run = ring->mask + 1 - first;
    if (run > n)
        run = n;
    memcpy(out, ring->slots + first, run * sizeof *out);
    memcpy(out + run, ring->slots, (n - run) * sizeof *out);
    atomic_store_explicit(&ring->head, head + (uint32_t)n, memory_order_release);
    return n;
}

uint32_t roast_ring_capacity(const roast_ring *ring) { return ring->mask + 1; }

size_t roast_ring_size(const roast_ring *ring)
{
    /* Exact when called by the producer or the consumer while the other side
     * is idle; a snapshot otherwise. head first: it never passes tail. */
    uint32_t head = atomic_load_explicit(&ring->head, memory_order_acquire);
    uint32_t tail = atomic_load_explicit(&ring->tail, memory_order_acquire);
    return tail - head;
}

uint64_t roast_ring_pushed(const roast_ring *ring)
{
    return atomic_load_explicit(&ring->pushed, memory_order_relaxed);
}

uint64_t roast_ring_dropped(const roast_ring *ring)
{
    return atomic_load_explicit(&ring->dropped, memory_order_relaxed);
}
