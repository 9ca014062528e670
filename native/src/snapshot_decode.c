/* snapshot_decode: a snapshot's bytes back into an aggregator (for reading
 * saved measurements and the client's copy); the input is hostile. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "roast/series.h"
#include "rows.h"
#include "wire_codec.h"

typedef struct snap_dec {
    roast_agg *agg;
    roast_id *ids; /* "strings" index -> id in agg */
    size_t nids;
    char *err;
    size_t errcap;
    uint64_t version;
} snap_dec;

/* Cells (rows.h) in a snapshot: strings are indexes into "strings"; bytes
 * are views into the input. */
static const char *kind_name(char kind)
{
    switch (kind) {
    case 's': return "a string index";
    case 'u': return "an unsigned integer";
    case 'w': return "an unsigned 32-bit integer";
    case 'd': return "a number";
    default: return "bytes";
    }
}

static bool read_cell(const snap_dec *d, const msgpack_object *o, char kind, roast_cell *out)
{
    uint64_t u;
    switch (kind) {
    case 's':
        if (!wire_get_uint(o, &u) || u >= d->nids)
            return false;
        out->id = d->ids[u];
        return true;
    case 'u': return wire_get_uint(o, &out->u);
    case 'w':
        if (!wire_get_uint(o, &u) || u > UINT32_MAX)
            return false;
        out->u = u;
        return true;
    case 'd': return wire_get_number(o, &out->d);
    default: return wire_get_bytes(o, &out->bytes);
    }
}

static roast_status read_row(const snap_dec *d, const msgpack_object *row,
                             const roast_table *table, size_t i, roast_cell *cells)
{
    const char *kinds = table->kinds;
    size_t n = strlen(kinds);
    if (row->type != MSGPACK_OBJECT_ARRAY || row->via.array.size != n)
        return wire_fail(d->err, d->errcap, "snapshot.%s[%zu]: expected an array of %zu", table->name,
                    i, n);
    for (size_t j = 0; j < n; j++)
        if (!read_cell(d, &row->via.array.ptr[j], kinds[j], &cells[j]))
            return wire_fail(d->err, d->errcap, "snapshot.%s[%zu][%zu]: expected %s", table->name, i,
                        j, kind_name(kinds[j]));
    return ROAST_OK;
}

static roast_status dec_table(snap_dec *d, const msgpack_object *arr, const roast_table *table)
{
    if (arr->type != MSGPACK_OBJECT_ARRAY)
        return wire_fail(d->err, d->errcap, "snapshot.%s: expected an array", table->name);
    roast_cell cells[ROAST_ROW_MAX_CELLS] = {{0}};
    for (size_t i = 0; i < arr->via.array.size; i++) {
        roast_status status = read_row(d, &arr->via.array.ptr[i], table, i, cells);
        if (status == ROAST_OK)
            status = table->restore(d->agg, cells);
        if (status == ROAST_EFULL)
            return wire_fail(d->err, d->errcap, "snapshot.%s[%zu]: beyond the snapshot's own limits",
                        table->name, i);
        if (status != ROAST_OK)
            return status;
    }
    return ROAST_OK;
}

static roast_status dec_strings(snap_dec *d, const msgpack_object *arr)
{
    if (arr->type != MSGPACK_OBJECT_ARRAY)
        return wire_fail(d->err, d->errcap, "snapshot.strings: expected an array");
    d->nids = arr->via.array.size;
    d->ids = malloc((d->nids ? d->nids : 1) * sizeof *d->ids);
    if (!d->ids)
        return ROAST_ENOMEM;
    for (size_t i = 0; i < d->nids; i++) {
        roast_str s;
        if (!wire_get_bytes(&arr->via.array.ptr[i], &s))
            return wire_fail(d->err, d->errcap, "snapshot.strings[%zu]: expected a string", i);
        roast_status status = roast_intern_put(roast_agg_strings(d->agg), s.ptr, s.len, &d->ids[i]);
        if (status == ROAST_EFULL)
            return wire_fail(d->err, d->errcap, "snapshot.strings: more than limits.max_strings");
        if (status != ROAST_OK)
            return status;
    }
    return ROAST_OK;
}

static bool limit_uint(const void *fields, int i, uint64_t *out)
{
    return wire_get_uint(((const msgpack_object *const *)fields)[i], out);
}

