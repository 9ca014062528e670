#include "check.h"
#include "roast/series.h"

#include <stdint.h>

#define EPOCH 1.7e9

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static double rnd(void) /* uniform in [0, 1) */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* A plausible sample t seconds after EPOCH, with values whose fractions make
 * float32 rounding matter. */
static roast_sample make_sample(double t)
{
    roast_sample s;
    s.time = EPOCH + t;
    s.v[ROAST_COL_MEMORY] = 1e9 + rnd() * 3e9;
    s.v[ROAST_COL_MEMORY_LIMIT] = 8589934592.0;
    s.v[ROAST_COL_NTHREADS] = 4;
    s.v[ROAST_COL_PROCESSING] = (double)(int)(rnd() * 40);
    s.v[ROAST_COL_EXECUTING] = (double)(int)(rnd() * 5);
    s.v[ROAST_COL_MANAGED] = rnd() * 1e9;
    s.v[ROAST_COL_OCCUPANCY] = rnd() * 12.5;
    s.v[ROAST_COL_CPU] = rnd() * 400;
    s.v[ROAST_COL_SPILLED] = rnd() * 1e8;
    s.v[ROAST_COL_NET_READ] = rnd() * 1e7;
    s.v[ROAST_COL_NET_WRITE] = rnd() * 1e7;
    s.v[ROAST_COL_DISK_READ] = rnd() * 1e6;
    s.v[ROAST_COL_DISK_WRITE] = rnd() * 1e6;
    s.v[ROAST_COL_LAST_SEEN] = s.time - rnd() * 2;
    return s;
}

static int is_float_column(int c)
{
    return c != ROAST_COL_MEMORY_LIMIT && c != ROAST_COL_NTHREADS && c != ROAST_COL_EXECUTING &&
           c != ROAST_COL_LAST_SEEN;
}

/* What a raw sample reads back as: time to the millisecond, float columns
 * rounded to float32, last_seen to the centisecond before the stored time. */
static double stored_time(double t) { return EPOCH + floor((t - EPOCH) * 1000.0 + 0.5) / 1000.0; }

static double stored_value(const roast_sample *s, int c)
{
    if (isnan(s->v[c]))
        return NAN;
    if (is_float_column(c))
        return (double)(float)s->v[c];
    if (c == ROAST_COL_LAST_SEEN) {
        double t = stored_time(s->time);
        return t - floor((t - s->v[c]) * 100.0 + 0.5) / 100.0;
    }
    return s->v[c];
}

static void test_column_names(void)
{
    CHECK(strcmp(roast_column_names[ROAST_COL_MEMORY], "memory") == 0);
    CHECK(strcmp(roast_column_names[ROAST_COL_MEMORY_LIMIT], "memory_limit") == 0);
    CHECK(strcmp(roast_column_names[ROAST_COL_SPILLED], "spilled") == 0);
    CHECK(strcmp(roast_column_names[ROAST_COL_DISK_WRITE], "disk_write") == 0);
    CHECK(strcmp(roast_column_names[ROAST_COL_LAST_SEEN], "last_seen") == 0);
}

static void test_new_refuses_small_cap(void)
{
    CHECK(roast_series_new(1000, EPOCH) == NULL);
    CHECK(roast_series_new(1 << 20, NAN) == NULL);
    roast_series *s = roast_series_new(64 << 10, EPOCH);
    CHECK(s != NULL);
    CHECK_EQ_D(roast_series_epoch(s), EPOCH);
    CHECK_EQ_U(roast_series_cap_bytes(s), 64 << 10);
    CHECK(roast_series_bytes(s) <= roast_series_cap_bytes(s));
    CHECK_EQ_U(roast_series_workers(s, NULL, 0), 0);
    roast_series_free(s);
}

