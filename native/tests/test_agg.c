#include "check.h"
#include "roast/agg.h"

static roast_id put(roast_agg *agg, const char *s)
{
    roast_id id = 0;
    CHECK(roast_intern_put(roast_agg_strings(agg), s, strlen(s), &id) == ROAST_OK);
    return id;
}

static roast_event done_event(roast_id worker, roast_id span, roast_id prefix, double start,
                              double stop, uint64_t nbytes)
{
    roast_event ev;
    memset(&ev, 0, sizeof ev);
    ev.time = stop;
    ev.start = start;
    ev.stop = stop;
    ev.compute_seconds = stop - start;
    ev.transfer_seconds = 0.25;
    ev.nbytes = nbytes;
    ev.worker = worker;
    ev.span = span;
    ev.prefix = prefix;
    ev.from = ROAST_STATE_PROCESSING;
    ev.to = ROAST_STATE_MEMORY;
    return ev;
}

static roast_event plain_event(roast_id worker, roast_id span, roast_id prefix, int from, int to)
{
    roast_event ev;
    memset(&ev, 0, sizeof ev);
    ev.worker = worker;
    ev.span = span;
    ev.prefix = prefix;
    ev.from = (uint8_t)from;
    ev.to = (uint8_t)to;
    return ev;
}

static void test_defaults(void)
{
    roast_agg_limits l;
    roast_agg_limits_default(&l);
    CHECK_EQ_U(l.max_strings, 1u << 20);
    CHECK_EQ_U(l.max_task_rows, 1u << 20);
    CHECK_EQ_U(l.max_digest_rows, 1u << 22);
    CHECK_EQ_U(l.max_workers, 1u << 16);
    CHECK_EQ_U(l.max_spans, 1u << 18);
    CHECK_EQ_U(l.series_cap_bytes, 64u << 20);
    CHECK_EQ_U(l.record_cap_bytes, 64u << 20);
    roast_agg *agg = roast_agg_new(NULL, 1000.5);
    CHECK(agg != NULL);
    CHECK_EQ_D(roast_agg_started(agg), 1000.5);
    CHECK(isnan(roast_agg_counters_get(agg)->hook_ns_per_call));
    CHECK_EQ_U(roast_agg_limits_get(agg)->max_workers, 1u << 16);
    roast_agg_free(agg);
    l.series_cap_bytes = 1; /* below the series minimum */
    CHECK(roast_agg_new(&l, 0) == NULL);
}

static void test_apply_tasks(void)
{
    roast_agg *agg = roast_agg_new(NULL, 0);
    roast_id w = put(agg, "tcp://w:1"), s = put(agg, "span-a"), p = put(agg, "process");
    roast_event ev = plain_event(w, s, p, ROAST_STATE_WAITING, ROAST_STATE_PROCESSING);
    CHECK(roast_agg_apply(agg, &ev) == ROAST_OK);
    ev = done_event(w, s, p, 10.0, 12.5, 100);
    CHECK(roast_agg_apply(agg, &ev) == ROAST_OK);
    ev = done_event(w, s, p, 9.0, 11.0, 50);
    CHECK(roast_agg_apply(agg, &ev) == ROAST_OK);
    ev = done_event(w, s, p, 0.0, 0.0, 1); /* no startstops: not a start */
    CHECK(roast_agg_apply(agg, &ev) == ROAST_OK);
    ev = plain_event(w, s, p, ROAST_STATE_PROCESSING, ROAST_STATE_ERRED);
    CHECK(roast_agg_apply(agg, &ev) == ROAST_OK);
    ev = plain_event(w, s, p, ROAST_STATE_MEMORY, ROAST_STATE_MEMORY); /* not from processing */
    ev.nbytes = 999;
    CHECK(roast_agg_apply(agg, &ev) == ROAST_OK);

    roast_task_key key = {w, s, p};
    const roast_task_stats *st = roast_agg_task(agg, &key);
    CHECK(st != NULL);
    CHECK_EQ_U(st->transitions, 6);
    CHECK_EQ_U(st->tasks, 3);
    CHECK_EQ_U(st->erred, 1);
    CHECK_EQ_D(st->compute_seconds, 2.5 + 2.0);
    CHECK_EQ_D(st->transfer_seconds, 0.75);
    CHECK_EQ_U(st->output_bytes, 151);
    CHECK_EQ_D(st->first_start, 9.0);
    CHECK_EQ_D(st->last_stop, 12.5);
    CHECK_EQ_U(roast_agg_counters_get(agg)->events, 6);
    roast_task_key other = {w, s, ROAST_ID_EMPTY};
    CHECK(roast_agg_task(agg, &other) == NULL);
    roast_agg_free(agg);
}

typedef struct task_list {
    roast_task_key keys[8];
    int n;
} task_list;

static int collect_task(void *ctx, const roast_task_key *key, const roast_task_stats *stats)
{
    task_list *l = ctx;
    (void)stats;
    l->keys[l->n++] = *key;
    return l->n == 3 ? 7 : 0;
}

typedef struct group_list {
    roast_id ids[8];
    roast_task_stats sums[8];
    size_t n;
} group_list;

static int collect_group(void *ctx, roast_id id, const roast_task_stats *sum)
{
    group_list *l = ctx;
    l->ids[l->n] = id;
    l->sums[l->n++] = *sum;
    return 0;
}

