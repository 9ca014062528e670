/* store: the aggregator state as a JSON document (the native state file of a
 * saved measurement), written and read back exactly: doubles round-trip
 * bit for bit, strings byte for byte, every table and series point kept.
 *
 * The document is {"format": "roastcoffea-native-state", "version": 1, ...};
 * docs/architecture.md ("State file layout") and the top of store.c list its
 * fields. JSON has no NaN or infinity and cJSON numbers are doubles, so
 * non-finite doubles are the strings "nan", "-nan", "inf", "-inf" (a NaN
 * keeps its sign, not its payload bits) and unsigned integers above 2^53 are
 * strings of digits; readers accept both forms. A reader refuses other
 * formats, newer versions (naming both) and any missing, duplicate or
 * mistyped field with a message naming it ("state.tasks[0][4]: ..."). */
#ifndef ROAST_STORE_H
#define ROAST_STORE_H

#include "roast/agg.h"
#include "roast/common.h"

#define ROAST_STORE_FORMAT "roastcoffea-native-state"
#define ROAST_STORE_VERSION 3 /* 2: records carry their span; 3: the node's series columns */
#define ROAST_STORE_OLDEST 2  /* the oldest read: its points have ROAST_V2_NCOLS columns */

/* Returns a malloc'd NUL-terminated JSON text (free with free()), or NULL on
 * ENOMEM. */
char *roast_store_to_json(const roast_agg *agg);

/* The aggregator is made with roast_agg_new_restored; its report is the
 * saved one (see roast_agg_report_get). The caller frees it. */
roast_status roast_store_from_json(const char *json, size_t len, roast_agg **out,
                                   char *err, size_t errcap);

/* File variants; errors name the path (and the system's reason for
 * ROAST_EIO). Writing goes through path.tmp and a rename, so a crash never
 * leaves half a file at path. */
roast_status roast_store_write(const roast_agg *agg, const char *path, char *err, size_t errcap);
roast_status roast_store_read(const char *path, roast_agg **out, char *err, size_t errcap);

#endif