static void test_append_read_back_exact(void)
{
    roast_series *s = roast_series_new(1 << 20, EPOCH);
    roast_sample in[50];
    for (int i = 0; i < 50; i++) {
        in[i] = make_sample(10.0 + i * 0.5004);
        CHECK(roast_series_append(s, 7, &in[i]) == ROAST_OK);
    }
    CHECK_EQ_U(roast_series_points(s, 7), 50);
    CHECK_EQ_U(roast_series_samples(s), 50);
    CHECK_EQ_U(roast_series_folds(s), 0);
    for (int i = 0; i < 50; i++) {
        roast_series_point p;
        CHECK(roast_series_point_at(s, 7, (size_t)i, &p) == ROAST_OK);
        CHECK_EQ_U(p.count, 1);
        CHECK_EQ_D(p.t_first, stored_time(in[i].time));
        CHECK_EQ_D(p.t_last, p.t_first);
        CHECK(fabs(p.t_first - in[i].time) <= 0.0005 + 1e-6);
        for (int c = 0; c < ROAST_NCOLS; c++) {
            CHECK_EQ_D(p.mean[c], stored_value(&in[i], c));
            CHECK_EQ_D(p.min[c], p.mean[c]);
            CHECK_EQ_D(p.max[c], p.mean[c]);
        }
        CHECK(fabs(p.mean[ROAST_COL_LAST_SEEN] - in[i].v[ROAST_COL_LAST_SEEN]) <= 0.0055 + 1e-6);
    }
    roast_series_point p;
    CHECK(roast_series_point_at(s, 7, 50, &p) == ROAST_EINVAL);
    CHECK(roast_series_point_at(s, 8, 0, &p) == ROAST_EINVAL);
    CHECK_EQ_U(roast_series_points(s, 8), 0);
    roast_series_free(s);
}

static void test_saturation_of_small_columns(void)
{
    roast_series *s = roast_series_new(1 << 20, EPOCH);
    roast_sample a = make_sample(1000.0);
    a.v[ROAST_COL_EXECUTING] = 1e6;
    a.v[ROAST_COL_LAST_SEEN] = EPOCH + 1000.0 - 5000.0; /* far older than 655.34 s */
    roast_sample b = make_sample(1001.0);
    b.v[ROAST_COL_EXECUTING] = -3;
    b.v[ROAST_COL_LAST_SEEN] = EPOCH + 1002.0; /* after the sample: age 0 */
    CHECK(roast_series_append(s, 1, &a) == ROAST_OK);
    CHECK(roast_series_append(s, 1, &b) == ROAST_OK);
    roast_series_point p;
    roast_series_point_at(s, 1, 0, &p);
    CHECK_EQ_D(p.mean[ROAST_COL_EXECUTING], 65534.0);
    CHECK_EQ_D(p.mean[ROAST_COL_LAST_SEEN], p.t_first - 655.34);
    roast_series_point_at(s, 1, 1, &p);
    CHECK_EQ_D(p.mean[ROAST_COL_EXECUTING], 0.0);
    CHECK_EQ_D(p.mean[ROAST_COL_LAST_SEEN], p.t_first);
    roast_series_free(s);
}