/* Groups follow first appearance and sum like roast_agg_sum_tasks. */
static void test_task_groups(void)
{
    roast_agg *agg = roast_agg_new(NULL, 0);
    roast_id w1 = put(agg, "w1"), w2 = put(agg, "w2"), s = put(agg, "s"), p = put(agg, "p"),
             q = put(agg, "q");
    roast_event evs[] = {
        done_event(w2, s, q, 5, 6, 10), done_event(w1, s, p, 1, 4, 20),
        done_event(w1, ROAST_ID_EMPTY, p, 2, 3, 30), done_event(w2, s, p, 3, 9, 40),
    };
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        CHECK(roast_agg_apply(agg, &evs[i]) == ROAST_OK);
    roast_status status;
    group_list by_prefix = {0}, by_worker = {0}, by_span = {0};
    CHECK(roast_agg_each_task_group(agg, ROAST_TASKS_BY_PREFIX, collect_group, &by_prefix,
                                    &status) == 0 && status == ROAST_OK);
    CHECK(roast_agg_each_task_group(agg, ROAST_TASKS_BY_WORKER, collect_group, &by_worker,
                                    &status) == 0 && status == ROAST_OK);
    CHECK(roast_agg_each_task_group(agg, ROAST_TASKS_BY_SPAN, collect_group, &by_span,
                                    &status) == 0 && status == ROAST_OK);
    CHECK_EQ_U(by_prefix.n, 2);
    CHECK(by_prefix.ids[0] == q && by_prefix.ids[1] == p);
    CHECK_EQ_U(by_prefix.sums[1].tasks, 3);
    CHECK_EQ_U(by_prefix.sums[1].output_bytes, 90);
    CHECK_EQ_D(by_prefix.sums[1].first_start, 1);
    CHECK_EQ_D(by_prefix.sums[1].last_stop, 9);
    CHECK(by_worker.n == 2 && by_worker.ids[0] == w2 && by_worker.ids[1] == w1);
    CHECK_EQ_U(by_worker.sums[0].output_bytes, 50);
    CHECK(by_span.n == 2 && by_span.ids[0] == s && by_span.ids[1] == ROAST_ID_EMPTY);
    CHECK_EQ_D(by_span.sums[0].compute_seconds, 1 + 3 + 6);
    roast_agg_free(agg);
}

static void test_task_order_cap_and_sum(void)
{
    roast_agg_limits lim;
    roast_agg_limits_default(&lim);
    lim.max_task_rows = 4;
    roast_agg *agg = roast_agg_new(&lim, 0);
    roast_id w1 = put(agg, "w1"), w2 = put(agg, "w2"), s = put(agg, "s"), p = put(agg, "p"),
             q = put(agg, "q");
    roast_event evs[] = {
        done_event(w2, s, q, 5, 6, 10), done_event(w1, s, p, 1, 4, 20),
        done_event(w1, ROAST_ID_EMPTY, p, 2, 3, 30), done_event(w2, s, p, 3, 9, 40),
        done_event(w1, s, p, 0.5, 1, 1),
    };
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        CHECK(roast_agg_apply(agg, &evs[i]) == ROAST_OK);
    roast_event extra = done_event(w1, s, q, 1, 2, 3); /* a fifth row: refused */
    CHECK(roast_agg_apply(agg, &extra) == ROAST_EFULL);
    CHECK_EQ_U(roast_agg_counters_get(agg)->rows_refused, 1);
    CHECK_EQ_U(roast_agg_counters_get(agg)->events, 6);

    task_list l = {0};
    CHECK(roast_agg_each_task(agg, collect_task, &l) == 7); /* stopped at the third */
    CHECK_EQ_U(l.n, 3);
    CHECK(l.keys[0].worker == w2 && l.keys[0].prefix == q);
    CHECK(l.keys[1].worker == w1 && l.keys[1].span == s && l.keys[1].prefix == p);
    CHECK(l.keys[2].worker == w1 && l.keys[2].span == ROAST_ID_EMPTY);

    roast_task_stats sum;
    roast_task_key all = {ROAST_AGG_ANY, ROAST_AGG_ANY, ROAST_AGG_ANY};
    roast_agg_sum_tasks(agg, &all, &sum);
    CHECK_EQ_U(sum.tasks, 5);
    CHECK_EQ_U(sum.output_bytes, 101);
    CHECK_EQ_D(sum.first_start, 0.5);
    CHECK_EQ_D(sum.last_stop, 9);
    roast_task_key by_p = {ROAST_AGG_ANY, ROAST_AGG_ANY, p};
    roast_agg_sum_tasks(agg, &by_p, &sum);
    CHECK_EQ_U(sum.tasks, 4);
    CHECK_EQ_U(sum.transitions, 4);
    CHECK_EQ_D(sum.compute_seconds, 3 + 1 + 6 + 0.5);
    roast_task_key w1_s = {w1, s, ROAST_AGG_ANY};
    roast_agg_sum_tasks(agg, &w1_s, &sum);
    CHECK_EQ_U(sum.output_bytes, 21);
    roast_task_key none = {w1, s, q};
    roast_agg_sum_tasks(agg, &none, &sum);
    CHECK_EQ_U(sum.transitions, 0);
    CHECK_EQ_D(sum.first_start, 0);
    roast_agg_free(agg);
}

