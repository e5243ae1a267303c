/* SPDX-License-Identifier: Apache-2.0 */
/* The byte bounds of a request's intake, in the words every intake step uses to refuse. */
#include <errno.h>
#include <inttypes.h>

#include "commit/job.h"

int job_intake_refuse(Job *j, int r, const char *what) {
        const CommitConfig *c = j->engine->config;

        if (r == -EBUSY) {
                /* Nothing is wrong with the request: others hold the bytes for now. */
                j->intake_status = 503;
                j->intake_type = "server-busy";
                return error_set(&j->error, r,
                                 "%s: requests hold %" PRIu64 " bytes at intake, the daemon's "
                                 "limit is %" PRIu64 " (commit.intake-max-bytes); retry with the "
                                 "same key",
                                 what, budget_used(&j->engine->intake_budget), c->intake_max_bytes);
        }
        j->intake_status = 413;
        j->intake_type = "request-too-large";
        return error_set(&j->error, r,
                         "%s: the request would hold more than %" PRIu64 " bytes at intake "
                         "(commit.intake-max-request-bytes, %" PRIu64 " held); split it",
                         what, j->intake.max_bytes, j->intake.bytes);
}
