/* convert: native tables -> the Python data of docs/architecture.md ("The
 * snapshot as Python data"). Used for Aggregator.to_dict, decode_snapshot
 * and state_from_json alike, so the three can only agree. */
#include "../roastpy.h"

#include <math.h>
#include <string.h>

/* The strings of one conversion: each id becomes one Python str however
 * many rows name it. Slot `count` stands for ids the table does not know
 * (the empty string). */
typedef struct convert_ctx {
    const roast_agg *agg;
    const roast_intern *strings;
    PyObject **strs; /* [count + 1], PyMem, owned references */
    uint32_t count;
    PyObject *target; /* what the current visitor fills */
} convert_ctx;

/* Borrowed reference, or NULL with an exception. */
static PyObject *ctx_str(convert_ctx *c, roast_id id)
{
    uint32_t slot = id < c->count ? id : c->count;
    if (!c->strs[slot])
        c->strs[slot] = roastpy_str(roast_intern_get(c->strings, id));
    return c->strs[slot];
}

static int ctx_init(convert_ctx *c, const roast_agg *agg)
{
    c->agg = agg;
    c->strings = roast_agg_strings_const(agg);
    c->count = roast_intern_count(c->strings);
    c->strs = PyMem_Calloc((size_t)c->count + 1, sizeof *c->strs);
    c->target = NULL;
    if (!c->strs) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void ctx_free(convert_ctx *c)
{
    for (uint32_t i = 0; i <= c->count; i++)
        Py_XDECREF(c->strs[i]);
    PyMem_Free(c->strs);
}

/* Sets dict[name] = value and drops the reference to value (may be NULL,
 * meaning a failure already raised). */
static int put(PyObject *dict, const char *name, PyObject *value)
{
    if (!value)
        return -1;
    int rc = PyDict_SetItemString(dict, name, value);
    Py_DECREF(value);
    return rc;
}

static int put_u64(PyObject *dict, const char *name, uint64_t v)
{
    return put(dict, name, PyLong_FromUnsignedLongLong(v));
}

static int put_f64(PyObject *dict, const char *name, double v)
{
    return put(dict, name, PyFloat_FromDouble(v));
}

/* ---- task statistics ---------------------------------------------------- */

static int stats_into(PyObject *dict, const roast_task_stats *s)
{
    return put_u64(dict, "transitions", s->transitions) < 0 ||
                   put_u64(dict, "tasks", s->tasks) < 0 || put_u64(dict, "erred", s->erred) < 0 ||
                   put_f64(dict, "compute_seconds", s->compute_seconds) < 0 ||
                   put_f64(dict, "transfer_seconds", s->transfer_seconds) < 0 ||
                   put_u64(dict, "output_bytes", s->output_bytes) < 0 ||
                   put_f64(dict, "first_start", s->first_start) < 0 ||
                   put_f64(dict, "last_stop", s->last_stop) < 0
               ? -1
               : 0;
}

typedef struct task_walk {
    convert_ctx *ctx;
    PyObject *rows;
} task_walk;

typedef struct group_walk {
    convert_ctx *ctx;
    PyObject *dict;
} group_walk;

static int visit_group(void *arg, roast_id id, const roast_task_stats *sum)
{
    group_walk *w = arg;
    PyObject *stats = PyDict_New();
    PyObject *name = ctx_str(w->ctx, id);
    int rc = !stats || !name || stats_into(stats, sum) < 0 ||
                     PyDict_SetItem(w->dict, name, stats) < 0
                 ? -1
                 : 0;
    Py_XDECREF(stats);
    return rc;
}

/* {name: stats} of the task rows summed by one field of their key. */
static PyObject *groups_dict(convert_ctx *c, roast_task_field by)
{
    group_walk w = {c, PyDict_New()};
    roast_status status;
    if (w.dict && roast_agg_each_task_group(c->agg, by, visit_group, &w, &status) != 0)
        Py_CLEAR(w.dict);
    if (w.dict && status != ROAST_OK) {
        Py_CLEAR(w.dict);
        roastpy_raise(status, NULL);
    }
    return w.dict;
}

static int visit_task(void *arg, const roast_task_key *key, const roast_task_stats *s)
{
    task_walk *w = arg;
    PyObject *worker = ctx_str(w->ctx, key->worker);
    PyObject *span = ctx_str(w->ctx, key->span);
    PyObject *prefix = ctx_str(w->ctx, key->prefix);
    PyObject *row = worker && span && prefix ? PyDict_New() : NULL;
    int rc = !row || PyDict_SetItemString(row, "worker", worker) < 0 ||
                     PyDict_SetItemString(row, "span", span) < 0 ||
                     PyDict_SetItemString(row, "prefix", prefix) < 0 || stats_into(row, s) < 0 ||
                     PyList_Append(w->rows, row) < 0
                 ? -1
                 : 0;
    Py_XDECREF(row);
    return rc;
}

/* Sets "tasks", "prefixes", "worker_tasks" and "span_tasks". */
static int put_tasks(PyObject *out, convert_ctx *c)
{
    task_walk w = {c, PyList_New(0)};
    int rc = -1;
    if (w.rows && roast_agg_each_task(c->agg, visit_task, &w) == 0 &&
        PyDict_SetItemString(out, "tasks", w.rows) == 0 &&
        put(out, "prefixes", groups_dict(c, ROAST_TASKS_BY_PREFIX)) == 0 &&
        put(out, "worker_tasks", groups_dict(c, ROAST_TASKS_BY_WORKER)) == 0 &&
        put(out, "span_tasks", groups_dict(c, ROAST_TASKS_BY_SPAN)) == 0)
        rc = 0;
    Py_XDECREF(w.rows);
    return rc;
}

/* ---- the other tables --------------------------------------------------- */

static int visit_worker(void *arg, const roast_worker_info *info)
{
    convert_ctx *c = arg;
    PyObject *address = ctx_str(c, info->address);
    PyObject *name = ctx_str(c, info->name);
    PyObject *incarnation = ctx_str(c, info->incarnation);
    PyObject *row = address && name && incarnation ? PyDict_New() : NULL;
    int rc = !row || PyDict_SetItemString(row, "name", name) < 0 ||
                     PyDict_SetItemString(row, "incarnation", incarnation) < 0 ||
                     put_u64(row, "restarts", info->restarts) < 0 ||
                     put_f64(row, "added", info->added) < 0 ||
                     put(row, "removed",
                         info->removed != 0 ? PyFloat_FromDouble(info->removed)
                                            : Py_NewRef(Py_None)) < 0 ||
                     put_u64(row, "payloads", info->payloads) < 0 ||
                     put_u64(row, "payload_bytes", info->payload_bytes) < 0 ||
                     put_u64(row, "last_seq", info->last_seq) < 0 ||
                     put_u64(row, "gaps", info->gaps) < 0 ||
                     put_u64(row, "flushes", info->flushes) < 0 ||
                     PyDict_SetItem(c->target, address, row) < 0
                 ? -1
                 : 0;
    Py_XDECREF(row);
    return rc;
}

static int visit_digest(void *arg, const roast_digest_key *key, double value)
{
    convert_ctx *c = arg;
    PyObject *k = PyTuple_New(6);
    if (!k)
        return -1;
    roast_id parts[6] = {key->worker, key->context, key->span,
                         key->prefix, key->activity, key->unit};
    for (int i = 0; i < 6; i++) {
        PyObject *s = ctx_str(c, parts[i]);
        if (!s) {
            Py_DECREF(k);
            return -1;
        }
        PyTuple_SET_ITEM(k, i, Py_NewRef(s));
    }
    PyObject *v = PyFloat_FromDouble(value);
    int rc = v ? PyDict_SetItem(c->target, k, v) : -1;
    Py_XDECREF(v);
    Py_DECREF(k);
    return rc;
}

/* Span names are stored as their tags joined by '\x1f'. */
static PyObject *span_name(roast_str joined)
{
    PyObject *tags = PyList_New(0);
    size_t start = 0;
    for (size_t i = 0; tags && joined.len && i <= joined.len; i++) {
        if (i < joined.len && joined.ptr[i] != '\x1f')
            continue;
        roast_str tag = {joined.ptr + start, i - start};
        PyObject *s = roastpy_str(tag);
        if (!s || PyList_Append(tags, s) < 0)
            Py_CLEAR(tags);
        Py_XDECREF(s);
        start = i + 1;
    }
    PyObject *tuple = tags ? PyList_AsTuple(tags) : NULL;
    Py_XDECREF(tags);
    return tuple;
}

static int visit_span(void *arg, const roast_span_info *info)
{
    convert_ctx *c = arg;
    PyObject *span = ctx_str(c, info->span);
    PyObject *parent = info->parent == ROAST_ID_EMPTY ? Py_None : ctx_str(c, info->parent);
    PyObject *row = span && parent ? PyDict_New() : NULL;
    int rc = !row || PyDict_SetItemString(row, "parent", parent) < 0 ||
                     put(row, "name", span_name(roast_intern_get(c->strings, info->name))) < 0 ||
                     PyDict_SetItem(c->target, span, row) < 0
                 ? -1
                 : 0;
    Py_XDECREF(row);
    return rc;
}

/* Appends {"worker", "span", "seq", "time", "data"} of r to list. */
static int append_record(PyObject *list, PyObject *worker, PyObject *span, const roast_record *r)
{
    PyObject *row = worker && span ? PyDict_New() : NULL;
    int rc = !row || PyDict_SetItemString(row, "worker", worker) < 0 ||
                     PyDict_SetItemString(row, "span", span) < 0 ||
                     put_u64(row, "seq", r->seq) < 0 || put_f64(row, "time", r->time) < 0 ||
                     put(row, "data", PyBytes_FromStringAndSize(r->data.ptr,
                                                                (Py_ssize_t)r->data.len)) < 0 ||
                     PyList_Append(list, row) < 0
                 ? -1
                 : 0;
    Py_XDECREF(row);
    return rc;
}

static int visit_record(void *arg, const roast_record *r)
{
    convert_ctx *c = arg;
    return append_record(c->target, ctx_str(c, r->worker), ctx_str(c, r->span), r);
}

/* A stream's batch: few records, few strings, so each string is made when it
 * differs from the record before's (records come in runs of one worker and
 * span), not cached for the whole table as a snapshot's are. */
typedef struct batch_ctx {
    const roast_intern *strings;
    PyObject *list;
    roast_id ids[2]; /* worker, span of the previous record */
    PyObject *strs[2];
    uint64_t last; /* the newest record's number */
} batch_ctx;

static PyObject *batch_str(batch_ctx *b, int slot, roast_id id)
{
    if (!b->strs[slot] || b->ids[slot] != id) {
        Py_XDECREF(b->strs[slot]);
        b->ids[slot] = id;
        b->strs[slot] = roastpy_str(roast_intern_get(b->strings, id));
    }
    return b->strs[slot];
}

static int visit_batch_record(void *arg, const roast_record *r)
{
    batch_ctx *b = arg;
    if (r->number > b->last)
        b->last = r->number;
    return append_record(b->list, batch_str(b, 0, r->worker), batch_str(b, 1, r->span), r);
}

PyObject *roastpy_records_of(const roast_agg *agg, const roast_id *spans, size_t nspans,
                             uint64_t *last)
{
    batch_ctx b = {roast_agg_strings_const(agg), PyList_New(0), {0, 0}, {NULL, NULL}, *last};
    if (b.list && roast_agg_each_record_of(agg, spans, nspans, visit_batch_record, &b) != 0) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        Py_CLEAR(b.list);
    }
    Py_XDECREF(b.strs[0]);
    Py_XDECREF(b.strs[1]);
    *last = b.last;
    return b.list;
}

