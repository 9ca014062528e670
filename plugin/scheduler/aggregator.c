/* Aggregator: the scheduler side of the engine as a Python type (its
 * construction, methods and self-report). The transition hook it exposes is
 * in transition.c. */
#include "aggregator.h"

#include <math.h>
#include <string.h>
#include <time.h>


/* Copies the hook's own counts into the aggregator's self-report. */
static void sync_counters(Aggregator *self)
{
    roast_agg_counters *c = roast_agg_counters_mut(self->agg);
    c->dropped_events = roast_ring_dropped(self->ring);
    c->hook_calls = self->hook_calls;
    c->hook_errors = self->hook_errors;
    c->hook_ns_per_call = self->timed_calls ? (double)self->timed_ns / (double)self->timed_calls +
                                                  (double)self->drain_ns / (double)self->hook_calls
                                            : NAN;
}

/* ---- construction ------------------------------------------------------- */

static int agg_traverse(PyObject *op, visitproc visit, void *arg)
{
    return roastpy_span_lookup_traverse(&((Aggregator *)op)->spans, visit, arg);
}

static int agg_clear(PyObject *op)
{
    Aggregator *self = (Aggregator *)op;
    roastpy_span_lookup_clear(&self->spans);
    Py_CLEAR(self->last_key);
    return 0;
}

static void agg_dealloc(PyObject *op)
{
    Aggregator *self = (Aggregator *)op;
    PyObject_GC_UnTrack(op);
    agg_clear(op);
    if (self->ring)
        roast_ring_free(self->ring);
    if (self->agg)
        roast_agg_free(self->agg);
    Py_TYPE(op)->tp_free(op);
}

static PyObject *agg_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"ring_capacity", "series_cap_bytes", "record_cap_bytes", "started",
                             "auto_drain", NULL};
    Py_ssize_t ring_capacity = 131072, series_cap = 64 << 20, record_cap = 64 << 20;
    PyObject *started = Py_None;
    int auto_drain = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$nnnOp:Aggregator", kwlist, &ring_capacity,
                                     &series_cap, &record_cap, &started, &auto_drain))
        return NULL;
    if (ring_capacity < 1 || ring_capacity > (1 << 30)) {
        PyErr_SetString(PyExc_ValueError, "ring_capacity must be in 1 .. 2**30");
        return NULL;
    }
    if (series_cap < (64 << 10) || record_cap < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "series_cap_bytes must be >= 65536 and record_cap_bytes >= 0");
        return NULL;
    }
    double t_started = started == Py_None ? roastpy_now() : PyFloat_AsDouble(started);
    if (t_started == -1.0 && PyErr_Occurred())
        return NULL;
    if (!isfinite(t_started)) {
        PyErr_SetString(PyExc_ValueError, "started must be a finite time");
        return NULL;
    }

    roast_agg_limits limits;
    roast_agg_limits_default(&limits);
    limits.series_cap_bytes = (size_t)series_cap;
    limits.record_cap_bytes = (size_t)record_cap;
    Aggregator *self = (Aggregator *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    self->agg = roast_agg_new(&limits, t_started);
    self->ring = roast_ring_new((uint32_t)ring_capacity);
    if (!self->agg || !self->ring ||
        roast_intern_put(roast_agg_strings(self->agg), "Other", 5, &self->other) != ROAST_OK) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    self->drain_above = (size_t)roast_ring_capacity(self->ring) / 4 * 3;
    self->auto_drain = auto_drain;
    self->timer_ns = roastpy_timer_overhead_ns();
    self->timing_draw = 2463534242u; /* any nonzero seed */
    return (PyObject *)self;
}

/* ---- methods ------------------------------------------------------------ */

