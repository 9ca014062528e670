/* transition: Dask's transition hook, and the drain that applies its records.
 *
 * transition() runs on the scheduler's event loop about six times per task
 * and must stay far below a microsecond, so it allocates no Python objects:
 * states are compared by pointer against interned strings, keywords are read
 * from the dict Dask's call already built, the prefix comes from the native
 * keysplit cache keyed by the str's cached hash, and one fixed-size record
 * goes into the ring. The ring is applied to the tables by drain(), and by
 * the hook itself when it is more than 3/4 full, so records are only dropped
 * when a caller disabled that.
 *
 * Nothing here raises into Dask: a failure is cleared, counted in
 * hook_errors and in the error table under a short reason. */
#include "aggregator.h"

#include <string.h>
#include <time.h>

#define DRAIN_BATCH 256      /* records popped per ring read */
#define HOOK_TIMING_MASK 63u /* time one hook call in 64, chosen at random */

/* ---- ring -> tables ----------------------------------------------------- */

uint64_t roastpy_agg_drain(Aggregator *self)
{
    roast_event batch[DRAIN_BATCH];
    uint64_t applied = 0;
    size_t n;
    while ((n = roast_ring_pop(self->ring, batch, DRAIN_BATCH)) > 0) {
        for (size_t i = 0; i < n; i++) {
            roast_status st = roast_agg_apply(self->agg, &batch[i]);
            /* Rows refused at a cap are counted by agg itself. */
            if (st != ROAST_OK && st != ROAST_EFULL)
                roast_agg_count_error(self->agg, "drain:apply", 11, 1);
        }
        applied += n;
    }
    return applied;
}

/* ---- the transition hook ------------------------------------------------ */

static bool same_text(PyObject *a, PyObject *interned)
{
    return a == interned ||
           (PyUnicode_Check(a) && PyUnicode_GET_LENGTH(a) == PyUnicode_GET_LENGTH(interned) &&
            PyUnicode_Compare(a, interned) == 0);
}

/* A roast_task_state, or -1 when s is not a str. */
static int state_of(PyObject *s)
{
    for (int i = 1; i < ROAST_STATE_COUNT; i++)
        if (s == roastpy_n.state[i])
            return i;
    if (!PyUnicode_Check(s))
        return -1;
    for (int i = 1; i < ROAST_STATE_COUNT; i++)
        if (same_text(s, roastpy_n.state[i]))
            return i;
    return ROAST_STATE_OTHER;
}

/* key_split(key) as an interned id, like dask: exact tuples give their first
 * element, exact bytes are strict UTF-8, str (subclasses too) is split, and
 * any other hashable object is "Other". Returns a reason on failure. */
static const char *read_prefix(Aggregator *self, PyObject *key, roast_id *prefix)
{
    while (PyTuple_CheckExact(key)) {
        if (PyTuple_GET_SIZE(key) == 0)
            return "transition:empty-tuple-key";
        key = PyTuple_GET_ITEM(key, 0);
    }
    /* The tasks of a collection share their key's first element: the last one
     * (held, so its address cannot be reused) answers without a lookup. */
    if (key == self->last_key) {
        *prefix = self->last_prefix;
        return NULL;
    }
    const char *data;
    Py_ssize_t len;
    if (PyUnicode_Check(key)) {
        if (!(data = PyUnicode_AsUTF8AndSize(key, &len)))
            return "transition:bad-key";
    } else if (PyBytes_CheckExact(key)) {
        data = PyBytes_AS_STRING(key);
        len = PyBytes_GET_SIZE(key);
    } else {
        if (PyObject_Hash(key) == -1)
            return "transition:unhashable-key";
        *prefix = self->other;
        return NULL;
    }
    /* Split every time rather than cache key -> prefix: measured in a running
     * scheduler, whose own work evicts our memory from the CPU caches between
     * calls, any table of keys cost more in misses than the split of a key
     * whose bytes Dask has just hashed (docs/performance.md, "In a running scheduler"). */
    char small[256];
    char *buf = (size_t)len + 8 <= sizeof small ? small : PyMem_Malloc((size_t)len + 8);
    if (!buf)
        return "transition:no-memory";
    size_t n = 0;
    roast_status st =
        roast_key_split(data, (size_t)len, &roastpy_charclass, buf, (size_t)len + 8, &n);
    if (st == ROAST_OK)
        st = roast_intern_put_foldable(roast_agg_strings(self->agg), buf, n, prefix);
    if (buf != small)
        PyMem_Free(buf);
    if (st == ROAST_OK) {
        Py_XSETREF(self->last_key, Py_NewRef(key));
        self->last_prefix = *prefix;
        return NULL;
    }
    return st == ROAST_EFULL ? "transition:strings-full" : "transition:bad-key";
}