static void test_workers_and_beats(void)
{
    roast_agg_limits lim;
    roast_agg_limits_default(&lim);
    lim.max_workers = 2;
    roast_agg *agg = roast_agg_new(&lim, 0);
    roast_id a = put(agg, "tcp://a"), b = put(agg, "tcp://b"), c = put(agg, "tcp://c");
    roast_id na = put(agg, "alpha"), inc1 = put(agg, "Worker-1"), inc2 = put(agg, "Worker-2");
    bool apply, flush;

    CHECK(roast_agg_worker_beat(agg, a, inc1, 1, 0, false, 10, &apply, &flush) == ROAST_EINVAL);
    CHECK(!apply);
    CHECK(roast_agg_worker_removed(agg, a, 5) == ROAST_EINVAL);
    CHECK(roast_agg_worker_seen(agg, a, na, 100) == ROAST_OK);
    CHECK(roast_agg_worker_seen(agg, b, ROAST_ID_EMPTY, 101) == ROAST_OK);
    CHECK(roast_agg_worker_seen(agg, c, ROAST_ID_EMPTY, 102) == ROAST_EFULL);
    CHECK_EQ_U(roast_agg_counters_get(agg)->rows_refused, 1);
    CHECK(roast_agg_worker_seen(agg, a, na, 200) == ROAST_OK); /* added stays */
    const roast_worker_info *w = roast_agg_worker(agg, a);
    CHECK(w != NULL);
    CHECK_EQ_D(w->added, 100);
    CHECK_EQ_U(w->name, na);

    /* first beats of the first incarnation: not a restart, no gap */
    CHECK(roast_agg_worker_beat(agg, a, inc1, 1, 0, false, 10, &apply, &flush) == ROAST_OK);
    CHECK(apply && !flush);
    CHECK(roast_agg_worker_beat(agg, a, inc1, 2, 0, false, 11, &apply, &flush) == ROAST_OK);
    CHECK(apply && !flush);
    /* stale: the same beat read twice, or an older one */
    CHECK(roast_agg_worker_beat(agg, a, inc1, 2, 1, false, 11, &apply, &flush) == ROAST_OK);
    CHECK(!apply && !flush);
    CHECK(roast_agg_worker_beat(agg, a, inc1, 1, 0, false, 11, &apply, &flush) == ROAST_OK);
    CHECK(!apply);
    /* since == last_seq: contiguous */
    CHECK(roast_agg_worker_beat(agg, a, inc1, 5, 2, false, 12, &apply, &flush) == ROAST_OK);
    CHECK(apply && !flush);
    /* gap: changes of payloads 6..8 were never seen */
    CHECK(roast_agg_worker_beat(agg, a, inc1, 10, 8, false, 13, &apply, &flush) == ROAST_OK);
    CHECK(apply && flush);
    /* a full payload never needs a flush */
    CHECK(roast_agg_worker_beat(agg, a, inc1, 20, 19, true, 14, &apply, &flush) == ROAST_OK);
    CHECK(apply && !flush);
    w = roast_agg_worker(agg, a);
    CHECK_EQ_U(w->payloads, 5);
    CHECK_EQ_U(w->payload_bytes, 10 + 11 + 12 + 13 + 14);
    CHECK_EQ_U(w->last_seq, 20);
    CHECK_EQ_U(w->gaps, 1);
    CHECK_EQ_U(w->flushes, 1);
    CHECK_EQ_U(w->restarts, 0);
    CHECK_EQ_U(w->incarnation, inc1);

    /* a new process at the address numbers from 1 again */
    CHECK(roast_agg_worker_beat(agg, a, inc2, 1, 0, false, 7, &apply, &flush) == ROAST_OK);
    CHECK(apply && !flush);
    w = roast_agg_worker(agg, a);
    CHECK_EQ_U(w->restarts, 1);
    CHECK_EQ_U(w->last_seq, 1);
    CHECK_EQ_U(w->incarnation, inc2);
    CHECK_EQ_U(roast_agg_counters_get(agg)->payloads, 6);
    CHECK_EQ_U(roast_agg_counters_get(agg)->payload_bytes, 60 + 7);

    CHECK(roast_agg_worker_removed(agg, a, 300) == ROAST_OK);
    CHECK_EQ_D(roast_agg_worker(agg, a)->removed, 300);
    CHECK(roast_agg_worker_seen(agg, a, na, 400) == ROAST_OK); /* back: live again */
    CHECK_EQ_D(roast_agg_worker(agg, a)->removed, 0);
    CHECK(roast_agg_worker(agg, c) == NULL);

    roast_worker_info info;
    memset(&info, 0, sizeof info);
    info.address = b;
    info.restarts = 9;
    info.last_seq = 77;
    info.removed = 3.5;
    CHECK(roast_agg_restore_worker(agg, &info) == ROAST_OK);
    CHECK_EQ_U(roast_agg_worker(agg, b)->last_seq, 77);
    CHECK_EQ_D(roast_agg_worker(agg, b)->removed, 3.5);
    info.address = c;
    CHECK(roast_agg_restore_worker(agg, &info) == ROAST_EFULL);
    roast_agg_free(agg);
}

typedef struct digest_list {
    roast_digest_key keys[8];
    double values[8];
    int n;
} digest_list;

static int collect_digest(void *ctx, const roast_digest_key *key, double value)
{
    digest_list *l = ctx;
    l->keys[l->n] = *key;
    l->values[l->n++] = value;
    return 0;
}

typedef struct digest_group_list {
    size_t n;
    roast_id ids[8], activities[8], units[8];
    double sums[8];
} digest_group_list;

static int collect_digest_group(void *ctx, roast_id id, roast_id activity, roast_id unit,
                                double sum)
{
    digest_group_list *l = ctx;
    if (l->n == 8)
        return 1;
    l->ids[l->n] = id;
    l->activities[l->n] = activity;
    l->units[l->n] = unit;
    l->sums[l->n++] = sum;
    return 0;
}

/* One context's digests sum over spans and the other field; other contexts
 * are left out; a nonzero visitor return stops the walk. */
