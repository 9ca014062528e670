/* The aggregator's tables: uthash indexes keyed by id tuples, plus an
 * append-only record log.
 *
 * uthash keeps its items in insertion order (the application list behind
 * hh.next), and rows are never deleted, so the visitors walk that list.
 * Keys are plain structs of roast_id without padding; lookup keys are still
 * zeroed first so a future field cannot bring indeterminate bytes into the
 * hash. uthash runs in non-fatal OOM mode: an add that cannot allocate its
 * table leaves hh.tbl NULL and the row is freed with ROAST_ENOMEM. */
#include "roast/agg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HASH_NONFATAL_OOM 1
#include <uthash.h>

/* roast_series_new refuses caps below this (series.h); a restoring agg keeps
 * that refusal so a cap no live aggregator could have is still an error. */
#define SERIES_MIN_CAP ((size_t)64 << 10)

typedef struct task_row {
    roast_task_key key;
    roast_task_stats stats;
    UT_hash_handle hh;
} task_row;

/* The visible value is base + current once an earlier incarnation has
 * contributed (based), else current alone: adding a 0.0 base would turn
 * -0.0 into +0.0 and break exact round trips. */
typedef struct digest_row {
    roast_digest_key key;
    roast_id incarnation; /* the process whose cumulative value is current */
    bool based;
    double base;    /* sum of the final values of earlier incarnations */
    double current; /* cumulative value reported by incarnation */
    UT_hash_handle hh;
} digest_row;

typedef struct worker_row {
    roast_worker_info info; /* keyed by info.address */
    UT_hash_handle hh;
} worker_row;

typedef struct span_row {
    roast_span_info info; /* keyed by info.span */
    UT_hash_handle hh;
} span_row;

typedef struct error_row {
    roast_id name;
    uint64_t count;
    UT_hash_handle hh;
} error_row;

/* Collected records of one span dropped at the byte cap: the run's own loss. */
typedef struct span_drops_row {
    roast_id span;
    uint64_t count;
    UT_hash_handle hh;
} span_drops_row;

struct roast_agg {
    roast_agg_limits limits;
    double started;
    roast_intern *strings; /* owned */
    roast_series *series;  /* owned */
    task_row *tasks;
    task_row *last_task; /* the row roast_agg_apply used last; rows live until free */
    digest_row *digests;
    worker_row *workers;
    span_row *spans;
    error_row *errors;
    uint32_t ntasks, ndigests, nworkers, nspans, nerrors;
    roast_record *records; /* owned array; each data.ptr owned */
    size_t nrecords, records_alloc;
    size_t record_bytes;      /* counted against limits.record_cap_bytes */
    size_t uncollected_bytes; /* of them, records no collector collects */
    uint64_t last_record;     /* roast_record.number of the newest */
    span_drops_row *span_drops;
    roast_agg_counters counters;
    bool restored;           /* report figures come from source below */
    roast_agg_report source; /* the restored self-report (extras only used) */
};

void roast_agg_limits_default(roast_agg_limits *limits)
{
    limits->max_strings = 1u << 20;
    limits->max_task_rows = 1u << 20;
    limits->max_digest_rows = 1u << 22;
    limits->max_workers = 1u << 16;
    limits->max_spans = 1u << 18;
    limits->series_cap_bytes = (size_t)64 << 20;
    limits->record_cap_bytes = (size_t)64 << 20;
}

static roast_agg *agg_create(const roast_agg_limits *limits, double started, bool restoring)
{
    roast_agg *agg = calloc(1, sizeof *agg);
    if (!agg)
        return NULL;
    if (limits)
        agg->limits = *limits;
    else
        roast_agg_limits_default(&agg->limits);
    agg->started = started;
    agg->counters.hook_ns_per_call = NAN;
    agg->strings = roast_intern_new(agg->limits.max_strings);
    if (agg->strings) /* a quarter of the table stays for span ids, workers and labels */
        roast_intern_set_fold(agg->strings, agg->limits.max_strings - agg->limits.max_strings / 4,
                              ROAST_FOLDED_PREFIX);
    size_t series_cap = agg->limits.series_cap_bytes;
    if (restoring && series_cap >= SERIES_MIN_CAP)
        series_cap = SIZE_MAX;
    agg->series = roast_series_new(series_cap, started);
    if (!agg->strings || !agg->series) {
        roast_agg_free(agg);
        return NULL;
    }
    return agg;
}