static void test_nan_survives(void)
{
    roast_series *s = roast_series_new(64 << 10, EPOCH);
    for (int i = 0; i < 2000; i++) {
        roast_sample x = make_sample(i * 1.0);
        x.v[ROAST_COL_SPILLED] = NAN; /* never reported */
        if (i % 7 == 3) {             /* sometimes missing */
            x.v[ROAST_COL_CPU] = NAN;
            x.v[ROAST_COL_EXECUTING] = NAN;
            x.v[ROAST_COL_LAST_SEEN] = NAN;
            x.v[ROAST_COL_MEMORY_LIMIT] = NAN;
        }
        CHECK(roast_series_append(s, 3, &x) == ROAST_OK);
    }
    /* The raw tail still has the gaps as NaN. */
    size_t n = roast_series_points(s, 3);
    roast_series_point p;
    roast_series_point_at(s, 3, n - 1, &p);
    CHECK_EQ_U(p.count, 1);
    CHECK(isnan(p.mean[ROAST_COL_SPILLED]));
    int seen_gap = 0, seen_bucket = 0;
    for (size_t i = 0; i < n; i++) {
        roast_series_point_at(s, 3, i, &p);
        CHECK(isnan(p.min[ROAST_COL_SPILLED]) && isnan(p.max[ROAST_COL_SPILLED]) &&
              isnan(p.mean[ROAST_COL_SPILLED]));
        if (p.count == 1) {
            if (isnan(p.mean[ROAST_COL_CPU])) {
                seen_gap = 1;
                CHECK(isnan(p.mean[ROAST_COL_EXECUTING]));
                CHECK(isnan(p.mean[ROAST_COL_LAST_SEEN]));
                CHECK(isnan(p.mean[ROAST_COL_MEMORY_LIMIT]));
            }
            continue;
        }
        /* Buckets of 16 consecutive samples always cover a gap (one in 7):
         * min and max ignore it, mean says the column was not always there. */
        seen_bucket = 1;
        CHECK(!isnan(p.min[ROAST_COL_CPU]) && !isnan(p.max[ROAST_COL_CPU]));
        CHECK(isnan(p.mean[ROAST_COL_CPU]));
        CHECK(!isnan(p.min[ROAST_COL_LAST_SEEN]) && isnan(p.mean[ROAST_COL_LAST_SEEN]));
        CHECK(!isnan(p.max[ROAST_COL_MEMORY_LIMIT]) && isnan(p.mean[ROAST_COL_MEMORY_LIMIT]));
        CHECK(!isnan(p.mean[ROAST_COL_MEMORY])); /* always reported */
    }
    CHECK(seen_gap);
    CHECK(seen_bucket);
    CHECK(roast_series_folds(s) > 0);
    roast_series_free(s);
}

static void test_change_points(void)
{
    roast_series *s = roast_series_new(1 << 20, EPOCH);
    double limits[100], threads[100];
    for (int i = 0; i < 100; i++) {
        limits[i] = i < 30 ? 4e9 : i < 31 ? 6e9 : i < 70 ? 8e9 + 1 : 4e9;
        threads[i] = i < 50 ? 2 : 8;
        roast_sample x = make_sample(5.0 + i / 2000.0); /* two samples per millisecond */
        x.v[ROAST_COL_MEMORY_LIMIT] = limits[i];
        x.v[ROAST_COL_NTHREADS] = threads[i];
        CHECK(roast_series_append(s, 1, &x) == ROAST_OK);
    }
    size_t before = roast_series_bytes(s);
    for (int i = 0; i < 100; i++) {
        roast_series_point p;
        roast_series_point_at(s, 1, (size_t)i, &p);
        CHECK_EQ_D(p.mean[ROAST_COL_MEMORY_LIMIT], limits[i]); /* kept in double */
        CHECK_EQ_D(p.mean[ROAST_COL_NTHREADS], threads[i]);
    }
    /* Five changes cost no more than a few list entries, not a column. */
    roast_series *flat = roast_series_new(1 << 20, EPOCH);
    for (int i = 0; i < 100; i++) {
        roast_sample x = make_sample(5.0 + i / 2000.0);
        x.v[ROAST_COL_MEMORY_LIMIT] = 4e9;
        x.v[ROAST_COL_NTHREADS] = 2;
        roast_series_append(flat, 1, &x);
    }
    CHECK(before - roast_series_bytes(flat) <= 4 * 16);
    roast_series_free(flat);
    roast_series_free(s);
}

/* Global extremes and mean of every column over all samples, as stored. */
typedef struct reference {
    double min[ROAST_NCOLS], max[ROAST_NCOLS], sum[ROAST_NCOLS];
    uint64_t count;
} reference;

static void reference_init(reference *r)
{
    for (int c = 0; c < ROAST_NCOLS; c++) {
        r->min[c] = INFINITY;
        r->max[c] = -INFINITY;
        r->sum[c] = 0;
    }
    r->count = 0;
}

static void reference_add(reference *r, const roast_sample *x)
{
    for (int c = 0; c < ROAST_NCOLS; c++) {
        double v = stored_value(x, c);
        r->min[c] = fmin(r->min[c], v);
        r->max[c] = fmax(r->max[c], v);
        r->sum[c] += v;
    }
    r->count++;
}