static void test_digest_groups(void)
{
    roast_agg *agg = roast_agg_new(NULL, 0);
    roast_id w1 = put(agg, "w1"), w2 = put(agg, "w2"), ex = put(agg, "execute"),
             gd = put(agg, "gather-dep"), s1 = put(agg, "s1"), s2 = put(agg, "s2"),
             p = put(agg, "p"), q = put(agg, "q"), cpu = put(agg, "thread-cpu"),
             sec = put(agg, "seconds"), by = put(agg, "bytes"), inc = put(agg, "W");
    roast_digest_key rows[] = {
        {w1, ex, s1, p, cpu, sec}, {w1, ex, s2, p, cpu, sec}, {w2, ex, s1, q, cpu, sec},
        {w2, ex, s1, p, cpu, by},  {w1, gd, ROAST_ID_EMPTY, ROAST_ID_EMPTY, cpu, sec},
    };
    double values[] = {1, 2, 4, 8, 16};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        CHECK(roast_agg_set_digest(agg, &rows[i], inc, values[i]) == ROAST_OK);
    roast_status status;
    digest_group_list by_prefix = {0}, by_worker = {0}, by_span = {0}, none = {0};
    CHECK(roast_agg_each_digest_group(agg, ex, ROAST_DIGESTS_BY_PREFIX, collect_digest_group,
                                      &by_prefix, &status) == 0 && status == ROAST_OK);
    CHECK_EQ_U(by_prefix.n, 3);
    CHECK(by_prefix.ids[0] == p && by_prefix.activities[0] == cpu && by_prefix.units[0] == sec);
    CHECK_EQ_D(by_prefix.sums[0], 1 + 2);
    CHECK(by_prefix.ids[1] == q);
    CHECK_EQ_D(by_prefix.sums[1], 4);
    CHECK(by_prefix.ids[2] == p && by_prefix.units[2] == by);
    CHECK_EQ_D(by_prefix.sums[2], 8);
    CHECK(roast_agg_each_digest_group(agg, ex, ROAST_DIGESTS_BY_WORKER, collect_digest_group,
                                      &by_worker, &status) == 0 && status == ROAST_OK);
    CHECK_EQ_U(by_worker.n, 3);
    CHECK(by_worker.ids[0] == w1 && by_worker.ids[1] == w2 && by_worker.units[1] == sec);
    CHECK_EQ_D(by_worker.sums[0], 1 + 2);
    CHECK_EQ_D(by_worker.sums[1], 4);
    CHECK(roast_agg_each_digest_group(agg, ex, ROAST_DIGESTS_BY_SPAN, collect_digest_group,
                                      &by_span, &status) == 0 && status == ROAST_OK);
    CHECK_EQ_U(by_span.n, 3);
    CHECK(by_span.ids[0] == s1 && by_span.activities[0] == cpu && by_span.units[0] == sec);
    CHECK_EQ_D(by_span.sums[0], 1 + 4);
    CHECK(by_span.ids[1] == s2);
    CHECK_EQ_D(by_span.sums[1], 2);
    CHECK(by_span.ids[2] == s1 && by_span.units[2] == by);
    CHECK_EQ_D(by_span.sums[2], 8);
    CHECK(roast_agg_each_digest_group(agg, put(agg, "p2p"), ROAST_DIGESTS_BY_PREFIX,
                                      collect_digest_group, &none, &status) == 0 &&
          none.n == 0);
    digest_group_list full = {.n = 8};
    CHECK(roast_agg_each_digest_group(agg, ex, ROAST_DIGESTS_BY_PREFIX, collect_digest_group,
                                      &full, &status) == 1);
    roast_agg_free(agg);
}

static void test_digests_and_incarnation_base(void)
{
    roast_agg_limits lim;
    roast_agg_limits_default(&lim);
    lim.max_digest_rows = 2;
    roast_agg *agg = roast_agg_new(&lim, 0);
    roast_id a = put(agg, "tcp://a"), ctx = put(agg, "execute"), sp = put(agg, "span"),
             pf = put(agg, "inc"), act = put(agg, "thread-cpu"), unit = put(agg, "seconds"),
             i1 = put(agg, "W1"), i2 = put(agg, "W2"), i3 = put(agg, "W3");
    roast_digest_key k1 = {a, ctx, sp, pf, act, unit};
    roast_digest_key k2 = {a, ctx, ROAST_ID_EMPTY, ROAST_ID_EMPTY, act, unit};
    roast_digest_key k3 = {a, ctx, sp, pf, act, ROAST_ID_EMPTY};
    double v = 0;

    CHECK(!roast_agg_digest(agg, &k1, &v));
    CHECK(roast_agg_set_digest(agg, &k1, i1, 1.5) == ROAST_OK);
    CHECK(roast_agg_set_digest(agg, &k1, i1, 4.0) == ROAST_OK); /* cumulative: assignment */
    CHECK(roast_agg_digest(agg, &k1, &v));
    CHECK_EQ_D(v, 4.0);
    CHECK(roast_agg_set_digest(agg, &k1, i2, 0.5) == ROAST_OK); /* restart: adds */
    CHECK(roast_agg_digest(agg, &k1, &v));
    CHECK_EQ_D(v, 4.5);
    CHECK(roast_agg_set_digest(agg, &k1, i2, 2.0) == ROAST_OK);
    CHECK(roast_agg_digest(agg, &k1, &v));
    CHECK_EQ_D(v, 6.0);
    CHECK(roast_agg_set_digest(agg, &k1, i3, 1.0) == ROAST_OK); /* third process */
    CHECK(roast_agg_digest(agg, &k1, &v));
    CHECK_EQ_D(v, 7.0);

    CHECK(roast_agg_set_digest(agg, &k2, i1, -0.0) == ROAST_OK);
    CHECK(roast_agg_digest(agg, &k2, &v));
    CHECK(v == 0 && signbit(v)); /* exact, not turned into +0 */
    /* A task's value sent with its records adds up, whatever the payloads say. */
    roast_digest_key k4 = {a, ctx, sp, pf, put(agg, "phase:user"), put(agg, "wall-seconds")};
    CHECK(roast_agg_add_digest(agg, &k4, 0.25) == ROAST_EFULL); /* the row cap holds */
    CHECK_EQ_U(roast_agg_counters_get(agg)->rows_refused, 1);
    CHECK(roast_agg_add_digest(agg, &k1, 0.25) == ROAST_OK);
    CHECK(roast_agg_add_digest(agg, &k1, 0.5) == ROAST_OK);
    CHECK(roast_agg_digest(agg, &k1, &v));
    CHECK_EQ_D(v, 7.75);
    CHECK(roast_agg_set_digest(agg, &k1, i3, 2.0) == ROAST_OK); /* kept under a payload */
    CHECK(roast_agg_digest(agg, &k1, &v));
    CHECK_EQ_D(v, 8.75);

    CHECK(roast_agg_set_digest(agg, &k3, i1, 1.0) == ROAST_EFULL);
    CHECK_EQ_U(roast_agg_counters_get(agg)->rows_refused, 2);

    digest_list l = {0};
    CHECK(roast_agg_each_digest(agg, collect_digest, &l) == 0);
    CHECK_EQ_U(l.n, 2);
    CHECK(memcmp(&l.keys[0], &k1, sizeof k1) == 0);
    CHECK_EQ_D(l.values[0], 8.75);
    CHECK(memcmp(&l.keys[1], &k2, sizeof k2) == 0);

    /* a restored value is kept as the base of any later process */
    CHECK(roast_agg_restore_digest(agg, &k1, 10.0) == ROAST_OK);
    CHECK(roast_agg_digest(agg, &k1, &v));
    CHECK_EQ_D(v, 10.0);
    CHECK(roast_agg_set_digest(agg, &k1, i3, 1.0) == ROAST_OK);
    CHECK(roast_agg_digest(agg, &k1, &v));
    CHECK_EQ_D(v, 11.0);
    CHECK(roast_agg_restore_digest(agg, &k2, NAN) == ROAST_OK);
    CHECK(roast_agg_digest(agg, &k2, &v));
    CHECK(isnan(v));
    roast_agg_free(agg);
}

