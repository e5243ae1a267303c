/* SPDX-License-Identifier: Apache-2.0 */
/* The end of a request: its answer to the writer and to every waiter on its key, the outcome
 * recorded in the registry and the metrics, what icecommitd wrote for it deleted when it is
 * known not committed, and the job freed. */
#pragma once

#include <jansson.h>

#include "commit/job.h"
#include "commit/registry.h"
#include "util/cleanup.h"

/* Frees a job without answering it (its writer request is freed with it). */
Job *answer_job_free(Job *j);
DEFINE_CLEANUP_FUNC(Job, answer_job_free);
/* Answers the job's writer and every waiter on its key with body (taken; NULL: 503
 * out-of-memory), records the outcome, frees the job. */
void answer_job(Job *j, KeyState state, int status, json_t *body);
/* answer_job() with an error document: KEY_FAILED, status, type and the message. */
void answer_job_error(Job *j, int status, const char *type, const char *fmt, ...) _printf_(4, 5);
/* The number of requests waiting for an answer (icecommit_queue_requests): the accepted ones
 * and the repeats of pending keys, which count against commit.max-queue-requests alike. */
size_t answer_n_waiting(const CommitEngine *e);
/* Publishes answer_n_waiting() as the queue gauge. */
void answer_publish_queue(CommitEngine *e);
/* Retry-After on a 503, so that writers (and proxies) back off the configured time. */
void answer_add_retry_after(CommitEngine *e, WriterRequest *w);