static PyObject *agg_set_span_lookup(PyObject *op, PyObject *args)
{
    PyObject *tasks, *task_groups = Py_None, *runs = Py_None;
    if (!PyArg_ParseTuple(args, "O|OO:set_span_lookup", &tasks, &task_groups, &runs) ||
        roastpy_span_lookup_set(&((Aggregator *)op)->spans, tasks, task_groups, runs) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *agg_drain_py(PyObject *op, PyObject *unused)
{
    (void)unused;
    return PyLong_FromUnsignedLongLong(roastpy_agg_drain((Aggregator *)op));
}

/* Interns a str argument for a non-hook method: a full table is counted by
 * the table and the caller skips the update (returns 1). */
static int intern_arg(Aggregator *self, PyObject *s, roast_id *id)
{
    return roastpy_intern(roast_agg_strings(self->agg), s, id);
}

static PyObject *status_result(roast_status st)
{
    if (st == ROAST_OK || st == ROAST_EFULL) /* EFULL: refused and counted */
        Py_RETURN_NONE;
    return roastpy_raise(st, NULL);
}

static PyObject *agg_worker_seen(PyObject *op, PyObject *args)
{
    Aggregator *self = (Aggregator *)op;
    PyObject *address, *name;
    double now;
    if (!PyArg_ParseTuple(args, "UOd:worker_seen", &address, &name, &now))
        return NULL;
    PyObject *name_str = PyObject_Str(name);
    if (!name_str)
        return NULL;
    roast_id addr_id, name_id;
    int rc = intern_arg(self, address, &addr_id);
    if (rc == 0)
        rc = intern_arg(self, name_str, &name_id);
    Py_DECREF(name_str);
    if (rc != 0)
        return rc < 0 ? NULL : Py_NewRef(Py_None);
    return status_result(roast_agg_worker_seen(self->agg, addr_id, name_id, now));
}

static PyObject *agg_worker_removed(PyObject *op, PyObject *args)
{
    Aggregator *self = (Aggregator *)op;
    PyObject *address;
    double now;
    if (!PyArg_ParseTuple(args, "Ud:worker_removed", &address, &now))
        return NULL;
    roast_id addr_id;
    int rc = intern_arg(self, address, &addr_id);
    if (rc != 0)
        return rc < 0 ? NULL : Py_NewRef(Py_None);
    return status_result(roast_agg_worker_removed(self->agg, addr_id, now));
}

/* A tuple copy of the values: an element's __float__ may change the caller's list. */
static int read_sample(PyObject *values, roast_sample *sample)
{
    PyObject *seq = PySequence_Tuple(values);
    if (!seq)
        return -1;
    int rc = 0;
    if (PyTuple_GET_SIZE(seq) != ROAST_NCOLS) {
        PyErr_Format(PyExc_ValueError, "values must hold %d floats (roast_column order), not %zd",
                     ROAST_NCOLS, PyTuple_GET_SIZE(seq));
        rc = -1;
    }
    for (int i = 0; rc == 0 && i < ROAST_NCOLS; i++) {
        PyObject *v = PyTuple_GET_ITEM(seq, i);
        sample->v[i] = v == Py_None ? NAN : PyFloat_AsDouble(v);
        if (sample->v[i] == -1.0 && PyErr_Occurred())
            rc = -1;
    }
    Py_DECREF(seq);
    return rc;
}

static PyObject *agg_sample(PyObject *op, PyObject *args)
{
    Aggregator *self = (Aggregator *)op;
    PyObject *address, *values;
    roast_sample sample;
    if (!PyArg_ParseTuple(args, "UdO:sample", &address, &sample.time, &values))
        return NULL;
    if (read_sample(values, &sample) < 0)
        return NULL;
    roast_id addr_id;
    int rc = intern_arg(self, address, &addr_id);
    if (rc != 0)
        return rc < 0 ? NULL : Py_NewRef(Py_None);
    roast_status st = roast_series_append(roast_agg_series(self->agg), addr_id, &sample);
    /* EINVAL: time went backwards for this worker; the series counted it. */
    return st == ROAST_EINVAL ? Py_NewRef(Py_None) : status_result(st);
}

/* Payloads come from other processes: anything malformed, including a value
 * that is not bytes at all, is counted and never raised. */
static PyObject *agg_add_record(PyObject *op, PyObject *args)
{
    Aggregator *self = (Aggregator *)op;
    PyObject *address, *span = Py_None;
    Py_buffer view;
    double now;
    int collected = 1;
    if (!PyArg_ParseTuple(args, "Uy*d|Op:add_record", &address, &view, &now, &span, &collected))
        return NULL;
    if (span != Py_None && !PyUnicode_Check(span)) {
        PyBuffer_Release(&view);
        return PyErr_Format(PyExc_TypeError, "span must be str or None, not %.100s",
                            Py_TYPE(span)->tp_name);
    }
    roast_id addr_id, span_id = ROAST_ID_EMPTY;
    int rc = intern_arg(self, address, &addr_id);
    if (rc == 0 && span != Py_None)
        rc = intern_arg(self, span, &span_id);
    roast_status st = ROAST_EFULL;
    if (rc == 0)
        st = (collected ? roast_agg_add_sent_record : roast_agg_add_uncollected_record)(
            self->agg, addr_id, span_id, now, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    if (rc < 0)
        return NULL;
    if (st == ROAST_ENOMEM)
        return PyErr_NoMemory();
    return PyBool_FromLong(st == ROAST_OK);
}

/* Interns the labels of one (activity, unit) pair into key; 0, -1 with an
 * exception, 1 when the table is full (counted). */
static int intern_label_pair(Aggregator *self, PyObject *pair, roast_digest_key *key)
{
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 ||
        !PyUnicode_Check(PyTuple_GET_ITEM(pair, 0)) || !PyUnicode_Check(PyTuple_GET_ITEM(pair, 1))) {
        PyErr_SetString(PyExc_TypeError, "each label must be an (activity, unit) tuple of str");
        return -1;
    }
    int rc = intern_arg(self, PyTuple_GET_ITEM(pair, 0), &key->activity);
    return rc != 0 ? rc : intern_arg(self, PyTuple_GET_ITEM(pair, 1), &key->unit);
}

/* add_digests(worker, context, span, prefix, labels, values): a task's values
 * added to its digests (roast_agg_add_digest), label by label. */
static PyObject *agg_add_digests(PyObject *op, PyObject *args)
{
    Aggregator *self = (Aggregator *)op;
    PyObject *worker, *context, *span, *prefix, *labels, *values;
    if (!PyArg_ParseTuple(args, "UUOUOO:add_digests", &worker, &context, &span, &prefix, &labels,
                          &values))
        return NULL;
    if (span != Py_None && !PyUnicode_Check(span))
        return PyErr_Format(PyExc_TypeError, "span must be str or None, not %.100s",
                            Py_TYPE(span)->tp_name);
    PyObject *labs = PySequence_Fast(labels, "labels must be a sequence");
    PyObject *vals = labs ? PySequence_Fast(values, "values must be a sequence") : NULL;
    PyObject *result = NULL;
    if (!vals)
        goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(labs);
    if (PySequence_Fast_GET_SIZE(vals) != n) {
        PyErr_Format(PyExc_ValueError, "%zd labels for %zd values", n,
                     PySequence_Fast_GET_SIZE(vals));
        goto done;
    }
    roast_digest_key key = {.span = ROAST_ID_EMPTY};
    int rc = intern_arg(self, worker, &key.worker);
    if (rc == 0)
        rc = intern_arg(self, context, &key.context);
    if (rc == 0 && span != Py_None)
        rc = intern_arg(self, span, &key.span);
    if (rc == 0)
        rc = intern_arg(self, prefix, &key.prefix);
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        double value = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(vals, i));
        if (value == -1.0 && PyErr_Occurred()) {
            rc = -1;
            break;
        }
        rc = intern_label_pair(self, PySequence_Fast_GET_ITEM(labs, i), &key);
        if (rc == 0 && roast_agg_add_digest(self->agg, &key, value) == ROAST_ENOMEM) {
            PyErr_NoMemory();
            rc = -1;
        }
    }
    if (rc >= 0) /* a full table or row cap is counted by the aggregator */
        result = Py_NewRef(Py_None);
done:
    Py_XDECREF(labs);
    Py_XDECREF(vals);
    return result;
}

