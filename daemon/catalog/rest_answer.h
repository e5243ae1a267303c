/* SPDX-License-Identifier: Apache-2.0 */
/* What a REST catalog's HTTP status means for an operation (rest_answer.c). Pure. */
#pragma once

#include <stdbool.h>

/* The outcome of an HTTP answer (pure, the table tests check): 2xx success; 404 NOT_FOUND;
 * 409 CONFLICT; on a mutation the pre-1.11 stale-lineage 400 (recognized by `message`, may be
 * NULL) CONFLICT, 408/500/502/503/504 and unknown 5xx STATE_UNKNOWN; on a read 408 and 5xx
 * UNAVAILABLE; 429 UNAVAILABLE; 501, 3xx, 1xx and other 4xx REJECTED. */
int catalog_outcome_from_http(bool is_mutation, long http_status, const char *message);