/* A keyword argument of the hook, borrowed, or NULL when absent. Dask's
 * keyword names are interned, so the dict lookup compares pointers. */
static PyObject *kwarg(PyObject *kwargs, PyObject *name)
{
    return kwargs ? PyDict_GetItemWithError(kwargs, name) : NULL;
}

static int read_number(PyObject *o, double *out)
{
    if (PyFloat_Check(o)) {
        *out = PyFloat_AS_DOUBLE(o);
        return 0;
    }
    if (PyLong_Check(o)) {
        *out = PyLong_AsDouble(o);
        return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
    }
    return -1;
}

/* One startstops entry: its kind (0 other, 1 compute, 2 transfer) and, for
 * compute and transfer, its times. Returns -1 when malformed. */
static int read_startstop(PyObject *entry, double *start, double *stop)
{
    if (!PyDict_Check(entry))
        return -1;
    PyObject *action = PyDict_GetItemWithError(entry, roastpy_n.action);
    if (!action)
        return -1;
    int kind = same_text(action, roastpy_n.compute)    ? 1
               : same_text(action, roastpy_n.transfer) ? 2
                                                       : 0;
    if (kind == 0)
        return 0;
    /* Looking up "stop" can run a key's __eq__, which may replace "start":
     * hold it. Numbers are read without running Python code. */
    PyObject *a = Py_XNewRef(PyDict_GetItemWithError(entry, roastpy_n.start));
    PyObject *b = a ? PyDict_GetItemWithError(entry, roastpy_n.stop) : NULL;
    int rc = !b || read_number(a, start) < 0 || read_number(b, stop) < 0 ? -1 : kind;
    Py_XDECREF(a);
    return rc;
}

/* Sums the "compute" and "transfer" entries of a startstops list; the event
 * is only written when every entry is well formed. A dict lookup can run
 * Python code (a key's __eq__), so the list is re-read at every step and
 * each entry held while it is read. */
static const char *read_startstops(PyObject *list, roast_event *ev)
{
    if (!PyList_Check(list) && !PyTuple_Check(list))
        return "transition:bad-startstops";
    double first = 0, last = 0, compute = 0, transfer = 0;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(list); i++) {
        PyObject *entry = Py_NewRef(PySequence_Fast_GET_ITEM(list, i));
        double a = 0, b = 0;
        int kind = read_startstop(entry, &a, &b);
        Py_DECREF(entry);
        if (kind < 0)
            return "transition:bad-startstops";
        if (kind == 2) {
            transfer += b - a;
        } else if (kind == 1) {
            compute += b - a;
            if (first == 0 || a < first)
                first = a;
            if (b > last)
                last = b;
        }
    }
    ev->start = first;
    ev->stop = last;
    ev->compute_seconds = compute;
    ev->transfer_seconds = transfer;
    return NULL;
}

static const char *read_worker(Aggregator *self, PyObject *worker, roast_id *id)
{
    if (!worker || worker == Py_None)
        return NULL;
    if (!PyUnicode_Check(worker))
        return "transition:bad-worker";
    int rc = roastpy_intern(roast_agg_strings(self->agg), worker, id);
    return rc == 0 ? NULL : rc > 0 ? "transition:strings-full" : "transition:bad-worker";
}

static const char *read_nbytes(PyObject *nbytes, uint64_t *out)
{
    if (!nbytes || nbytes == Py_None)
        return NULL;
    if (!PyLong_Check(nbytes))
        return "transition:bad-nbytes";
    unsigned long long v = PyLong_AsUnsignedLongLong(nbytes);
    if (v == (unsigned long long)-1 && PyErr_Occurred())
        return "transition:bad-nbytes";
    *out = v;
    return NULL;
}

/* Clears the exception a failed read may have left, so that the next read
 * starts clean; passes the reason through. */
static const char *cleared(const char *why)
{
    if (why)
        PyErr_Clear();
    return why;
}

/* Worker and, on processing->memory, startstops and nbytes. Every field is
 * read even when an earlier one fails; the first failure is reported. */
static const char *read_outcome(Aggregator *self, PyObject *kwargs, bool done, roast_event *ev)
{
    const char *why = cleared(read_worker(self, kwarg(kwargs, roastpy_n.worker), &ev->worker));
    if (!done)
        return why;
    /* Reading the entries runs their keys' __eq__, which may empty kwargs: hold the list. */
    PyObject *startstops = Py_XNewRef(kwarg(kwargs, roastpy_n.startstops));
    const char *why2 = startstops ? cleared(read_startstops(startstops, ev)) : NULL;
    Py_XDECREF(startstops);
    const char *why3 = cleared(read_nbytes(kwarg(kwargs, roastpy_n.nbytes), &ev->nbytes));
    return why ? why : why2 ? why2 : why3;
}

