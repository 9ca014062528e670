/* DigestTracker: the worker side. Diffs Worker.digests_total between
 * heartbeats and packs the changes into the msgpack payload of
 * native/include/roast/wire.h. (Instrumentation records do not ride here:
 * the worker plugin sends them on the worker's event stream.)
 *
 * Payload n carries every digest that changed in payloads n-window+1 .. n
 * ("since" = n - window), so the scheduler, which reads only some beats,
 * misses nothing unless it skips more than `window` of them; it then asks
 * for full_payload(). Values are cumulative and applied by assignment.
 *
 * Entries are keyed by the address of the digests_total key object, on
 * which they hold a strong reference (so the address cannot be reused);
 * Worker.digests_total only grows, so the table is bounded by that dict.
 * Labels are converted to UTF-8 once per new key.
 *
 * Everything runs under the GIL on the event loop, and no Python code runs
 * (no str(), no allocation of Python objects) between the first and the
 * last change of a payload's bookkeeping, so each call sees a consistent
 * tracker. */
#include "roastpy.h"

#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#define NLABELS 5 /* context, span, prefix, activity, unit */

typedef struct tracker_entry {
    PyObject *key;            /* strong reference; the hash key is its address */
    char *text;               /* owned: the labels' UTF-8, back to back */
    roast_str label[NLABELS]; /* views into text */
    double value;             /* last value seen */
    uint64_t changed;         /* payload number of the last change */
    bool fresh;               /* no value seen yet */
    bool skip;                /* labels with no UTF-8 form: never sent */
    UT_hash_handle hh;
} tracker_entry;

typedef struct {
    PyObject_HEAD
    PyObject *incarnation; /* str; its UTF-8 is cached by CPython in the object */
    uint64_t seq;          /* payloads made */
    uint64_t window;
    tracker_entry *entries;
} DigestTracker;

/* ---- entries ------------------------------------------------------------ */

static void entry_free(tracker_entry *e)
{
    Py_DECREF(e->key);
    free(e->text);
    free(e);
}

/* Labels of a digests_total key in payload order: (context, span, prefix,
 * activity, unit) as is, (context, activity, unit) without span and prefix.
 * Returns new references (str), with "" for the absent ones. May run Python
 * code (str() of a label). */
static int entry_labels(PyObject *key, PyObject *labels[NLABELS])
{
    static const int from3[NLABELS] = {0, -1, -1, 1, 2};
    bool five = PyTuple_GET_SIZE(key) == NLABELS;
    for (int i = 0; i < NLABELS; i++) {
        int src = five ? i : from3[i];
        PyObject *item = src < 0 ? PyUnicode_FromStringAndSize("", 0) : PyTuple_GET_ITEM(key, src);
        if (src >= 0)
            item = PyUnicode_Check(item) ? Py_NewRef(item) : PyObject_Str(item);
        if (!(labels[i] = item)) {
            while (i-- > 0)
                Py_DECREF(labels[i]);
            return -1;
        }
    }
    return 0;
}

/* A new entry for key, or NULL with an exception. An entry whose labels have
 * no UTF-8 form is marked skip, so the conversion is never retried. */
static tracker_entry *entry_build(PyObject *key)
{
    PyObject *labels[NLABELS];
    if (entry_labels(key, labels) < 0)
        return NULL;
    const char *utf8[NLABELS];
    Py_ssize_t len[NLABELS];
    size_t total = 0;
    bool skip = false;
    for (int i = 0; i < NLABELS; i++) {
        if (!(utf8[i] = PyUnicode_AsUTF8AndSize(labels[i], &len[i]))) {
            PyErr_Clear();
            skip = true;
            len[i] = 0;
        }
        total += (size_t)len[i];
    }
    tracker_entry *e = calloc(1, sizeof *e);
    char *text = e ? malloc(total ? total : 1) : NULL;
    if (!text) {
        free(e);
        e = NULL;
        PyErr_NoMemory();
    } else {
        size_t at = 0;
        for (int i = 0; i < NLABELS; i++) {
            if (len[i])
                memcpy(text + at, utf8[i], (size_t)len[i]);
            e->label[i].ptr = text + at;
            e->label[i].len = (size_t)len[i];
            at += (size_t)len[i];
        }
        e->text = text;
        e->key = Py_NewRef(key);
        e->fresh = true;
        e->skip = skip;
    }
    for (int i = 0; i < NLABELS; i++)
        Py_DECREF(labels[i]);
    return e;
}

