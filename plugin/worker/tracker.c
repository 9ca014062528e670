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
 * digests_total only grows: every span adds its keys, so a long-lived
 * worker holds tens of thousands. A payload therefore reads only what can
 * have changed: the keys in `changed` (Dask's per-heartbeat digests of the
 * followed contexts, those keyed by span), the entries of other contexts
 * (few: no span in their key), and a full scan only when digests_total holds
 * a key the tracker has not accounted for. The entries with a value are kept
 * on a list, most recently changed first, so a payload walks only the
 * window's changes.
 *
 * Activities sent another way (`sent_apart`: the phases, which the worker
 * sends with each task's records so that a worker's death cannot lose them)
 * are never in a payload: the scheduler would count them twice.
 *
 * Entries are found by key in `index` (a dict: key -> the entry's address)
 * and hold a strong reference on their key. Labels are converted to UTF-8
 * once per new key.
 *
 * Everything runs under the GIL on the event loop. Python code may run while
 * keys are looked up and entries built (str() of a label, a key's __eq__);
 * none runs (no str(), no allocation of Python objects) between the first
 * and the last change of a payload's bookkeeping, so each call sees a
 * consistent tracker. */
#include "../roastpy.h"

#include <stdlib.h>
#include <string.h>

#define NLABELS 5 /* context, span, prefix, activity, unit */

typedef struct tracker_entry {
    PyObject *key;            /* strong reference */
    char *text;               /* owned: the labels' UTF-8, back to back */
    roast_str label[NLABELS]; /* views into text */
    double value;             /* last value seen */
    uint64_t changed;         /* payload number of the last change */
    struct tracker_entry *newer, *older; /* on the valued list */
    bool fresh;               /* no value seen yet (not on the list) */
    bool skip;                /* no UTF-8 form, or an activity sent apart: never sent */
    bool polled;              /* not a followed context: read at every payload */
} tracker_entry;

typedef struct {
    PyObject_HEAD
    PyObject *incarnation; /* str; its UTF-8 is cached by CPython in the object */
    PyObject *followed;    /* tuple: the contexts whose changes come in `changed` */
    PyObject *sent_apart;  /* tuple of str: activity prefixes never sent in a payload */
    uint64_t seq;          /* payloads made */
    uint64_t window;
    PyObject *index;       /* dict: digests_total key -> int, its entry's address */
    tracker_entry *recent; /* the valued list, most recently changed first */
    size_t valued;         /* entries on it */
    tracker_entry **polled; /* owned array: the entries of contexts not followed */
    size_t npolled, cap_polled;
    Py_ssize_t known;      /* len(digests_total) when its every key was last accounted for */
} DigestTracker;

/* One entry to read in a payload, and its value (a strong reference). */
typedef struct {
    tracker_entry *entry;
    PyObject *value;
} tracker_read;

typedef struct {
    tracker_read *at;
    size_t len, cap;
} read_list;

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

/* Whether an activity label starts with one of the prefixes; -1 with an
 * exception. */
static int starts_with_any(PyObject *activity, PyObject *prefixes)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(prefixes); i++) {
        Py_ssize_t hit = PyUnicode_Tailmatch(activity, PyTuple_GET_ITEM(prefixes, i), 0,
                                             PY_SSIZE_T_MAX, -1);
        if (hit != 0)
            return (int)hit;
    }
    return 0;
}

/* A new entry for key, or NULL with an exception. An entry whose labels have
 * no UTF-8 form, or whose activity is sent apart, is marked skip, so neither
 * is looked at again. */
