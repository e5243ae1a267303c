/* SPDX-License-Identifier: Apache-2.0 */
/* The commit step of an attempt (landing.c). */
#pragma once

#include "commit/batch.h"

/* Builds the snapshot and the commit request from the attempt's list, sends it, and reports
 * the catalog's verdict (step.h): STEP_END once committed and every request answered,
 * STEP_RETRY, STEP_REPLAY (no verdict, the catalog honours Idempotency-Key) or STEP_FAIL. */
void landing_commit(Batch *b);
/* Sends the attempt's commit request (again: a replay, same body and Idempotency-Key). Returns 0
 * (the verdict is reported as landing_commit() reports it) or <0: nothing was sent. */
int landing_send(Batch *b);
