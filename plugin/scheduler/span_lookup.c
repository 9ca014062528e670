/* The span of a finished task: the span of its run where the scheduler
 * plugin placed it there (the runs dict), else tasks[key].group.span_id, as
 * Dask files it. Dask puts every task of a group on the span of the group's
 * first task; the runs dict holds only the tasks another run's group took,
 * so it is empty, and costs one size check, unless two runs share a group.
 *
 * Reading it through the tasks dict touches four cold objects per task (a
 * slot of a dict the size of the graph, the TaskState, its group, the span
 * id). Dask keeps every live group in task_groups under
 * distributed.utils.key_split_group(key), and for most keys that name is
 * already at hand: a tuple key's first element, or a plain str key's prefix.
 * task_groups has one entry per collection, so it stays in the cache. The
 * other key forms, and a group task_groups does not hold, take the tasks
 * dict. */
#include "../roastpy.h"

#include <stdlib.h>
#include <string.h>

int roastpy_span_lookup_set(roastpy_span_lookup *lookup, PyObject *tasks, PyObject *task_groups,
                            PyObject *runs)
{
    if ((tasks != Py_None && !PyDict_Check(tasks)) ||
        (task_groups != Py_None && !PyDict_Check(task_groups)) ||
        (runs != Py_None && !PyDict_Check(runs))) {
        PyErr_SetString(PyExc_TypeError, "tasks, task_groups and runs must be dicts or None");
        return -1;
    }
    Py_XSETREF(lookup->tasks, tasks == Py_None ? NULL : Py_NewRef(tasks));
    Py_XSETREF(lookup->task_groups, task_groups == Py_None ? NULL : Py_NewRef(task_groups));
    Py_XSETREF(lookup->runs, runs == Py_None ? NULL : Py_NewRef(runs));
    return 0;
}

static bool has_runs(const roastpy_span_lookup *lookup)
{
    return lookup->runs && PyDict_GET_SIZE(lookup->runs) > 0;
}

const char *roastpy_span_lookup_forget(roastpy_span_lookup *lookup, PyObject *key)
{
    if (!has_runs(lookup))
        return NULL;
    PyObject *span = PyDict_GetItemWithError(lookup->runs, key);
    if (!span)
        return PyErr_Occurred() ? "transition:unhashable-key" : NULL;
    return PyDict_DelItem(lookup->runs, key) < 0 ? "transition:run-forget" : NULL;
}

/* key_split_group gives a str key its prefix unless it starts with "(" or
 * "<", or is 32 hex digits ("data"). */
static bool group_is_prefix(PyObject *key)
{
    Py_ssize_t len = PyUnicode_GET_LENGTH(key);
    if (len == 0)
        return false;
    Py_UCS4 first = PyUnicode_READ_CHAR(key, 0);
    if (first == '(' || first == '<')
        return false;
    if (len != 32)
        return true;
    for (Py_ssize_t i = 0; i < len; i++) {
        Py_UCS4 c = PyUnicode_READ_CHAR(key, i);
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return true;
    }
    return false;
}

/* The str of an interned prefix, made once per prefix; borrowed. */
static PyObject *prefix_name(roastpy_span_lookup *lookup, const roast_intern *strings,
                             roast_id prefix)
{
    if (prefix >= lookup->names_len) {
        size_t len = (size_t)prefix + 1 > 2 * lookup->names_len ? (size_t)prefix + 1
                                                                : 2 * lookup->names_len;
        PyObject **names = realloc(lookup->names, len * sizeof *names);
        if (!names) {
            PyErr_NoMemory();
            return NULL;
        }
        memset(names + lookup->names_len, 0, (len - lookup->names_len) * sizeof *names);
        lookup->names = names;
        lookup->names_len = len;
    }
    if (!lookup->names[prefix])
        lookup->names[prefix] = roastpy_str(roast_intern_get(strings, prefix));
    return lookup->names[prefix];
}

/* The key's group from task_groups (new reference), or NULL: not found
 * there, or an error set. */
