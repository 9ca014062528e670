/* roastcoffea._native: module init, its state and key_split.
 *
 * key_split(key) answers exactly like dask.utils.key_split, exceptions
 * included. The Python-facing rules (bytes, tuples, hashing, the exceptions)
 * live here; the string algorithm is the native one (native/src/keysplit.c)
 * with CPython's own character classes. */
#include "roastpy.h"

roastpy_names roastpy_n;

/* The module-level key_split keeps its own cache and string table, separate
 * from any Aggregator: both are bounded (strings by KEYSPLIT_MAX_STRINGS,
 * cached keys by KEYSPLIT_CACHE_KEYS); past the string bound, answers are
 * computed uncached. */
#define KEYSPLIT_MAX_STRINGS (1u << 20)

static roast_intern *keysplit_strings;
static roast_keysplit_cache *keysplit_cache;

/* ---- key_split of a str that has no UTF-8 form ---------------------------
 * A str holding a lone surrogate cannot be handed to native code as UTF-8;
 * dask still answers for it. This is dask's algorithm step by step on the
 * str itself (see reference/dask-internals.md section 8.2). */

static int py_isalpha(PyObject *s)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!Py_UNICODE_ISALPHA(PyUnicode_READ_CHAR(s, i)))
            return 0;
    return n > 0;
}

static int py_is_hex32(PyObject *s)
{
    if (PyUnicode_GET_LENGTH(s) != 32)
        return 0;
    for (Py_ssize_t i = 0; i < 32; i++) {
        Py_UCS4 c = PyUnicode_READ_CHAR(s, i);
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return 0;
    }
    return 1;
}

/* Returns a new reference to the item of a list, by Python index rules
 * (negative from the end), or NULL with IndexError. */
static PyObject *list_item(PyObject *list, Py_ssize_t i)
{
    Py_ssize_t n = PyList_GET_SIZE(list);
    if (i < 0)
        i += n;
    if (i < 0 || i >= n) {
        PyErr_SetString(PyExc_IndexError, "list index out of range");
        return NULL;
    }
    PyObject *item = PyList_GET_ITEM(list, i);
    Py_INCREF(item);
    return item;
}

/* str.split(sep)[i] (sep NULL: whitespace). */
static PyObject *split_item(PyObject *s, const char *sep, Py_ssize_t i)
{
    PyObject *sepobj = NULL;
    if (sep && !(sepobj = PyUnicode_FromString(sep)))
        return NULL;
    PyObject *parts = PyUnicode_Split(s, sepobj, -1);
    Py_XDECREF(sepobj);
    if (!parts)
        return NULL;
    PyObject *item = list_item(parts, i);
    Py_DECREF(parts);
    return item;
}

static PyObject *strip(PyObject *s, const char *chars)
{
    return PyObject_CallMethod(s, "strip", "s", chars);
}

/* The body of dask's try block; NULL with an exception means "Other". */
static PyObject *keysplit_slow_try(PyObject *s)
{
    PyObject *words = PyUnicode_Split(s, roastpy_n.dash, -1);
    if (!words)
        return NULL;
    PyObject *result = NULL, *first = PyList_GET_ITEM(words, 0);
    if (PyUnicode_GET_LENGTH(first) == 0) {
        PyErr_SetString(PyExc_IndexError, "string index out of range");
        goto done;
    }
    if (Py_UNICODE_ISALPHA(PyUnicode_READ_CHAR(first, 0))) {
        result = Py_NewRef(first);
    } else {
        PyObject *head = split_item(first, ",", 0);
        result = head ? strip(head, "_'()\"") : NULL;
        Py_XDECREF(head);
    }
    for (Py_ssize_t i = 1; result && i < PyList_GET_SIZE(words); i++) {
        PyObject *word = PyList_GET_ITEM(words, i);
        Py_UCS4 c0 = PyUnicode_GET_LENGTH(word) ? PyUnicode_READ_CHAR(word, 0) : 0;
        int hexlike = PyUnicode_GET_LENGTH(word) == 8 && c0 >= 'a' && c0 <= 'f';
        if (!py_isalpha(word) || hexlike)
            break;
        PyObject *longer = PyUnicode_FromFormat("%U-%U", result, word);
        Py_SETREF(result, longer);
    }
    if (!result)
        goto done;
    if (py_is_hex32(result)) {
        Py_SETREF(result, PyUnicode_FromString("data"));
    } else if (PyUnicode_GET_LENGTH(result) == 0) {
        PyErr_SetString(PyExc_IndexError, "string index out of range");
        Py_CLEAR(result);
    } else if (PyUnicode_READ_CHAR(result, 0) == '<') {
        PyObject *inner = strip(result, "<>");
        PyObject *word = inner ? split_item(inner, NULL, 0) : NULL;
        Py_SETREF(result, word ? split_item(word, ".", -1) : NULL);
        Py_XDECREF(inner);
        Py_XDECREF(word);
    }
done:
    Py_DECREF(words);
    return result;
}

