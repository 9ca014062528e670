/* roastpy: private declarations shared by the files of the extension
 * roastcoffea._native. Only plugin/ includes Python.h; native/ stays pure C.
 *
 * The files and their jobs: plugin/README.md. */
#ifndef ROASTPY_H
#define ROASTPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "roast/agg.h"
#include "roast/common.h"
#include "roast/intern.h"
#include "roast/keysplit.h"
#include "roast/ring.h"
#include "roast/series.h"
#include "roast/store.h"
#include "roast/wire.h"

/* Python's str.isalpha and str.split() classes, for the native keysplit. */
extern const roast_charclass roastpy_charclass;

/* Interned strings created once at import. The hook compares the objects
 * Dask passes against these by pointer before falling back to a content
 * compare, so the common case costs one load and one compare. */
typedef struct roastpy_names {
    PyObject *state[ROAST_STATE_COUNT]; /* [ROAST_STATE_OTHER] is NULL */
    PyObject *worker, *startstops, *nbytes;
    PyObject *action, *start, *stop, *compute, *transfer;
    PyObject *group, *span_id;
    PyObject *other, *dash; /* "Other", "-" */
} roastpy_names;

extern roastpy_names roastpy_n;

/* uint64_t fields are exposed as T_ULONGLONG members. */
_Static_assert(sizeof(uint64_t) == sizeof(unsigned long long), "uint64_t is not unsigned long long");

/* roastcoffea.DecodeError (a ValueError): outside bytes that do not match
 * their format. */
extern PyObject *roastpy_DecodeError;

/* Keys each key_split cache holds: dask's own key_split LRU size. */
#define KEYSPLIT_CACHE_KEYS 100000u

extern PyTypeObject roastpy_AggregatorType;
extern PyTypeObject roastpy_DigestTrackerType;
extern PyTypeObject roastpy_TaskPhasesType;
extern PyTypeObject roastpy_PhaseHookType;
extern PyTypeObject roastpy_AroundType;

/* phaseclock.c: the clock of the task this thread runs (module functions),
 * and the phase and codec names the module exports as PHASES and CODECS. */
PyObject *roastpy_current_task(PyObject *module, PyObject *unused);
PyObject *roastpy_set_current_task(PyObject *module, PyObject *task);
int roastpy_phases_init(PyObject *module);
void roastpy_phases_free(void);

/* Scheduler clock: seconds since the epoch, like time.time(). */
double roastpy_now(void);

/* Interns the UTF-8 of a str. Returns 0 on success; -1 with a Python
 * exception set (not a str, not encodable, no memory); 1 when the table is
 * at its bound (the table counted the overflow; no exception). */
int roastpy_intern(roast_intern *strings, PyObject *str, roast_id *id);

/* roastpy.c: raises the Python exception matching a failed native status
 * (DecodeError for malformed input). msg (may be
 * NULL or empty) is the native message; the status text is used without it.
 * Always returns NULL. */
PyObject *roastpy_raise(roast_status status, const char *msg);

/* A new str from native UTF-8; undecodable bytes become U+FFFD, so data from
 * outside can always be shown. */
PyObject *roastpy_str(roast_str s);

/* A new str from malloc'd UTF-8 the native side wrote (a state file), which
 * it frees; NULL text is the native side's out-of-memory. */
PyObject *roastpy_take_text(char *text);

/* span_lookup.c: how the hook finds the span of a finished task in the
 * scheduler's tasks and task_groups dicts, or in the runs dict where the
 * scheduler plugin placed a task in its run's span. Owned by an Aggregator. */
typedef struct roastpy_span_lookup {
    PyObject *tasks;       /* scheduler.tasks, or NULL: no spans */
    PyObject *task_groups; /* scheduler.task_groups, or NULL: tasks only */
    PyObject *runs;        /* {key: span id} that wins over the group's, or NULL */
    PyObject **names;      /* str of each prefix id looked up, made once */
    size_t names_len;
    PyObject *last_span;   /* last span id str seen, and its id: tasks of a */
    roast_id last_span_id; /* group finish together, so this spares interning */
} roastpy_span_lookup;

/* Sets the dicts (None for none); -1 with TypeError for anything else. */
int roastpy_span_lookup_set(roastpy_span_lookup *lookup, PyObject *tasks, PyObject *task_groups,
                            PyObject *runs);

/* Forgets a forgotten task's entry in the runs dict. Returns NULL, or a
 * failure reason with a Python exception possibly set. */
const char *roastpy_span_lookup_forget(roastpy_span_lookup *lookup, PyObject *key);

/* The span id of a task that finished or erred, interned into *span (left
 * alone when the task has no span). Returns NULL, or a failure reason with a
 * Python exception possibly set. */
const char *roastpy_span_lookup_read(roastpy_span_lookup *lookup, roast_intern *strings,
                                     PyObject *key, roast_id prefix, roast_id *span);
int roastpy_span_lookup_traverse(roastpy_span_lookup *lookup, visitproc visit, void *arg);
void roastpy_span_lookup_clear(roastpy_span_lookup *lookup);

/* convert.c: the snapshot layout of docs/architecture.md ("The snapshot as
 * Python data") for an aggregator (taken_at NaN gives None: a state file has
 * no time of its own), and the self-report on its own. */
PyObject *roastpy_agg_to_dict(const roast_agg *agg, double taken_at);
PyObject *roastpy_counters_dict(const roast_agg *agg);
/* The records of the given spans as the snapshot lists them; *last is raised
 * to the newest one's number (roast_record.number). */
PyObject *roastpy_records_of(const roast_agg *agg, const roast_id *spans, size_t nspans,
                             uint64_t *last);
/* {(worker or prefix, activity, unit): value} of one context's digests,
 * summed over spans (roast_agg_each_digest_group). */
PyObject *roastpy_digest_totals(const roast_agg *agg, roast_id context, roast_digest_field by);

/* convert.c: a decoded worker payload as
 * {"version", "incarnation", "seq", "since", "full",
 *  "digests": {(context, span, prefix, activity, unit): value}}. */
PyObject *roastpy_payload_to_dict(const roast_payload *payload);

/* decode.c: the module-level decoders. */
PyObject *roastpy_decode_snapshot(PyObject *module, PyObject *data);
PyObject *roastpy_decode_payload(PyObject *module, PyObject *data);
PyObject *roastpy_state_from_json(PyObject *module, PyObject *text);
PyObject *roastpy_decode_exit_snapshot(PyObject *module, PyObject *data);

#endif
