/* Fuzz target: state file reader (a measurement saved on disk, possibly
 * edited or corrupted).
 *
 * Oracle: a state that reads must write again, read again, and write the
 * same text the second time (the JSON of an aggregator is canonical). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "roast/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    roast_agg *first = NULL, *second = NULL;
    if (roast_store_from_json((const char *)data, size, &first, err, sizeof err) != ROAST_OK)
        return 0;
    char *one = roast_store_to_json(first);
    if (!one || roast_store_from_json(one, strlen(one), &second, err, sizeof err) != ROAST_OK)
        abort();
    char *two = roast_store_to_json(second);
    if (!two || strcmp(one, two) != 0)
        abort();
    free(two);
    free(one);
    roast_agg_free(second);
    roast_agg_free(first);
    return 0;
}