roast_agg *roast_agg_new(const roast_agg_limits *limits, double started)
{
    return agg_create(limits, started, false);
}

roast_agg *roast_agg_new_restored(const roast_agg_limits *limits, double started)
{
    return agg_create(limits, started, true);
}

#define FREE_TABLE(head, type)                 \
    do {                                       \
        type *row_, *tmp_;                     \
        HASH_ITER(hh, (head), row_, tmp_) {    \
            HASH_DEL((head), row_);            \
            free(row_);                        \
        }                                      \
    } while (0)

void roast_agg_free(roast_agg *agg)
{
    if (!agg)
        return;
    FREE_TABLE(agg->tasks, task_row);
    FREE_TABLE(agg->digests, digest_row);
    FREE_TABLE(agg->workers, worker_row);
    FREE_TABLE(agg->spans, span_row);
    FREE_TABLE(agg->errors, error_row);
    FREE_TABLE(agg->span_drops, span_drops_row);
    for (size_t i = 0; i < agg->nrecords; i++)
        free((char *)agg->records[i].data.ptr);
    free(agg->records);
    roast_series_free(agg->series);
    roast_intern_free(agg->strings);
    free(agg);
}

roast_intern *roast_agg_strings(roast_agg *agg) { return agg->strings; }
const roast_intern *roast_agg_strings_const(const roast_agg *agg) { return agg->strings; }
roast_series *roast_agg_series(roast_agg *agg) { return agg->series; }
const roast_series *roast_agg_series_const(const roast_agg *agg) { return agg->series; }
roast_agg_counters *roast_agg_counters_mut(roast_agg *agg) { return &agg->counters; }
const roast_agg_counters *roast_agg_counters_get(const roast_agg *agg) { return &agg->counters; }
const roast_agg_limits *roast_agg_limits_get(const roast_agg *agg) { return &agg->limits; }
double roast_agg_started(const roast_agg *agg) { return agg->started; }
size_t roast_agg_record_bytes(const roast_agg *agg) { return agg->record_bytes; }

/* Row creation, shared by every table: refuse at the cap (counted), else
 * allocate a zeroed row. The caller fills the key and adds it. */
static void *row_alloc(roast_agg *agg, uint32_t *count, uint32_t cap, size_t size,
                       roast_status *status)
{
    if (*count >= cap) {
        agg->counters.rows_refused++;
        *status = ROAST_EFULL;
        return NULL;
    }
    void *row = calloc(1, size);
    *status = row ? ROAST_OK : ROAST_ENOMEM;
    return row;
}

/* Adds row to head; on uthash OOM the row is freed and ENOMEM returned. */
#define ROW_ADD(head, field, row, count, status)                     \
    do {                                                             \
        HASH_ADD(hh, (head), field, sizeof((row)->field), (row));    \
        if (!(row)->hh.tbl) {                                        \
            free(row);                                               \
            (row) = NULL;                                            \
            (status) = ROAST_ENOMEM;                                 \
        } else {                                                     \
            (count)++;                                               \
        }                                                            \
    } while (0)

/* Row keys are hashed and compared as bytes: they must have no padding. */
_Static_assert(sizeof(roast_task_key) == 3 * sizeof(roast_id), "task keys have padding");
_Static_assert(sizeof(roast_digest_key) == 6 * sizeof(roast_id), "digest keys have padding");

static task_row *task_find(const roast_agg *agg, const roast_task_key *key)
{
    task_row *row = NULL;
    HASH_FIND(hh, agg->tasks, key, sizeof *key, row);
    return row;
}

static roast_status task_get(roast_agg *agg, const roast_task_key *key, task_row **out)
{
    roast_status status = ROAST_OK;
    task_row *row = task_find(agg, key);
    if (!row) {
        row = row_alloc(agg, &agg->ntasks, agg->limits.max_task_rows, sizeof *row, &status);
        if (row) {
            row->key = *key;
            ROW_ADD(agg->tasks, key, row, agg->ntasks, status);
        }
    }
    *out = row;
    return status;
}

static digest_row *digest_find(const roast_agg *agg, const roast_digest_key *key)
{
    digest_row *row = NULL;
    HASH_FIND(hh, agg->digests, key, sizeof *key, row);
    return row;
}