static bool is_digest_key(PyObject *key)
{
    return PyTuple_Check(key) &&
           (PyTuple_GET_SIZE(key) == NLABELS || PyTuple_GET_SIZE(key) == 3);
}

/* Advances *pos to the next digest key of the dict; *entry is its entry in
 * the table, or NULL. Returns false past the last one. */
static bool next_digest(DigestTracker *self, PyObject *digests, Py_ssize_t *pos, PyObject **key,
                        PyObject **value, tracker_entry **entry)
{
    while (PyDict_Next(digests, pos, key, value)) {
        if (is_digest_key(*key)) {
            HASH_FIND_PTR(self->entries, key, *entry);
            return true;
        }
    }
    return false;
}

/* Pass 1: entries for keys not seen before. Runs Python code (str()), so it
 * changes nothing but the entry table, one whole entry at a time. */
static int track_new_keys(DigestTracker *self, PyObject *digests)
{
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    tracker_entry *e;
    while (next_digest(self, digests, &pos, &key, &value, &e)) {
        if (e)
            continue;
        Py_INCREF(key); /* str() may change the dict under us */
        e = entry_build(key);
        tracker_entry *again = NULL;
        if (e)
            HASH_FIND_PTR(self->entries, &key, again);
        Py_DECREF(key);
        if (!e)
            return -1;
        if (again)
            entry_free(e);
        else
            HASH_ADD_PTR(self->entries, key, e);
    }
    return 0;
}

/* Pass 2: new values, stamped with payload number seq. No Python code runs
 * here. Values that are not int or float are ignored. */
static void track_values(DigestTracker *self, PyObject *digests, uint64_t seq)
{
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    tracker_entry *e;
    while (next_digest(self, digests, &pos, &key, &value, &e)) {
        if (!e || e->skip)
            continue;
        double v;
        if (PyFloat_Check(value)) {
            v = PyFloat_AS_DOUBLE(value);
        } else if (PyLong_Check(value)) {
            v = PyLong_AsDouble(value);
            if (v == -1.0 && PyErr_Occurred()) {
                PyErr_Clear(); /* beyond a double: not a metric */
                continue;
            }
        } else {
            continue;
        }
        if (e->fresh || memcmp(&v, &e->value, sizeof v) != 0) {
            e->value = v;
            e->changed = seq;
            e->fresh = false;
        }
    }
}

/* ---- payloads ----------------------------------------------------------- */

/* Encodes payload number self->seq into buf: changed entries (or all when
 * full). Native memory only. */
static roast_status tracker_encode(DigestTracker *self, bool full, roast_buf *buf)
{
    uint64_t since = full || self->seq <= self->window ? 0 : self->seq - self->window;
    size_t n = HASH_COUNT(self->entries);
    roast_digest_item *items = malloc((n ? n : 1) * sizeof *items);
    if (!items)
        return ROAST_ENOMEM;
    size_t k = 0;
    for (tracker_entry *e = self->entries; e; e = e->hh.next) {
        if (e->skip || e->fresh || (!full && e->changed <= since))
            continue;
        items[k] = (roast_digest_item){e->label[0], e->label[1], e->label[2],
                                       e->label[3], e->label[4], e->value};
        k++;
    }
    Py_ssize_t inc_len;
    const char *inc = PyUnicode_AsUTF8AndSize(self->incarnation, &inc_len); /* cached */
    roast_payload p = {{inc, (size_t)inc_len}, self->seq, since, full, items, k};
    roast_status st = roast_wire_encode_payload(&p, buf);
    free(items);
    return st;
}

static PyObject *tracker_make(DigestTracker *self, PyObject *digests, bool full)
{
    if (!PyDict_Check(digests))
        return PyErr_Format(PyExc_TypeError, "digests_total must be a dict, not %.100s",
                            Py_TYPE(digests)->tp_name);
    if (track_new_keys(self, digests) < 0)
        return NULL;
    /* From here to the end of the bookkeeping no Python code runs. */
    self->seq++;
    track_values(self, digests, self->seq);
    roast_buf buf = {NULL, 0, 0};
    roast_status st = tracker_encode(self, full, &buf);
    PyObject *bytes = st == ROAST_OK ? PyBytes_FromStringAndSize(buf.data, (Py_ssize_t)buf.len)
                                     : roastpy_raise(st, NULL);
    roast_buf_free(&buf);
    return bytes;
}

