/* rows: the table, limit and counter layout shared by wire.c and store.c
 * (see rows.h). The cells of a row are listed here twice, once to read a row
 * out of the aggregator and once to restore it; both lists follow the
 * column kinds of roast_tables. */
#include "rows.h"

#include <string.h>

/* ---- rows -> aggregator -------------------------------------------------- */

static roast_status restore_worker(roast_agg *agg, const roast_cell *c)
{
    roast_worker_info w = {c[0].id, c[1].id, c[2].id, (uint32_t)c[3].u, c[4].d, c[5].d,
                           c[6].u, c[7].u, c[8].u, c[9].u, c[10].u};
    return roast_agg_restore_worker(agg, &w);
}

static roast_status restore_task(roast_agg *agg, const roast_cell *c)
{
    roast_task_key k = {c[0].id, c[1].id, c[2].id};
    roast_task_stats s = {c[3].u, c[4].u, c[5].u, c[6].d, c[7].d, c[8].u, c[9].d, c[10].d};
    return roast_agg_restore_task(agg, &k, &s);
}

static roast_status restore_digest(roast_agg *agg, const roast_cell *c)
{
    roast_digest_key k = {c[0].id, c[1].id, c[2].id, c[3].id, c[4].id, c[5].id};
    return roast_agg_restore_digest(agg, &k, c[6].d);
}

static roast_status restore_span(roast_agg *agg, const roast_cell *c)
{
    return roast_agg_set_span(agg, c[0].id, c[1].id, c[2].id);
}

static roast_status restore_record(roast_agg *agg, const roast_cell *c)
{
    return roast_agg_restore_record(agg, c[0].id, c[1].id, c[2].u, c[3].d, c[4].bytes.ptr,
                                    c[4].bytes.len);
}

static roast_status restore_error(roast_agg *agg, const roast_cell *c)
{
    return roast_agg_restore_error(agg, c[0].id, c[1].u);
}

const roast_table roast_tables[ROAST_NTABLES] = {
    [ROAST_TABLE_WORKERS] = {"workers", "sssw" "dd" "uuuuu", -1, restore_worker},
    [ROAST_TABLE_TASKS] = {"tasks", "sss" "uuu" "dd" "u" "dd", 1, restore_task},
    [ROAST_TABLE_DIGESTS] = {"digests", "ssssss" "d", 2, restore_digest},
    [ROAST_TABLE_SPANS] = {"spans", "sss", 0, restore_span},
    [ROAST_TABLE_RECORDS] = {"records", "ssudb", 1, restore_record},
    [ROAST_TABLE_ERRORS] = {"errors", "su", -1, restore_error},
};

/* ---- aggregator -> rows -------------------------------------------------- */

/* What roast_rows_each passes through the aggregator's typed visitors. */
typedef struct row_walk {
    const roast_table *table;
    roast_row_visitor visit;
    void *ctx;
} row_walk;

static int walk_worker(void *ctx, const roast_worker_info *w)
{
    row_walk *walk = ctx;
    roast_cell c[] = {{.id = w->address}, {.id = w->name}, {.id = w->incarnation},
                      {.u = w->restarts}, {.d = w->added}, {.d = w->removed},
                      {.u = w->payloads}, {.u = w->payload_bytes}, {.u = w->last_seq},
                      {.u = w->gaps}, {.u = w->flushes}};
    return walk->visit(walk->ctx, walk->table, c);
}

static int walk_task(void *ctx, const roast_task_key *k, const roast_task_stats *s)
{
    row_walk *walk = ctx;
    roast_cell c[] = {{.id = k->worker}, {.id = k->span}, {.id = k->prefix},
                      {.u = s->transitions}, {.u = s->tasks}, {.u = s->erred},
                      {.d = s->compute_seconds}, {.d = s->transfer_seconds},
                      {.u = s->output_bytes}, {.d = s->first_start}, {.d = s->last_stop}};
    return walk->visit(walk->ctx, walk->table, c);
}

static int walk_digest(void *ctx, const roast_digest_key *k, double value)
{
    row_walk *walk = ctx;
    roast_cell c[] = {{.id = k->worker}, {.id = k->context}, {.id = k->span},
                      {.id = k->prefix}, {.id = k->activity}, {.id = k->unit}, {.d = value}};
    return walk->visit(walk->ctx, walk->table, c);
}

