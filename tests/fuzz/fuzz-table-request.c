/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the table management bodies writers send (tables/create.c: POST /v1/namespaces,
 * POST .../tables; tables/preflight.c: POST .../upgrade), and what the embedded filesystem
 * catalog builds from an accepted CreateTableRequest (iceberg/table_update.c
 * table_update_metadata_create) and then compares with it (create idempotence); the admin
 * decision and the storage roots check of what a create sets (storage/roots.c): a request that
 * steers nothing names nothing the roots could refuse. Any input ends in success or an Error,
 * never a crash or a leak. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "iceberg/table_update.h"
#include "storage/roots.h"
#include "tables/create.h"
#include "tables/preflight.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What a create sets against the roots "/warehouse, s3://bkt/p": refused only for what steers. */
static void check_steering(const char *steers, const char *location, const json_t *properties) {
        static StorageRoots *roots;
        Error e = { 0 };
        int r;

        if (!roots && storage_roots_parse("/warehouse, s3://bkt/p", &roots, &e) < 0)
                abort();
        r = storage_roots_check_table(roots, location, properties, &e);
        if (r == -ENOMEM)
                return;
        if (r != 0 && (r != -EPERM || !steers || !e.message[0]))
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Slice body = slice_make(data, size);
        json_t *request = NULL, *metadata = NULL, *properties = NULL;
        UpgradeRequest upgrade;
        const char *name = NULL;
        char **levels = NULL;
        size_t n_levels = 0;
        Error e = { 0 };

        if (preflight_request_parse(body, &upgrade, &e) == 0 && upgrade.format_version < 1)
                abort();
        if (create_namespace_request_parse(body, &levels, &n_levels, &properties, &e) == 0) {
                if (n_levels == 0 || !levels[0])
                        abort();
                check_steering(create_namespace_properties_steer(properties),
                               json_string_value(json_object_get(properties, "location")),
                               properties);
                for (size_t i = 0; i < n_levels; i++)
                        free(levels[i]);
                free(levels);
                json_decref(properties);
        }
        if (create_table_request_parse(body, &request, &name, &e) < 0)
                return 0;
        if (!name || !json_is_object(json_object_get(request, "properties")))
                abort();
        check_steering(create_table_request_steers(request),
                       json_string_value(json_object_get(request, "location")),
                       json_object_get(request, "properties"));
        if (table_update_metadata_create(request, "/warehouse/ns/t", 1700000000000,
                                         "00000000-0000-4000-8000-000000000000", &metadata,
                                         &e) == 0) {
                /* The table just made from the request is the one it asks for. */
                if (create_table_request_matches(request, metadata, &e) != 0)
                        abort();
                json_decref(metadata);
        }
        json_decref(request);
        return 0;
}