/* Checks the points of a worker against the reference: every sample is
 * covered once, time order holds, extremes are exact, the mean is within
 * float32 precision (each merge rounds the mean to float32 once). */
static void check_against_reference(const roast_series *s, roast_id worker, const reference *r)
{
    double min[ROAST_NCOLS], max[ROAST_NCOLS], sum[ROAST_NCOLS] = {0};
    for (int c = 0; c < ROAST_NCOLS; c++) {
        min[c] = INFINITY;
        max[c] = -INFINITY;
    }
    uint64_t count = 0;
    double last = -INFINITY;
    size_t n = roast_series_points(s, worker);
    for (size_t i = 0; i < n; i++) {
        roast_series_point p;
        CHECK(roast_series_point_at(s, worker, i, &p) == ROAST_OK);
        CHECK(p.t_first >= last && p.t_last >= p.t_first);
        last = p.t_last;
        for (int c = 0; c < ROAST_NCOLS; c++) {
            min[c] = fmin(min[c], p.min[c]);
            max[c] = fmax(max[c], p.max[c]);
            sum[c] += p.mean[c] * p.count;
        }
        count += p.count;
    }
    CHECK_EQ_U(count, r->count);
    for (int c = 0; c < ROAST_NCOLS; c++) {
        /* memory_limit and nthreads are exact in raw samples and float32 in
         * buckets: the extreme is one or the other, depending on its age. */
        CHECK(min[c] == r->min[c] || min[c] == (double)(float)r->min[c]);
        CHECK(max[c] == r->max[c] || max[c] == (double)(float)r->max[c]);
        if (is_float_column(c) || c == ROAST_COL_LAST_SEEN) {
            CHECK_EQ_D(min[c], r->min[c]);
            CHECK_EQ_D(max[c], r->max[c]);
        }
        double mean = sum[c] / count, rmean = r->sum[c] / r->count;
        double tol = c == ROAST_COL_LAST_SEEN ? 1e-12 : 2e-6;
        if (!(fabs(mean - rmean) <= tol * fabs(rmean) + 1e-9)) {
            fprintf(stderr, "column %s: mean %.17g, reference %.17g\n", roast_column_names[c], mean,
                    rmean);
            CHECK(0);
        }
    }
}

static void test_decimation_keeps_extremes_and_mean(void)
{
    roast_series *s = roast_series_new(64 << 10, EPOCH);
    reference r[3];
    for (int w = 0; w < 3; w++)
        reference_init(&r[w]);
    for (int i = 0; i < 20000; i++) {
        for (int w = 0; w < 3; w++) {
            roast_sample x = make_sample(i * 0.25 + w * 0.01);
            x.v[ROAST_COL_MEMORY_LIMIT] = 4e9 + (i / 3000) * 1e9 + 0.5; /* not float32-exact */
            x.v[ROAST_COL_NTHREADS] = 1 + (i / 5000);
            if (i == 12345 && w == 1)
                x.v[ROAST_COL_CPU] = 9999.5; /* a lone peak */
            CHECK(roast_series_append(s, (roast_id)(10 + w), &x) == ROAST_OK);
            reference_add(&r[w], &x);
            CHECK(roast_series_bytes(s) <= roast_series_cap_bytes(s));
        }
    }
    CHECK(roast_series_folds(s) > 0);
    CHECK(roast_series_points(s, 10) < 20000);
    for (int w = 0; w < 3; w++)
        check_against_reference(s, (roast_id)(10 + w), &r[w]);
    double cpu_max = -INFINITY;
    for (size_t i = 0; i < roast_series_points(s, 11); i++) {
        roast_series_point p;
        roast_series_point_at(s, 11, i, &p);
        cpu_max = fmax(cpu_max, p.max[ROAST_COL_CPU]);
    }
    CHECK_EQ_D(cpu_max, 9999.5);
    /* Buckets were merged, not only made: some cover more than one group. */
    uint32_t widest = 0;
    for (size_t i = 0; i < roast_series_points(s, 10); i++) {
        roast_series_point q;
        roast_series_point_at(s, 10, i, &q);
        widest = q.count > widest ? q.count : widest;
    }
    CHECK(widest > 16);
    /* The newest samples stay at full resolution. */
    roast_series_point p;
    roast_series_point_at(s, 12, roast_series_points(s, 12) - 1, &p);
    CHECK_EQ_U(p.count, 1);
    CHECK_EQ_D(p.t_first, stored_time(EPOCH + 19999 * 0.25 + 0.02));
    roast_series_free(s);
}