static int visit_error(void *arg, roast_id name, uint64_t count)
{
    convert_ctx *c = arg;
    PyObject *key = ctx_str(c, name);
    PyObject *v = key ? PyLong_FromUnsignedLongLong(count) : NULL;
    int rc = v ? PyDict_SetItem(c->target, key, v) : -1;
    Py_XDECREF(v);
    return rc;
}

typedef int (*walk_fn)(convert_ctx *c);

static int walk_workers(convert_ctx *c) { return roast_agg_each_worker(c->agg, visit_worker, c); }
static int walk_digests(convert_ctx *c) { return roast_agg_each_digest(c->agg, visit_digest, c); }
static int walk_spans(convert_ctx *c) { return roast_agg_each_span(c->agg, visit_span, c); }
static int walk_records(convert_ctx *c) { return roast_agg_each_record(c->agg, visit_record, c); }
static int walk_errors(convert_ctx *c) { return roast_agg_each_error(c->agg, visit_error, c); }

/* Sets out[name] to a new container filled by walk. */
static int put_walk(PyObject *out, const char *name, PyObject *container, convert_ctx *c,
                    walk_fn walk)
{
    if (!container)
        return -1;
    c->target = container;
    int rc = walk(c) == 0 ? PyDict_SetItemString(out, name, container) : -1;
    Py_DECREF(container);
    return rc;
}

