/* SPDX-License-Identifier: Apache-2.0 */
/* The intake of a writer request (intake.c). */
#pragma once

#include "commit/job.h"

/* Takes the accepted request j through intake: its table, its files read, parsed and checked,
 * icecommitd's manifests written; then it joins its table's queue, or is answered with why
 * not. */
void intake_start(Job *j);
