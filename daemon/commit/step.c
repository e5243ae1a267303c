/* SPDX-License-Identifier: Apache-2.0 */
/* The outcomes of an attempt's steps (step.h), handed to the driver through b->step_done. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "commit/step.h"

void step_report(Batch *b, StepKind kind) {
        StepOutcome o = { .kind = kind };

        b->step_done(b, &o);
}

void step_fail(Batch *b, KeyState state, int status, const char *type, const char *fmt, ...) {
        StepOutcome o = { .kind = STEP_FAIL, .state = state, .status = status, .type = type };
        va_list ap;

        va_start(ap, fmt);
        (void)vsnprintf(o.message, sizeof(o.message), fmt, ap);
        va_end(ap);
        b->step_done(b, &o);
}

void step_retry(Batch *b, const char *reason, int status, const char *type, const char *message) {
        StepOutcome o = { .kind = STEP_RETRY, .reason = reason, .status = status, .type = type };

        (void)snprintf(o.message, sizeof(o.message), "%s", message);
        b->step_done(b, &o);
}

void step_storage_failed(Batch *b, int status, const char *what) {
        const char *type;
        int http = core_storage_http_status(status, &type, "storage-error");

        core_delete_file(b->queue->engine, b->props, TAKE_PTR(b->list_cleanup));
        if (http == 503) {
                step_retry(b, "storage-unavailable", 503, type, what);
                return;
        }
        step_fail(b, KEY_FAILED, http == 422 ? 502 : http, type, "%s", what);
}

int step_queue_work(Batch *b, uv_work_cb work, uv_after_work_cb after) {
        CommitEngine *e = b->queue->engine;
        int r;

        b->work.data = b;
        b->work_status = 0;
        r = uv_queue_work(e->loop, &b->work, work, after);
        if (r < 0)
                return r;
        e->n_in_flight++;
        return 0;
}