/* ---- series ------------------------------------------------------------- */

typedef struct series_lists {
    PyObject *t_first, *t_last, *count;
    PyObject *col[ROAST_NCOLS][3]; /* mean, min, max */
} series_lists;

static void series_lists_free(series_lists *l)
{
    Py_XDECREF(l->t_first);
    Py_XDECREF(l->t_last);
    Py_XDECREF(l->count);
    for (int i = 0; i < ROAST_NCOLS; i++)
        for (int j = 0; j < 3; j++)
            Py_XDECREF(l->col[i][j]);
}

static int series_lists_new(series_lists *l, Py_ssize_t n)
{
    memset(l, 0, sizeof *l);
    int ok = (l->t_first = PyList_New(n)) && (l->t_last = PyList_New(n)) &&
             (l->count = PyList_New(n));
    for (int i = 0; ok && i < ROAST_NCOLS; i++)
        for (int j = 0; ok && j < 3; j++)
            ok = (l->col[i][j] = PyList_New(n)) != NULL;
    return ok ? 0 : -1;
}

static int series_fill(series_lists *l, const roast_series *series, roast_id worker, size_t n)
{
    roast_series_point p;
    for (size_t i = 0; i < n; i++) {
        roast_status st = roast_series_point_at(series, worker, i, &p);
        if (st != ROAST_OK) {
            roastpy_raise(st, "series point out of range");
            return -1;
        }
        PyObject *v;
#define SET(list, obj)                                                                           \
    do {                                                                                         \
        if (!(v = (obj)))                                                                        \
            return -1;                                                                           \
        PyList_SET_ITEM((list), (Py_ssize_t)i, v);                                               \
    } while (0)
        SET(l->t_first, PyFloat_FromDouble(p.t_first));
        SET(l->t_last, PyFloat_FromDouble(p.t_last));
        SET(l->count, PyLong_FromUnsignedLong(p.count));
        for (int c = 0; c < ROAST_NCOLS; c++) {
            SET(l->col[c][0], PyFloat_FromDouble(p.mean[c]));
            SET(l->col[c][1], PyFloat_FromDouble(p.min[c]));
            SET(l->col[c][2], PyFloat_FromDouble(p.max[c]));
        }
#undef SET
    }
    return 0;
}

