/* agg: the aggregator's tables. Everything the client can ask for lives here.
 *
 *   workers  address -> identity, lifetime and heartbeat-payload accounting
 *   tasks    (worker, span, prefix) -> task statistics from scheduler transitions
 *   digests  (worker, context, span, prefix, activity, unit) -> cumulative value
 *            of the worker's fine performance metrics (Worker.digests_total)
 *   spans    span id -> parent and name (tags), as the scheduler's spans know them
 *   records  bounded log of opaque records queued by worker instrumentation
 *   errors   name -> count of failures caught at the boundary
 *   series   per-worker time series (series.h)
 *
 * Activities, contexts and units are open-ended interned strings, never a
 * fixed list. Every table has a row cap; refused rows are counted. The
 * aggregator is not thread-safe: one owner at a time. */
#ifndef ROAST_AGG_H
#define ROAST_AGG_H

#include <stdbool.h>

#include "roast/common.h"
#include "roast/intern.h"
#include "roast/ring.h"
#include "roast/series.h"

/* The task prefix new prefixes fold into once the string table is three
 * quarters full (see roast_intern_set_fold): the task and digest tables keep
 * counting their work in one row instead of refusing it. */
#define ROAST_FOLDED_PREFIX "(other prefixes)"

typedef struct roast_agg_limits {
    uint32_t max_strings;     /* intern table bound; prefixes fold at 3/4 of it */
    uint32_t max_task_rows;   /* (worker, span, prefix) rows */
    uint32_t max_digest_rows; /* digest rows */
    uint32_t max_workers;     /* worker rows */
    uint32_t max_spans;       /* span rows */
    size_t series_cap_bytes;  /* see series.h */
    size_t record_cap_bytes;  /* bytes of record payloads kept */
} roast_agg_limits;

/* 1<<20 strings, 1<<20 task rows, 1<<22 digest rows, 1<<16 workers,
 * 1<<18 spans, 64 MiB of series, 64 MiB of records. */
void roast_agg_limits_default(roast_agg_limits *limits);

typedef struct roast_task_key {
    roast_id worker; /* ROAST_ID_EMPTY for transitions that name no worker */
    roast_id span;
    roast_id prefix;
} roast_task_key;

typedef struct roast_task_stats {
    uint64_t transitions;  /* every transition seen for these tasks */
    uint64_t tasks;        /* processing -> memory */
    uint64_t erred;        /* -> erred */
    double compute_seconds; /* sum of compute startstops of finished tasks */
    double transfer_seconds; /* sum of transfer startstops of finished tasks */
    uint64_t output_bytes; /* sum of nbytes of finished tasks */
    double first_start;    /* earliest compute start, 0 if none */
    double last_stop;      /* latest compute stop, 0 if none */
} roast_task_stats;

typedef struct roast_digest_key {
    roast_id worker; /* interned address */
    roast_id context;
    roast_id span;   /* ROAST_ID_EMPTY for contexts without span */
    roast_id prefix; /* ROAST_ID_EMPTY for contexts without prefix */
    roast_id activity;
    roast_id unit;
} roast_digest_key;

typedef struct roast_worker_info {
    roast_id address;
    roast_id name;        /* the worker's name (str of ws.name) */
    roast_id incarnation; /* server id of the process now at this address */
    uint32_t restarts;    /* incarnation changes seen at this address */
    double added;         /* scheduler clock at first sight */
    double removed;       /* scheduler clock at removal; 0 while live */
    uint64_t payloads;    /* heartbeat payloads applied */
    uint64_t payload_bytes;
    uint64_t last_seq;    /* last payload sequence number applied */
    uint64_t gaps;        /* payloads that showed missed changes (flush needed) */
    uint64_t flushes;     /* full payloads applied */
} roast_worker_info;

typedef struct roast_span_info {
    roast_id span;
    roast_id parent; /* ROAST_ID_EMPTY for a root span */
    roast_id name;   /* the span's tags joined by '\x1f' */
} roast_span_info;

typedef struct roast_record {
    roast_id worker;
    roast_id span;  /* the span of the task that made it; ROAST_ID_EMPTY: none known */
    uint64_t seq;   /* per-worker-incarnation sequence number */
    uint64_t number; /* arrival order in this store, from 1: what a collector's stream acknowledges */
    double time;    /* scheduler clock when received */
    roast_str data; /* owned by the aggregator */
    bool collected; /* a collector collects its span (else held apart, see below) */
} roast_record;

