/* The cheapest possible transition hook: a C function that does nothing.
 *
 * bench/scheduler_hook.py calls it the way Dask calls every plugin hook, so its
 * cost is the floor any hook pays whatever it does: CPython building the
 * argument tuple and the keyword dict of `stimulus_id=..., **kwargs`, and
 * dispatching the call. It takes the same METH_VARARGS | METH_KEYWORDS form
 * as roastcoffea's own hook. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *transition(PyObject *module, PyObject *args, PyObject *kwargs)
{
    (void)module;
    (void)args;
    (void)kwargs;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"transition", (PyCFunction)(void (*)(void))transition, METH_VARARGS | METH_KEYWORDS,
     "transition(*args, **kwargs) -> None; does nothing."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "null_hook", "A transition hook that does nothing.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_null_hook(void)
{
    return PyModule_Create(&module);
}
