/* snapshot_encode: the aggregator as snapshot bytes, filtered by span and time.
 *
 * Layout (ROAST_SNAPSHOT_VERSION 3); also in docs/architecture.md, "Snapshot
 * wire layout". A msgpack map with exactly these keys (readers ignore others):
 *
 *   "v"            ROAST_SNAPSHOT_VERSION (2: records carry their span; 3: the node's
 *                  series columns; version 2 is still read, its points without them)
 *   "taken_at"     number, scheduler clock when encoded
 *   "started"      number, roast_agg_started
 *   "limits"       map {"max_strings", "max_task_rows", "max_digest_rows",
 *                  "max_workers", "max_spans", "series_cap_bytes",
 *                  "record_cap_bytes"} of uint
 *   "series_epoch" number, time origin of the series (== started)
 *   "strings"      [str, ...]: the interned strings the rows below refer to,
 *                  in intern-id order; index 0 is "". Every S below is an
 *                  index into this array.
 *   "workers"      [[S address, S name, S incarnation, uint restarts,
 *                    added, removed, uint payloads, uint payload_bytes,
 *                    uint last_seq, uint gaps, uint flushes], ...]
 *   "tasks"        [[S worker, S span, S prefix, uint transitions, uint tasks,
 *                    uint erred, compute_seconds, transfer_seconds, uint output_bytes,
 *                    first_start, last_stop], ...]
 *   "digests"      [[S worker, S context, S span, S prefix, S activity, S unit,
 *                    value], ...]
 *   "spans"        [[S span, S parent, S name], ...]
 *   "records"      [[S worker, S span, uint seq, time, bin data], ...]
 *   "errors"       [[S name, uint count], ...]
 *   "counters"     map of the roast_agg_report fields: "events",
 *                  "dropped_events", "hook_calls", "hook_errors",
 *                  "hook_ns_per_call" (number), "payloads", "payload_bytes",
 *                  "payload_errors", "records", "records_dropped",
 *                  "rows_refused", "series_bytes", "series_cap_bytes",
 *                  "series_samples", "series_folds", "strings",
 *                  "intern_overflows" (uint unless noted)
 *   "series"       map {S worker: [point, ...]} in time order; a point is
 *                  [t, v0 .. v17] (19 numbers) for a single sample, or
 *                  [t_first, t_last, uint count, min0..min17, max0..max17,
 *                   mean0..mean17] (57) for a bucket. Columns in roast_column
 *                  order.
 *
 * Unnamed fields are numbers (any msgpack int or float). Tables list rows in
 * the aggregator's insertion order. The filter drops task, digest and record
 * rows outside its spans, span rows not in it, and series points outside its
 * time window, and then workers left without points from "series"; workers
 * and errors are kept whole. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "roast/series.h"
#include "rows.h"
#include "wire_codec.h"


enum snap_mode { SNAP_MARK, SNAP_COUNT, SNAP_WRITE };

#define NO_INDEX UINT32_MAX

typedef struct snap_enc {
    const roast_agg *agg;
    const roast_intern *strings;
    const roast_snapshot_filter *filter;
    roast_id *spans; /* sorted copy of filter->spans, or NULL for all */
    size_t nspans;
    uint32_t *index; /* intern id -> index in "strings"; NO_INDEX if unused */
    uint32_t nids;   /* intern count at the start */
    enum snap_mode mode;
    size_t count;
    msgpack_packer pk;
} snap_enc;

static void mark(snap_enc *e, roast_id id)
{
    if (id < e->nids)
        e->index[id] = 0;
}

static void pack_sid(snap_enc *e, roast_id id)
{
    msgpack_pack_uint32(&e->pk, id < e->nids ? e->index[id] : 0);
}

static int cmp_id(const void *a, const void *b)
{
    roast_id x = *(const roast_id *)a, y = *(const roast_id *)b;
    return x < y ? -1 : x > y;
}

/* Task and digest rows: all without a filter, else those of its spans. */
static bool row_span_kept(const snap_enc *e, roast_id span)
{
    if (!e->spans)
        return true;
    return bsearch(&span, e->spans, e->nspans, sizeof span, cmp_id) != NULL;
}

static void pack_cell(snap_enc *e, char kind, const roast_cell *cell)
{
    switch (kind) {
    case 's': pack_sid(e, cell->id); break;
    case 'u': msgpack_pack_uint64(&e->pk, cell->u); break;
    case 'w': msgpack_pack_uint32(&e->pk, (uint32_t)cell->u); break;
    case 'd': wire_pack_number(&e->pk, cell->d); break;
    default:
        msgpack_pack_bin(&e->pk, cell->bytes.len);
        msgpack_pack_bin_body(&e->pk, cell->bytes.ptr, cell->bytes.len);
        break;
    }
}