static PyObject *series_lists_dict(series_lists *l)
{
    PyObject *columns = PyDict_New();
    for (int c = 0; columns && c < ROAST_NCOLS; c++) {
        PyObject *col = Py_BuildValue("{sOsOsO}", "mean", l->col[c][0], "min", l->col[c][1],
                                      "max", l->col[c][2]);
        if (put(columns, roast_column_names[c], col) < 0)
            Py_CLEAR(columns);
    }
    if (!columns)
        return NULL;
    return Py_BuildValue("{sOsOsOsN}", "t_first", l->t_first, "t_last", l->t_last, "count",
                         l->count, "columns", columns);
}

static PyObject *series_worker(const roast_series *series, roast_id worker)
{
    size_t n = roast_series_points(series, worker);
    series_lists l;
    PyObject *dict = NULL;
    if (series_lists_new(&l, (Py_ssize_t)n) == 0 && series_fill(&l, series, worker, n) == 0)
        dict = series_lists_dict(&l);
    series_lists_free(&l);
    return dict;
}

static int put_series(PyObject *out, convert_ctx *c)
{
    const roast_series *series = roast_agg_series_const(c->agg);
    roast_id *workers = PyMem_Malloc(((size_t)c->count + 1) * sizeof *workers);
    PyObject *dict = workers ? PyDict_New() : PyErr_NoMemory();
    size_t n = workers ? roast_series_workers(series, workers, c->count) : 0;
    for (size_t i = 0; dict && i < n; i++) {
        PyObject *address = ctx_str(c, workers[i]);
        PyObject *one = address ? series_worker(series, workers[i]) : NULL;
        if (!one || PyDict_SetItem(dict, address, one) < 0)
            Py_CLEAR(dict);
        Py_XDECREF(one);
    }
    PyMem_Free(workers);
    return put(out, "series", dict);
}

/* ---- digest totals ------------------------------------------------------ */

typedef struct digest_group_walk {
    convert_ctx *ctx;
    PyObject *dict;
} digest_group_walk;

static int visit_digest_group(void *arg, roast_id id, roast_id activity, roast_id unit,
                              double sum)
{
    digest_group_walk *w = arg;
    PyObject *name = ctx_str(w->ctx, id), *act = ctx_str(w->ctx, activity);
    PyObject *u = ctx_str(w->ctx, unit);
    PyObject *key = name && act && u ? PyTuple_Pack(3, name, act, u) : NULL;
    PyObject *value = key ? PyFloat_FromDouble(sum) : NULL;
    int rc = !value || PyDict_SetItem(w->dict, key, value) < 0 ? -1 : 0;
    Py_XDECREF(key);
    Py_XDECREF(value);
    return rc;
}