static roast_status dec_limits(const msgpack_object *map, roast_agg_limits *l, char *err,
                               size_t errcap)
{
    const msgpack_object *f[ROAST_NLIMITS];
    roast_status status = wire_map_fields(map, roast_limit_keys, f, ROAST_NLIMITS,
                                          "snapshot.limits", err, errcap);
    if (status != ROAST_OK)
        return status;
    return roast_limits_read(l, limit_uint, f, "snapshot.limits", err, errcap);
}

static roast_status dec_counters(const msgpack_object *map, roast_agg_report *r, char *err,
                                 size_t errcap)
{
    const msgpack_object *f[ROAST_NCOUNTERS];
    roast_status status = wire_map_fields_some(map, roast_counter_keys, f, ROAST_NCOUNTERS,
                                          ROAST_NCOUNTERS_REQUIRED, "snapshot.counters", err,
                                          errcap);
    if (status != ROAST_OK)
        return status;
    roast_cell v[ROAST_NCOUNTERS];
    for (int i = 0; i < ROAST_NCOUNTERS; i++) {
        v[i].u = 0;
        if (i == ROAST_COUNTER_HOOK_NS || !f[i])
            continue;
        if (!wire_get_uint(f[i], &v[i].u))
            return wire_fail(err, errcap, "snapshot.counters.%s: expected an unsigned integer",
                        roast_counter_keys[i]);
    }
    if (!wire_get_number(f[ROAST_COUNTER_HOOK_NS], &v[ROAST_COUNTER_HOOK_NS].d))
        return wire_fail(err, errcap, "snapshot.counters.hook_ns_per_call: expected a number");
    roast_report_from_cells(r, v);
    return ROAST_OK;
}

static roast_status dec_point(const snap_dec *d, const msgpack_object *o, roast_str worker,
                              size_t i, roast_series_point *p)
{
    roast_column col[ROAST_NCOLS];
    int ncols = roast_columns_of_version(d->version, col);
    size_t n = o->type == MSGPACK_OBJECT_ARRAY ? o->via.array.size : 0;
    if (n != 1 + (size_t)ncols && n != 3 + 3 * (size_t)ncols)
        return wire_fail(d->err, d->errcap, "snapshot.series[\"%.*s\"][%zu]: expected an array of %d or %d",
                    (int)worker.len, worker.ptr, i, 1 + ncols, 3 + 3 * ncols);
    const msgpack_object *v = o->via.array.ptr;
    uint64_t count = 1;
    for (int c = 0; c < ROAST_NCOLS; c++) /* the columns the version lacks */
        p->min[c] = p->max[c] = p->mean[c] = NAN;
    bool ok = wire_get_number(&v[0], &p->t_first);
    if (n == 1 + (size_t)ncols) {
        p->t_last = p->t_first;
        for (int c = 0; c < ncols && ok; c++) {
            ok = wire_get_number(&v[1 + c], &p->mean[col[c]]);
            p->min[col[c]] = p->max[col[c]] = p->mean[col[c]];
        }
    } else {
        ok = ok && wire_get_number(&v[1], &p->t_last) && wire_get_uint(&v[2], &count);
        double *cols[3] = {p->min, p->max, p->mean};
        for (int k = 0; k < 3 && ok; k++)
            for (int c = 0; c < ncols && ok; c++)
                ok = wire_get_number(&v[3 + k * ncols + c], &cols[k][col[c]]);
    }
    if (!ok || count < 1 || count > UINT32_MAX || !(p->t_first <= p->t_last))
        return wire_fail(d->err, d->errcap,
                    "snapshot.series[\"%.*s\"][%zu]: expected numbers, a count of at least 1 "
                    "and t_first <= t_last", (int)worker.len, worker.ptr, i);
    p->count = (uint32_t)count;
    return ROAST_OK;
}

static roast_status dec_series(snap_dec *d, const msgpack_object *map)
{
    if (map->type != MSGPACK_OBJECT_MAP)
        return wire_fail(d->err, d->errcap, "snapshot.series: expected a map");
    roast_series *series = roast_agg_series(d->agg);
    const roast_intern *strings = roast_agg_strings_const(d->agg);
    for (uint32_t k = 0; k < map->via.map.size; k++) {
        const msgpack_object_kv *kv = &map->via.map.ptr[k];
        roast_cell w;
        if (!read_cell(d, &kv->key, 's', &w))
            return wire_fail(d->err, d->errcap, "snapshot.series: key %u is not a string index", (unsigned)k);
        roast_str name = roast_intern_get(strings, w.id);
        if (kv->val.type != MSGPACK_OBJECT_ARRAY)
            return wire_fail(d->err, d->errcap, "snapshot.series[\"%.*s\"]: expected an array",
                        (int)name.len, name.ptr);
        for (size_t i = 0; i < kv->val.via.array.size; i++) {
            roast_series_point p;
            roast_status status = dec_point(d, &kv->val.via.array.ptr[i], name, i, &p);
            if (status != ROAST_OK)
                return status;
            status = roast_series_restore(series, w.id, &p);
            if (status == ROAST_EINVAL || status == ROAST_EFULL)
                return wire_fail(d->err, d->errcap,
                            "snapshot.series[\"%.*s\"][%zu]: refused by the series store (before "
                            "the epoch, out of time order, or a bucket after single samples)",
                            (int)name.len, name.ptr, i);
            if (status != ROAST_OK)
                return status;
        }
    }
    return ROAST_OK;
}