static PyObject *agg_ingest(PyObject *op, PyObject *args)
{
    Aggregator *self = (Aggregator *)op;
    PyObject *address, *payload;
    double now;
    if (!PyArg_ParseTuple(args, "UOd:ingest", &address, &payload, &now))
        return NULL;
    roast_id addr_id;
    int rc = intern_arg(self, address, &addr_id);
    if (rc != 0)
        return rc < 0 ? NULL : Py_NewRef(Py_False);
    Py_buffer view;
    if (PyObject_GetBuffer(payload, &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        roast_agg_counters_mut(self->agg)->payload_errors++;
        roast_agg_count_error(self->agg, "ingest:not-bytes", 16, 1);
        Py_RETURN_FALSE;
    }
    bool needs_flush = false;
    char err[256] = "";
    roast_status st = roast_agg_ingest_payload(self->agg, addr_id, now, view.buf,
                                                (size_t)view.len, &needs_flush, err, sizeof err);
    PyBuffer_Release(&view);
    if (st == ROAST_ENOMEM)
        return PyErr_NoMemory();
    return PyBool_FromLong(st == ROAST_OK && needs_flush);
}

static PyObject *agg_set_span(PyObject *op, PyObject *args)
{
    Aggregator *self = (Aggregator *)op;
    PyObject *span, *parent, *name;
    if (!PyArg_ParseTuple(args, "UOO:set_span", &span, &parent, &name))
        return NULL;
    if (parent != Py_None && !PyUnicode_Check(parent))
        return PyErr_Format(PyExc_TypeError, "parent must be a str or None, not %.100s",
                            Py_TYPE(parent)->tp_name);
    if (PyUnicode_Check(name))
        return PyErr_Format(PyExc_TypeError, "name must be a tuple of str, not str");
    PyObject *sep = PyUnicode_FromOrdinal(0x1f);
    PyObject *joined = sep ? PyUnicode_Join(sep, name) : NULL;
    Py_XDECREF(sep);
    if (!joined)
        return NULL;
    roast_id span_id, parent_id = ROAST_ID_EMPTY, name_id;
    int rc = intern_arg(self, span, &span_id);
    if (rc == 0 && parent != Py_None)
        rc = intern_arg(self, parent, &parent_id);
    if (rc == 0)
        rc = intern_arg(self, joined, &name_id);
    Py_DECREF(joined);
    if (rc != 0)
        return rc < 0 ? NULL : Py_NewRef(Py_None);
    return status_result(roast_agg_set_span(self->agg, span_id, parent_id, name_id));
}

static PyObject *agg_count_error(PyObject *op, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"where", "n", NULL};
    Aggregator *self = (Aggregator *)op;
    const char *where;
    Py_ssize_t len, n = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "s#|n:count_error", kwlist, &where, &len, &n))
        return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "n must be >= 0");
        return NULL;
    }
    return status_result(roast_agg_count_error(self->agg, where, (size_t)len, (uint64_t)n));
}

