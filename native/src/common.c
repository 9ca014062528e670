#include "roast/common.h"

#include <stdarg.h>
#include <stdio.h>

const char *roast_status_str(roast_status status)
{
    switch (status) {
    case ROAST_OK: return "ok";
    case ROAST_ENOMEM: return "out of memory";
    case ROAST_EFULL: return "store at its cap";
    case ROAST_EINVAL: return "invalid argument";
    case ROAST_EMALFORMED: return "malformed input";
    case ROAST_EIO: return "input/output error";
    }
    return "unknown status";
}

roast_status roast_fail(roast_status status, char *err, size_t errcap, const char *fmt, ...)
{
    if (err && errcap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errcap, fmt, ap);
        va_end(ap);
    }
    return status;
}