/* Monitoring self-report; every snapshot carries it. */
typedef struct roast_agg_counters {
    uint64_t events;           /* ring records applied */
    uint64_t dropped_events;   /* ring records refused (owner copies it in) */
    uint64_t hook_calls;       /* transition hook calls (owner copies it in) */
    uint64_t hook_errors;      /* transition hook failures (owner copies it in) */
    double hook_ns_per_call;   /* sampled mean cost of the hook, NaN if unmeasured */
    uint64_t payloads;         /* worker payloads applied */
    uint64_t payload_bytes;
    uint64_t payload_errors;   /* payloads refused as malformed */
    uint64_t records;          /* records kept, ever */
    uint64_t records_dropped;  /* records lost at the byte cap, the oldest first */
    uint64_t rows_refused;     /* task/digest/worker/span rows refused at their caps */
} roast_agg_counters;

typedef struct roast_agg roast_agg;

roast_agg *roast_agg_new(const roast_agg_limits *limits, double started);

/* An aggregator for the decoders of snapshots and state files: as
 * roast_agg_new, but its series store is not held to
 * limits->series_cap_bytes, which still reads back unchanged from
 * roast_agg_limits_get. Points restored in another order than their source
 * appended them can need more room than the source had, and folding them
 * would lose exactness; the decoder's input bounds them instead. */
roast_agg *roast_agg_new_restored(const roast_agg_limits *limits, double started);
void roast_agg_free(roast_agg *agg);

roast_intern *roast_agg_strings(roast_agg *agg);
const roast_intern *roast_agg_strings_const(const roast_agg *agg);
roast_series *roast_agg_series(roast_agg *agg);
const roast_series *roast_agg_series_const(const roast_agg *agg);
roast_agg_counters *roast_agg_counters_mut(roast_agg *agg);
const roast_agg_counters *roast_agg_counters_get(const roast_agg *agg);
const roast_agg_limits *roast_agg_limits_get(const roast_agg *agg);
double roast_agg_started(const roast_agg *agg);

/* Applies one transition record to the task table. */
roast_status roast_agg_apply(roast_agg *agg, const roast_event *event);

/* Worker lifetime. worker_seen creates the row if needed (added = now) and
 * updates name; a removed worker seen again is live again (removed = 0).
 * worker_removed stamps removed; ROAST_EINVAL for an address without row. */
roast_status roast_agg_worker_seen(roast_agg *agg, roast_id address, roast_id name, double now);
roast_status roast_agg_worker_removed(roast_agg *agg, roast_id address, double now);

/* Accounts a worker payload header. Sets *apply to false when the payload is
 * stale (seq <= last_seq of the same incarnation) and must be ignored, and
 * *needs_flush when changes were missed (since > last_seq and not full). A
 * new incarnation at an address counts a restart; the old incarnation's
 * digest values are kept (see set_digest). */
roast_status roast_agg_worker_beat(roast_agg *agg, roast_id address, roast_id incarnation,
                                   uint64_t seq, uint64_t since, bool full, size_t bytes,
                                   bool *apply, bool *needs_flush);

/* Sets the cumulative value of a digest reported by incarnation. Values of an
 * earlier incarnation at the same address are kept as a base, so the row's
 * value is the sum over the address's processes. */
roast_status roast_agg_set_digest(roast_agg *agg, const roast_digest_key *key,
                                  roast_id incarnation, double value);

/* Adds a task's value to a digest that no worker payload reports: the
 * phases a worker sends with the task's records, once, on its ordered event
 * stream. It survives the worker (no incarnation replaces it). */
roast_status roast_agg_add_digest(roast_agg *agg, const roast_digest_key *key, double delta);

roast_status roast_agg_set_span(roast_agg *agg, roast_id span, roast_id parent, roast_id name);

/* Keeps a copy of a record the worker sent once, on its ordered event stream
 * (never resent, so there is nothing to deduplicate; seq is 0), made by a
 * task of `span` (ROAST_ID_EMPTY when none), which a live collector collects;
 * the worker needs no row. Bound: each record counts len + sizeof(roast_record)
 * bytes against limits.record_cap_bytes. A new record that does not fit makes
 * room by dropping the oldest records no collector collects, then, only if
 * collected records alone fill the store, the oldest collected ones, down to
 * three quarters of the cap; each is counted in records_dropped, and a
 * collected one also for its span (roast_agg_records_dropped_in). A record
 * larger than the cap itself is refused (ROAST_EFULL, counted). */