/* One row, in the pass e->mode: marks its strings, counts it, or writes it. */
static int snap_row(void *ctx, const roast_table *table, const roast_cell *cells)
{
    snap_enc *e = ctx;
    const char *kinds = table->kinds;
    if (table->span_col >= 0 && !row_span_kept(e, cells[table->span_col].id))
        return 0;
    if (e->mode == SNAP_MARK) {
        for (size_t j = 0; kinds[j]; j++)
            if (kinds[j] == 's')
                mark(e, cells[j].id);
    } else if (e->mode == SNAP_COUNT) {
        e->count++;
    } else {
        msgpack_pack_array(&e->pk, strlen(kinds));
        for (size_t j = 0; kinds[j]; j++)
            pack_cell(e, kinds[j], &cells[j]);
    }
    return 0;
}

/* Writes one table: counts its kept rows, then writes them. */
static void snap_table(snap_enc *e, roast_table_id table)
{
    wire_pack_key(&e->pk, roast_tables[table].name);
    e->mode = SNAP_COUNT;
    e->count = 0;
    roast_rows_each(e->agg, table, snap_row, e);
    msgpack_pack_array(&e->pk, e->count);
    e->mode = SNAP_WRITE;
    roast_rows_each(e->agg, table, snap_row, e);
}

static void pack_point(msgpack_packer *pk, const roast_series_point *p)
{
    if (roast_point_is_sample(p)) {
        msgpack_pack_array(pk, 1 + ROAST_NCOLS);
        wire_pack_number(pk, p->t_first);
        for (int c = 0; c < ROAST_NCOLS; c++)
            wire_pack_number(pk, p->mean[c]);
        return;
    }
    msgpack_pack_array(pk, 3 + 3 * ROAST_NCOLS);
    wire_pack_number(pk, p->t_first);
    wire_pack_number(pk, p->t_last);
    msgpack_pack_uint32(pk, p->count);
    const double *cols[3] = {p->min, p->max, p->mean};
    for (int k = 0; k < 3; k++)
        for (int c = 0; c < ROAST_NCOLS; c++)
            wire_pack_number(pk, cols[k][c]);
}

static double point_time(const roast_series *s, roast_id worker, size_t i, bool last)
{
    roast_series_point p;
    if (roast_series_point_at(s, worker, i, &p) != ROAST_OK)
        return NAN;
    return last ? p.t_last : p.t_first;
}

/* The points of a worker inside the window: a contiguous range [*lo, *hi),
 * since points neither overlap nor go back in time. Returns hi - lo. */
static size_t series_range(const snap_enc *e, roast_id worker, size_t *lo, size_t *hi)
{
    const roast_series *s = roast_agg_series_const(e->agg);
    size_t n = roast_series_points(s, worker);
    size_t a = 0, b = n;
    while (a < b) { /* first point with t_last >= t_from */
        size_t mid = a + (b - a) / 2;
        if (point_time(s, worker, mid, true) >= e->filter->t_from)
            b = mid;
        else
            a = mid + 1;
    }
    *lo = a;
    b = n;
    if (e->filter->t_to != 0) {
        while (a < b) { /* first point with t_first > t_to */
            size_t mid = a + (b - a) / 2;
            if (point_time(s, worker, mid, false) > e->filter->t_to)
                b = mid;
            else
                a = mid + 1;
        }
    }
    *hi = b;
    return *hi - *lo;
}

/* The series map; workers is the list of workers with data. */
static void snap_series(snap_enc *e, const roast_id *workers, size_t nworkers)
{
    size_t lo, hi;
    if (e->mode == SNAP_MARK) {
        for (size_t i = 0; i < nworkers; i++)
            if (series_range(e, workers[i], &lo, &hi))
                mark(e, workers[i]);
        return;
    }
    size_t with_points = 0;
    for (size_t i = 0; i < nworkers; i++)
        with_points += series_range(e, workers[i], &lo, &hi) > 0;
    wire_pack_key(&e->pk, "series");
    msgpack_pack_map(&e->pk, with_points);
    const roast_series *s = roast_agg_series_const(e->agg);
    for (size_t i = 0; i < nworkers; i++) {
        if (!series_range(e, workers[i], &lo, &hi))
            continue;
        pack_sid(e, workers[i]);
        msgpack_pack_array(&e->pk, hi - lo);
        roast_series_point p;
        for (size_t j = lo; j < hi; j++)
            if (roast_series_point_at(s, workers[i], j, &p) == ROAST_OK)
                pack_point(&e->pk, &p);
    }
}

static void snap_mark_all(snap_enc *e, const roast_id *workers, size_t nworkers)
{
    e->mode = SNAP_MARK;
    for (int t = 0; t < ROAST_NTABLES; t++)
        roast_rows_each(e->agg, (roast_table_id)t, snap_row, e);
    snap_series(e, workers, nworkers);
    e->index[0] = 0; /* "" is always index 0 */
}