static void test_cap_never_exceeded(void)
{
    enum { WORKERS = 200, SAMPLES = 5000 };
    size_t cap = 1 << 20;
    roast_series *s = roast_series_new(cap, EPOCH);
    int failures = 0;
    for (int i = 0; i < SAMPLES; i++) {
        for (int w = 0; w < WORKERS; w++) {
            roast_sample x = make_sample(i * 1.0 + w * 0.001);
            x.v[ROAST_COL_MEMORY_LIMIT] = 2e9 * (1 + (w + i / 1000) % 3);
            if (roast_series_append(s, (roast_id)(100 + w), &x) != ROAST_OK)
                failures++;
            if (roast_series_bytes(s) > cap)
                failures++;
        }
    }
    CHECK_EQ_U(failures, 0);
    CHECK_EQ_U(roast_series_samples(s), (uint64_t)WORKERS * SAMPLES);
    CHECK_EQ_U(roast_series_dropped(s), 0);
    CHECK(roast_series_folds(s) > 0);
    roast_id ids[WORKERS];
    CHECK_EQ_U(roast_series_workers(s, ids, WORKERS), WORKERS);
    uint64_t total = 0;
    for (int w = 0; w < WORKERS; w++) {
        CHECK_EQ_U(ids[w], 100 + w);
        size_t n = roast_series_points(s, ids[w]);
        CHECK(n > 0);
        for (size_t i = 0; i < n; i++) {
            roast_series_point p;
            roast_series_point_at(s, ids[w], i, &p);
            total += p.count;
        }
    }
    CHECK_EQ_U(total, (uint64_t)WORKERS * SAMPLES);
    printf("     200 workers x 5000 samples in 1 MiB: %zu bytes, %llu folds\n",
           roast_series_bytes(s), (unsigned long long)roast_series_folds(s));
    roast_series_free(s);
}

static void test_refusals_counted(void)
{
    roast_series *s = roast_series_new(1 << 20, EPOCH);
    roast_sample x = make_sample(100.0);
    CHECK(roast_series_append(s, 1, &x) == ROAST_OK);
    x.time = EPOCH + 99.0; /* out of order */
    CHECK(roast_series_append(s, 1, &x) == ROAST_EINVAL);
    x.time = EPOCH + 100.0; /* equal time is allowed */
    CHECK(roast_series_append(s, 1, &x) == ROAST_OK);
    x.time = EPOCH + 99.0; /* another worker has its own order */
    CHECK(roast_series_append(s, 2, &x) == ROAST_OK);
    x.time = EPOCH - 1.0; /* before the epoch */
    CHECK(roast_series_append(s, 3, &x) == ROAST_EINVAL);
    x.time = EPOCH + 5e6; /* beyond the uint32 millisecond clock */
    CHECK(roast_series_append(s, 3, &x) == ROAST_EINVAL);
    x.time = NAN;
    CHECK(roast_series_append(s, 3, &x) == ROAST_EINVAL);
    CHECK_EQ_U(roast_series_refused(s), 4);
    CHECK_EQ_U(roast_series_samples(s), 3);
    CHECK_EQ_U(roast_series_points(s, 1), 2);
    CHECK_EQ_U(roast_series_workers(s, NULL, 0), 2); /* worker 3 never had data */
    roast_series_free(s);
}