/* Span id strings -> ids for the snapshot filter. Ids the aggregator never
 * saw cannot match a row and are left out, and so is "" (no span is not a
 * span). *ids is PyMem memory, the caller's to free; on failure (-1, with an
 * exception) it is freed and NULL. */
static int build_filter(Aggregator *self, PyObject *spans, roast_snapshot_filter *f,
                        roast_id **ids)
{
    *ids = NULL;
    f->spans = NULL;
    f->nspans = 0;
    if (spans == Py_None)
        return 0;
    if (PyUnicode_Check(spans)) {
        PyErr_SetString(PyExc_TypeError, "spans must be a list of span ids or None, not str");
        return -1;
    }
    PyObject *seq = PySequence_Fast(spans, "spans must be a list of span ids or None");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    *ids = PyMem_Malloc((size_t)(n ? n : 1) * sizeof **ids);
    if (!*ids) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    const roast_intern *strings = roast_agg_strings_const(self->agg);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        Py_ssize_t len;
        const char *utf8 = PyUnicode_Check(item) ? PyUnicode_AsUTF8AndSize(item, &len) : NULL;
        if (!utf8) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "span ids must be str, not %.100s",
                             Py_TYPE(item)->tp_name);
            Py_DECREF(seq);
            PyMem_Free(*ids);
            *ids = NULL;
            return -1;
        }
        roast_id id;
        if (len && roast_intern_find(strings, utf8, (size_t)len, &id))
            (*ids)[f->nspans++] = id;
    }
    f->spans = *ids;
    Py_DECREF(seq);
    return 0;
}

