/* decode: the module-level decoders of outside bytes. Malformed input is a
 * DecodeError (a ValueError) carrying the native decoder's message; a wrong argument type is
 * a TypeError. Nothing is read outside the given buffer (native/ checks). */
#include "../roastpy.h"

#include <math.h>

/* Borrows the bytes of a bytes-like argument (str is refused: text is not a
 * wire format). */
static int bytes_arg(PyObject *data, Py_buffer *view)
{
    if (PyUnicode_Check(data)) {
        PyErr_SetString(PyExc_TypeError, "expected bytes, not str");
        return -1;
    }
    return PyObject_GetBuffer(data, view, PyBUF_SIMPLE);
}

/* Rebuilds the aggregator of snapshot bytes (the caller frees it), or sets
 * an exception and returns NULL. *taken_at (when given) is the snapshot's time. */
static roast_agg *snapshot_arg(PyObject *data, double *taken_at)
{
    double unused;
    roast_agg *agg = NULL;
    char err[256] = "";
    Py_buffer view;
    if (bytes_arg(data, &view) < 0)
        return NULL;
    roast_status st = roast_wire_decode_snapshot(view.buf, (size_t)view.len, &agg,
                                                 taken_at ? taken_at : &unused, err, sizeof err);
    PyBuffer_Release(&view);
    if (st != ROAST_OK) {
        roastpy_raise(st, err);
        return NULL;
    }
    return agg;
}

/* A snapshot's dict; with_state makes it the pair (dict, the state file of its
 * aggregator without the records: a measurement keeps the records once, decoded). */
static PyObject *snapshot_dict(PyObject *data, int with_state)
{
    double taken_at = 0;
    roast_agg *agg = snapshot_arg(data, &taken_at);
    if (!agg)
        return NULL;
    PyObject *dict = roastpy_agg_to_dict(agg, taken_at);
    if (dict && with_state) {
        roast_agg_clear_records(agg);
        PyObject *text = roastpy_take_text(roast_store_to_json(agg));
        if (text)
            dict = Py_BuildValue("(NN)", dict, text);
        else
            Py_CLEAR(dict);
    }
    roast_agg_free(agg);
    return dict;
}

PyObject *roastpy_decode_snapshot(PyObject *module, PyObject *data)
{
    (void)module;
    return snapshot_dict(data, 0);
}

PyObject *roastpy_decode_payload(PyObject *module, PyObject *data)
{
    (void)module;
    Py_buffer view;
    if (bytes_arg(data, &view) < 0)
        return NULL;
    roast_payload_decoded *decoded = NULL;
    char err[256] = "";
    roast_status st =
        roast_wire_decode_payload(view.buf, (size_t)view.len, &decoded, err, sizeof err);
    /* The decoded views point into the input: convert before releasing it. */
    PyObject *dict = st == ROAST_OK ? roastpy_payload_to_dict(roast_payload_view(decoded))
                                    : roastpy_raise(st, err);
    roast_payload_decoded_free(decoded);
    PyBuffer_Release(&view);
    return dict;
}

PyObject *roastpy_state_from_json(PyObject *module, PyObject *text)
{
    (void)module;
    Py_buffer view = {0};
    const char *json;
    Py_ssize_t len;
    if (PyUnicode_Check(text)) {
        if (!(json = PyUnicode_AsUTF8AndSize(text, &len)))
            return NULL;
    } else {
        if (PyObject_GetBuffer(text, &view, PyBUF_SIMPLE) < 0)
            return NULL;
        json = view.buf;
        len = view.len;
    }
    roast_agg *agg = NULL;
    char err[256] = "";
    roast_status st = roast_store_from_json(json, (size_t)len, &agg, err, sizeof err);
    if (view.obj)
        PyBuffer_Release(&view);
    if (st != ROAST_OK)
        return roastpy_raise(st, err);
    /* A state file records no time of its own: taken_at is None. */
    PyObject *dict = roastpy_agg_to_dict(agg, NAN);
    roast_agg_free(agg);
    return dict;
}

PyObject *roastpy_decode_exit_snapshot(PyObject *module, PyObject *data)
{
    (void)module;
    return snapshot_dict(data, 1);
}
