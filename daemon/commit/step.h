/* SPDX-License-Identifier: Apache-2.0 */
/* How a step of an attempt ends. The driver (attempt.c) runs an attempt's steps from its table
 * of steps; each step (checks.c, list_build.c, live_index.c, merge.c, landing.c) ends, at once
 * or from a callback, with exactly one of the calls below and touches the batch no more: the
 * outcome goes to the driver through b->step_done, so that no step calls back into it. */
#pragma once

#include "commit/batch.h"
#include "commit/registry.h"
#include "util/cleanup.h"

typedef enum StepKind {
        STEP_NEXT,           /* go on with the next step */
        STEP_FAIL,           /* answer every request of the batch with the same error, end it */
        STEP_RETRY,          /* another attempt after a backoff, or the end past the bounds */
        STEP_REFUSE_FLAGGED, /* answer (422) the requests whose refusal_type is set; the others
                              * go on in a new attempt */
        STEP_RECHECK,        /* a check on the table state would refuse: the same attempt again
                              * on a fresh load */
        STEP_END,            /* every request is answered: the batch ends */
        STEP_REPLAY,         /* no verdict: resend the same commit request after a backoff */
} StepKind;

struct StepOutcome {
        StepKind kind;
        KeyState state;     /* STEP_FAIL: KEY_FAILED, or KEY_UNKNOWN when it may have landed */
        int status;         /* STEP_FAIL, STEP_RETRY: the HTTP status the requests get */
        const char *type;   /* ... and the error type */
        const char *reason; /* STEP_RETRY: why (the retries metric's label) */
        char message[2048];
};

/* Reports an outcome without details: STEP_NEXT, STEP_REFUSE_FLAGGED, STEP_RECHECK, STEP_END,
 * STEP_REPLAY. */
void step_report(Batch *b, StepKind kind);
static inline void step_next(Batch *b) {
        step_report(b, STEP_NEXT);
}
/* STEP_FAIL: every request gets status, type and the message. */
void step_fail(Batch *b, KeyState state, int status, const char *type, const char *fmt, ...)
        _printf_(5, 6);
/* STEP_RETRY: reason labels the retry; status, type and message answer the requests should
 * the attempts be used up. */
void step_retry(Batch *b, const char *reason, int status, const char *type, const char *message);
/* A storage failure while building the list: this attempt's list is deleted; a transient one
 * retries the attempt (503), others end the batch (the table's own files are unreadable: not
 * the writer's fault, and not ours to fix). */
void step_storage_failed(Batch *b, int status, const char *what);
/* Queues `work` on the thread pool with after() on the loop, counted in flight. Returns 0 or a
 * libuv error (nothing queued). */
int step_queue_work(Batch *b, uv_work_cb work, uv_after_work_cb after);
