/* The phase clock's Python face: TaskPhases (one task's clock), PhaseHook
 * (a function wrapped to charge its time to a phase) and the clock of the
 * task each thread runs.
 *
 * The hooks run hundreds of times per chunk inside the user's analysis, so
 * the common calls cost no Python frame: a PhaseHook finds the thread's
 * clock in a C thread-local, reads the clocks only when the call switches
 * phase (roast/phases.h) and calls the wrapped function by vectorcall. The
 * arithmetic is native/src/phases.c; a failure of the clock (a call past
 * the stack it keeps) is counted in the task's `errors`, never raised into
 * the analysis. */
#include "roastpy.h"

#include <time.h>

#include "roast/phases.h"

/* python/roastcoffea/instrument/phases.py exports these as PHASES. */
static const char *const phase_names[ROAST_PHASE_COUNT] = {
    "open", "read", "decompress", "interpret", "user", "output", "other",
};
#define PHASE_OTHER 6

static PyObject *phase_strs[ROAST_PHASE_COUNT]; /* interned phase_names */

typedef struct {
    PyObject_HEAD
    roast_phase_clock clock;
    double started;
    long long read_bytes;
    unsigned long long passed, errors;
    PyObject *codecs; /* {codec name: [wall, cpu, bytes in, bytes out]} */
    PyObject *item;
    char output_measured, in_work;
} TaskPhases;

/* The clock of the task this thread runs (a strong reference), or NULL. */
static _Thread_local TaskPhases *thread_task;

static roast_instant clocks_now(void)
{
    struct timespec wall, cpu;
    clock_gettime(CLOCK_MONOTONIC, &wall); /* time.perf_counter's clock */
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    return (roast_instant){(double)wall.tv_sec + (double)wall.tv_nsec * 1e-9,
                           (double)cpu.tv_sec + (double)cpu.tv_nsec * 1e-9};
}

static const roast_instant no_instant = {0.0, 0.0};

/* The index of a phase name; -1 with ValueError for anything else. */
static int phase_index(PyObject *name)
{
    for (int i = 0; i < ROAST_PHASE_COUNT; i++)
        if (name == phase_strs[i])
            return i;
    for (int i = 0; i < ROAST_PHASE_COUNT; i++) {
        int eq = PyUnicode_Check(name) ? PyUnicode_Compare(name, phase_strs[i]) == 0 : 0;
        if (eq)
            return i;
    }
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "not a phase: %R", name);
    return -1;
}

static void task_enter(TaskPhases *task, int phase, bool opaque)
{
    roast_phase_clock *clock = &task->clock;
    roast_instant now = roast_phase_enter_switches(clock, phase, opaque) ? clocks_now() : no_instant;
    if (roast_phase_enter(clock, phase, opaque, now) != ROAST_OK)
        task->errors++;
}

static roast_instant task_leave(TaskPhases *task)
{
    roast_phase_clock *clock = &task->clock;
    roast_instant now = roast_phase_leave_switches(clock) ? clocks_now() : no_instant;
    roast_instant stretch;
    if (roast_phase_leave(clock, now, &stretch) != ROAST_OK)
        task->errors++;
    return stretch;
}

/* ---- TaskPhases ------------------------------------------------------------ */

static PyObject *task_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, ":TaskPhases", kwlist))
        return NULL;
    TaskPhases *task = (TaskPhases *)type->tp_alloc(type, 0);
    if (!task)
        return NULL;
    roast_instant now = clocks_now();
    task->started = now.wall;
    task->item = Py_NewRef(Py_None);
    roast_status st = roast_phase_clock_init(&task->clock, PHASE_OTHER, now);
    if (st != ROAST_OK || !(task->codecs = PyDict_New())) {
        Py_DECREF(task);
        return st != ROAST_OK ? roastpy_raise(st, NULL) : NULL;
    }
    return (PyObject *)task;
}

static int task_traverse(TaskPhases *task, visitproc visit, void *arg)
{
    Py_VISIT(task->codecs);
    Py_VISIT(task->item);
    return 0;
}