static int collect_span(void *ctx, const roast_span_info *info)
{
    roast_span_info *out = ctx;
    while (out->span)
        out++;
    *out = *info;
    return 0;
}

static void test_spans(void)
{
    roast_agg_limits lim;
    roast_agg_limits_default(&lim);
    lim.max_spans = 2;
    roast_agg *agg = roast_agg_new(&lim, 0);
    roast_id s1 = put(agg, "s1"), s2 = put(agg, "s2"), s3 = put(agg, "s3"),
             n1 = put(agg, "default"), n2 = put(agg, "default\x1f" "child");
    CHECK(roast_agg_set_span(agg, s2, ROAST_ID_EMPTY, n1) == ROAST_OK);
    CHECK(roast_agg_set_span(agg, s1, s2, n1) == ROAST_OK);
    CHECK(roast_agg_set_span(agg, s1, s2, n2) == ROAST_OK); /* update in place */
    CHECK(roast_agg_set_span(agg, s3, s2, n2) == ROAST_EFULL);
    CHECK_EQ_U(roast_agg_counters_get(agg)->rows_refused, 1);
    roast_span_info got[4];
    memset(got, 0, sizeof got);
    CHECK(roast_agg_each_span(agg, collect_span, got) == 0);
    CHECK(got[0].span == s2 && got[0].parent == ROAST_ID_EMPTY && got[0].name == n1);
    CHECK(got[1].span == s1 && got[1].parent == s2 && got[1].name == n2);
    CHECK(got[2].span == 0);
    roast_agg_free(agg);
}

typedef struct record_list {
    roast_record r[8];
    int n;
} record_list;

static int collect_record(void *ctx, const roast_record *rec)
{
    record_list *l = ctx;
    l->r[l->n++] = *rec;
    return 0;
}

/* A restored record is appended as is (seq and span kept, no deduplication). */
static void test_restored_records(void)
{
    roast_agg *copy = roast_agg_new(NULL, 0);
    roast_id a = put(copy, "tcp://a"), sp = put(copy, "span");
    CHECK(roast_agg_restore_record(copy, a, sp, 5, 1.0, "ab", 2) == ROAST_OK);
    CHECK(roast_agg_restore_record(copy, a, sp, 5, 1.0, "ab", 2) == ROAST_OK);
    CHECK(roast_agg_restore_record(copy, a, ROAST_ID_EMPTY, 4, 1.0, "ab", 2) == ROAST_OK);
    CHECK_EQ_U(roast_agg_counters_get(copy)->records, 0);
    record_list l = {0};
    CHECK(roast_agg_each_record(copy, collect_record, &l) == 0);
    CHECK_EQ_U(l.n, 3);
    CHECK(l.r[0].seq == 5 && l.r[1].seq == 5 && l.r[2].seq == 4);
    CHECK(l.r[0].span == sp && l.r[2].span == ROAST_ID_EMPTY);
    CHECK_EQ_U(roast_agg_record_bytes(copy), 3 * sizeof(roast_record) + 6);
    roast_agg_free(copy);
}