static tracker_entry *entry_build(PyObject *key, PyObject *followed, PyObject *sent_apart)
{
    PyObject *labels[NLABELS];
    if (entry_labels(key, labels) < 0)
        return NULL;
    int apart = PyTuple_GET_SIZE(key) == NLABELS ? starts_with_any(labels[3], sent_apart) : 0;
    if (apart < 0) {
        for (int i = 0; i < NLABELS; i++)
            Py_DECREF(labels[i]);
        return NULL;
    }
    const char *utf8[NLABELS];
    Py_ssize_t len[NLABELS];
    size_t total = 0;
    bool skip = apart > 0;
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
        int follows = PyTuple_GET_SIZE(key) == NLABELS
                          ? PySequence_Contains(followed, PyTuple_GET_ITEM(key, 0))
                          : 0;
        if (follows < 0) {
            PyErr_Clear(); /* a context that does not compare: read it every time */
            follows = 0;
        }
        e->polled = !follows;
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

/* key's entry, or NULL (with an exception only when the lookup failed). */
static tracker_entry *entry_find(DigestTracker *self, PyObject *key)
{
    PyObject *address = PyDict_GetItemWithError(self->index, key);
    return address ? (tracker_entry *)PyLong_AsVoidPtr(address) : NULL;
}

/* Room on the polled list for one more entry; -1 with MemoryError. */
static int polled_reserve(DigestTracker *self)
{
    if (self->npolled < self->cap_polled)
        return 0;
    size_t cap = self->cap_polled ? 2 * self->cap_polled : 16;
    tracker_entry **grown = realloc(self->polled, cap * sizeof *grown);
    if (!grown) {
        PyErr_NoMemory();
        return -1;
    }
    self->polled = grown;
    self->cap_polled = cap;
    return 0;
}

/* Files e under key in the index, and on the polled list when it is polled;
 * -1 with an exception, e filed nowhere. */
static int entry_add(DigestTracker *self, PyObject *key, tracker_entry *e)
{
    if (e->polled && polled_reserve(self) < 0)
        return -1;
    PyObject *address = PyLong_FromVoidPtr(e);
    int st = address ? PyDict_SetItem(self->index, key, address) : -1;
    Py_XDECREF(address);
    if (st < 0 || !e->polled)
        return st;
    if (polled_reserve(self) < 0) { /* the key's __eq__ took the room meanwhile */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        if (PyDict_DelItem(self->index, key) < 0)
            PyErr_Clear();
        PyErr_Restore(type, value, tb);
        return -1;
    }
    self->polled[self->npolled++] = e;
    return 0;
}

/* key's entry, built when it is new (*built set); NULL with an exception.
 * May run Python code (str() of a label, the key's __eq__). */
static tracker_entry *entry_get(DigestTracker *self, PyObject *key, bool *built)
{
    *built = false;
    tracker_entry *e = entry_find(self, key);
    if (e || PyErr_Occurred())
        return e;
    Py_INCREF(key); /* str() may change the dict that holds it */
    e = entry_build(key, self->followed, self->sent_apart);
    tracker_entry *again = e ? entry_find(self, key) : NULL; /* built meanwhile? */
    if (e && (again || PyErr_Occurred() || entry_add(self, key, e) < 0)) {
        entry_free(e);
        e = again;
    } else if (e) {
        *built = true;
    }
    Py_DECREF(key);
    return e;
}

static int reads_add(read_list *reads, tracker_entry *e, PyObject *value)
{
    if (reads->len == reads->cap) {
        size_t cap = reads->cap ? 2 * reads->cap : 64;
        tracker_read *grown = realloc(reads->at, cap * sizeof *grown);
        if (!grown) {
            PyErr_NoMemory();
            return -1;
        }
        reads->at = grown;
        reads->cap = cap;
    }
    reads->at[reads->len++] = (tracker_read){e, Py_NewRef(value)};
    return 0;
}

static void reads_free(read_list *reads)
{
    for (size_t i = 0; i < reads->len; i++)
        Py_DECREF(reads->at[i].value);
    free(reads->at);
}

/* Every digest key of the dict: its entry (built if new) and value to read
 * when `all`, only the new ones otherwise. Accounts for the keys it held when
 * the scan began (str() of a new label may add some: the next payload scans
 * again). */
static int scan_keys(DigestTracker *self, PyObject *digests, bool all, read_list *reads)
{
    Py_ssize_t pos = 0, size = PyDict_GET_SIZE(digests);
    PyObject *key, *value;
    while (PyDict_Next(digests, &pos, &key, &value)) {
        if (!is_digest_key(key))
            continue;
        Py_INCREF(value); /* building an entry may run Python code */
        bool built;
        tracker_entry *e = entry_get(self, key, &built);
        int st = e && (all || built) ? reads_add(reads, e, value) : 0;
        Py_DECREF(value);
        if (!e || st < 0)
            return -1;
    }
    self->known = size;
    return 0;
}

/* The keys in changed (of followed contexts), their values in digests. */
static int read_changed(DigestTracker *self, PyObject *digests, PyObject *changed,
                        read_list *reads)
{
    Py_ssize_t pos = 0;
    PyObject *key, *delta;
    while (PyDict_Next(changed, &pos, &key, &delta)) {
        if (!is_digest_key(key))
            continue;
        Py_INCREF(key);
        bool built;
        tracker_entry *e = entry_get(self, key, &built);
        PyObject *value = e ? PyDict_GetItemWithError(digests, key) : NULL;
        Py_DECREF(key);
        if (!e || (!value && PyErr_Occurred()))
            return -1;
        if (!value) /* not (yet) in digests_total: nothing to read */
            continue;
        self->known += built; /* a new key of digests_total, accounted for */
        if (reads_add(reads, e, value) < 0)
            return -1;
    }
    return 0;
}

/* Pass 1: the entries a payload reads, with their values. Runs Python code,
 * so it changes nothing but the entry table, one whole entry at a time.
 * changed NULL: every key. */
static int gather(DigestTracker *self, PyObject *digests, PyObject *changed, read_list *reads)
{
    if (!changed)
        return scan_keys(self, digests, true, reads);
    if (read_changed(self, digests, changed, reads) < 0)
        return -1;
    if (PyDict_GET_SIZE(digests) != self->known && scan_keys(self, digests, false, reads) < 0)
        return -1;
    for (size_t i = 0; i < self->npolled; i++) {
        tracker_entry *e = self->polled[i];
        PyObject *value = PyDict_GetItemWithError(digests, e->key);
        if (!value && PyErr_Occurred())
            return -1;
        if (value && reads_add(reads, e, value) < 0)
            return -1;
    }
    return 0;
}

static void valued_unlink(DigestTracker *self, tracker_entry *e)
{
    if (e->newer)
        e->newer->older = e->older;
    else
        self->recent = e->older;
    if (e->older)
        e->older->newer = e->newer;
    e->newer = e->older = NULL;
    self->valued--;
}

static void valued_push(DigestTracker *self, tracker_entry *e)
{
    e->older = self->recent;
    if (self->recent)
        self->recent->newer = e;
    self->recent = e;
    self->valued++;
}

/* Pass 2: new values, stamped with payload number seq. No Python code runs
 * here. Values that are not int or float are ignored. */
static void track_values(DigestTracker *self, const read_list *reads, uint64_t seq)
{
    for (size_t i = 0; i < reads->len; i++) {
        tracker_entry *e = reads->at[i].entry;
        PyObject *value = reads->at[i].value;
        if (e->skip)
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
        if (!e->fresh && memcmp(&v, &e->value, sizeof v) == 0)
            continue;
        if (!e->fresh)
            valued_unlink(self, e);
        valued_push(self, e);
        e->value = v;
        e->changed = seq;
        e->fresh = false;
    }
}

/* ---- payloads ----------------------------------------------------------- */

/* Encodes payload number self->seq into buf: the entries changed in the
 * window (or all when full), most recent first. Native memory only. */
static roast_status tracker_encode(DigestTracker *self, bool full, roast_buf *buf)
{
    uint64_t since = full || self->seq <= self->window ? 0 : self->seq - self->window;
    roast_digest_item *items = malloc((self->valued ? self->valued : 1) * sizeof *items);
    if (!items)
        return ROAST_ENOMEM;
    size_t k = 0;
    for (tracker_entry *e = self->recent; e && (full || e->changed > since); e = e->older)
        items[k++] = (roast_digest_item){e->label[0], e->label[1], e->label[2],
                                         e->label[3], e->label[4], e->value};
    Py_ssize_t inc_len;
    const char *inc = PyUnicode_AsUTF8AndSize(self->incarnation, &inc_len); /* cached */
    roast_payload p = {{inc, (size_t)inc_len}, self->seq, since, full, items, k};
    roast_status st = roast_wire_encode_payload(&p, buf);
    free(items);
    return st;
}

static PyObject *tracker_make(DigestTracker *self, PyObject *digests, PyObject *changed,
                              bool full)
{
    if (!PyDict_Check(digests))
        return PyErr_Format(PyExc_TypeError, "digests_total must be a dict, not %.100s",
                            Py_TYPE(digests)->tp_name);
    if (changed && !PyDict_Check(changed))
        return PyErr_Format(PyExc_TypeError, "changed must be a dict or None, not %.100s",
                            Py_TYPE(changed)->tp_name);
    read_list reads = {NULL, 0, 0};
    if (gather(self, digests, changed, &reads) < 0) {
        reads_free(&reads);
        return NULL;
    }
    /* From here to the end of the bookkeeping no Python code runs. */
    self->seq++;
    track_values(self, &reads, self->seq);
    roast_buf buf = {NULL, 0, 0};
    roast_status st = tracker_encode(self, full, &buf);
    PyObject *bytes = st == ROAST_OK ? PyBytes_FromStringAndSize(buf.data, (Py_ssize_t)buf.len)
                                     : roastpy_raise(st, NULL);
    roast_buf_free(&buf);
    reads_free(&reads);
    return bytes;
}

static PyObject *tracker_payload(PyObject *op, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"digests_total", "changed", NULL};
    PyObject *digests, *changed = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O:payload", kwlist, &digests, &changed))
        return NULL;
    return tracker_make((DigestTracker *)op, digests, changed == Py_None ? NULL : changed,
                        false);
}