static roast_status digest_get(roast_agg *agg, const roast_digest_key *key, digest_row **out)
{
    roast_status status = ROAST_OK;
    digest_row *row = digest_find(agg, key);
    if (!row) {
        row = row_alloc(agg, &agg->ndigests, agg->limits.max_digest_rows, sizeof *row, &status);
        if (row) {
            row->key = *key;
            ROW_ADD(agg->digests, key, row, agg->ndigests, status);
        }
    }
    *out = row;
    return status;
}

static worker_row *worker_find(const roast_agg *agg, roast_id address)
{
    worker_row *row = NULL;
    HASH_FIND(hh, agg->workers, &address, sizeof address, row);
    return row;
}

static roast_status worker_get(roast_agg *agg, roast_id address, worker_row **out)
{
    roast_status status = ROAST_OK;
    worker_row *row = worker_find(agg, address);
    if (!row) {
        row = row_alloc(agg, &agg->nworkers, agg->limits.max_workers, sizeof *row, &status);
        if (row) {
            row->info.address = address;
            ROW_ADD(agg->workers, info.address, row, agg->nworkers, status);
        }
    }
    *out = row;
    return status;
}

static span_row *span_find(const roast_agg *agg, roast_id span)
{
    span_row *row = NULL;
    HASH_FIND(hh, agg->spans, &span, sizeof span, row);
    return row;
}

static error_row *error_find(const roast_agg *agg, roast_id name)
{
    error_row *row = NULL;
    HASH_FIND(hh, agg->errors, &name, sizeof name, row);
    return row;
}

/* ---- tasks ---------------------------------------------------------- */

/* A finished task adds to its row as a row of one task would. */
static void task_done(roast_task_stats *s, const roast_event *ev)
{
    roast_task_stats one = {.tasks = 1,
                            .compute_seconds = ev->compute_seconds,
                            .transfer_seconds = ev->transfer_seconds,
                            .output_bytes = ev->nbytes,
                            .first_start = ev->start,
                            .last_stop = ev->stop};
    roast_task_stats_add(s, &one);
}

static bool same_task_key(const roast_task_key *a, const roast_task_key *b)
{
    return a->worker == b->worker && a->span == b->span && a->prefix == b->prefix;
}

/* The tasks of a collection move through each state in runs, so consecutive
 * records mostly share a row: the last one is tried before the table. */
roast_status roast_agg_apply(roast_agg *agg, const roast_event *event)
{
    agg->counters.events++;
    roast_task_key key = {event->worker, event->span, event->prefix};
    task_row *row = agg->last_task;
    if (!row || !same_task_key(&row->key, &key)) {
        roast_status status = task_get(agg, &key, &row);
        if (!row)
            return status;
        agg->last_task = row;
    }
    row->stats.transitions++;
    if (event->to == ROAST_STATE_MEMORY && event->from == ROAST_STATE_PROCESSING)
        task_done(&row->stats, event);
    else if (event->to == ROAST_STATE_ERRED)
        row->stats.erred++;
    return ROAST_OK;
}

const roast_task_stats *roast_agg_task(const roast_agg *agg, const roast_task_key *key)
{
    const task_row *row = task_find(agg, key);
    return row ? &row->stats : NULL;
}

roast_status roast_agg_restore_task(roast_agg *agg, const roast_task_key *key,
                                    const roast_task_stats *stats)
{
    task_row *row;
    roast_status status = task_get(agg, key, &row);
    if (row)
        row->stats = *stats;
    return status;
}

static bool key_matches(roast_id want, roast_id have)
{
    return want == ROAST_AGG_ANY || want == have;
}

void roast_agg_sum_tasks(const roast_agg *agg, const roast_task_key *match, roast_task_stats *out)
{
    memset(out, 0, sizeof *out);
    for (const task_row *row = agg->tasks; row; row = row->hh.next) {
        if (!key_matches(match->worker, row->key.worker) ||
            !key_matches(match->span, row->key.span) ||
            !key_matches(match->prefix, row->key.prefix))
            continue;
        roast_task_stats_add(out, &row->stats);
    }
}

/* ---- workers -------------------------------------------------------- */

roast_status roast_agg_worker_seen(roast_agg *agg, roast_id address, roast_id name, double now)
{
    worker_row *row = worker_find(agg, address);
    if (!row) {
        roast_status status = worker_get(agg, address, &row);
        if (!row)
            return status;
        row->info.added = now;
    }
    row->info.name = name;
    row->info.removed = 0;
    return ROAST_OK;
}