static PyObject *tracker_payload(PyObject *op, PyObject *digests)
{
    return tracker_make((DigestTracker *)op, digests, false);
}

static PyObject *tracker_full_payload(PyObject *op, PyObject *digests)
{
    return tracker_make((DigestTracker *)op, digests, true);
}

/* ---- type --------------------------------------------------------------- */

static void entries_clear(DigestTracker *self)
{
    tracker_entry *e, *tmp;
    HASH_ITER(hh, self->entries, e, tmp) {
        HASH_DEL(self->entries, e);
        entry_free(e);
    }
}

static int tracker_traverse(PyObject *op, visitproc visit, void *arg)
{
    DigestTracker *self = (DigestTracker *)op;
    for (tracker_entry *e = self->entries; e; e = e->hh.next)
        Py_VISIT(e->key);
    return 0;
}

static int tracker_clear(PyObject *op)
{
    entries_clear((DigestTracker *)op);
    return 0;
}

static void tracker_dealloc(PyObject *op)
{
    DigestTracker *self = (DigestTracker *)op;
    PyObject_GC_UnTrack(op);
    entries_clear(self);
    Py_XDECREF(self->incarnation);
    Py_TYPE(op)->tp_free(op);
}

static PyObject *tracker_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"incarnation", "window", NULL};
    PyObject *incarnation;
    Py_ssize_t window = 4;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "U|n:DigestTracker", kwlist, &incarnation,
                                     &window))
        return NULL;
    if (window < 1) {
        PyErr_SetString(PyExc_ValueError, "window must be >= 1");
        return NULL;
    }
    if (!PyUnicode_AsUTF8AndSize(incarnation, NULL))
        return NULL;
    DigestTracker *self = (DigestTracker *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    self->incarnation = Py_NewRef(incarnation);
    self->window = (uint64_t)window;
    return (PyObject *)self;
}

static PyObject *tracker_get_window(PyObject *op, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLongLong(((DigestTracker *)op)->window);
}

static int tracker_set_window(PyObject *op, PyObject *value, void *closure)
{
    (void)closure;
    if (!value) {
        PyErr_SetString(PyExc_AttributeError, "window cannot be deleted");
        return -1;
    }
    Py_ssize_t w = PyNumber_AsSsize_t(value, PyExc_OverflowError);
    if (w == -1 && PyErr_Occurred())
        return -1;
    if (w < 1) {
        PyErr_SetString(PyExc_ValueError, "window must be >= 1");
        return -1;
    }
    ((DigestTracker *)op)->window = (uint64_t)w;
    return 0;
}

static PyMethodDef tracker_methods[] = {
    {"payload", tracker_payload, METH_O,
     "payload(digests_total: dict) -> bytes\n\n"
     "The digests that changed in the last `window` payloads."},
    {"full_payload", tracker_full_payload, METH_O,
     "full_payload(digests_total: dict) -> bytes\n\nEvery digest."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef tracker_getset[] = {
    {"window", tracker_get_window, tracker_set_window,
     "Payloads a change is repeated in.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef tracker_members[] = {
    {"incarnation", T_OBJECT_EX, offsetof(DigestTracker, incarnation), READONLY,
     "The worker incarnation (Worker.id)."},
    {"seq", T_ULONGLONG, offsetof(DigestTracker, seq), READONLY, "Payloads made so far."},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject roastpy_DigestTrackerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "roastcoffea._native.DigestTracker",
    .tp_basicsize = sizeof(DigestTracker),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "DigestTracker(incarnation: str, window: int = 4)"
              "\n\nThe worker side: diffs Worker.digests_total into heartbeat payloads.",
    .tp_new = tracker_new,
    .tp_dealloc = tracker_dealloc,
    .tp_traverse = tracker_traverse,
    .tp_clear = tracker_clear,
    .tp_methods = tracker_methods,
    .tp_getset = tracker_getset,
    .tp_members = tracker_members,
};