static PyObject *keysplit_slow(PyObject *s)
{
    PyObject *result = keysplit_slow_try(s);
    if (result)
        return result;
    PyErr_Clear();
    return Py_NewRef(roastpy_n.other);
}

/* Native key_split of UTF-8 text, through the module cache; uncached when
 * the module's string table is at its bound. */
static PyObject *keysplit_utf8(const char *key, size_t len, Py_hash_t hash)
{
    roast_id id;
    roast_status st = roast_keysplit_cached(keysplit_cache, keysplit_strings, key, len,
                                            (uint64_t)hash, &id);
    if (st == ROAST_OK)
        return roastpy_str(roast_intern_get(keysplit_strings, id));
    if (st != ROAST_EFULL)
        return roastpy_raise(st, NULL);
    char *out = PyMem_Malloc(len + 8);
    if (!out)
        return PyErr_NoMemory();
    size_t outlen = 0;
    st = roast_key_split(key, len, &roastpy_charclass, out, len + 8, &outlen);
    PyObject *result = st == ROAST_OK ? PyUnicode_DecodeUTF8(out, (Py_ssize_t)outlen, "strict")
                                      : roastpy_raise(st, NULL);
    PyMem_Free(out);
    return result;
}

/* dask wraps key_split in functools.lru_cache, which hashes the argument at
 * every level of the recursion: unhashable keys raise TypeError there. bytes
 * and tuple (exact types) are unwrapped outside dask's try block, so their
 * UnicodeDecodeError and IndexError reach the caller. */
static PyObject *mod_key_split(PyObject *module, PyObject *key)
{
    (void)module;
    Py_INCREF(key);
    for (;;) {
        if (PyObject_Hash(key) == -1)
            goto fail;
        if (PyBytes_CheckExact(key)) {
            Py_SETREF(key, PyUnicode_DecodeUTF8(PyBytes_AS_STRING(key),
                                                PyBytes_GET_SIZE(key), "strict"));
        } else if (PyTuple_CheckExact(key)) {
            if (PyTuple_GET_SIZE(key) == 0) {
                PyErr_SetString(PyExc_IndexError, "tuple index out of range");
                goto fail;
            }
            Py_SETREF(key, Py_NewRef(PyTuple_GET_ITEM(key, 0)));
        } else {
            break;
        }
        if (!key)
            return NULL;
    }
    PyObject *result;
    if (!PyUnicode_Check(key)) {
        result = Py_NewRef(roastpy_n.other);
    } else {
        Py_ssize_t len;
        const char *utf8 = PyUnicode_AsUTF8AndSize(key, &len);
        if (utf8) {
            result = keysplit_utf8(utf8, (size_t)len, PyUnicode_Type.tp_hash(key));
        } else {
            PyErr_Clear(); /* a lone surrogate: no UTF-8 form */
            result = keysplit_slow(key);
        }
    }
    Py_DECREF(key);
    return result;
fail:
    Py_DECREF(key);
    return NULL;
}