/* Span ids the aggregator never saw hold no record: build_filter leaves them out. */
static PyObject *agg_release_records(PyObject *op, PyObject *spans)
{
    Aggregator *self = (Aggregator *)op;
    roast_snapshot_filter filter;
    roast_id *ids;
    if (build_filter(self, spans, &filter, &ids) < 0)
        return NULL;
    size_t released = roast_agg_release_records(self->agg, filter.spans, filter.nspans);
    PyMem_Free(ids);
    return PyLong_FromSize_t(released);
}

static PyObject *agg_records_dropped_in(PyObject *op, PyObject *spans)
{
    Aggregator *self = (Aggregator *)op;
    roast_snapshot_filter filter;
    roast_id *ids;
    if (build_filter(self, spans, &filter, &ids) < 0)
        return NULL;
    uint64_t dropped = roast_agg_records_dropped_in(self->agg, filter.spans, filter.nspans);
    PyMem_Free(ids);
    return PyLong_FromUnsignedLongLong(dropped);
}

static PyObject *agg_ack_records(PyObject *op, PyObject *args)
{
    Aggregator *self = (Aggregator *)op;
    PyObject *spans;
    unsigned long long acked;
    if (!PyArg_ParseTuple(args, "OK:ack_records", &spans, &acked))
        return NULL;
    roast_snapshot_filter filter;
    roast_id *ids;
    if (build_filter(self, spans, &filter, &ids) < 0)
        return NULL;
    size_t freed = roast_agg_ack_records(self->agg, filter.spans, filter.nspans, acked);
    PyMem_Free(ids);
    return PyLong_FromSize_t(freed);
}

/* A collector's stream: drops what it acknowledged, returns what is left of its spans. */
static PyObject *agg_stream_records(PyObject *op, PyObject *args)
{
    Aggregator *self = (Aggregator *)op;
    PyObject *spans;
    unsigned long long acked;
    if (!PyArg_ParseTuple(args, "OK:stream_records", &spans, &acked))
        return NULL;
    roast_snapshot_filter filter;
    roast_id *ids;
    if (build_filter(self, spans, &filter, &ids) < 0)
        return NULL;
    roast_agg_ack_records(self->agg, filter.spans, filter.nspans, acked);
    uint64_t last = acked;
    PyObject *records = roastpy_records_of(self->agg, filter.spans, filter.nspans, &last);
    PyMem_Free(ids);
    return records ? Py_BuildValue("(NK)", records, (unsigned long long)last) : NULL;
}

static PyObject *agg_expire_records(PyObject *op, PyObject *arg)
{
    Aggregator *self = (Aggregator *)op;
    double before = PyFloat_AsDouble(arg);
    if (before == -1.0 && PyErr_Occurred())
        return NULL;
    return PyLong_FromSize_t(roast_agg_expire_records(self->agg, before));
}

/* Drains the ring, then encodes the filtered snapshot. */
static PyObject *agg_encode(Aggregator *self, PyObject *spans, double t_from, double t_to,
                            double now)
{
    roast_snapshot_filter filter = {NULL, 0, t_from, t_to};
    roast_id *ids;
    if (build_filter(self, spans, &filter, &ids) < 0)
        return NULL;
    roastpy_agg_drain(self);
    sync_counters(self);
    roast_buf buf = {NULL, 0, 0};
    roast_status st = roast_wire_encode_snapshot(self->agg, &filter, now, &buf);
    PyMem_Free(ids);
    PyObject *bytes = st == ROAST_OK ? PyBytes_FromStringAndSize(buf.data, (Py_ssize_t)buf.len)
                                     : roastpy_raise(st, NULL);
    roast_buf_free(&buf);
    return bytes;
}

static PyObject *agg_snapshot(PyObject *op, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"spans", "t_from", "t_to", "now", NULL};
    PyObject *spans = Py_None, *now = Py_None;
    double t_from = 0.0, t_to = 0.0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|OddO:snapshot", kwlist, &spans, &t_from,
                                     &t_to, &now))
        return NULL;
    double t_now = now == Py_None ? roastpy_now() : PyFloat_AsDouble(now);
    if (t_now == -1.0 && PyErr_Occurred())
        return NULL;
    return agg_encode((Aggregator *)op, spans, t_from, t_to, t_now);
}

