#include "check.h"
#include "roast/ring.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

/* An event whose every field is derived from its sequence number, so a
 * record torn between two pushes would not pass event_matches. */
static roast_event event_of(uint64_t seq)
{
    roast_event e;
    memset(&e, 0, sizeof e);
    e.time = (double)seq * 0.5;
    e.start = (double)seq + 0.25;
    e.stop = (double)seq + 0.75;
    e.compute_seconds = (double)(seq % 1000);
    e.transfer_seconds = -(double)seq;
    e.nbytes = seq;
    e.prefix = (roast_id)(seq * 3);
    e.worker = (roast_id)(seq >> 3);
    e.span = (roast_id)~seq;
    e.from = (uint8_t)(seq % ROAST_STATE_COUNT);
    e.to = (uint8_t)((seq + 1) % ROAST_STATE_COUNT);
    return e;
}

static int event_matches(const roast_event *e, uint64_t seq)
{
    roast_event want = event_of(seq);
    return e->time == want.time && e->start == want.start && e->stop == want.stop &&
           e->compute_seconds == want.compute_seconds &&
           e->transfer_seconds == want.transfer_seconds &&
           e->nbytes == want.nbytes && e->prefix == want.prefix && e->worker == want.worker &&
           e->span == want.span && e->from == want.from && e->to == want.to;
}

static void test_capacity_rounding_and_refusals(void)
{
    CHECK(roast_ring_new(0) == NULL);
    CHECK(roast_ring_new((1u << 30) + 1) == NULL);
    CHECK(roast_ring_new(UINT32_MAX) == NULL);
    uint32_t asked[] = {1, 2, 3, 5, 1000, 1024, 65537};
    uint32_t want[] = {1, 2, 4, 8, 1024, 1024, 131072};
    for (size_t i = 0; i < sizeof asked / sizeof *asked; i++) {
        roast_ring *r = roast_ring_new(asked[i]);
        CHECK(r != NULL);
        CHECK_EQ_U(roast_ring_capacity(r), want[i]);
        CHECK_EQ_U(roast_ring_size(r), 0);
        roast_ring_free(r);
    }
    roast_ring_free(NULL);
}

static void test_fifo_order(void)
{
    roast_ring *r = roast_ring_new(16);
    for (uint64_t i = 0; i < 10; i++)
        CHECK(roast_ring_push(r, &(roast_event){.nbytes = i}));
    CHECK_EQ_U(roast_ring_size(r), 10);
    roast_event out[16];
    CHECK_EQ_U(roast_ring_pop(r, out, 16), 10);
    for (uint64_t i = 0; i < 10; i++)
        CHECK_EQ_U(out[i].nbytes, i);
    CHECK_EQ_U(roast_ring_size(r), 0);
    CHECK_EQ_U(roast_ring_pop(r, out, 16), 0);
    CHECK_EQ_U(roast_ring_pushed(r), 10);
    CHECK_EQ_U(roast_ring_dropped(r), 0);
    roast_ring_free(r);
}

static void test_wraps_around_many_times(void)
{
    roast_ring *r = roast_ring_new(8);
    uint64_t next_in = 0, next_out = 0;
    int bad = 0;
    for (int round = 0; round < 5000; round++) {
        int k = 1 + round % 8; /* fills of every size, at every offset */
        for (int i = 0; i < k; i++) {
            roast_event e = event_of(next_in++);
            bad += !roast_ring_push(r, &e);
        }
        roast_event out[8];
        size_t n = roast_ring_pop(r, out, 8);
        bad += n != (size_t)k;
        for (size_t i = 0; i < n; i++)
            bad += !event_matches(&out[i], next_out++);
    }
    CHECK_EQ_U(bad, 0);
    CHECK_EQ_U(roast_ring_pushed(r), next_in);
    CHECK_EQ_U(roast_ring_dropped(r), 0);
    roast_ring_free(r);
}

static void test_overflow_drops_and_never_overwrites(void)
{
    roast_ring *r = roast_ring_new(4);
    int accepted = 0;
    for (uint64_t i = 0; i < 10; i++) {
        roast_event e = event_of(i);
        accepted += roast_ring_push(r, &e);
    }
    CHECK_EQ_U(accepted, 4);
    CHECK_EQ_U(roast_ring_pushed(r), 4);
    CHECK_EQ_U(roast_ring_dropped(r), 6);
    CHECK_EQ_U(roast_ring_size(r), 4);
    roast_event out[8];
    CHECK_EQ_U(roast_ring_pop(r, out, 8), 4);
    for (uint64_t i = 0; i < 4; i++)
        CHECK(event_matches(&out[i], i)); /* the oldest survive */
    /* Room again after the pop, counted from where it stopped. */
    roast_event e = event_of(100);
    CHECK(roast_ring_push(r, &e));
    CHECK_EQ_U(roast_ring_pop(r, out, 8), 1);
    CHECK(event_matches(&out[0], 100));
    CHECK_EQ_U(roast_ring_dropped(r), 6);
    roast_ring_free(r);
}

