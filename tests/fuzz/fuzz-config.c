/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the configuration file (config/load.c over libinih). An operator's typo must give
 * an error naming file, line and key, never a crash; a file that loads must pass config_verify.
 * Its [storage] allowed-roots list (storage/roots.c) parses or says why, and every root it
 * names lies within the roots. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "config/config.h"
#include "storage/roots.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Config *c = NULL;
        Error e = { 0 };
        FILE *f;

        if (size == 0)
                return 0;
        f = fmemopen((void *)data, size, "r");
        if (!f)
                return 0;
        if (config_load_file(f, "fuzz.conf", &c, &e) == 0) {
                if (config_verify(c, &e) != 0)
                        abort();
                if (c->storage.allowed_roots) {
                        StorageRoots *roots = NULL;

                        if (storage_roots_parse(c->storage.allowed_roots, &roots, &e) == 0) {
                                for (size_t i = 0; i < roots->n_roots; i++)
                                        if (!storage_roots_contain_parsed(roots, &roots->roots[i]))
                                                abort();
                                storage_roots_free(roots);
                        } else if (e.message[0] == 0)
                                abort();
                }
                config_free(c);
        } else if (e.message[0] == 0)
                abort(); /* every refusal says why */
        fclose(f);
        return 0;
}
