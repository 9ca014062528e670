/* roastpy: the helpers every file of the extension shares (clock, interning,
 * native status -> Python exception, native string -> str). */
#include "roastpy.h"

#include <time.h>

PyObject *roastpy_DecodeError;

double roastpy_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int roastpy_intern(roast_intern *strings, PyObject *str, roast_id *id)
{
    if (!PyUnicode_Check(str)) {
        PyErr_Format(PyExc_TypeError, "expected str, not %.100s", Py_TYPE(str)->tp_name);
        return -1;
    }
    Py_ssize_t len;
    const char *utf8 = PyUnicode_AsUTF8AndSize(str, &len);
    if (!utf8)
        return -1;
    roast_status st = roast_intern_put(strings, utf8, (size_t)len, id);
    if (st == ROAST_EFULL)
        return 1;
    if (st != ROAST_OK) {
        roastpy_raise(st, NULL);
        return -1;
    }
    return 0;
}

PyObject *roastpy_raise(roast_status status, const char *msg)
{
    if (!msg || !*msg)
        msg = roast_status_str(status);
    switch (status) {
    case ROAST_ENOMEM:
        return PyErr_NoMemory();
    case ROAST_EIO:
        PyErr_SetString(PyExc_OSError, msg);
        return NULL;
    case ROAST_EFULL:
    case ROAST_OK:
        PyErr_SetString(PyExc_RuntimeError, msg);
        return NULL;
    case ROAST_EMALFORMED:
        PyErr_SetString(roastpy_DecodeError, msg);
        return NULL;
    case ROAST_EINVAL:
        break;
    }
    PyErr_SetString(PyExc_ValueError, msg);
    return NULL;
}

PyObject *roastpy_str(roast_str s)
{
    return PyUnicode_DecodeUTF8(s.ptr, (Py_ssize_t)s.len, "replace");
}

PyObject *roastpy_take_text(char *text)
{
    if (!text)
        return PyErr_NoMemory();
    PyObject *str = PyUnicode_FromString(text);
    free(text);
    return str;
}