static void test_late_workers(void)
{
    size_t cap = 384 << 10;
    roast_series *s = roast_series_new(cap, EPOCH);
    int failures = 0;
    double t = 0;
    for (int i = 0; i < 2000; i++, t += 1.0) {
        for (int w = 0; w < 10; w++) {
            roast_sample x = make_sample(t);
            failures += roast_series_append(s, (roast_id)w, &x) != ROAST_OK;
        }
    }
    CHECK(roast_series_folds(s) > 0);
    /* 150 workers join one by one while the first ten keep reporting. */
    for (int late = 0; late < 150; late++) {
        for (int i = 0; i < 20; i++, t += 1.0) {
            for (int w = 0; w < 10 + late + 1; w++) {
                roast_sample x = make_sample(t);
                failures += roast_series_append(s, (roast_id)(w < 10 ? w : 1000 + w), &x) != ROAST_OK;
                failures += roast_series_bytes(s) > cap;
            }
        }
    }
    CHECK_EQ_U(failures, 0);
    roast_id ids[200];
    CHECK_EQ_U(roast_series_workers(s, ids, 200), 160);
    CHECK_EQ_U(ids[10], 1010);
    CHECK_EQ_U(ids[159], 1159);
    CHECK(roast_series_points(s, 1159) == 20);
    CHECK(roast_series_points(s, 1010) > 0);
    roast_series_free(s);
}

static void test_full_store_drops_and_counts(void)
{
    size_t cap = 64 << 10;
    roast_series *s = roast_series_new(cap, EPOCH);
    int failures = 0;
    for (int i = 0; i < 160; i++) { /* worker 0 has a history to fold */
        roast_sample x = make_sample(1.0 + i);
        failures += roast_series_append(s, 0, &x) != ROAST_OK;
    }
    roast_status st = ROAST_OK;
    roast_id w = 1;
    for (; w < 10000 && st == ROAST_OK; w++) { /* new workers of one sample, until full */
        roast_sample x = make_sample(1.0);
        st = roast_series_append(s, w, &x);
        CHECK(roast_series_bytes(s) <= cap);
    }
    CHECK(st == ROAST_EFULL);
    CHECK_EQ_U(roast_series_dropped(s), 1);
    CHECK_EQ_U(roast_series_workers(s, NULL, 0), w - 1); /* the refused one is not listed */
    /* Existing workers keep going: their old samples fold. */
    for (int i = 0; i < 200; i++) {
        roast_sample x = make_sample(200.0 + i);
        failures += roast_series_append(s, 0, &x) != ROAST_OK;
        failures += roast_series_bytes(s) > cap;
    }
    CHECK_EQ_U(failures, 0);
    CHECK(roast_series_folds(s) > 0);
    roast_series_free(s);
}