static uint64_t elapsed_ns(const struct timespec *a, const struct timespec *b)
{
    int64_t ns = (int64_t)(b->tv_sec - a->tv_sec) * 1000000000 + (b->tv_nsec - a->tv_nsec);
    return ns > 0 ? (uint64_t)ns : 0;
}

/* The hook's own drains are all timed: sampling them 1 in 64 would weigh a
 * rare, long call by chance (and the first drain of a power-of-two ring
 * always falls on a sampled call). */
static void hook_drain(Aggregator *self)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    roastpy_agg_drain(self);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    self->drain_ns += elapsed_ns(&t0, &t1);
}

/* Builds and pushes the record of one call; returns a failure reason or
 * NULL. A failure in the outcome fields or the span still records the
 * transition (with those fields zero), so one odd field does not hide the
 * task; a failure to identify the transition records nothing. *from and *to
 * get the states once known (else they keep OTHER), for the hook's profile. */
static const char *hook_record(Aggregator *self, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwargs, uint8_t *from_state, uint8_t *to_state)
{
    if (nargs < 3)
        return "transition:missing-args";
    int from = state_of(args[1]), to = state_of(args[2]);
    if (from < 0 || to < 0)
        return "transition:bad-state";
    roast_event ev;
    memset(&ev, 0, sizeof ev);
    ev.time = roastpy_now();
    ev.from = *from_state = (uint8_t)from;
    ev.to = *to_state = (uint8_t)to;
    const char *why = read_prefix(self, args[0], &ev.prefix);
    if (why)
        return why;
    if (to == ROAST_STATE_FORGOTTEN)
        why = cleared(roastpy_span_lookup_forget(&self->spans, args[0]));
    bool done = from == ROAST_STATE_PROCESSING && to == ROAST_STATE_MEMORY;
    if (done || to == ROAST_STATE_ERRED) {
        why = read_outcome(self, kwargs, done, &ev);
        const char *span_why = cleared(roastpy_span_lookup_read(
            &self->spans, roast_agg_strings(self->agg), args[0], ev.prefix, &ev.span));
        if (!why)
            why = span_why;
    }
    /* A refused push is counted by the ring (dropped_events). */
    if (roast_ring_push(self->ring, &ev) && self->auto_drain &&
        roast_ring_size(self->ring) > self->drain_above)
        hook_drain(self);
    return why;
}

static void hook_failed(Aggregator *self, const char *why)
{
    PyErr_Clear();
    self->hook_errors++;
    roast_agg_count_error(self->agg, why, strlen(why), 1);
}

/* METH_VARARGS on purpose: Dask calls plugin.transition(key, start, finish,
 * stimulus_id=..., **kwargs), which hands over a ready tuple and dict. A
 * vectorcall method would make CPython unpack that dict into a new kwnames
 * tuple and argument array on every call; this way nothing is copied. */
PyObject *roastpy_agg_transition(PyObject *op, PyObject *args, PyObject *kwargs)
{
    Aggregator *self = (Aggregator *)op;
    struct timespec t0, t1;
    uint64_t drain_ns = self->drain_ns;
    /* A fixed stride would alias with the scheduler's regular patterns (a
     * task's transitions alternate), timing some kinds never; xorshift32
     * picks the calls instead. */
    uint32_t x = self->timing_draw;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    self->timing_draw = x;
    self->hook_calls++;
    bool timed = (x & HOOK_TIMING_MASK) == 0;
    if (timed)
        clock_gettime(CLOCK_MONOTONIC, &t0);
    uint8_t from = ROAST_STATE_OTHER, to = ROAST_STATE_OTHER;
    const char *why = hook_record(self, &PyTuple_GET_ITEM(args, 0), PyTuple_GET_SIZE(args),
                                  kwargs, &from, &to);
    if (why)
        hook_failed(self, why);
    self->kind_calls[from][to]++;
    if (timed) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        uint64_t ns = elapsed_ns(&t0, &t1), spent = self->drain_ns - drain_ns + self->timer_ns;
        ns = ns > spent ? ns - spent : 0;
        self->timed_ns += ns;
        self->timed_calls++;
        self->kind_ns[from][to] += ns;
        self->kind_timed[from][to]++;
    }
    Py_RETURN_NONE;
}

/* The least time between two clock readings: what a timed call pays for
 * being timed. */
uint64_t roastpy_timer_overhead_ns(void)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 64; i++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        uint64_t ns = elapsed_ns(&t0, &t1);
        if (ns < best)
            best = ns;
    }
    return best;
}