static void test_sent_records_are_kept_as_sent(void)
{
    roast_agg *agg = roast_agg_new(NULL, 0);
    roast_id a = put(agg, "tcp://a"), sp = put(agg, "span");
    /* no worker row needed, no seq: the event stream never resends */
    CHECK(roast_agg_add_sent_record(agg, a, sp, 1.0, "abc", 3) == ROAST_OK);
    CHECK(roast_agg_add_sent_record(agg, a, ROAST_ID_EMPTY, 1.5, "abc", 3) == ROAST_OK);
    CHECK(roast_agg_add_sent_record(agg, a, sp, 2.0, NULL, 1) == ROAST_EINVAL);
    CHECK_EQ_U(roast_agg_counters_get(agg)->records, 2);
    record_list l = {0};
    CHECK(roast_agg_each_record(agg, collect_record, &l) == 0);
    CHECK_EQ_U(l.n, 2);
    CHECK(l.r[0].span == sp && l.r[1].span == ROAST_ID_EMPTY);
    CHECK(l.r[1].worker == a && l.r[1].seq == 0 && l.r[1].time == 1.5);
    roast_agg_free(agg);
}

/* At the cap the oldest records go, down to three quarters of it, each
 * counted; a record larger than the cap is refused. */
static void test_full_record_store_drops_the_oldest(void)
{
    roast_agg_limits lim;
    roast_agg_limits_default(&lim);
    const size_t cost = sizeof(roast_record) + 4;
    lim.record_cap_bytes = 8 * cost;
    roast_agg *agg = roast_agg_new(&lim, 0);
    roast_id a = put(agg, "tcp://a");
    for (int i = 0; i < 8; i++)
        CHECK(roast_agg_add_sent_record(agg, a, ROAST_ID_EMPTY, i, "abcd", 4) == ROAST_OK);
    CHECK_EQ_U(roast_agg_counters_get(agg)->records_dropped, 0);
    CHECK(roast_agg_add_sent_record(agg, a, ROAST_ID_EMPTY, 8, "abcd", 4) == ROAST_OK);
    record_list l = {0};
    CHECK(roast_agg_each_record(agg, collect_record, &l) == 0);
    CHECK_EQ_U(l.n, 6); /* 5 of the old kept, the new one added: 6 * cost <= 3/4 * 8 * cost */
    CHECK(l.r[0].time == 3.0 && l.r[5].time == 8.0);
    CHECK_EQ_U(roast_agg_counters_get(agg)->records_dropped, 3);
    CHECK_EQ_U(roast_agg_record_bytes(agg), 6 * cost);
    char big[512] = {0};
    CHECK(roast_agg_add_sent_record(agg, a, ROAST_ID_EMPTY, 9, big, sizeof big) == ROAST_EFULL);
    CHECK_EQ_U(roast_agg_counters_get(agg)->records_dropped, 4);
    CHECK_EQ_U(roast_agg_counters_get(agg)->records, 9);
    roast_agg_free(agg);
}

typedef struct record_tally {
    int collected, uncollected;
    double first_uncollected; /* time of the oldest uncollected record held */
} record_tally;

static int tally_record(void *ctx, const roast_record *rec)
{
    record_tally *t = ctx;
    if (rec->collected) {
        t->collected++;
    } else if (t->uncollected++ == 0) {
        t->first_uncollected = rec->time;
    }
    return 0;
}

static record_tally tally(const roast_agg *agg)
{
    record_tally t = {0, 0, 0.0};
    CHECK(roast_agg_each_record(agg, tally_record, &t) == 0);
    return t;
}

/* Records no collector collects live in a quarter of the cap and go first: however
 * many arrive, no collected record is dropped for them. */
static void test_uncollected_records_never_evict_collected_ones(void)
{
    roast_agg_limits lim;
    roast_agg_limits_default(&lim);
    const size_t cost = sizeof(roast_record) + 4;
    lim.record_cap_bytes = 16 * cost; /* 4 records of their own for the uncollected */
    roast_agg *agg = roast_agg_new(&lim, 0);
    roast_id a = put(agg, "tcp://a"), run = put(agg, "run"), other = put(agg, "other");
    for (int i = 0; i < 10; i++)
        CHECK(roast_agg_add_sent_record(agg, a, run, i, "abcd", 4) == ROAST_OK);
    for (int i = 0; i < 100; i++)
        CHECK(roast_agg_add_uncollected_record(agg, a, other, 10 + i, "abcd", 4) == ROAST_OK);
    record_tally t = tally(agg);
    CHECK_EQ_U(t.collected, 10);
    CHECK(t.uncollected >= 1 && t.uncollected <= 4);
    CHECK(t.first_uncollected > 100.0); /* the newest kept, the oldest gone */
    CHECK_EQ_U(roast_agg_counters_get(agg)->records_dropped, (uint64_t)(100 - t.uncollected));
    roast_id mine[] = {run};
    CHECK_EQ_U(roast_agg_records_dropped_in(agg, mine, 1), 0);
    /* Collected records filling the store push the uncollected out first. */
    for (int i = 0; i < 6; i++)
        CHECK(roast_agg_add_sent_record(agg, a, run, 200 + i, "abcd", 4) == ROAST_OK);
    t = tally(agg);
    CHECK_EQ_U(t.collected, 16);
    CHECK_EQ_U(t.uncollected, 0);
    CHECK_EQ_U(roast_agg_records_dropped_in(agg, mine, 1), 0);
    char big[8 * sizeof(roast_record)] = {0}; /* over the quarter, under the cap */
    CHECK(roast_agg_add_uncollected_record(agg, a, other, 300, big, sizeof big) == ROAST_EFULL);
    roast_agg_free(agg);
}

/* A run whose own records overflow the store loses its oldest, counted for its span
 * until its collector releases it. */
