/* SPDX-License-Identifier: Apache-2.0 */
/* The checks of an attempt (checks.c). Each ends with one outcome (step.h). */
#pragma once

#include <stddef.h>

#include "commit/batch.h"

/* The attempt's table: the table state while fresh, else a load; then the storage roots,
 * snapshot-id inheritance and the branch. */
void checks_table(Batch *b);
/* The batch's requests from `from` on, against the attempt's table: those its history records
 * are answered with their receipts, those it refuses are answered; STEP_END when none is left,
 * STEP_RECHECK when a refusal would rest on the table state. */
void checks_requests(Batch *b, size_t from);