/* Goes through the wire format on purpose: to_dict(...) is by construction
 * what a client decodes from snapshot(...). */
static PyObject *agg_to_dict(PyObject *op, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"spans", "t_from", "t_to", NULL};
    PyObject *spans = Py_None;
    double t_from = 0.0, t_to = 0.0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|Odd:to_dict", kwlist, &spans, &t_from, &t_to))
        return NULL;
    PyObject *bytes = agg_encode((Aggregator *)op, spans, t_from, t_to, roastpy_now());
    if (!bytes)
        return NULL;
    PyObject *dict = roastpy_decode_snapshot(NULL, bytes);
    Py_DECREF(bytes);
    return dict;
}

static PyObject *agg_digest_totals(PyObject *op, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"context", "by", NULL};
    Aggregator *self = (Aggregator *)op;
    const char *context, *by;
    Py_ssize_t len;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "s#s:digest_totals", kwlist, &context, &len,
                                     &by))
        return NULL;
    roast_digest_field field;
    if (strcmp(by, "prefix") == 0)
        field = ROAST_DIGESTS_BY_PREFIX;
    else if (strcmp(by, "worker") == 0)
        field = ROAST_DIGESTS_BY_WORKER;
    else if (strcmp(by, "span") == 0)
        field = ROAST_DIGESTS_BY_SPAN;
    else
        return PyErr_Format(PyExc_ValueError, "by must be 'prefix', 'worker' or 'span', not '%s'",
                            by);
    roast_id id;
    if (!roast_intern_find(roast_agg_strings_const(self->agg), context, (size_t)len, &id))
        return PyDict_New(); /* a context no payload named */
    return roastpy_digest_totals(self->agg, id, field);
}

/* "from->to" of a transition kind; OTHER is a state this build does not name. */
static PyObject *kind_name(int from, int to)
{
    PyObject *a = from ? roastpy_n.state[from] : NULL, *b = to ? roastpy_n.state[to] : NULL;
    return PyUnicode_FromFormat("%U->%U", a ? a : roastpy_n.other, b ? b : roastpy_n.other);
}

static PyObject *kind_entry(const Aggregator *self, int from, int to)
{
    uint64_t timed = self->kind_timed[from][to];
    PyObject *ns = timed ? PyFloat_FromDouble((double)self->kind_ns[from][to] / (double)timed)
                         : Py_NewRef(Py_None);
    if (!ns)
        return NULL;
    return Py_BuildValue("{s:K,s:K,s:N}", "calls", (unsigned long long)self->kind_calls[from][to],
                         "timed", (unsigned long long)timed, "ns_per_call", ns);
}

/* The hook's cost per transition kind, measured where it is paid: one call
 * in 64 is timed, drains excluded; the drains the hook made are the entry
 * "drains", spread over all calls. Kinds never called are left out. */
static PyObject *agg_hook_profile(PyObject *op, PyObject *unused)
{
    Aggregator *self = (Aggregator *)op;
    (void)unused;
    PyObject *out = PyDict_New();
    for (int from = 0; out && from < ROAST_STATE_COUNT; from++) {
        for (int to = 0; to < ROAST_STATE_COUNT; to++) {
            if (!self->kind_calls[from][to])
                continue;
            PyObject *name = kind_name(from, to), *entry = name ? kind_entry(self, from, to) : NULL;
            if (!entry || PyDict_SetItem(out, name, entry) < 0)
                Py_CLEAR(out);
            Py_XDECREF(name);
            Py_XDECREF(entry);
            if (!out)
                break;
        }
    }
    /* The ring drains the hook made when the ring filled, spread over all calls. */
    PyObject *drains = out ? Py_BuildValue("{s:K,s:K,s:d}", "calls",
                                           (unsigned long long)self->hook_calls, "timed",
                                           (unsigned long long)self->hook_calls, "ns_per_call",
                                           self->hook_calls ? (double)self->drain_ns /
                                                                  (double)self->hook_calls
                                                            : 0.0)
                           : NULL;
    if (out && (!drains || PyDict_SetItemString(out, "drains", drains) < 0))
        Py_CLEAR(out);
    Py_XDECREF(drains);
    return out;
}