static PyObject *tracker_full_payload(PyObject *op, PyObject *digests)
{
    return tracker_make((DigestTracker *)op, digests, NULL, true);
}

/* ---- type --------------------------------------------------------------- */

static void entries_clear(DigestTracker *self)
{
    PyObject *index = self->index;
    self->index = NULL;
    if (index) {
        Py_ssize_t pos = 0;
        PyObject *key, *address;
        while (PyDict_Next(index, &pos, &key, &address))
            entry_free((tracker_entry *)PyLong_AsVoidPtr(address));
        Py_DECREF(index);
    }
    free(self->polled);
    self->polled = NULL;
    self->npolled = self->cap_polled = 0;
    self->recent = NULL;
    self->valued = 0;
    self->known = 0;
}

static int tracker_traverse(PyObject *op, visitproc visit, void *arg)
{
    DigestTracker *self = (DigestTracker *)op;
    if (!self->index)
        return 0;
    Py_ssize_t pos = 0;
    PyObject *key, *address;
    while (PyDict_Next(self->index, &pos, &key, &address))
        Py_VISIT(((tracker_entry *)PyLong_AsVoidPtr(address))->key);
    Py_VISIT(self->index);
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
    Py_XDECREF(self->followed);
    Py_XDECREF(self->sent_apart);
    Py_TYPE(op)->tp_free(op);
}