roast_status roast_agg_worker_removed(roast_agg *agg, roast_id address, double now)
{
    worker_row *row = worker_find(agg, address);
    if (!row)
        return ROAST_EINVAL;
    row->info.removed = now;
    return ROAST_OK;
}

const roast_worker_info *roast_agg_worker(const roast_agg *agg, roast_id address)
{
    const worker_row *row = worker_find(agg, address);
    return row ? &row->info : NULL;
}

roast_status roast_agg_restore_worker(roast_agg *agg, const roast_worker_info *info)
{
    worker_row *row;
    roast_status status = worker_get(agg, info->address, &row);
    if (row)
        row->info = *info;
    return status;
}

roast_status roast_agg_worker_beat(roast_agg *agg, roast_id address, roast_id incarnation,
                                   uint64_t seq, uint64_t since, bool full, size_t bytes,
                                   bool *apply, bool *needs_flush)
{
    *apply = false;
    *needs_flush = false;
    worker_row *row = worker_find(agg, address);
    if (!row)
        return ROAST_EINVAL;
    roast_worker_info *w = &row->info;
    if (w->incarnation != incarnation) {
        /* A new process at this address: its payloads number from 1 again.
         * The first incarnation ever seen is not a restart. */
        if (w->incarnation != ROAST_ID_EMPTY)
            w->restarts++;
        w->incarnation = incarnation;
        w->last_seq = 0;
    } else if (seq <= w->last_seq) {
        return ROAST_OK; /* stale: an older beat read again */
    }
    *apply = true;
    *needs_flush = !full && since > w->last_seq;
    w->last_seq = seq;
    w->payloads++;
    w->payload_bytes += bytes;
    if (*needs_flush)
        w->gaps++;
    if (full)
        w->flushes++;
    agg->counters.payloads++;
    agg->counters.payload_bytes += bytes;
    return ROAST_OK;
}

/* ---- digests -------------------------------------------------------- */

static double digest_value(const digest_row *row)
{
    return row->based ? row->base + row->current : row->current;
}

roast_status roast_agg_set_digest(roast_agg *agg, const roast_digest_key *key,
                                  roast_id incarnation, double value)
{
    digest_row *row = digest_find(agg, key);
    if (!row) {
        roast_status status = digest_get(agg, key, &row);
        if (!row)
            return status;
        row->incarnation = incarnation;
    } else if (row->incarnation != incarnation) {
        /* The earlier process's final value stays in the sum. */
        row->base = digest_value(row);
        row->based = true;
        row->incarnation = incarnation;
    }
    row->current = value;
    return ROAST_OK;
}

roast_status roast_agg_add_digest(roast_agg *agg, const roast_digest_key *key, double delta)
{
    digest_row *row = digest_find(agg, key);
    if (!row) {
        roast_status status = digest_get(agg, key, &row);
        if (!row)
            return status;
    }
    row->base += delta;
    row->based = true;
    return ROAST_OK;
}

bool roast_agg_digest(const roast_agg *agg, const roast_digest_key *key, double *value)
{
    const digest_row *row = digest_find(agg, key);
    if (!row)
        return false;
    *value = digest_value(row);
    return true;
}

roast_status roast_agg_restore_digest(roast_agg *agg, const roast_digest_key *key, double value)
{
    digest_row *row;
    roast_status status = digest_get(agg, key, &row);
    if (row) {
        /* No incarnation owns it: any later report adds to it. */
        row->incarnation = ROAST_ID_EMPTY;
        row->based = false;
        row->base = 0;
        row->current = value;
    }
    return status;
}

/* ---- spans ---------------------------------------------------------- */

roast_status roast_agg_set_span(roast_agg *agg, roast_id span, roast_id parent, roast_id name)
{
    roast_status status = ROAST_OK;
    span_row *row = span_find(agg, span);
    if (!row) {
        row = row_alloc(agg, &agg->nspans, agg->limits.max_spans, sizeof *row, &status);
        if (!row)
            return status;
        row->info.span = span;
        ROW_ADD(agg->spans, info.span, row, agg->nspans, status);
        if (!row)
            return status;
    }
    row->info.parent = parent;
    row->info.name = name;
    return ROAST_OK;
}

/* ---- records -------------------------------------------------------- */

static size_t record_cost(const roast_record *r) { return r->data.len + sizeof *r; }