static PyObject *agg_to_json(PyObject *op, PyObject *unused)
{
    Aggregator *self = (Aggregator *)op;
    (void)unused;
    roastpy_agg_drain(self);
    sync_counters(self);
    return roastpy_take_text(roast_store_to_json(self->agg));
}

/* ---- properties --------------------------------------------------------- */

static int set_u64(PyObject *dict, const char *name, uint64_t v)
{
    PyObject *o = PyLong_FromUnsignedLongLong(v);
    int rc = o ? PyDict_SetItemString(dict, name, o) : -1;
    Py_XDECREF(o);
    return rc;
}

/* The snapshot's counters plus what only the live object knows: the ring
 * (pushed, pending, capacity). Does not drain. */
static PyObject *agg_get_counters(PyObject *op, void *closure)
{
    Aggregator *self = (Aggregator *)op;
    (void)closure;
    sync_counters(self);
    PyObject *dict = roastpy_counters_dict(self->agg);
    if (!dict)
        return NULL;
    if (set_u64(dict, "ring_pushed", roast_ring_pushed(self->ring)) < 0 ||
        set_u64(dict, "ring_pending", roast_ring_size(self->ring)) < 0 ||
        set_u64(dict, "ring_capacity", roast_ring_capacity(self->ring)) < 0) {
        Py_DECREF(dict);
        return NULL;
    }
    return dict;
}