static PyObject *tracker_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"incarnation", "window", "followed", "sent_apart", NULL};
    PyObject *incarnation, *followed = NULL, *sent_apart = NULL;
    Py_ssize_t window = 4;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "U|n$OO:DigestTracker", kwlist, &incarnation,
                                     &window, &followed, &sent_apart))
        return NULL;
    if (window < 1) {
        PyErr_SetString(PyExc_ValueError, "window must be >= 1");
        return NULL;
    }
    if (!PyUnicode_AsUTF8AndSize(incarnation, NULL))
        return NULL;
    sent_apart = sent_apart ? PySequence_Tuple(sent_apart) : PyTuple_New(0);
    if (!sent_apart)
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(sent_apart); i++) {
        if (!PyUnicode_Check(PyTuple_GET_ITEM(sent_apart, i))) {
            Py_DECREF(sent_apart);
            PyErr_SetString(PyExc_TypeError, "sent_apart must hold str activity prefixes");
            return NULL;
        }
    }
    followed = followed ? PySequence_Tuple(followed) : PyTuple_New(0);
    if (!followed) {
        Py_DECREF(sent_apart);
        return NULL;
    }
    DigestTracker *self = (DigestTracker *)type->tp_alloc(type, 0);
    if (!self || !(self->index = PyDict_New())) {
        Py_XDECREF(self);
        Py_DECREF(followed);
        Py_DECREF(sent_apart);
        return NULL;
    }
    self->incarnation = Py_NewRef(incarnation);
    self->followed = followed;
    self->sent_apart = sent_apart;
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
    {"payload", (PyCFunction)(void (*)(void))tracker_payload, METH_VARARGS | METH_KEYWORDS,
     "payload($self, digests_total, changed=None)\n--\n\n"
     "The digests that changed in the last `window` payloads. changed: the keys of the "
     "followed contexts changed since the last payload (Dask's spans extension's "
     "digests_total_since_heartbeat); None reads every key."},
    {"full_payload", tracker_full_payload, METH_O,
     "full_payload($self, digests_total, /)\n--\n\nEvery digest."},
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
    {"followed", T_OBJECT_EX, offsetof(DigestTracker, followed), READONLY,
     "The contexts whose changes a payload takes from `changed` (a tuple)."},
    {"sent_apart", T_OBJECT_EX, offsetof(DigestTracker, sent_apart), READONLY,
     "Prefixes of the activities never sent in a payload (a tuple)."},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject roastpy_DigestTrackerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "roastcoffea._native.DigestTracker",
    .tp_basicsize = sizeof(DigestTracker),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "DigestTracker(incarnation, window=4, *, followed=(), sent_apart=())"
              "\n--\n\nThe worker side: diffs Worker.digests_total into heartbeat payloads.",
    .tp_new = tracker_new,
    .tp_dealloc = tracker_dealloc,
    .tp_traverse = tracker_traverse,
    .tp_clear = tracker_clear,
    .tp_methods = tracker_methods,
    .tp_getset = tracker_getset,
    .tp_members = tracker_members,
};