static int task_clear(TaskPhases *task)
{
    Py_CLEAR(task->codecs);
    Py_CLEAR(task->item);
    return 0;
}

static void task_dealloc(TaskPhases *task)
{
    PyObject_GC_UnTrack(task);
    task_clear(task);
    roast_phase_clock_release(&task->clock);
    Py_TYPE(task)->tp_free((PyObject *)task);
}

static PyObject *stretch_tuple(roast_instant stretch)
{
    return Py_BuildValue("(dd)", stretch.wall, stretch.cpu);
}

static PyObject *task_enter_method(TaskPhases *task, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"phase", "opaque", NULL};
    PyObject *name;
    int opaque = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|p:enter", kwlist, &name, &opaque))
        return NULL;
    int phase = phase_index(name);
    if (phase < 0)
        return NULL;
    task_enter(task, phase, opaque);
    Py_RETURN_NONE;
}

static PyObject *task_leave_method(TaskPhases *task, PyObject *unused)
{
    (void)unused;
    return stretch_tuple(task_leave(task));
}

static PyObject *task_rebase(TaskPhases *task, PyObject *name)
{
    int phase = phase_index(name);
    if (phase < 0)
        return NULL;
    roast_phase_rebase(&task->clock, phase, clocks_now());
    Py_RETURN_NONE;
}

static PyObject *task_close(TaskPhases *task, PyObject *unused)
{
    (void)unused;
    roast_phase_charge(&task->clock, clocks_now());
    return PyFloat_FromDouble(task->clock.last.wall - task->started);
}

static PyObject *seconds_dict(const double *seconds)
{
    PyObject *dict = PyDict_New();
    for (int i = 0; dict && i < ROAST_PHASE_COUNT; i++) {
        PyObject *value = PyFloat_FromDouble(seconds[i]);
        if (!value || PyDict_SetItem(dict, phase_strs[i], value) < 0)
            Py_CLEAR(dict);
        Py_XDECREF(value);
    }
    return dict;
}

static PyObject *task_get_wall(TaskPhases *task, void *closure)
{
    (void)closure;
    return seconds_dict(task->clock.wall);
}

static PyObject *task_get_cpu(TaskPhases *task, void *closure)
{
    (void)closure;
    return seconds_dict(task->clock.cpu);
}