roast_status roast_agg_add_sent_record(roast_agg *agg, roast_id worker, roast_id span,
                                       double time, const char *data, size_t len);

/* As roast_agg_add_sent_record, for a record of a span no live collector
 * collects (track_metrics outside a collector, a client that died): held in a
 * quarter of limits.record_cap_bytes of its own, the oldest dropped first
 * (down to three quarters of that quarter), so it never makes a collected
 * record go; roast_agg_expire_records releases it after a while. */
roast_status roast_agg_add_uncollected_record(roast_agg *agg, roast_id worker, roast_id span,
                                              double time, const char *data, size_t len);

/* Releases the uncollected records received before `before` (scheduler
 * clock); returns how many. Not counted as dropped: their time was up. */
size_t roast_agg_expire_records(roast_agg *agg, double before);

/* The collected records of the given spans dropped at the byte cap, until
 * roast_agg_release_records forgets them with the spans' records. */
uint64_t roast_agg_records_dropped_in(const roast_agg *agg, const roast_id *spans, size_t nspans);

/* Drops the records of the given spans (a collector took them) and their
 * drop counts; returns how many records. spans need not be sorted. */
size_t roast_agg_release_records(roast_agg *agg, const roast_id *spans, size_t nspans);

/* Drops the records of the given spans numbered up to `acked` (their
 * collector's stream received them during its run) and keeps the spans' drop
 * counts for the exit. A record leaves only once acknowledged, so a reply
 * lost on its way loses nothing: the next call sends it again. Returns how
 * many records. spans need not be sorted. */
size_t roast_agg_ack_records(roast_agg *agg, const roast_id *spans, size_t nspans, uint64_t acked);

/* Visits the records of the given spans in arrival order; a nonzero return
 * stops the walk and is returned (-1, visiting none, when out of memory). */
int roast_agg_each_record_of(const roast_agg *agg, const roast_id *spans, size_t nspans,
                             int (*visit)(void *ctx, const roast_record *record), void *ctx);

/* Drops every record (a measurement keeps them decoded elsewhere); returns how many. */
size_t roast_agg_clear_records(roast_agg *agg);

/* Counts a failure under a name (interned). The errors table has no row cap
 * of its own: names are bounded by the intern table (ROAST_EFULL). */
roast_status roast_agg_count_error(roast_agg *agg, const char *name, size_t len, uint64_t n);

/* Visitors: rows in insertion order; a nonzero return stops the walk and is
 * returned. */
typedef int (*roast_task_visitor)(void *ctx, const roast_task_key *key, const roast_task_stats *stats);
typedef int (*roast_digest_visitor)(void *ctx, const roast_digest_key *key, double value);
typedef int (*roast_worker_visitor)(void *ctx, const roast_worker_info *info);
typedef int (*roast_span_visitor)(void *ctx, const roast_span_info *info);
typedef int (*roast_record_visitor)(void *ctx, const roast_record *record);
typedef int (*roast_error_visitor)(void *ctx, roast_id name, uint64_t count);

int roast_agg_each_task(const roast_agg *agg, roast_task_visitor visit, void *ctx);
int roast_agg_each_digest(const roast_agg *agg, roast_digest_visitor visit, void *ctx);
int roast_agg_each_worker(const roast_agg *agg, roast_worker_visitor visit, void *ctx);
int roast_agg_each_span(const roast_agg *agg, roast_span_visitor visit, void *ctx);
int roast_agg_each_record(const roast_agg *agg, roast_record_visitor visit, void *ctx);
int roast_agg_each_error(const roast_agg *agg, roast_error_visitor visit, void *ctx);

/* Lookups (NULL / false when absent). */
const roast_task_stats *roast_agg_task(const roast_agg *agg, const roast_task_key *key);
bool roast_agg_digest(const roast_agg *agg, const roast_digest_key *key, double *value);
const roast_worker_info *roast_agg_worker(const roast_agg *agg, roast_id address);

/* Restoring a decoded snapshot or state file: rows are set exactly as given
 * (created or overwritten), counters are not touched; row caps still apply
 * (ROAST_EFULL, counted). A restored digest value acts as the base of a
 * later incarnation, like the value of an earlier process. Spans are
 * restored with roast_agg_set_span. */