/* The tables, S_WORKERS to S_ERRORS, in roast_tables order. */
enum {
    S_V, S_TAKEN_AT, S_STARTED, S_LIMITS, S_EPOCH, S_STRINGS, S_WORKERS, S_TASKS, S_DIGESTS,
    S_SPANS, S_RECORDS, S_ERRORS, S_COUNTERS, S_SERIES, S_NKEYS
};
static const char *const snapshot_keys[S_NKEYS] = {
    "v", "taken_at", "started", "limits", "series_epoch", "strings", "workers", "tasks",
    "digests", "spans", "records", "errors", "counters", "series"};

/* Everything before the tables: version, times, limits; creates the agg. */
static roast_status dec_header(snap_dec *d, const msgpack_object **f, double *taken_at)
{
    double started, epoch;
    if (!wire_get_number(f[S_TAKEN_AT], taken_at))
        return wire_fail(d->err, d->errcap, "snapshot.taken_at: expected a number");
    if (!wire_get_number(f[S_STARTED], &started))
        return wire_fail(d->err, d->errcap, "snapshot.started: expected a number");
    if (!wire_get_number(f[S_EPOCH], &epoch))
        return wire_fail(d->err, d->errcap, "snapshot.series_epoch: expected a number");
    if (memcmp(&epoch, &started, sizeof epoch) != 0) /* the same bits */
        return wire_fail(d->err, d->errcap, "snapshot.series_epoch: differs from started");
    roast_agg_limits limits;
    roast_status status = dec_limits(f[S_LIMITS], &limits, d->err, d->errcap);
    if (status != ROAST_OK)
        return status;
    d->agg = roast_agg_new_restored(&limits, started);
    return d->agg ? ROAST_OK : ROAST_ENOMEM;
}

static roast_status dec_snapshot(snap_dec *d, const msgpack_object *top, double *taken_at)
{
    const msgpack_object *f[S_NKEYS];
    roast_status status = wire_check_version(top, "snapshot", ROAST_SNAPSHOT_OLDEST,
                                             ROAST_SNAPSHOT_VERSION, &d->version, d->err,
                                             d->errcap);
    if (status == ROAST_OK)
        status = wire_map_fields(top, snapshot_keys, f, S_NKEYS, "snapshot", d->err, d->errcap);
    if (status == ROAST_OK)
        status = dec_header(d, f, taken_at);
    if (status == ROAST_OK)
        status = dec_strings(d, f[S_STRINGS]);
    for (int t = 0; t < ROAST_NTABLES && status == ROAST_OK; t++)
        status = dec_table(d, f[S_WORKERS + t], &roast_tables[t]);
    roast_agg_report report;
    if (status == ROAST_OK)
        status = dec_counters(f[S_COUNTERS], &report, d->err, d->errcap);
    if (status == ROAST_OK)
        status = dec_series(d, f[S_SERIES]);
    if (status == ROAST_OK)
        roast_agg_restore_report(d->agg, &report);
    return status;
}

roast_status roast_wire_decode_snapshot(const char *data, size_t len, roast_agg **out,
                                        double *taken_at, char *err, size_t errcap)
{
    *out = NULL;
    if (!data && len)
        return ROAST_EINVAL;
    snap_dec d = {NULL, NULL, 0, err, errcap, ROAST_SNAPSHOT_VERSION};
    double when = 0;
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    roast_status status = wire_unpack(data, len, 1, &u, "snapshot", err, errcap);
    if (status == ROAST_OK)
        status = dec_snapshot(&d, &u.data, &when);
    msgpack_unpacked_destroy(&u);
    free(d.ids);
    if (status != ROAST_OK) {
        roast_agg_free(d.agg);
        return status;
    }
    if (taken_at)
        *taken_at = when;
    *out = d.agg;
    return ROAST_OK;
}