/* ---- module ------------------------------------------------------------- */

static PyObject *mod_decode_snapshot(PyObject *module, PyObject *data)
{
    return roastpy_decode_snapshot(module, data);
}

static PyObject *mod_decode_payload(PyObject *module, PyObject *data)
{
    return roastpy_decode_payload(module, data);
}

static PyObject *mod_state_from_json(PyObject *module, PyObject *text)
{
    return roastpy_state_from_json(module, text);
}

static PyMethodDef module_methods[] = {
    {"key_split", mod_key_split, METH_O,
     "key_split($module, key, /)\n--\n\nThe task prefix of a Dask key; equals\n"
     "dask.utils.key_split(key), exceptions included."},
    {"decode_snapshot", mod_decode_snapshot, METH_O,
     "decode_snapshot($module, data, /)\n--\n\nA snapshot as Python data; DecodeError when "
     "malformed."},
    {"decode_payload", mod_decode_payload, METH_O,
     "decode_payload($module, data, /)\n--\n\nA worker payload as Python data; DecodeError "
     "when malformed."},
    {"state_from_json", mod_state_from_json, METH_O,
     "state_from_json($module, text, /)\n--\n\nA native state file (str or bytes) as snapshot "
     "data; DecodeError when malformed."},
    {"decode_exit_snapshot", roastpy_decode_exit_snapshot, METH_O,
     "decode_exit_snapshot($module, data, /)\n--\n\nA collector's snapshot, "
     "decoded once: its Python data, and the native state file text a measurement keeps "
     "(without the records, which the measurement keeps decoded); DecodeError when malformed."},
    {"current_task", roastpy_current_task, METH_NOARGS,
     "current_task($module, /)\n--\n\nThe clock of the task this thread runs, or None."},
    {"set_current_task", roastpy_set_current_task, METH_O,
     "set_current_task($module, task, /)\n--\n\nMake task the clock of this thread's task "
     "(None: no task is measured)."},
    {NULL, NULL, 0, NULL},
};

static void module_free(void *module);

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "roastcoffea._native",
    .m_doc = "The native engine of roastcoffea: transition hook, aggregator, worker digest\n"
             "tracker, wire decoders, the phase clock and Dask's key_split.",
    .m_size = -1,
    .m_methods = module_methods,
    .m_free = module_free,
};

static PyObject *intern_name(const char *s)
{
    return PyUnicode_InternFromString(s);
}

/* Where each interned name goes in roastpy_n, and its text. */
static const struct {
    size_t offset;
    const char *text;
} name_table[] = {
    {offsetof(roastpy_names, worker), "worker"},   {offsetof(roastpy_names, startstops), "startstops"},
    {offsetof(roastpy_names, nbytes), "nbytes"},   {offsetof(roastpy_names, action), "action"},
    {offsetof(roastpy_names, start), "start"},     {offsetof(roastpy_names, stop), "stop"},
    {offsetof(roastpy_names, compute), "compute"}, {offsetof(roastpy_names, transfer), "transfer"},
    {offsetof(roastpy_names, group), "group"},     {offsetof(roastpy_names, span_id), "span_id"},
    {offsetof(roastpy_names, other), "Other"},     {offsetof(roastpy_names, dash), "-"},
};

static PyObject **name_slot(size_t i)
{
    return (PyObject **)((char *)&roastpy_n + name_table[i].offset);
}

static void names_clear(void)
{
    for (int i = 1; i < ROAST_STATE_COUNT; i++)
        Py_CLEAR(roastpy_n.state[i]);
    for (size_t i = 0; i < sizeof name_table / sizeof name_table[0]; i++)
        Py_CLEAR(*name_slot(i));
}

