/* SPDX-License-Identifier: Apache-2.0 */
/* Inside storage/: whether the storage can be written (storage_is_writable() in storage.h). A
 * write that fails for a reason of the storage marks it unwritable; a later write, or a probe
 * into the same place every probe_interval_ms, that succeeds marks it writable again. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "storage/storage.h"

/* What the health asks of the storage it watches, given by storage.c: through these pointers,
 * so that calls go one way (storage.c calls health.c, never the reverse). */
typedef struct StorageHealthOps {
        /* Creates the empty probe object, without feeding the health itself. */
        int (*write_probe)(Storage *s, const StorageProps *props, const char *location,
                           StorageCallback cb, void *userdata);
        /* Deletes a probe that was written. */
        int (*delete_probe)(Storage *s, const StorageProps *props, const char *location,
                            StorageCallback cb, void *userdata);
        /* The health timer is closed (a close waits for it). */
        void (*closed)(Storage *s);
} StorageHealthOps;

typedef struct StorageHealth {
        Storage *storage;
        const StorageHealthOps *ops;
        uv_loop_t *loop;
        uint32_t probe_interval_ms;
        uv_timer_t timer;
        bool has_timer;
        bool is_timer_closed;
        bool is_probing;
        bool is_unwritable;
        char *location;       /* the failed write's location */
        StorageProps *props;  /* its settings (a copy), for the probe */
        char *probe_location; /* the probe in flight */
        char reason[sizeof(((Error *)0)->message)];
        uint64_t n_failures;
} StorageHealth;

void storage_health_init(StorageHealth *h, Storage *storage, const StorageHealthOps *ops,
                         uv_loop_t *loop, uint32_t probe_interval_ms);
/* The outcome of one write to `location` with `props` (may be NULL). */
void storage_health_note_write(StorageHealth *h, const char *location, const StorageProps *props,
                               int status, const Error *error);
/* Stops probing; *ret_pending says whether a close callback will call ops->closed. */
void storage_health_close(StorageHealth *h, bool *ret_pending);
void storage_health_deinit(StorageHealth *h);
/* Whether the status of a failed write says the storage itself refuses writes (read-only, full,
 * out of quota, I/O errors, denied, unavailable), not this one write. */
bool storage_health_status_is_storage_fault(int status);