static PyMethodDef task_methods[] = {
    {"enter", (PyCFunction)(void (*)(void))task_enter_method, METH_VARARGS | METH_KEYWORDS,
     "enter(phase, opaque=False)\n\nStart charging phase (until the matching leave()). An "
     "opaque phase charges its hooked calls' time to itself."},
    {"leave", (PyCFunction)task_leave_method, METH_NOARGS,
     "leave() -> (wall, cpu)\n\nStop charging the top phase; returns its last stretch (zero "
     "for a call nested in its own phase)."},
    {"rebase", (PyCFunction)task_rebase, METH_O,
     "rebase(phase)\n\nCharge time outside every hooked call to phase from now on."},
    {"close", (PyCFunction)task_close, METH_NOARGS,
     "close() -> float\n\nCharge the last stretch; returns the wall seconds the clock ran."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef task_getset[] = {
    {"wall", (getter)task_get_wall, NULL, "Wall seconds (perf_counter) per phase, a new dict.",
     NULL},
    {"cpu", (getter)task_get_cpu, NULL, "Thread CPU seconds (thread_time) per phase, a new dict.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

_Static_assert(sizeof(uint32_t) == sizeof(unsigned int), "uint32_t is not unsigned int");

static PyMemberDef task_members[] = {
    {"switches", T_ULONGLONG, offsetof(TaskPhases, clock.switches), READONLY,
     "Phase switches: hooked calls that read the clocks on entry and exit."},
    {"nested", T_ULONGLONG, offsetof(TaskPhases, clock.nested), READONLY,
     "Hooked calls inside a call of the same phase: they read no clock."},
    {"opaque", T_UINT, offsetof(TaskPhases, clock.opaque), READONLY,
     "Opaque phases running: while above 0, hooked calls charge nothing of their own."},
    {"started", T_DOUBLE, offsetof(TaskPhases, started), READONLY,
     "When the clock started (perf_counter seconds)."},
    {"read_bytes", T_LONGLONG, offsetof(TaskPhases, read_bytes), 0,
     "Compressed bytes the task waited for (first wait of each uproot chunk)."},
    {"passed", T_ULONGLONG, offsetof(TaskPhases, passed), 0,
     "Hooked calls that only passed the call on (inside an opaque phase, or at no phase "
     "boundary)."},
    {"errors", T_ULONGLONG, offsetof(TaskPhases, errors), READONLY,
     "Clock operations that failed: calls past the deepest stack kept or with no memory to "
     "grow it (their time goes to the phase under them), a leave without an enter."},
    {"codecs", T_OBJECT_EX, offsetof(TaskPhases, codecs), READONLY,
     "Per codec name: [wall, cpu, compressed bytes in, bytes out]."},
    {"item", T_OBJECT, offsetof(TaskPhases, item), 0, "The coffea WorkItem of the task, or None."},
    {"output_measured", T_BOOL, offsetof(TaskPhases, output_measured), 0,
     "Whether the output was compressed inside the task (coffea's compression on)."},
    {"in_work", T_BOOL, offsetof(TaskPhases, in_work), 0,
     "Whether coffea's work function runs (events() then starts the user's code)."},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject roastpy_TaskPhasesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "roastcoffea._native.TaskPhases",
    .tp_basicsize = sizeof(TaskPhases),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "TaskPhases()\n\nOne task's phase clock: wall and CPU seconds per phase, bytes, "
              "codecs.\nNested phases are exclusive; the phases add up to the time the clock ran.",
    .tp_new = task_new,
    .tp_dealloc = (destructor)task_dealloc,
    .tp_traverse = (traverseproc)task_traverse,
    .tp_clear = (inquiry)task_clear,
    .tp_methods = task_methods,
    .tp_getset = task_getset,
    .tp_members = task_members,
};

/* ---- the thread's task ------------------------------------------------------ */

PyObject *roastpy_current_task(PyObject *module, PyObject *unused)
{
    (void)module, (void)unused;
    return Py_NewRef(thread_task ? (PyObject *)thread_task : Py_None);
}

PyObject *roastpy_set_current_task(PyObject *module, PyObject *task)
{
    (void)module;
    if (task != Py_None && !PyObject_TypeCheck(task, &roastpy_TaskPhasesType)) {
        PyErr_Format(PyExc_TypeError, "expected TaskPhases or None, not %.100s",
                     Py_TYPE(task)->tp_name);
        return NULL;
    }
    TaskPhases *old = thread_task;
    thread_task = task == Py_None ? NULL : (TaskPhases *)Py_NewRef(task);
    Py_XDECREF(old);
    Py_RETURN_NONE;
}

/* ---- PhaseHook -------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *func;
    int phase;
    char opaque;
    vectorcallfunc vectorcall;
} PhaseHook;

static PyObject *hook_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PhaseHook *hook = (PhaseHook *)self;
    TaskPhases *task = thread_task;
    if (!task)
        return PyObject_Vectorcall(hook->func, args, nargsf, kwnames);
    if (task->clock.opaque) {
        task->passed++;
        return PyObject_Vectorcall(hook->func, args, nargsf, kwnames);
    }
    Py_INCREF(task); /* the call may end the thread's task; leave this one */
    task_enter(task, hook->phase, hook->opaque);
    PyObject *result = PyObject_Vectorcall(hook->func, args, nargsf, kwnames);
    task_leave(task); /* reads clocks only: an exception of the call stays as it is */
    Py_DECREF(task);
    return result;
}

static PyObject *hook_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"func", "phase", "opaque", NULL};
    PyObject *func, *name;
    int opaque = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|p:PhaseHook", kwlist, &func, &name, &opaque))
        return NULL;
    if (!PyCallable_Check(func)) {
        PyErr_Format(PyExc_TypeError, "func must be callable, not %.100s", Py_TYPE(func)->tp_name);
        return NULL;
    }
    int phase = phase_index(name);
    if (phase < 0)
        return NULL;
    PhaseHook *hook = (PhaseHook *)type->tp_alloc(type, 0);
    if (!hook)
        return NULL;
    hook->func = Py_NewRef(func);
    hook->phase = phase;
    hook->opaque = (char)opaque;
    hook->vectorcall = hook_call;
    return (PyObject *)hook;
}

static int hook_traverse(PhaseHook *hook, visitproc visit, void *arg)
{
    Py_VISIT(hook->func);
    return 0;
}

static int hook_clear(PhaseHook *hook)
{
    Py_CLEAR(hook->func);
    return 0;
}

static void hook_dealloc(PhaseHook *hook)
{
    PyObject_GC_UnTrack(hook);
    hook_clear(hook);
    Py_TYPE(hook)->tp_free((PyObject *)hook);
}

/* Bound like a function when it replaces a method. */
static PyObject *hook_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static PyObject *hook_get_attr_of_func(PhaseHook *hook, void *name)
{
    return PyObject_GetAttrString(hook->func, name);
}

static PyObject *hook_get_phase(PhaseHook *hook, void *closure)
{
    (void)closure;
    return Py_NewRef(phase_strs[hook->phase]);
}

static PyObject *hook_repr(PhaseHook *hook)
{
    return PyUnicode_FromFormat("<PhaseHook %s%s of %R>", phase_names[hook->phase],
                                hook->opaque ? " (opaque)" : "", hook->func);
}

/* Pickled as its parts: a virtual column's generator may travel with an array. */
static PyObject *hook_reduce(PhaseHook *hook, PyObject *unused)
{
    (void)unused;
    return Py_BuildValue("O(OOO)", Py_TYPE(hook), hook->func, phase_strs[hook->phase],
                         hook->opaque ? Py_True : Py_False);
}

static PyMethodDef hook_methods[] = {
    {"__reduce__", (PyCFunction)hook_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef hook_getset[] = {
    {"__name__", (getter)hook_get_attr_of_func, NULL, NULL, "__name__"},
    {"__qualname__", (getter)hook_get_attr_of_func, NULL, NULL, "__qualname__"},
    {"phase", (getter)hook_get_phase, NULL, "The phase its calls are charged to.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef hook_members[] = {
    {"__wrapped__", T_OBJECT_EX, offsetof(PhaseHook, func), READONLY, "The wrapped function."},
    {"opaque", T_BOOL, offsetof(PhaseHook, opaque), READONLY,
     "Whether the phase is opaque: hooked calls inside it charge nothing of their own."},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject roastpy_PhaseHookType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "roastcoffea._native.PhaseHook",
    .tp_basicsize = sizeof(PhaseHook),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "PhaseHook(func, phase, opaque=False)\n\nfunc, its time charged to phase when the "
              "calling thread runs a measured task.",
    .tp_new = hook_new,
    .tp_dealloc = (destructor)hook_dealloc,
    .tp_traverse = (traverseproc)hook_traverse,
    .tp_clear = (inquiry)hook_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(PhaseHook, vectorcall),
    .tp_descr_get = hook_get,
    .tp_repr = (reprfunc)hook_repr,
    .tp_methods = hook_methods,
    .tp_getset = hook_getset,
    .tp_members = hook_members,
};

/* ---- module ----------------------------------------------------------------- */

int roastpy_phases_init(PyObject *module)
{
    PyObject *names = PyTuple_New(ROAST_PHASE_COUNT);
    if (!names)
        return -1;
    for (int i = 0; i < ROAST_PHASE_COUNT; i++) {
        if (!phase_strs[i] && !(phase_strs[i] = PyUnicode_InternFromString(phase_names[i]))) {
            Py_DECREF(names);
            return -1;
        }
        PyTuple_SET_ITEM(names, i, Py_NewRef(phase_strs[i]));
    }
    int rc = PyModule_AddObjectRef(module, "PHASES", names);
    Py_DECREF(names);
    return rc;
}

void roastpy_phases_free(void)
{
    for (int i = 0; i < ROAST_PHASE_COUNT; i++)
        Py_CLEAR(phase_strs[i]);
}