static void test_pop_fewer_than_held(void)
{
    roast_ring *r = roast_ring_new(8);
    for (uint64_t i = 0; i < 7; i++) {
        roast_event e = event_of(i);
        roast_ring_push(r, &e);
    }
    roast_event out[3];
    CHECK_EQ_U(roast_ring_pop(r, out, 3), 3);
    CHECK(event_matches(&out[0], 0) && event_matches(&out[2], 2));
    CHECK_EQ_U(roast_ring_size(r), 4);
    CHECK_EQ_U(roast_ring_pop(r, out, 0), 0);
    CHECK_EQ_U(roast_ring_pop(r, out, 3), 3);
    CHECK(event_matches(&out[0], 3) && event_matches(&out[2], 5));
    CHECK_EQ_U(roast_ring_pop(r, out, 3), 1);
    CHECK(event_matches(&out[0], 6));
    roast_ring_free(r);
}

enum { THREAD_EVENTS = 1000000 };

typedef struct two_threads {
    roast_ring *ring;
    uint64_t *accepted; /* sequence numbers the producer saw accepted, in order */
    size_t naccepted;
    uint64_t refusals;  /* pushes that returned false */
    _Atomic int done;
} two_threads;

/* Every fourth record is pushed until accepted (so the consumer keeps up and
 * many records cross threads); the others are pushed once. */
static void *producer(void *arg)
{
    two_threads *t = arg;
    for (uint64_t seq = 0; seq < THREAD_EVENTS; seq++) {
        roast_event e = event_of(seq);
        bool insist = seq % 4 == 0;
        bool ok;
        while (!(ok = roast_ring_push(t->ring, &e))) {
            t->refusals++;
            if (!insist)
                break;
        }
        if (ok)
            t->accepted[t->naccepted++] = seq;
    }
    atomic_store(&t->done, 1);
    return NULL;
}

/* A producer and a consumer on two threads: every accepted record arrives
 * once, intact, in order; drops are exactly the records not accepted. */
static void test_two_threads(void)
{
    two_threads t = {.ring = roast_ring_new(256), .naccepted = 0, .refusals = 0};
    atomic_init(&t.done, 0);
    t.accepted = malloc(THREAD_EVENTS * sizeof *t.accepted);
    uint64_t *received = malloc(THREAD_EVENTS * sizeof *received);
    size_t nreceived = 0;
    int torn = 0;
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, producer, &t) == 0);
    roast_event batch[64];
    for (;;) {
        int finished = atomic_load(&t.done); /* read before the pop that may empty the ring */
        size_t n = roast_ring_pop(t.ring, batch, 1 + nreceived % 64);
        for (size_t i = 0; i < n; i++) {
            uint64_t seq = batch[i].nbytes;
            torn += !event_matches(&batch[i], seq);
            received[nreceived++] = seq;
        }
        if (finished && n == 0)
            break;
    }
    pthread_join(thread, NULL);
    CHECK_EQ_U(torn, 0);
    CHECK_EQ_U(nreceived, t.naccepted);
    CHECK(memcmp(received, t.accepted, nreceived * sizeof *received) == 0);
    CHECK_EQ_U(roast_ring_pushed(t.ring), t.naccepted);
    CHECK_EQ_U(roast_ring_dropped(t.ring), t.refusals);
    CHECK(t.naccepted >= THREAD_EVENTS / 4);
    CHECK_EQ_U(roast_ring_size(t.ring), 0);
    printf("     two threads: %zu of %d records accepted\n", t.naccepted, THREAD_EVENTS);
    free(received);
    free(t.accepted);
    roast_ring_free(t.ring);
}

int main(void)
{
    RUN(test_capacity_rounding_and_refusals);
    RUN(test_fifo_order);
    RUN(test_wraps_around_many_times);
    RUN(test_overflow_drops_and_never_overwrites);
    RUN(test_pop_fewer_than_held);
    RUN(test_two_threads);
    return CHECK_DONE();
}