/* Takes a record out of the byte counts and frees its data; the caller
 * compacts the array. */
static void record_free(roast_agg *agg, roast_record *r)
{
    agg->record_bytes -= record_cost(r);
    if (!r->collected)
        agg->uncollected_bytes -= record_cost(r);
    free((char *)r->data.ptr);
}

/* Counts a dropped record: for the cluster, and for its run when it was collected. */
static void record_dropped(roast_agg *agg, const roast_record *r)
{
    agg->counters.records_dropped++;
    if (!r->collected)
        return;
    span_drops_row *row;
    HASH_FIND(hh, agg->span_drops, &r->span, sizeof r->span, row);
    if (!row) {
        row = calloc(1, sizeof *row);
        if (!row)
            return; /* the cluster's count still has it */
        row->span = r->span;
        HASH_ADD(hh, agg->span_drops, span, sizeof row->span, row);
    }
    row->count++;
}

/* Drops the oldest records, those of no collector only if `uncollected_only`,
 * while `*held` + room exceeds target; `*held` is record_bytes or
 * uncollected_bytes. */
static void records_drop_oldest(roast_agg *agg, const size_t *held, size_t room, size_t target,
                                bool uncollected_only)
{
    size_t kept = 0;
    for (size_t i = 0; i < agg->nrecords; i++) {
        roast_record *r = &agg->records[i];
        if (*held + room > target && !(uncollected_only && r->collected)) {
            record_dropped(agg, r);
            record_free(agg, r);
        } else {
            agg->records[kept++] = *r;
        }
    }
    agg->nrecords = kept;
}

/* Makes room for a record of `cost` bytes, down to three quarters of a cap so
 * that a full store makes room once per quarter of it rather than at every
 * record. Records no collector collects have a quarter of the cap of their own
 * and go first; a collected record goes only when collected ones alone fill
 * the store. */
static void records_make_room(roast_agg *agg, size_t cost, bool collected)
{
    size_t cap = agg->limits.record_cap_bytes, own_cap = cap / 4;
    if (!collected && agg->uncollected_bytes + cost > own_cap)
        records_drop_oldest(agg, &agg->uncollected_bytes, cost, own_cap / 4 * 3, true);
    if (agg->record_bytes + cost > cap)
        records_drop_oldest(agg, &agg->record_bytes, cost, cap / 4 * 3, true);
    if (agg->record_bytes + cost > cap) /* collected records alone fill the store */
        records_drop_oldest(agg, &agg->record_bytes, cost, cap / 4 * 3, false);
}

static roast_status record_append(roast_agg *agg, roast_id worker, roast_id span, uint64_t seq,
                                  double time, const char *data, size_t len, bool collected)
{
    size_t cost = len + sizeof(roast_record);
    size_t cap = collected ? agg->limits.record_cap_bytes : agg->limits.record_cap_bytes / 4;
    if (cost > cap) {
        agg->counters.records_dropped++;
        return ROAST_EFULL;
    }
    records_make_room(agg, cost, collected);
    if (agg->nrecords == agg->records_alloc) {
        size_t alloc = agg->records_alloc ? agg->records_alloc * 2 : 64;
        roast_record *grown = realloc(agg->records, alloc * sizeof *grown);
        if (!grown)
            return ROAST_ENOMEM;
        agg->records = grown;
        agg->records_alloc = alloc;
    }
    char *copy = malloc(len ? len : 1);
    if (!copy)
        return ROAST_ENOMEM;
    if (len)
        memcpy(copy, data, len);
    roast_record *r = &agg->records[agg->nrecords++];
    r->worker = worker;
    r->span = span;
    r->seq = seq;
    r->number = ++agg->last_record;
    r->time = time;
    r->data.ptr = copy;
    r->data.len = len;
    r->collected = collected;
    agg->record_bytes += cost;
    if (!collected)
        agg->uncollected_bytes += cost;
    return ROAST_OK;
}

static roast_status add_sent(roast_agg *agg, roast_id worker, roast_id span, double time,
                             const char *data, size_t len, bool collected)
{
    if (len && !data)
        return ROAST_EINVAL;
    roast_status status = record_append(agg, worker, span, 0, time, data, len, collected);
    if (status == ROAST_OK)
        agg->counters.records++;
    return status;
}