static void test_collected_records_dropped_are_counted_per_span(void)
{
    roast_agg_limits lim;
    roast_agg_limits_default(&lim);
    const size_t cost = sizeof(roast_record) + 4;
    lim.record_cap_bytes = 8 * cost;
    roast_agg *agg = roast_agg_new(&lim, 0);
    roast_id a = put(agg, "tcp://a"), run = put(agg, "run"), later = put(agg, "later");
    for (int i = 0; i < 9; i++)
        CHECK(roast_agg_add_sent_record(agg, a, run, i, "abcd", 4) == ROAST_OK);
    roast_id mine[] = {run}, theirs[] = {later}, both[] = {run, later};
    CHECK_EQ_U(roast_agg_records_dropped_in(agg, mine, 1), 3);
    CHECK_EQ_U(roast_agg_records_dropped_in(agg, theirs, 1), 0);
    CHECK_EQ_U(roast_agg_records_dropped_in(agg, both, 2), 3);
    CHECK_EQ_U(roast_agg_release_records(agg, mine, 1), 6);
    CHECK_EQ_U(roast_agg_records_dropped_in(agg, mine, 1), 0); /* forgotten with the run */
    CHECK_EQ_U(roast_agg_counters_get(agg)->records_dropped, 3);
    roast_agg_free(agg);
}

/* Uncollected records expire; collected ones never do. */
static void test_uncollected_records_expire(void)
{
    roast_agg *agg = roast_agg_new(NULL, 0);
    roast_id a = put(agg, "tcp://a"), run = put(agg, "run");
    for (int i = 0; i < 4; i++) {
        CHECK(roast_agg_add_sent_record(agg, a, run, i, "ab", 2) == ROAST_OK);
        CHECK(roast_agg_add_uncollected_record(agg, a, run, i, "ab", 2) == ROAST_OK);
    }
    CHECK_EQ_U(roast_agg_expire_records(agg, 2.0), 2);
    record_tally t = tally(agg);
    CHECK(t.collected == 4 && t.uncollected == 2 && t.first_uncollected == 2.0);
    CHECK_EQ_U(roast_agg_record_bytes(agg), 6 * (sizeof(roast_record) + 2));
    CHECK_EQ_U(roast_agg_expire_records(agg, 1e9), 2);
    CHECK_EQ_U(roast_agg_expire_records(agg, 1e9), 0);
    CHECK_EQ_U(roast_agg_counters_get(agg)->records_dropped, 0);
    CHECK_EQ_U(roast_agg_record_bytes(agg), 4 * (sizeof(roast_record) + 2));
    roast_agg_free(agg);
}

/* A collector's exit releases its spans' records; the others stay, in order. */
static void test_release_records_of_spans(void)
{
    roast_agg *agg = roast_agg_new(NULL, 0);
    roast_id a = put(agg, "tcp://a"), s1 = put(agg, "s1"), s2 = put(agg, "s2"),
             s3 = put(agg, "s3");
    roast_id spans[] = {s1, s2, s1, ROAST_ID_EMPTY, s3, s2};
    for (int i = 0; i < 6; i++)
        CHECK(roast_agg_add_sent_record(agg, a, spans[i], i, "ab", 2) == ROAST_OK);
    roast_id release[] = {s3, s1};
    CHECK_EQ_U(roast_agg_release_records(agg, release, 2), 3);
    CHECK_EQ_U(roast_agg_release_records(agg, release, 2), 0);
    CHECK_EQ_U(roast_agg_release_records(agg, NULL, 0), 0);
    record_list l = {0};
    CHECK(roast_agg_each_record(agg, collect_record, &l) == 0);
    CHECK_EQ_U(l.n, 3);
    CHECK(l.r[0].time == 1.0 && l.r[1].time == 3.0 && l.r[2].time == 5.0);
    CHECK_EQ_U(roast_agg_record_bytes(agg), 3 * (sizeof(roast_record) + 2));
    CHECK_EQ_U(roast_agg_counters_get(agg)->records_dropped, 0);
    CHECK_EQ_U(roast_agg_clear_records(agg), 3); /* a measurement keeps them elsewhere */
    CHECK_EQ_U(roast_agg_clear_records(agg), 0);
    CHECK_EQ_U(roast_agg_record_bytes(agg), 0);
    CHECK(roast_agg_each_record(agg, collect_record, &l) == 0);
    CHECK(roast_agg_add_sent_record(agg, a, s1, 7, "ab", 2) == ROAST_OK);
    CHECK_EQ_U(roast_agg_record_bytes(agg), sizeof(roast_record) + 2);
    roast_agg_free(agg);
}

/* A stream sees its spans' records in arrival order, numbered; an
 * acknowledgement drops those up to it and keeps their drop counts; an
 * acknowledgement that never came drops nothing. */
