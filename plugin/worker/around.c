/* Around: a function called between two others, with no Python frame of its
 * own while it runs.
 *
 * The task, work-function and @track_metrics wrappers stay on a worker
 * thread's stack for the whole chunk, and Dask's statistical profiler walks
 * that stack twice every 10 ms, paying for every frame on it (and showing
 * them in the user's profiles). Written in Python they were six of the 35
 * frames on a task's stack; as an Around they are none: the bookkeeping runs
 * in enter and leave, Python functions called before and after, whose frames
 * are gone while func runs. */
#include "../roastpy.h"

typedef struct {
    PyObject_HEAD
    PyObject *func, *enter, *leave;
    PyObject *dict; /* what functools.update_wrapper sets: __name__, __doc__, __wrapped__ */
    vectorcallfunc vectorcall;
} Around;

/* Hands leave the state and how func ended, keeping func's result or exception
 * as they were: leave's own failure is dropped (the Python side counts its
 * failures; this only keeps the analysis's outcome). */
static void call_leave(Around *around, PyObject *state)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (type) {
        PyErr_NormalizeException(&type, &value, &tb);
        if (tb)
            PyException_SetTraceback(value, tb);
    }
    PyObject *error = value ? value : Py_None;
    PyObject *done = PyObject_CallFunctionObjArgs(around->leave, state, error, NULL);
    if (!done)
        PyErr_Clear();
    Py_XDECREF(done);
    PyErr_Restore(type, value, tb);
}

static PyObject *around_call(PyObject *self, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames)
{
    Around *around = (Around *)self;
    PyObject *state = PyObject_Vectorcall(around->enter, args, nargsf, kwnames);
    if (!state) /* the measurement could not start: the call goes on unmeasured */
        PyErr_Clear();
    if (!state || state == Py_None) {
        Py_XDECREF(state);
        return PyObject_Vectorcall(around->func, args, nargsf, kwnames);
    }
    PyObject *result = PyObject_Vectorcall(around->func, args, nargsf, kwnames);
    call_leave(around, state);
    Py_DECREF(state);
    return result;
}

static PyObject *around_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"func", "enter", "leave", NULL};
    PyObject *func, *enter, *leave;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO:Around", kwlist, &func, &enter, &leave))
        return NULL;
    if (!PyCallable_Check(func) || !PyCallable_Check(enter) || !PyCallable_Check(leave)) {
        PyErr_SetString(PyExc_TypeError, "func, enter and leave must be callable");
        return NULL;
    }
    Around *around = (Around *)type->tp_alloc(type, 0);
    if (!around)
        return NULL;
    around->func = Py_NewRef(func);
    around->enter = Py_NewRef(enter);
    around->leave = Py_NewRef(leave);
    around->vectorcall = around_call;
    return (PyObject *)around;
}

static int around_traverse(Around *around, visitproc visit, void *arg)
{
    Py_VISIT(around->func);
    Py_VISIT(around->enter);
    Py_VISIT(around->leave);
    Py_VISIT(around->dict);
    return 0;
}

static int around_clear(Around *around)
{
    Py_CLEAR(around->func);
    Py_CLEAR(around->enter);
    Py_CLEAR(around->leave);
    Py_CLEAR(around->dict);
    return 0;
}

static void around_dealloc(Around *around)
{
    PyObject_GC_UnTrack(around);
    around_clear(around);
    Py_TYPE(around)->tp_free((PyObject *)around);
}

/* Bound like a function when it replaces a method. */
static PyObject *around_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static PyObject *around_repr(Around *around)
{
    return PyUnicode_FromFormat("<Around %R between %R and %R>", around->func, around->enter,
                                around->leave);
}

/* Pickled as its parts and attributes: coffea ships a processor defined in
 * __main__ by value, its decorated process included. */
static PyObject *around_reduce(Around *around, PyObject *unused)
{
    (void)unused;
    return Py_BuildValue("O(OOO)O", Py_TYPE(around), around->func, around->enter, around->leave,
                         around->dict ? around->dict : Py_None);
}

static PyMethodDef around_methods[] = {
    {"__reduce__", (PyCFunction)around_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef around_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef around_members[] = {
    {"func", T_OBJECT_EX, offsetof(Around, func), READONLY, "The function called."},
    {"enter", T_OBJECT_EX, offsetof(Around, enter), READONLY, "Called before func."},
    {"leave", T_OBJECT_EX, offsetof(Around, leave), READONLY, "Called after func."},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject roastpy_AroundType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "roastcoffea._native.Around",
    .tp_basicsize = sizeof(Around),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "Around(func, enter, leave)\n--\n\n"
              "func called between enter and leave, with no Python frame of its own while it "
              "runs.\nA call runs state = enter(*args, **kwargs); if state is None, func alone; "
              "else func(*args, **kwargs), then leave(state, error), error the exception func "
              "raised or None. func's result or exception is returned or raised unchanged; an "
              "exception of enter (func runs unmeasured) or leave is dropped.",
    .tp_new = around_new,
    .tp_dealloc = (destructor)around_dealloc,
    .tp_traverse = (traverseproc)around_traverse,
    .tp_clear = (inquiry)around_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Around, vectorcall),
    .tp_dictoffset = offsetof(Around, dict),
    .tp_descr_get = around_get,
    .tp_repr = (reprfunc)around_repr,
    .tp_methods = around_methods,
    .tp_getset = around_getset,
    .tp_members = around_members,
};