roast_status roast_agg_add_sent_record(roast_agg *agg, roast_id worker, roast_id span,
                                       double time, const char *data, size_t len)
{
    return add_sent(agg, worker, span, time, data, len, true);
}

roast_status roast_agg_add_uncollected_record(roast_agg *agg, roast_id worker, roast_id span,
                                              double time, const char *data, size_t len)
{
    return add_sent(agg, worker, span, time, data, len, false);
}

roast_status roast_agg_restore_record(roast_agg *agg, roast_id worker, roast_id span, uint64_t seq,
                                      double time, const char *data, size_t len)
{
    if (len && !data)
        return ROAST_EINVAL;
    return record_append(agg, worker, span, seq, time, data, len, true);
}

size_t roast_agg_expire_records(roast_agg *agg, double before)
{
    if (!agg)
        return 0;
    size_t kept = 0;
    for (size_t i = 0; i < agg->nrecords; i++) {
        roast_record *r = &agg->records[i];
        if (!r->collected && r->time < before)
            record_free(agg, r);
        else
            agg->records[kept++] = *r;
    }
    size_t expired = agg->nrecords - kept;
    agg->nrecords = kept;
    return expired;
}

uint64_t roast_agg_records_dropped_in(const roast_agg *agg, const roast_id *spans, size_t nspans)
{
    uint64_t total = 0;
    for (size_t i = 0; agg && spans && i < nspans; i++) {
        span_drops_row *row;
        HASH_FIND(hh, agg->span_drops, &spans[i], sizeof spans[i], row);
        if (row)
            total += row->count;
    }
    return total;
}

static int cmp_span(const void *a, const void *b)
{
    roast_id x = *(const roast_id *)a, y = *(const roast_id *)b;
    return x < y ? -1 : x > y;
}

/* A sorted copy of spans for bsearch; NULL when there are none or no memory. */
static roast_id *spans_sorted(const roast_id *spans, size_t nspans)
{
    roast_id *sorted = nspans && spans ? malloc(nspans * sizeof *sorted) : NULL;
    if (!sorted)
        return NULL;
    memcpy(sorted, spans, nspans * sizeof *sorted);
    qsort(sorted, nspans, sizeof *sorted, cmp_span);
    return sorted;
}

static bool span_in(const roast_id *sorted, size_t nspans, roast_id span)
{
    return bsearch(&span, sorted, nspans, sizeof *sorted, cmp_span) != NULL;
}

/* Frees the records of the sorted spans numbered up to `upto`; returns how many. */
static size_t records_free_of(roast_agg *agg, const roast_id *sorted, size_t nspans, uint64_t upto)
{
    size_t kept = 0;
    for (size_t i = 0; i < agg->nrecords; i++) {
        roast_record *r = &agg->records[i];
        if (r->number <= upto && span_in(sorted, nspans, r->span))
            record_free(agg, r);
        else
            agg->records[kept++] = *r;
    }
    size_t freed = agg->nrecords - kept;
    agg->nrecords = kept;
    return freed;
}

size_t roast_agg_release_records(roast_agg *agg, const roast_id *spans, size_t nspans)
{
    roast_id *sorted = agg ? spans_sorted(spans, nspans) : NULL;
    if (!sorted)
        return 0; /* nothing released: the records stay until they age out */
    size_t released = records_free_of(agg, sorted, nspans, UINT64_MAX);
    for (size_t i = 0; i < nspans; i++) {
        span_drops_row *row;
        HASH_FIND(hh, agg->span_drops, &sorted[i], sizeof sorted[i], row);
        if (row) {
            HASH_DEL(agg->span_drops, row);
            free(row);
        }
    }
    free(sorted);
    return released;
}

size_t roast_agg_ack_records(roast_agg *agg, const roast_id *spans, size_t nspans, uint64_t acked)
{
    roast_id *sorted = agg && acked ? spans_sorted(spans, nspans) : NULL;
    if (!sorted)
        return 0; /* nothing acknowledged: the stream sends them again */
    size_t freed = records_free_of(agg, sorted, nspans, acked);
    free(sorted);
    return freed;
}

int roast_agg_each_record_of(const roast_agg *agg, const roast_id *spans, size_t nspans,
                             int (*visit)(void *ctx, const roast_record *record), void *ctx)
{
    if (!agg || !nspans)
        return 0;
    roast_id *sorted = spans_sorted(spans, nspans);
    if (!sorted)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < agg->nrecords && rc == 0; i++)
        if (span_in(sorted, nspans, agg->records[i].span))
            rc = visit(ctx, &agg->records[i]);
    free(sorted);
    return rc;
}