static int names_init(void)
{
    static const char *const states[ROAST_STATE_COUNT] = {
        [ROAST_STATE_RELEASED] = "released",   [ROAST_STATE_WAITING] = "waiting",
        [ROAST_STATE_NO_WORKER] = "no-worker", [ROAST_STATE_QUEUED] = "queued",
        [ROAST_STATE_PROCESSING] = "processing", [ROAST_STATE_MEMORY] = "memory",
        [ROAST_STATE_ERRED] = "erred",         [ROAST_STATE_FORGOTTEN] = "forgotten",
    };
    for (int i = 1; i < ROAST_STATE_COUNT; i++)
        if (!(roastpy_n.state[i] = intern_name(states[i])))
            return -1;
    for (size_t i = 0; i < sizeof name_table / sizeof name_table[0]; i++)
        if (!(*name_slot(i) = intern_name(name_table[i].text)))
            return -1;
    return 0;
}

/* The module's state lives in statics (the hook reads the names without a
 * module lookup); released when the interpreter frees the module. */
static void module_free(void *module)
{
    (void)module;
    names_clear();
    roastpy_phases_free();
    Py_CLEAR(roastpy_DecodeError);
    roast_keysplit_cache_free(keysplit_cache);
    keysplit_cache = NULL;
    roast_intern_free(keysplit_strings);
    keysplit_strings = NULL;
}

/* SERIES_COLUMNS: the series columns in roast_column order, the one list
 * the Python side reads them from. */
static int add_series_columns(PyObject *module)
{
    PyObject *names = PyTuple_New(ROAST_NCOLS);
    for (Py_ssize_t i = 0; names && i < ROAST_NCOLS; i++) {
        PyObject *name = PyUnicode_InternFromString(roast_column_names[i]);
        if (!name) {
            Py_CLEAR(names);
            break;
        }
        PyTuple_SET_ITEM(names, i, name);
    }
    if (!names)
        return -1;
    int rc = PyModule_AddObjectRef(module, "SERIES_COLUMNS", names);
    Py_DECREF(names);
    return rc;
}

static int add_type(PyObject *module, PyTypeObject *type, const char *name)
{
    if (PyType_Ready(type) < 0)
        return -1;
    Py_INCREF(type);
    if (PyModule_AddObject(module, name, (PyObject *)type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}

PyMODINIT_FUNC PyInit__native(void);

PyMODINIT_FUNC PyInit__native(void)
{
    if (!roastpy_n.worker && names_init() < 0) {
        names_clear();
        return NULL;
    }
    /* One DecodeError for the package, defined in Python so that code reading
     * saved measurements has it without loading this extension. */
    if (!roastpy_DecodeError) {
        PyObject *errors = PyImport_ImportModule("roastcoffea.errors");
        roastpy_DecodeError = errors ? PyObject_GetAttrString(errors, "DecodeError") : NULL;
        Py_XDECREF(errors);
        if (!roastpy_DecodeError)
            return NULL;
    }
    if (!keysplit_strings) {
        keysplit_strings = roast_intern_new(KEYSPLIT_MAX_STRINGS);
        keysplit_cache = roast_keysplit_cache_new(KEYSPLIT_CACHE_KEYS, &roastpy_charclass);
        if (!keysplit_strings || !keysplit_cache)
            return PyErr_NoMemory();
    }
    PyObject *module = PyModule_Create(&native_module);
    if (!module)
        return NULL;
    if (add_type(module, &roastpy_AggregatorType, "Aggregator") < 0 ||
        add_type(module, &roastpy_DigestTrackerType, "DigestTracker") < 0 ||
        add_type(module, &roastpy_TaskPhasesType, "TaskPhases") < 0 ||
        add_type(module, &roastpy_PhaseHookType, "PhaseHook") < 0 || roastpy_phases_init(module) < 0 ||
        add_type(module, &roastpy_AroundType, "Around") < 0 ||
        PyModule_AddObjectRef(module, "DecodeError", roastpy_DecodeError) < 0 ||
        add_series_columns(module) < 0 ||
        PyModule_AddIntConstant(module, "PAYLOAD_VERSION", ROAST_PAYLOAD_VERSION) < 0 ||
        PyModule_AddIntConstant(module, "SNAPSHOT_VERSION", ROAST_SNAPSHOT_VERSION) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