static PyMethodDef agg_methods[] = {
    {"transition", (PyCFunction)(void (*)(void))roastpy_agg_transition, METH_VARARGS | METH_KEYWORDS,
     "transition($self, key, start, finish, *args, **kwargs)\n--\n\n"
     "Dask's SchedulerPlugin.transition; records one event. Never raises."},
    {"set_span_lookup", agg_set_span_lookup, METH_VARARGS,
     "set_span_lookup($self, tasks, task_groups=None, runs=None, /)\n--\n\n"
     "The scheduler's tasks and task_groups dicts: a finished task's span is\n"
     "tasks[key].group.span_id, found through task_groups when it is given,\n"
     "unless runs maps the key to a span id; a forgotten task leaves runs."},
    {"drain", agg_drain_py, METH_NOARGS, "drain($self, /)\n--\n\nApplies the ring's records to the tables; returns how many."},
    {"worker_seen", agg_worker_seen, METH_VARARGS,
     "worker_seen($self, address, name, now, /)\n--\n\nA worker joined (or is seen again)."},
    {"worker_removed", agg_worker_removed, METH_VARARGS,
     "worker_removed($self, address, now, /)\n--\n\nA worker left."},
    {"sample", agg_sample, METH_VARARGS,
     "sample($self, address, now, values, /)\n--\n\n"
     "14 values in roast_column order; None is not reported (NaN)."},
    {"add_digests", agg_add_digests, METH_VARARGS,
     "add_digests($self, address, context, span, prefix, labels, values, /)\n--\n\n"
     "Adds a task's values to its digests (activity, unit of each label), once:\n"
     "the phases a worker sends with the task's records. No payload reports them."},
    {"ingest", agg_ingest, METH_VARARGS,
     "ingest($self, address, payload, now, /)\n--\n\n"
     "Applies a worker payload; True when a full flush of the worker is needed.\n"
     "Malformed payloads are counted (payload_errors), never raised."},
    {"release_records", agg_release_records, METH_O,
     "release_records($self, spans, /)\n--\n\n"
     "Drops the records of these spans (their collector took them); returns how many."},
    {"add_record", agg_add_record, METH_VARARGS,
     "add_record($self, address, data, now, span=None, collected=True, /)\n--\n\n"
     "Keeps a record a worker sent once on its event stream; False when refused\n"
     "at the byte cap or the string table (counted). A record no collector\n"
     "collects is held apart, in a quarter of the cap."},
    {"ack_records", agg_ack_records, METH_VARARGS,
     "ack_records($self, spans, acked, /)\n--\n\n"
     "Drops the records of these spans numbered up to acked (their collector's\n"
     "stream has them); returns how many. Drop counts stay."},
    {"stream_records", agg_stream_records, METH_VARARGS,
     "stream_records($self, spans, acked, /)\n--\n\n"
     "A collector's stream during its run: drops the records of these spans\n"
     "numbered up to acked (it has them), then returns (records, last): the rest\n"
     "of theirs as the snapshot lists them, and the newest one's number (acked\n"
     "when there is none). Drop counts stay for the exit."},
    {"expire_records", agg_expire_records, METH_O,
     "expire_records($self, before, /)\n--\n\n"
     "Releases the uncollected records received before `before`; returns how many."},
    {"records_dropped_in", agg_records_dropped_in, METH_O,
     "records_dropped_in($self, spans, /)\n--\n\n"
     "The collected records of these spans dropped at the byte cap."},
    {"set_span", agg_set_span, METH_VARARGS,
     "set_span($self, span_id, parent, name, /)\n--\n\nA span, its parent and its name's tags."},
    {"count_error", (PyCFunction)(void (*)(void))agg_count_error, METH_VARARGS | METH_KEYWORDS,
     "count_error($self, where, n=1)\n--\n\nCount n failures in where (the error table)."},
    {"snapshot", (PyCFunction)(void (*)(void))agg_snapshot, METH_VARARGS | METH_KEYWORDS,
     "snapshot($self, spans=None, t_from=0.0, t_to=0.0, now=None)\n--\n\n"
     "Drains the ring and encodes the filtered state."},
    {"to_dict", (PyCFunction)(void (*)(void))agg_to_dict, METH_VARARGS | METH_KEYWORDS,
     "to_dict($self, spans=None, t_from=0.0, t_to=0.0)\n--\n\n"
     "decode_snapshot(snapshot(spans, t_from, t_to))."},
    {"hook_profile", agg_hook_profile, METH_NOARGS,
     "hook_profile($self, /)\n--\n\n"
     "{\"from->to\": {\"calls\", \"timed\", \"ns_per_call\"}}: the hook's own cost per\n"
     "transition kind (one call in 64 timed, drains excluded), and \"drains\": the\n"
     "ring drains the hook made, spread over all calls."},
    {"digest_totals", (PyCFunction)(void (*)(void))agg_digest_totals,
     METH_VARARGS | METH_KEYWORDS,
     "digest_totals($self, context, by)\n--\n\n"
     "{(id, activity, unit): value} of one context's digests, id the worker, the\n"
     "prefix or the span as by says ('worker', 'prefix' or 'span'), summed over the rest."},
    {"to_json", agg_to_json, METH_NOARGS, "to_json($self, /)\n--\n\nThe native state file text."},
    {NULL, NULL, 0, NULL},
};

static PyObject *agg_get_record_bytes(PyObject *op, void *closure)
{
    (void)closure;
    return PyLong_FromSize_t(roast_agg_record_bytes(((Aggregator *)op)->agg));
}

static PyGetSetDef agg_getset[] = {
    {"counters", agg_get_counters, NULL, "The self-report (dict).", NULL},
    {"record_bytes", agg_get_record_bytes, NULL,
     "Bytes of records held, as counted against record_cap_bytes.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef agg_members[] = {
    {"hook_calls", T_ULONGLONG, offsetof(Aggregator, hook_calls), READONLY,
     "Transition hook calls."},
    {"hook_errors", T_ULONGLONG, offsetof(Aggregator, hook_errors), READONLY,
     "Transition hook failures (counted)."},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject roastpy_AggregatorType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "roastcoffea._native.Aggregator",
    .tp_basicsize = sizeof(Aggregator),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Aggregator(*, ring_capacity=131072, series_cap_bytes=67108864,\n"
              "           record_cap_bytes=67108864, started=None, auto_drain=True)\n--\n\n"
              "The scheduler side of the engine: transition hook, ring, tables, series.",
    .tp_new = agg_new,
    .tp_dealloc = agg_dealloc,
    .tp_traverse = agg_traverse,
    .tp_clear = agg_clear,
    .tp_methods = agg_methods,
    .tp_getset = agg_getset,
    .tp_members = agg_members,
};