static PyObject *group_by_name(roastpy_span_lookup *lookup, const roast_intern *strings,
                               PyObject *key, roast_id prefix)
{
    PyObject *name = NULL;
    if (PyTuple_CheckExact(key) && PyTuple_GET_SIZE(key) > 0)
        name = PyTuple_GET_ITEM(key, 0);
    else if (PyUnicode_CheckExact(key) && group_is_prefix(key))
        name = prefix_name(lookup, strings, prefix);
    if (!name)
        return NULL;
    return Py_XNewRef(PyDict_GetItemWithError(lookup->task_groups, name));
}

/* The key's group (new reference), or NULL: the scheduler does not hold the
 * task (*why stays NULL), or the lookup failed (*why says how). */
static PyObject *find_group(roastpy_span_lookup *lookup, const roast_intern *strings,
                            PyObject *key, roast_id prefix, const char **why)
{
    if (lookup->task_groups) {
        PyObject *group = group_by_name(lookup, strings, key, prefix);
        if (group)
            return group;
        if (PyErr_Occurred()) {
            *why = "transition:span-lookup";
            return NULL;
        }
    }
    if (!lookup->tasks)
        return NULL;
    PyObject *ts = Py_XNewRef(PyDict_GetItemWithError(lookup->tasks, key));
    if (!ts) {
        if (PyErr_Occurred())
            *why = "transition:unhashable-key";
        return NULL;
    }
    PyObject *group = PyObject_GetAttr(ts, roastpy_n.group);
    Py_DECREF(ts);
    if (!group)
        *why = "transition:span-lookup";
    return group;
}

/* The task's span id (new reference), or NULL: none (*why stays NULL), or
 * the lookup failed (*why says how). */
static PyObject *find_span_id(roastpy_span_lookup *lookup, roast_intern *strings, PyObject *key,
                              roast_id prefix, const char **why)
{
    if (has_runs(lookup)) {
        PyObject *run = Py_XNewRef(PyDict_GetItemWithError(lookup->runs, key));
        if (run)
            return run;
        if (PyErr_Occurred()) {
            *why = "transition:unhashable-key";
            return NULL;
        }
    }
    PyObject *group = find_group(lookup, strings, key, prefix, why);
    if (!group)
        return NULL;
    PyObject *sid = PyObject_GetAttr(group, roastpy_n.span_id);
    Py_DECREF(group);
    if (!sid)
        *why = "transition:span-lookup";
    return sid;
}

const char *roastpy_span_lookup_read(roastpy_span_lookup *lookup, roast_intern *strings,
                                     PyObject *key, roast_id prefix, roast_id *span)
{
    const char *why = NULL;
    PyObject *sid = find_span_id(lookup, strings, key, prefix, &why);
    if (!sid)
        return why;
    if (sid == lookup->last_span) {
        *span = lookup->last_span_id;
    } else if (sid != Py_None) {
        int rc = roastpy_intern(strings, sid, span);
        if (rc == 0) {
            Py_XSETREF(lookup->last_span, Py_NewRef(sid));
            lookup->last_span_id = *span;
        } else {
            why = rc > 0 ? "transition:strings-full" : "transition:bad-span";
        }
    }
    Py_DECREF(sid);
    return why;
}

int roastpy_span_lookup_traverse(roastpy_span_lookup *lookup, visitproc visit, void *arg)
{
    Py_VISIT(lookup->tasks);
    Py_VISIT(lookup->task_groups);
    Py_VISIT(lookup->runs);
    return 0;
}

void roastpy_span_lookup_clear(roastpy_span_lookup *lookup)
{
    Py_CLEAR(lookup->tasks);
    Py_CLEAR(lookup->task_groups);
    Py_CLEAR(lookup->runs);
    Py_CLEAR(lookup->last_span);
    for (size_t i = 0; i < lookup->names_len; i++)
        Py_CLEAR(lookup->names[i]);
    free(lookup->names);
    lookup->names = NULL;
    lookup->names_len = 0;
}