static int same_double(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static int same_point(const roast_series_point *a, const roast_series_point *b)
{
    int same = same_double(a->t_first, b->t_first) && same_double(a->t_last, b->t_last) &&
               a->count == b->count;
    for (int c = 0; c < ROAST_NCOLS; c++)
        same = same && same_double(a->min[c], b->min[c]) && same_double(a->max[c], b->max[c]) &&
               same_double(a->mean[c], b->mean[c]);
    return same;
}

static void test_restore_round_trip(void)
{
    roast_series *s = roast_series_new(64 << 10, EPOCH);
    for (int i = 0; i < 3000; i++) {
        for (roast_id w = 1; w <= 2; w++) {
            roast_sample x = make_sample(i * 0.3337 + w * 0.0001);
            x.v[ROAST_COL_MEMORY_LIMIT] = 1e9 + (i / 500) * 333.25;
            x.v[ROAST_COL_NTHREADS] = (i / 700) % 2 ? 3 : 5;
            if (i % 11 == 0)
                x.v[ROAST_COL_NET_READ] = NAN;
            if (i % 13 == 0)
                x.v[ROAST_COL_LAST_SEEN] = NAN;
            if (i % 17 == 0)
                x.v[ROAST_COL_EXECUTING] = NAN;
            roast_series_append(s, w, &x);
        }
    }
    CHECK(roast_series_folds(s) > 0);
    roast_series *back = roast_series_new(1 << 20, EPOCH);
    for (roast_id w = 1; w <= 2; w++) {
        for (size_t i = 0; i < roast_series_points(s, w); i++) {
            roast_series_point p;
            roast_series_point_at(s, w, i, &p);
            CHECK(roast_series_restore(back, w, &p) == ROAST_OK);
        }
    }
    CHECK_EQ_U(roast_series_folds(back), 0);
    int buckets = 0, raws = 0, mismatches = 0;
    for (roast_id w = 1; w <= 2; w++) {
        CHECK_EQ_U(roast_series_points(back, w), roast_series_points(s, w));
        for (size_t i = 0; i < roast_series_points(s, w); i++) {
            roast_series_point a, b;
            roast_series_point_at(s, w, i, &a);
            roast_series_point_at(back, w, i, &b);
            mismatches += !same_point(&a, &b);
            buckets += a.count > 1;
            raws += a.count == 1;
        }
    }
    CHECK_EQ_U(mismatches, 0);
    CHECK(buckets > 0 && raws > 0);

    /* Points that cannot be stored as given are refused and counted. */
    roast_series_point p;
    roast_series_point_at(s, 1, 0, &p); /* a bucket, older than everything in back */
    CHECK(p.count > 1);
    CHECK(roast_series_restore(back, 1, &p) == ROAST_EINVAL);
    p.t_first = p.t_last = EPOCH + 5000;
    CHECK(roast_series_restore(back, 1, &p) == ROAST_EINVAL); /* bucket after raw samples */
    p.count = 0;
    CHECK(roast_series_restore(back, 9, &p) == ROAST_EINVAL);
    CHECK_EQ_U(roast_series_refused(back), 3);
    CHECK_EQ_U(roast_series_workers(back, NULL, 0), 2);
    roast_series_restore_counters(back, 6000, 4, 0, 0);
    CHECK_EQ_U(roast_series_samples(back), 6000);
    CHECK_EQ_U(roast_series_folds(back), 4);
    roast_series_free(back);
    roast_series_free(s);
}

/* Full-resolution cost. The marginal cost is measured between two moments
 * where every worker's raw block is exactly full (the next append grows it),
 * so it is the storage of the samples alone; the average also carries the
 * store's struct, the worker table, the change lists and any unused block
 * capacity. */
static void test_bytes_per_worker_sample(void)
{
    enum { WORKERS = 200 };
    roast_series *s = roast_series_new((size_t)512 << 20, EPOCH);
    size_t full_bytes[2] = {0, 0};
    int full_samples[2] = {0, 0}, found = 0;
    for (int i = 1; i <= 6000; i++) {
        size_t before = roast_series_bytes(s);
        for (int w = 0; w < WORKERS; w++) {
            roast_sample x = make_sample(i * 1.0);
            roast_series_append(s, (roast_id)w, &x);
        }
        /* i - 1 samples left every block full if appending sample i grew them;
         * keep the last two such moments. */
        if (i > 1 && roast_series_bytes(s) > before) {
            full_bytes[0] = full_bytes[1];
            full_samples[0] = full_samples[1];
            full_bytes[1] = before;
            full_samples[1] = i - 1;
            found++;
        }
    }
    CHECK_EQ_U(roast_series_folds(s), 0);
    CHECK(found >= 2);
    double marginal = (double)(full_bytes[1] - full_bytes[0]) /
                      ((double)(full_samples[1] - full_samples[0]) * WORKERS);
    double average = (double)full_bytes[1] / ((double)full_samples[1] * WORKERS);
    printf("     full resolution: %.3f bytes per worker-sample (marginal), %.3f on average "
           "with all overhead (%d workers x %d samples)\n",
           marginal, average, WORKERS, full_samples[1]);
    CHECK(marginal <= 64.0);
    CHECK(average <= 64.5);
    roast_series_free(s);
}

int main(void)
{
    RUN(test_column_names);
    RUN(test_new_refuses_small_cap);
    RUN(test_append_read_back_exact);
    RUN(test_saturation_of_small_columns);
    RUN(test_nan_survives);
    RUN(test_change_points);
    RUN(test_decimation_keeps_extremes_and_mean);
    RUN(test_cap_never_exceeded);
    RUN(test_refusals_counted);
    RUN(test_late_workers);
    RUN(test_full_store_drops_and_counts);
    RUN(test_restore_round_trip);
    RUN(test_bytes_per_worker_sample);
    return CHECK_DONE();
}