static int walk_span(void *ctx, const roast_span_info *s)
{
    row_walk *walk = ctx;
    roast_cell c[] = {{.id = s->span}, {.id = s->parent}, {.id = s->name}};
    return walk->visit(walk->ctx, walk->table, c);
}

static int walk_record(void *ctx, const roast_record *r)
{
    row_walk *walk = ctx;
    roast_cell c[] = {{.id = r->worker}, {.id = r->span}, {.u = r->seq}, {.d = r->time},
                      {.bytes = r->data}};
    return walk->visit(walk->ctx, walk->table, c);
}

static int walk_error(void *ctx, roast_id name, uint64_t count)
{
    row_walk *walk = ctx;
    roast_cell c[] = {{.id = name}, {.u = count}};
    return walk->visit(walk->ctx, walk->table, c);
}

int roast_rows_each(const roast_agg *agg, roast_table_id table, roast_row_visitor visit, void *ctx)
{
    row_walk walk = {&roast_tables[table], visit, ctx};
    switch (table) {
    case ROAST_TABLE_WORKERS: return roast_agg_each_worker(agg, walk_worker, &walk);
    case ROAST_TABLE_TASKS: return roast_agg_each_task(agg, walk_task, &walk);
    case ROAST_TABLE_DIGESTS: return roast_agg_each_digest(agg, walk_digest, &walk);
    case ROAST_TABLE_SPANS: return roast_agg_each_span(agg, walk_span, &walk);
    case ROAST_TABLE_RECORDS: return roast_agg_each_record(agg, walk_record, &walk);
    case ROAST_TABLE_ERRORS: return roast_agg_each_error(agg, walk_error, &walk);
    default: return 0; /* not a table */
    }
}

/* ---- limits and counters ------------------------------------------------- */

enum { L_STRINGS, L_TASKS, L_DIGESTS, L_WORKERS, L_SPANS, L_SERIES, L_RECORDS, L_NKEYS };
_Static_assert(L_NKEYS == ROAST_NLIMITS, "one limit key per field");

const char *const roast_limit_keys[ROAST_NLIMITS] = {
    "max_strings", "max_task_rows", "max_digest_rows", "max_workers", "max_spans",
    "series_cap_bytes", "record_cap_bytes"};

/* The largest value a limit's field holds. */
static uint64_t limit_max(int i)
{
    return i < L_SERIES ? UINT32_MAX : SIZE_MAX;
}

void roast_limits_to_values(const roast_agg_limits *l, uint64_t v[ROAST_NLIMITS])
{
    v[L_STRINGS] = l->max_strings;
    v[L_TASKS] = l->max_task_rows;
    v[L_DIGESTS] = l->max_digest_rows;
    v[L_WORKERS] = l->max_workers;
    v[L_SPANS] = l->max_spans;
    v[L_SERIES] = l->series_cap_bytes;
    v[L_RECORDS] = l->record_cap_bytes;
}

roast_status roast_limits_read(roast_agg_limits *l, roast_uint_reader get,
                               const void *fields, const char *where,
                               char *err, size_t errcap)
{
    uint64_t v[ROAST_NLIMITS];
    for (int i = 0; i < ROAST_NLIMITS; i++) {
        if (!get(fields, i, &v[i]) || v[i] > limit_max(i))
            return roast_fail(ROAST_EMALFORMED, err, errcap,
                              "%s.%s: expected an unsigned integer up to %llu", where,
                              roast_limit_keys[i], (unsigned long long)limit_max(i));
    }
    l->max_strings = (uint32_t)v[L_STRINGS];
    l->max_task_rows = (uint32_t)v[L_TASKS];
    l->max_digest_rows = (uint32_t)v[L_DIGESTS];
    l->max_workers = (uint32_t)v[L_WORKERS];
    l->max_spans = (uint32_t)v[L_SPANS];
    l->series_cap_bytes = (size_t)v[L_SERIES];
    l->record_cap_bytes = (size_t)v[L_RECORDS];
    if (l->max_strings < 1)
        return roast_fail(ROAST_EMALFORMED, err, errcap, "%s.max_strings: must be at least 1",
                          where);
    if (l->series_cap_bytes < ROAST_SERIES_MIN_CAP)
        return roast_fail(ROAST_EMALFORMED, err, errcap,
                          "%s.series_cap_bytes: below the minimum of %d", where,
                          ROAST_SERIES_MIN_CAP);
    return ROAST_OK;
}