static void test_stream_acknowledges_records(void)
{
    roast_agg_limits lim;
    roast_agg_limits_default(&lim);
    lim.record_cap_bytes = 8 * (sizeof(roast_record) + 2);
    roast_agg *agg = roast_agg_new(&lim, 0);
    roast_id a = put(agg, "tcp://a"), run = put(agg, "run"), other = put(agg, "other");
    roast_id mine[] = {run};
    for (int i = 0; i < 10; i++) /* past the cap: the oldest dropped */
        CHECK(roast_agg_add_sent_record(agg, a, i == 4 ? other : run, i, "ab", 2) == ROAST_OK);
    uint64_t dropped = roast_agg_records_dropped_in(agg, mine, 1);
    CHECK(dropped > 0);
    record_list l = {0};
    CHECK(roast_agg_each_record_of(agg, mine, 1, collect_record, &l) == 0);
    CHECK(l.n > 1 && l.n < 10);
    for (int i = 1; i < l.n; i++)
        CHECK(l.r[i].number > l.r[i - 1].number && l.r[i].span == run);
    uint64_t middle = l.r[l.n / 2].number, newest = l.r[l.n - 1].number;
    CHECK_EQ_U(roast_agg_ack_records(agg, mine, 1, 0), 0); /* nothing received yet */
    CHECK_EQ_U(roast_agg_ack_records(agg, mine, 1, middle), (uint64_t)(l.n / 2 + 1));
    CHECK_EQ_U(roast_agg_ack_records(agg, mine, 1, middle), 0);
    record_list rest = {0};
    CHECK(roast_agg_each_record_of(agg, mine, 1, collect_record, &rest) == 0);
    CHECK_EQ_U(rest.n, l.n - (l.n / 2 + 1));
    CHECK(rest.n == 0 || rest.r[0].number > middle);
    CHECK_EQ_U(roast_agg_ack_records(agg, mine, 1, newest), rest.n);
    CHECK_EQ_U(roast_agg_records_dropped_in(agg, mine, 1), dropped); /* the exit reports them */
    record_list theirs = {0};
    roast_id others[] = {other};
    CHECK(roast_agg_each_record_of(agg, others, 1, collect_record, &theirs) == 0);
    CHECK(theirs.n <= 1);
    CHECK(roast_agg_add_sent_record(agg, a, run, 11, "ab", 2) == ROAST_OK);
    record_list next = {0};
    CHECK(roast_agg_each_record_of(agg, mine, 1, collect_record, &next) == 0);
    CHECK(next.n == 1 && next.r[0].number > newest);
    CHECK(roast_agg_each_record_of(agg, NULL, 0, collect_record, &next) == 0);
    roast_agg_free(agg);
}

typedef struct error_list {
    roast_id names[4];
    uint64_t counts[4];
    int n;
} error_list;

static int collect_error(void *ctx, roast_id name, uint64_t count)
{
    error_list *l = ctx;
    l->names[l->n] = name;
    l->counts[l->n++] = count;
    return 0;
}

static void test_errors(void)
{
    roast_agg_limits lim;
    roast_agg_limits_default(&lim);
    lim.max_strings = 3;
    roast_agg *agg = roast_agg_new(&lim, 0);
    CHECK(roast_agg_count_error(agg, "sample", 6, 1) == ROAST_OK);
    CHECK(roast_agg_count_error(agg, "ingest", 6, 2) == ROAST_OK);
    CHECK(roast_agg_count_error(agg, "sample", 6, 4) == ROAST_OK);
    CHECK(roast_agg_count_error(agg, "third", 5, 1) == ROAST_EFULL); /* intern bound */
    error_list l = {0};
    CHECK(roast_agg_each_error(agg, collect_error, &l) == 0);
    CHECK_EQ_U(l.n, 2);
    CHECK_STR(roast_intern_get(roast_agg_strings(agg), l.names[0]), "sample");
    CHECK_EQ_U(l.counts[0], 5);
    CHECK_EQ_U(l.counts[1], 2);
    CHECK(roast_agg_restore_error(agg, l.names[1], 40) == ROAST_OK);
    l.n = 0;
    roast_agg_each_error(agg, collect_error, &l);
    CHECK_EQ_U(l.counts[1], 40);
    roast_agg_free(agg);
}

static void test_restore_task_and_report(void)
{
    roast_agg *agg = roast_agg_new(NULL, 5.0);
    roast_id w = put(agg, "w");
    roast_task_key key = {w, 0, 0};
    roast_task_stats st = {3, 2, 1, 0.5, 0.25, 1ull << 60, 1.0, 2.0};
    CHECK(roast_agg_restore_task(agg, &key, &st) == ROAST_OK);
    st.tasks = 9;
    CHECK(roast_agg_restore_task(agg, &key, &st) == ROAST_OK); /* overwrites */
    const roast_task_stats *got = roast_agg_task(agg, &key);
    CHECK(got && got->tasks == 9 && got->output_bytes == 1ull << 60);

    roast_agg_report live;
    roast_agg_report_get(agg, &live);
    CHECK_EQ_U(live.strings, 2);
    CHECK_EQ_U(live.series_cap_bytes, 64u << 20);
    CHECK_EQ_U(live.intern_overflows, 0);

    roast_agg_report src;
    memset(&src, 0, sizeof src);
    src.counters.events = 123;
    src.counters.hook_ns_per_call = 250.5;
    src.series_bytes = 4096;
    src.strings = 77;
    roast_agg_restore_report(agg, &src);
    CHECK_EQ_U(roast_agg_counters_get(agg)->events, 123);
    roast_agg_counters_mut(agg)->events++;
    roast_agg_report out;
    roast_agg_report_get(agg, &out);
    CHECK_EQ_U(out.counters.events, 124);
    CHECK_EQ_D(out.counters.hook_ns_per_call, 250.5);
    CHECK_EQ_U(out.series_bytes, 4096);
    CHECK_EQ_U(out.strings, 77);
    roast_agg_free(agg);
}

int main(void)
{
    RUN(test_defaults);
    RUN(test_apply_tasks);
    RUN(test_task_order_cap_and_sum);
    RUN(test_task_groups);
    RUN(test_workers_and_beats);
    RUN(test_digests_and_incarnation_base);
    RUN(test_digest_groups);
    RUN(test_spans);
    RUN(test_restored_records);
    RUN(test_sent_records_are_kept_as_sent);
    RUN(test_full_record_store_drops_the_oldest);
    RUN(test_release_records_of_spans);
    RUN(test_stream_acknowledges_records);
    RUN(test_uncollected_records_never_evict_collected_ones);
    RUN(test_collected_records_dropped_are_counted_per_span);
    RUN(test_uncollected_records_expire);
    RUN(test_errors);
    RUN(test_restore_task_and_report);
    return CHECK_DONE();
}