PyObject *roastpy_digest_totals(const roast_agg *agg, roast_id context, roast_digest_field by)
{
    convert_ctx c;
    if (ctx_init(&c, agg) < 0)
        return NULL;
    digest_group_walk w = {&c, PyDict_New()};
    roast_status status = ROAST_OK;
    if (w.dict && roast_agg_each_digest_group(agg, context, by, visit_digest_group, &w,
                                              &status) != 0)
        Py_CLEAR(w.dict);
    if (w.dict && status != ROAST_OK) {
        Py_CLEAR(w.dict);
        roastpy_raise(status, NULL);
    }
    ctx_free(&c);
    return w.dict;
}

/* ---- counters and the whole snapshot ------------------------------------ */

/* The self-report of roast_agg_report_get: a restored aggregator reports the
 * figures of the one it was restored from. */
PyObject *roastpy_counters_dict(const roast_agg *agg)
{
    roast_agg_report r;
    roast_agg_report_get(agg, &r);
    const roast_agg_counters *k = &r.counters;
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    PyObject *ns = isnan(k->hook_ns_per_call) ? Py_NewRef(Py_None)
                                              : PyFloat_FromDouble(k->hook_ns_per_call);
    if (put_u64(d, "events", k->events) < 0 ||
        put_u64(d, "dropped_events", k->dropped_events) < 0 ||
        put_u64(d, "hook_calls", k->hook_calls) < 0 ||
        put_u64(d, "hook_errors", k->hook_errors) < 0 || put(d, "hook_ns_per_call", ns) < 0 ||
        put_u64(d, "payloads", k->payloads) < 0 ||
        put_u64(d, "payload_bytes", k->payload_bytes) < 0 ||
        put_u64(d, "payload_errors", k->payload_errors) < 0 ||
        put_u64(d, "records", k->records) < 0 ||
        put_u64(d, "records_dropped", k->records_dropped) < 0 ||
        put_u64(d, "rows_refused", k->rows_refused) < 0 ||
        put_u64(d, "series_bytes", r.series_bytes) < 0 ||
        put_u64(d, "series_cap_bytes", r.series_cap_bytes) < 0 ||
        put_u64(d, "series_samples", r.series_samples) < 0 ||
        put_u64(d, "series_folds", r.series_folds) < 0 || put_u64(d, "strings", r.strings) < 0 ||
        put_u64(d, "intern_overflows", r.intern_overflows) < 0 ||
        put_u64(d, "prefixes_folded", r.prefixes_folded) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

PyObject *roastpy_agg_to_dict(const roast_agg *agg, double taken_at)
{
    convert_ctx c;
    if (ctx_init(&c, agg) < 0)
        return NULL;
    PyObject *out = PyDict_New();
    if (!out || put_u64(out, "version", ROAST_SNAPSHOT_VERSION) < 0 ||
        put(out, "taken_at",
            isnan(taken_at) ? Py_NewRef(Py_None) : PyFloat_FromDouble(taken_at)) < 0 ||
        put_f64(out, "started", roast_agg_started(agg)) < 0 ||
        put_walk(out, "workers", PyDict_New(), &c, walk_workers) < 0 || put_tasks(out, &c) < 0 ||
        put_walk(out, "digests", PyDict_New(), &c, walk_digests) < 0 ||
        put_walk(out, "spans", PyDict_New(), &c, walk_spans) < 0 ||
        put_walk(out, "records", PyList_New(0), &c, walk_records) < 0 ||
        put_walk(out, "errors", PyDict_New(), &c, walk_errors) < 0 || put_series(out, &c) < 0 ||
        put(out, "counters", roastpy_counters_dict(agg)) < 0)
        Py_CLEAR(out);
    ctx_free(&c);
    return out;
}

/* ---- worker payload ----------------------------------------------------- */

static PyObject *payload_digests(const roast_payload *p)
{
    PyObject *dict = PyDict_New();
    for (size_t i = 0; dict && i < p->ndigests; i++) {
        const roast_digest_item *d = &p->digests[i];
        PyObject *key = Py_BuildValue("(NNNNN)", roastpy_str(d->context), roastpy_str(d->span),
                                      roastpy_str(d->prefix), roastpy_str(d->activity),
                                      roastpy_str(d->unit));
        PyObject *value = key ? PyFloat_FromDouble(d->value) : NULL;
        if (!value || PyDict_SetItem(dict, key, value) < 0)
            Py_CLEAR(dict);
        Py_XDECREF(key);
        Py_XDECREF(value);
    }
    return dict;
}

PyObject *roastpy_payload_to_dict(const roast_payload *p)
{
    return Py_BuildValue("{sisNsKsKsOsN}", "version", ROAST_PAYLOAD_VERSION, "incarnation",
                         roastpy_str(p->incarnation), "seq", (unsigned long long)p->seq,
                         "since", (unsigned long long)p->since, "full",
                         p->full ? Py_True : Py_False, "digests", payload_digests(p));
}
