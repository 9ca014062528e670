/* store: the aggregator state as a JSON document (the native state file of a
 * saved measurement), written and read back exactly: doubles round-trip
 * bit for bit, strings byte for byte, every table and series point kept.
 *
 * The document is {"format": "roastcoffea-native-state", "version": 1, ...};
 * docs/architecture.md lists its fields. A reader refuses other formats,
 * newer versions and any missing or mistyped field with a message. */
#ifndef ROAST_STORE_H
#define ROAST_STORE_H

#include "roast/agg.h"
#include "roast/common.h"

#define ROAST_STORE_FORMAT "roastcoffea-native-state"
#define ROAST_STORE_VERSION 1

/* Returns a malloc'd NUL-terminated JSON text (free with free()), or NULL on
 * ENOMEM. */
char *roast_store_to_json(const roast_agg *agg);

roast_status roast_store_from_json(const char *json, size_t len, roast_agg **out,
                                   char *err, size_t errcap);

/* File variants; errors name the path. */
roast_status roast_store_write(const roast_agg *agg, const char *path, char *err, size_t errcap);
roast_status roast_store_read(const char *path, roast_agg **out, char *err, size_t errcap);

#endif