roast_status roast_agg_restore_task(roast_agg *agg, const roast_task_key *key, const roast_task_stats *stats);
roast_status roast_agg_restore_digest(roast_agg *agg, const roast_digest_key *key, double value);
roast_status roast_agg_restore_worker(roast_agg *agg, const roast_worker_info *info);
/* Appends a record as is: no seq deduplication, but the byte cap applies. */
roast_status roast_agg_restore_record(roast_agg *agg, roast_id worker, roast_id span, uint64_t seq,
                                      double time, const char *data, size_t len);
roast_status roast_agg_restore_error(roast_agg *agg, roast_id name, uint64_t count);

/* The complete self-report: the counters plus the figures of the series
 * store and the intern table (the "counters" of the Python snapshot dict). */
typedef struct roast_agg_report {
    roast_agg_counters counters;
    uint64_t series_bytes;     /* roast_series_bytes */
    uint64_t series_cap_bytes; /* roast_series_cap_bytes */
    uint64_t series_samples;   /* roast_series_samples */
    uint64_t series_folds;     /* roast_series_folds */
    uint64_t strings;          /* roast_intern_count */
    uint64_t intern_overflows; /* roast_intern_overflows */
    uint64_t prefixes_folded;  /* roast_intern_folds */
} roast_agg_report;

/* A live aggregator reports its own figures. A restored one reports the
 * figures of the aggregator it was restored from (they describe the process
 * that measured, not this copy), as set by roast_agg_restore_report; its
 * counters then evolve as usual. */
void roast_agg_report_get(const roast_agg *agg, roast_agg_report *out);
void roast_agg_restore_report(roast_agg *agg, const roast_agg_report *report);

/* Bytes of records held, as counted against limits.record_cap_bytes. */
size_t roast_agg_record_bytes(const roast_agg *agg);

/* Sums task stats of rows matching a key; a field equal to
 * ROAST_AGG_ANY matches every value. */
#define ROAST_AGG_ANY ((roast_id)0xFFFFFFFFu)
void roast_agg_sum_tasks(const roast_agg *agg, const roast_task_key *match, roast_task_stats *out);

/* agg_groups.c: adds s into sum (counts and seconds add; the earliest start
 * and the latest stop are kept). */
void roast_task_stats_add(roast_task_stats *sum, const roast_task_stats *s);

/* The task rows summed by one field of their key, visited in order of first
 * appearance (a nonzero return stops the walk and is returned). *status is
 * ROAST_ENOMEM when the sums could not be built (nothing visited), else
 * ROAST_OK. */
typedef enum { ROAST_TASKS_BY_PREFIX, ROAST_TASKS_BY_WORKER, ROAST_TASKS_BY_SPAN } roast_task_field;
typedef int (*roast_task_group_visitor)(void *ctx, roast_id id, const roast_task_stats *sum);
int roast_agg_each_task_group(const roast_agg *agg, roast_task_field by,
                              roast_task_group_visitor visit, void *ctx, roast_status *status);

/* The digests of one context summed by worker, by prefix or by span (over
 * the other two fields), visited in order of first appearance (a nonzero
 * return stops the walk and is returned). *status as for
 * roast_agg_each_task_group. */
typedef enum {
    ROAST_DIGESTS_BY_PREFIX,
    ROAST_DIGESTS_BY_WORKER,
    ROAST_DIGESTS_BY_SPAN
} roast_digest_field;
typedef int (*roast_digest_group_visitor)(void *ctx, roast_id id, roast_id activity, roast_id unit,
                                          double sum);
int roast_agg_each_digest_group(const roast_agg *agg, roast_id context, roast_digest_field by,
                                roast_digest_group_visitor visit, void *ctx, roast_status *status);

/* agg_ingest.c: decodes and applies a payload from the worker at address:
 * header through roast_agg_worker_beat, digests through roast_agg_set_digest.
 * A malformed payload changes nothing and counts a payload error
 * (ROAST_EMALFORMED, message in err). The worker row is created
 * (roast_agg_worker_seen, empty name) if absent; when it or the incarnation
 * string cannot be stored, nothing is applied (ROAST_EFULL, the refusal
 * counted by the agg). Digests refused at a bound are counted and skipped;
 * the payload still returns ROAST_OK. err may be NULL. */
roast_status roast_agg_ingest_payload(roast_agg *agg, roast_id address, double now,
                                      const char *data, size_t len, bool *needs_flush, char *err,
                                      size_t errcap);

#endif
