/* SPDX-License-Identifier: Apache-2.0 */
/* Write health of the storage (health.h). Readiness must say "not ready" while writes cannot
 * succeed (a read-only remount, a full disk or quota, a bucket refusing writes), so that load
 * balancers and operators see it before writers do; and it must become ready again by itself,
 * even when no writer sends anything any more because readiness took the daemon out of rotation.
 * Hence the probe: while unwritable, every probe interval a small object is created next to the
 * location whose write failed (with that write's settings, so vended credentials work too) and
 * deleted again. */
#define LOG_MODULE "storage"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/health.h"
#include "util/log.h"
#include "util/uuid.h"

bool storage_health_status_is_storage_fault(int status) {
        /* A remount with other owners, a bucket policy, revoked keys: permanent for a request,
         * but the storage refusing writes all the same. */
        if (status == -EACCES || status == -EPERM)
                return true;
        /* Transient, but of this process or this one request, not of the storage. */
        if (status == -ENOMEM || status == -ECANCELED || status == -EKEYEXPIRED || status == -EINTR)
                return false;
        return storage_status_is_transient(status);
}

void storage_health_init(StorageHealth *h, Storage *storage, const StorageHealthOps *ops,
                         uv_loop_t *loop, uint32_t probe_interval_ms) {
        *h = (StorageHealth){
                .storage = storage, .ops = ops, .loop = loop, .probe_interval_ms = probe_interval_ms
        };
}

static void storage_health_set_writable(StorageHealth *h, const char *how) {
        if (!h->is_unwritable)
                return;
        log_info("storage writable again (%s) after %" PRIu64 " failed write(s); last: %s", how,
                 h->n_failures, h->reason);
        h->is_unwritable = false;
        h->n_failures = 0;
        h->reason[0] = '\0';
        free(h->location);
        h->location = NULL;
        h->props = storage_props_free(h->props);
        if (h->has_timer)
                uv_timer_stop(&h->timer);
}

static void storage_health_on_probe_deleted(StorageResult *result, void *userdata) {
        (void)result;
        (void)userdata;
        /* A probe left behind is one empty object named .icecommit-probe-*; nothing reads it. */
}

static void storage_health_on_probe_written(StorageResult *result, void *userdata) {
        StorageHealth *h = userdata;
        _cleanup_(freep) char *probe = TAKE_PTR(h->probe_location);

        h->is_probing = false;
        if (result->status == -ECANCELED)
                return;
        if (result->status == 0 || result->status == -EEXIST) {
                if (result->status == 0)
                        (void)h->ops->delete_probe(h->storage, h->props, probe,
                                                   storage_health_on_probe_deleted, NULL);
                storage_health_set_writable(h, "a probe write succeeded");
                return;
        }
        if (storage_health_status_is_storage_fault(result->status))
                (void)snprintf(h->reason, sizeof(h->reason), "%s", result->error.message);
}

static void storage_health_on_timer(uv_timer_t *t) {
        StorageHealth *h = t->data;
        char id[UUID_STRING_MAX];
        const char *slash;
        int r;

        if (!h->is_unwritable || h->is_probing || !h->location)
                return;
        slash = strrchr(h->location, '/');
        if (!slash)
                return;
        uuid_v4_string(id);
        if (asprintf(&h->probe_location, "%.*s/.icecommit-probe-%s", (int)(slash - h->location),
                     h->location, id) < 0) {
                h->probe_location = NULL;
                return;
        }
        h->is_probing = true;
        r = h->ops->write_probe(h->storage, h->props, h->probe_location,
                                storage_health_on_probe_written, h);
        if (r < 0) {
                h->is_probing = false;
                free(h->probe_location);
                h->probe_location = NULL;
        }
}

void storage_health_note_write(StorageHealth *h, const char *location, const StorageProps *props,
                               int status, const Error *error) {
        if (status == 0 || status == -EEXIST) {
                storage_health_set_writable(h, "a write succeeded");
                return;
        }
        if (!storage_health_status_is_storage_fault(status))
                return;
        h->n_failures++;
        (void)snprintf(h->reason, sizeof(h->reason), "%s",
                       error && error->message[0] ? error->message : strerror(-status));
        if (h->is_unwritable)
                return;
        log_warning("storage cannot be written, /readyz says not ready until a write succeeds "
                    "(probing every %" PRIu32 " ms): %s",
                    h->probe_interval_ms, h->reason);
        h->is_unwritable = true;
        free(h->location);
        h->location = strdup(location);
        h->props = storage_props_free(h->props);
        if (props)
                (void)storage_props_copy(props, &h->props);
        if (!h->has_timer) {
                (void)uv_timer_init(h->loop, &h->timer);
                h->timer.data = h;
                h->has_timer = true;
        }
        (void)uv_timer_start(&h->timer, storage_health_on_timer, h->probe_interval_ms,
                             h->probe_interval_ms);
}

static void storage_health_on_timer_closed(uv_handle_t *handle) {
        StorageHealth *h = handle->data;

        h->is_timer_closed = true;
        h->ops->closed(h->storage);
}

void storage_health_close(StorageHealth *h, bool *ret_pending) {
        *ret_pending = h->has_timer;
        if (h->has_timer)
                uv_close((uv_handle_t *)&h->timer, storage_health_on_timer_closed);
}

void storage_health_deinit(StorageHealth *h) {
        free(h->location);
        free(h->probe_location);
        storage_props_free(h->props);
}
