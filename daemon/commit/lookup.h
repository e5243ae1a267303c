/* SPDX-License-Identifier: Apache-2.0 */
/* The engine's answers to GET /v1/commits/{key} (lookup.c): the writer API's lookup hooks. */
#pragma once

#include <stddef.h>

#include "auth/tokens.h"
#include "commit/core.h"
#include "writer/api.h"

/* WriterHooks.lookup: the key's entry in the registry, serialized; userdata is the engine. */
char *lookup_key(const char *key, const char *namespace_param, const char *table,
                 const AuthToken *caller, int *ret_status, size_t *ret_len, void *userdata);
/* WriterHooks.lookup_in_history: the key searched in the named table's history; userdata is the
 * engine. */
void lookup_in_history(WriterRequest *w, const char *key, const char *namespace_param,
                       const char *table, const char *principal, void *userdata);