static void snap_strings(snap_enc *e)
{
    uint32_t n = 0;
    for (uint32_t id = 0; id < e->nids; id++)
        if (e->index[id] != NO_INDEX)
            e->index[id] = n++;
    wire_pack_key(&e->pk, "strings");
    msgpack_pack_array(&e->pk, n);
    for (uint32_t id = 0; id < e->nids; id++)
        if (e->index[id] != NO_INDEX)
            wire_pack_str(&e->pk, roast_intern_get(e->strings, id));
}

static void pack_uint_field(msgpack_packer *pk, const char *key, uint64_t v)
{
    wire_pack_key(pk, key);
    msgpack_pack_uint64(pk, v);
}

static void snap_limits(msgpack_packer *pk, const roast_agg_limits *l)
{
    uint64_t v[ROAST_NLIMITS];
    roast_limits_to_values(l, v);
    wire_pack_key(pk, "limits");
    msgpack_pack_map(pk, ROAST_NLIMITS);
    for (int i = 0; i < ROAST_NLIMITS; i++)
        pack_uint_field(pk, roast_limit_keys[i], v[i]);
}

static void snap_counters(msgpack_packer *pk, const roast_agg_report *r)
{
    roast_cell v[ROAST_NCOUNTERS];
    roast_report_to_cells(r, v);
    wire_pack_key(pk, "counters");
    msgpack_pack_map(pk, ROAST_NCOUNTERS);
    for (int i = 0; i < ROAST_NCOUNTERS; i++) {
        wire_pack_key(pk, roast_counter_keys[i]);
        if (i == ROAST_COUNTER_HOOK_NS)
            wire_pack_number(pk, v[i].d);
        else
            msgpack_pack_uint64(pk, v[i].u);
    }
}

static void snap_write(snap_enc *e, double now, const roast_id *workers, size_t nworkers)
{
    msgpack_packer *pk = &e->pk;
    roast_agg_report report;
    roast_agg_report_get(e->agg, &report);
    msgpack_pack_map(pk, 14);
    pack_uint_field(pk, "v", ROAST_SNAPSHOT_VERSION);
    wire_pack_key(pk, "taken_at");
    wire_pack_number(pk, now);
    wire_pack_key(pk, "started");
    wire_pack_number(pk, roast_agg_started(e->agg));
    snap_limits(pk, roast_agg_limits_get(e->agg));
    wire_pack_key(pk, "series_epoch");
    wire_pack_number(pk, roast_series_epoch(roast_agg_series_const(e->agg)));
    snap_strings(e);
    for (int t = 0; t < ROAST_NTABLES; t++)
        snap_table(e, (roast_table_id)t);
    snap_counters(pk, &report);
    e->mode = SNAP_WRITE;
    snap_series(e, workers, nworkers);
}

roast_status roast_wire_encode_snapshot(const roast_agg *agg, const roast_snapshot_filter *filter,
                                        double now, roast_buf *out)
{
    static const roast_snapshot_filter everything = {NULL, 0, 0.0, 0.0};
    if (!agg || !out || (filter && filter->nspans && !filter->spans))
        return ROAST_EINVAL;
    snap_enc e;
    memset(&e, 0, sizeof e);
    e.agg = agg;
    e.strings = roast_agg_strings_const(agg);
    e.filter = filter ? filter : &everything;
    e.nids = roast_intern_count(e.strings);
    const roast_series *series = roast_agg_series_const(agg);
    size_t nworkers = roast_series_workers(series, NULL, 0);
    roast_id *workers = malloc((nworkers ? nworkers : 1) * sizeof *workers);
    e.index = malloc((size_t)e.nids * sizeof *e.index);
    if (e.filter->spans) {
        e.nspans = e.filter->nspans;
        e.spans = malloc((e.nspans ? e.nspans : 1) * sizeof *e.spans);
    }
    roast_status status = ROAST_ENOMEM;
    if (workers && e.index && (!e.filter->spans || e.spans)) {
        nworkers = roast_series_workers(series, workers, nworkers);
        memset(e.index, 0xff, (size_t)e.nids * sizeof *e.index);
        if (e.spans) {
            memcpy(e.spans, e.filter->spans, e.nspans * sizeof *e.spans);
            qsort(e.spans, e.nspans, sizeof *e.spans, cmp_id);
        }
        wire_out o = {out, out->len, false, false};
        msgpack_packer_init(&e.pk, &o, wire_out_write);
        snap_mark_all(&e, workers, nworkers);
        snap_write(&e, now, workers, nworkers);
        status = wire_out_finish(&o);
    }
    free(e.spans);
    free(e.index);
    free(workers);
    return status;
}