enum {
    C_EVENTS, C_DROPPED, C_HOOK_CALLS, C_HOOK_ERRORS, C_HOOK_NS, C_PAYLOADS, C_PAYLOAD_BYTES,
    C_PAYLOAD_ERRORS, C_RECORDS, C_RECORDS_DROPPED, C_ROWS_REFUSED, C_SERIES_BYTES,
    C_SERIES_CAP, C_SERIES_SAMPLES, C_SERIES_FOLDS, C_STRINGS, C_INTERN_OVERFLOWS,
    C_PREFIXES_FOLDED, C_NKEYS
};
_Static_assert(C_NKEYS == ROAST_NCOUNTERS && C_HOOK_NS == ROAST_COUNTER_HOOK_NS,
               "one counter key per field");

const char *const roast_counter_keys[ROAST_NCOUNTERS] = {
    "events", "dropped_events", "hook_calls", "hook_errors", "hook_ns_per_call", "payloads",
    "payload_bytes", "payload_errors", "records", "records_dropped", "rows_refused",
    "series_bytes", "series_cap_bytes", "series_samples", "series_folds", "strings",
    "intern_overflows", "prefixes_folded"};

void roast_report_to_cells(const roast_agg_report *r, roast_cell v[ROAST_NCOUNTERS])
{
    const roast_agg_counters *c = &r->counters;
    v[C_EVENTS].u = c->events;
    v[C_DROPPED].u = c->dropped_events;
    v[C_HOOK_CALLS].u = c->hook_calls;
    v[C_HOOK_ERRORS].u = c->hook_errors;
    v[C_HOOK_NS].d = c->hook_ns_per_call;
    v[C_PAYLOADS].u = c->payloads;
    v[C_PAYLOAD_BYTES].u = c->payload_bytes;
    v[C_PAYLOAD_ERRORS].u = c->payload_errors;
    v[C_RECORDS].u = c->records;
    v[C_RECORDS_DROPPED].u = c->records_dropped;
    v[C_ROWS_REFUSED].u = c->rows_refused;
    v[C_SERIES_BYTES].u = r->series_bytes;
    v[C_SERIES_CAP].u = r->series_cap_bytes;
    v[C_SERIES_SAMPLES].u = r->series_samples;
    v[C_SERIES_FOLDS].u = r->series_folds;
    v[C_STRINGS].u = r->strings;
    v[C_INTERN_OVERFLOWS].u = r->intern_overflows;
    v[C_PREFIXES_FOLDED].u = r->prefixes_folded;
}

void roast_report_from_cells(roast_agg_report *r, const roast_cell v[ROAST_NCOUNTERS])
{
    roast_agg_counters *c = &r->counters;
    c->events = v[C_EVENTS].u;
    c->dropped_events = v[C_DROPPED].u;
    c->hook_calls = v[C_HOOK_CALLS].u;
    c->hook_errors = v[C_HOOK_ERRORS].u;
    c->hook_ns_per_call = v[C_HOOK_NS].d;
    c->payloads = v[C_PAYLOADS].u;
    c->payload_bytes = v[C_PAYLOAD_BYTES].u;
    c->payload_errors = v[C_PAYLOAD_ERRORS].u;
    c->records = v[C_RECORDS].u;
    c->records_dropped = v[C_RECORDS_DROPPED].u;
    c->rows_refused = v[C_ROWS_REFUSED].u;
    r->series_bytes = v[C_SERIES_BYTES].u;
    r->series_cap_bytes = v[C_SERIES_CAP].u;
    r->series_samples = v[C_SERIES_SAMPLES].u;
    r->series_folds = v[C_SERIES_FOLDS].u;
    r->strings = v[C_STRINGS].u;
    r->intern_overflows = v[C_INTERN_OVERFLOWS].u;
    r->prefixes_folded = v[C_PREFIXES_FOLDED].u;
}

/* ---- series points ------------------------------------------------------- */

static bool same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

bool roast_point_is_sample(const roast_series_point *p)
{
    if (p->count != 1 || !same_bits(p->t_first, p->t_last))
        return false;
    for (int c = 0; c < ROAST_NCOLS; c++)
        if (!same_bits(p->min[c], p->mean[c]) || !same_bits(p->max[c], p->mean[c]))
            return false;
    return true;
}
