#include "roast/common.h"

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
