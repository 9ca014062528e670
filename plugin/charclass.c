/* The two character classes dask's key_split depends on, taken from CPython
 * itself so that the native port answers exactly like str.isalpha() and
 * str.split() for every code point, whatever Unicode version Python ships. */
#include "roastpy.h"

static bool py_is_alpha(uint32_t cp)
{
    if (cp < 0x80)
        return (cp | 0x20) - 'a' < 26;
    return Py_UNICODE_ISALPHA((Py_UCS4)cp);
}

static bool py_is_space(uint32_t cp)
{
    return Py_UNICODE_ISSPACE((Py_UCS4)cp);
}

const roast_charclass roastpy_charclass = {py_is_alpha, py_is_space};