size_t roast_agg_clear_records(roast_agg *agg)
{
    if (!agg)
        return 0;
    size_t cleared = agg->nrecords;
    for (size_t i = 0; i < cleared; i++)
        free((char *)agg->records[i].data.ptr);
    agg->nrecords = 0;
    agg->record_bytes = 0;
    agg->uncollected_bytes = 0;
    return cleared;
}

/* ---- errors --------------------------------------------------------- */

static roast_status error_get(roast_agg *agg, roast_id name, error_row **out)
{
    error_row *row = error_find(agg, name);
    roast_status status = ROAST_OK;
    if (!row) {
        row = calloc(1, sizeof *row);
        if (!row) {
            *out = NULL;
            return ROAST_ENOMEM;
        }
        row->name = name; /* no cap: names are bounded by the intern table */
        ROW_ADD(agg->errors, name, row, agg->nerrors, status);
    }
    *out = row;
    return status;
}

roast_status roast_agg_count_error(roast_agg *agg, const char *name, size_t len, uint64_t n)
{
    roast_id id;
    roast_status status = roast_intern_put(agg->strings, name, len, &id);
    if (status != ROAST_OK)
        return status;
    error_row *row;
    status = error_get(agg, id, &row);
    if (row)
        row->count += n;
    return status;
}

roast_status roast_agg_restore_error(roast_agg *agg, roast_id name, uint64_t count)
{
    error_row *row;
    roast_status status = error_get(agg, name, &row);
    if (row)
        row->count = count;
    return status;
}

/* ---- self-report ---------------------------------------------------- */

void roast_agg_report_get(const roast_agg *agg, roast_agg_report *out)
{
    if (agg->restored) {
        *out = agg->source;
    } else {
        out->series_bytes = roast_series_bytes(agg->series);
        out->series_cap_bytes = roast_series_cap_bytes(agg->series);
        out->series_samples = roast_series_samples(agg->series);
        out->series_folds = roast_series_folds(agg->series);
        out->strings = roast_intern_count(agg->strings);
        out->intern_overflows = roast_intern_overflows(agg->strings);
        out->prefixes_folded = roast_intern_folds(agg->strings);
    }
    out->counters = agg->counters;
}

void roast_agg_restore_report(roast_agg *agg, const roast_agg_report *report)
{
    agg->restored = true;
    agg->source = *report;
    agg->counters = report->counters;
}

/* ---- visitors ------------------------------------------------------- */

int roast_agg_each_task(const roast_agg *agg, roast_task_visitor visit, void *ctx)
{
    for (const task_row *row = agg->tasks; row; row = row->hh.next) {
        int rc = visit(ctx, &row->key, &row->stats);
        if (rc)
            return rc;
    }
    return 0;
}

int roast_agg_each_digest(const roast_agg *agg, roast_digest_visitor visit, void *ctx)
{
    for (const digest_row *row = agg->digests; row; row = row->hh.next) {
        int rc = visit(ctx, &row->key, digest_value(row));
        if (rc)
            return rc;
    }
    return 0;
}

int roast_agg_each_worker(const roast_agg *agg, roast_worker_visitor visit, void *ctx)
{
    for (const worker_row *row = agg->workers; row; row = row->hh.next) {
        int rc = visit(ctx, &row->info);
        if (rc)
            return rc;
    }
    return 0;
}

int roast_agg_each_span(const roast_agg *agg, roast_span_visitor visit, void *ctx)
{
    for (const span_row *row = agg->spans; row; row = row->hh.next) {
        int rc = visit(ctx, &row->info);
        if (rc)
            return rc;
    }
    return 0;
}

int roast_agg_each_record(const roast_agg *agg, roast_record_visitor visit, void *ctx)
{
    for (size_t i = 0; i < agg->nrecords; i++) {
        int rc = visit(ctx, &agg->records[i]);
        if (rc)
            return rc;
    }
    return 0;
}

int roast_agg_each_error(const roast_agg *agg, roast_error_visitor visit, void *ctx)
{
    for (const error_row *row = agg->errors; row; row = row->hh.next) {
        int rc = visit(ctx, row->name, row->count);
        if (rc)
            return rc;
    }
    return 0;
}
