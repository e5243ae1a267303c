/* SPDX-License-Identifier: Apache-2.0 */
/* The storage front door (see storage.h): parses each location once, sends local ones to the
 * thread pool (local.c) and object-store ones to the S3 client (s3.c), resolving the settings
 * an S3 request is signed with. Owns both backends and counts every operation in flight so that
 * a close waits for the thread pool. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "storage/health.h"
#include "storage/local.h"
#include "storage/props.h"
#include "storage/roots.h"
#include "storage/s3.h"
#include "util/time-util.h"

/* Credentials are refreshed (the table reloaded) when they expire within this margin. */
#define STORAGE_CREDENTIAL_MARGIN_MS 60000

struct Storage {
        uv_loop_t *loop;
        const StorageConfig *config;
        Metrics *metrics;
        S3Client *s3;
        StorageRoots *roots; /* NULL: not known yet */
        unsigned n_local_in_flight;
        bool is_closing;
        bool is_closed; /* every handle closed; storage_free() may run */
        bool s3_closed;
        bool health_pending; /* the health timer's close is not done yet */
        StorageHealth health;
        void (*close_done)(void *userdata);
        void *close_userdata;
};

typedef enum LocalKind {
        LOCAL_READ,
        LOCAL_SIZE,
        LOCAL_WRITE,
        LOCAL_DELETE,
        LOCAL_LIST,
        LOCAL_TAIL,
} LocalKind;

/* One local operation: owned by the thread pool from queueing until its after-work callback. */
typedef struct LocalJob {
        uv_work_t work;
        Storage *storage;
        LocalKind kind;
        char *path;
        char *root; /* the context's root as a path, or NULL */
        Slice data;
        uint64_t max_bytes;
        uint64_t started_ns;
        StorageResult result;
        StorageCallback cb;
        void *userdata;
} LocalJob;

static const char *const local_kind_names[] = {
        [LOCAL_READ] = "get",      [LOCAL_SIZE] = "head", [LOCAL_WRITE] = "put",
        [LOCAL_DELETE] = "delete", [LOCAL_LIST] = "list", [LOCAL_TAIL] = "get",
};

static void storage_maybe_closed(Storage *s) {
        void (*done)(void *userdata);

        if (!s->is_closing || !s->s3_closed || s->n_local_in_flight > 0 || s->health_pending ||
            s->is_closed)
                return;
        s->is_closed = true;
        done = s->close_done;
        s->close_done = NULL;
        if (done)
                done(s->close_userdata);
}

Storage *storage_free(Storage *s) {
        if (!s)
                return NULL;
        assert(s->is_closed);
        storage_health_deinit(&s->health);
        storage_roots_free(s->roots);
        free(s);
        return NULL;
}

static void local_job_work(uv_work_t *w) {
        LocalJob *j = w->data;
        StorageResult *res = &j->result;

        switch (j->kind) {
        case LOCAL_READ:
                buf_init(&res->data, (size_t)j->max_bytes + 1);
                res->status = storage_local_read_beneath(j->root, j->path, j->max_bytes, &res->data,
                                                         &res->error);
                break;
        case LOCAL_TAIL:
                res->status = storage_local_read_tail(j->root, j->path, j->max_bytes, &res->size,
                                                      &res->data, &res->error);
                break;
        case LOCAL_SIZE:
                res->status = storage_local_size_beneath(j->root, j->path, &res->size, &res->error);
                break;
        case LOCAL_WRITE:
                res->status = storage_local_write_new_file(j->path, j->data.ptr, j->data.len,
                                                           &res->error);
                break;
        case LOCAL_DELETE:
                res->status = storage_local_delete_file(j->path);
                if (res->status < 0)
                        (void)error_set(&res->error, res->status, "cannot delete '%s': %s", j->path,
                                        strerror(-res->status));
                break;
        case LOCAL_LIST:
                res->status = storage_local_list(j->path, (size_t)j->max_bytes, &res->names,
                                                 &res->n_names, &res->is_truncated, &res->error);
                break;
        }
}

static const char *local_outcome(int status) {
        return status == 0         ? "success"
               : status == -ENOENT ? "not-found"
               : status == -EEXIST ? "exists"
                                   : "error";
}

static LocalJob *local_job_free(LocalJob *j) {
        if (!j)
                return NULL;
        buf_deinit(&j->result.data);
        for (size_t i = 0; i < j->result.n_names; i++)
                free(j->result.names[i]);
        free(j->result.names);
        free(j->path);
        free(j->root);
        free(j);
        return NULL;
}

DEFINE_CLEANUP_FUNC(LocalJob, local_job_free);

static void local_job_after(uv_work_t *w, int status) {
        LocalJob *j = w->data;
        Storage *s = j->storage;
        char label[64];

        if (status < 0 && j->result.status == 0)
                j->result.status = -ECANCELED;
        (void)snprintf(label, sizeof(label), "local-%s" METRICS_LABEL_SEP "%s",
                       local_kind_names[j->kind], local_outcome(j->result.status));
        metrics_add(s->metrics, METRIC_STORAGE_REQUESTS, label, 1);
        metrics_observe_label(s->metrics, METRIC_STORAGE_DURATION, label,
                              (double)(now_monotonic_ns() - j->started_ns) / 1e9);
        if (j->result.status == 0 && (j->kind == LOCAL_READ || j->kind == LOCAL_TAIL))
                metrics_add(s->metrics, METRIC_STORAGE_BYTES, "read", (double)j->result.data.len);
        if (j->result.status == 0 && j->kind == LOCAL_WRITE)
                metrics_add(s->metrics, METRIC_STORAGE_BYTES, "written", (double)j->data.len);
        j->result.n_requests = 1;
        j->cb(&j->result, j->userdata);
        local_job_free(j);
        s->n_local_in_flight--;
        storage_maybe_closed(s);
}

static int storage_local_submit(Storage *s, LocalKind kind, char *path /* stolen */,
                                char *root /* stolen */, Slice data, uint64_t max,
                                StorageCallback cb, void *userdata, Error *error) {
        _cleanup_(freep) char *owned_path = path, *owned_root = root;
        _cleanup_(local_job_freep) LocalJob *j = NULL;
        int r;

        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        *j = (LocalJob){ .storage = s,
                         .kind = kind,
                         .path = TAKE_PTR(owned_path),
                         .root = TAKE_PTR(owned_root),
                         .data = data,
                         .max_bytes = max,
                         .cb = cb,
                         .userdata = userdata,
                         .started_ns = now_monotonic_ns() };
        j->work.data = j;
        r = uv_queue_work(s->loop, &j->work, local_job_work, local_job_after);
        if (r < 0)
                return error_set(error, r, "cannot queue file work: %s", uv_strerror(r));
        TAKE_PTR(j); /* local_job_after frees it */
        s->n_local_in_flight++;
        return 0;
}

/* Resolves the settings for an S3 location: the table's catalog-given ones over the daemon's. */
static void storage_s3_settings(const Storage *s, const StorageProps *props, const char *location,
                                S3Settings *ret) {
        const S3Config *c = &s->config->s3;
        const char *endpoint = storage_props_get(props, location, "s3.endpoint");
        const char *path_style = storage_props_get(props, location, "s3.path-style-access");
        const char *region = storage_props_get(props, location, "client.region");
        const char *key_id = storage_props_get(props, location, "s3.access-key-id");

        *ret = (S3Settings){
                .endpoint = endpoint ? endpoint : c->endpoint,
                .region = region ? region : c->region,
                .path_style_access =
                        path_style ? strcmp(path_style, "true") == 0 : c->path_style_access,
        };
        if (key_id) {
                /* A vended key set is whole: its secret and token, never the daemon's. */
                ret->access_key_id = key_id;
                ret->secret_access_key = storage_props_get(props, location, "s3.secret-access-key");
                ret->session_token = storage_props_get(props, location, "s3.session-token");
        } else {
                ret->access_key_id = c->access_key_id;
                ret->secret_access_key = c->secret_access_key;
                ret->session_token = c->session_token;
        }
}

static int storage_submit(Storage *s, const StorageContext *ctx, LocalKind kind, S3OpKind s3_kind,
                          const char *location, Slice data, unsigned flags, uint64_t max,
                          StorageCallback cb, void *userdata, Error *error) {
        _cleanup_(storage_location_deinit) StorageLocation l = { 0 };
        const StorageProps *props = ctx ? ctx->props : NULL;
        S3Settings settings;
        int r;

        assert(s && location && cb);
        if (s->is_closing)
                return error_set(error, -ESHUTDOWN, "icecommitd is stopping");
        r = storage_location_parse(location, &l, error);
        if (r < 0)
                return r;
        /* Table files only within the operator's roots, whatever a table or writer names. */
        if (ctx && !storage_roots_contain_parsed(s->roots, &l))
                return s->roots ? error_set(error, -EXDEV, "'%s' is outside the storage roots",
                                            location)
                                : error_set(error, -EAGAIN,
                                            "'%s': the storage roots are not known yet", location);
        if (ctx && ctx->root && !storage_location_is_within(location, ctx->root))
                return error_set(error, -EXDEV, "'%s' is not beneath '%s'", location, ctx->root);
        if (l.scheme == STORAGE_SCHEME_LOCAL) {
                _cleanup_(freep) char *root = NULL;

                if (kind == LOCAL_WRITE && !(flags & STORAGE_WRITE_IF_ABSENT))
                        /* Every local write creates a new file: replacing needs a rename, which
                         * the filesystem catalog does itself. */
                        return error_set(error, -EINVAL, "'%s': local writes only create new files",
                                         location);
                if (ctx && ctx->root &&
                    (kind == LOCAL_READ || kind == LOCAL_SIZE || kind == LOCAL_TAIL)) {
                        r = storage_path_from_location(ctx->root, &root, error);
                        if (r < 0)
                                return r;
                }
                return storage_local_submit(s, kind, TAKE_PTR(l.path), TAKE_PTR(root), data, max,
                                            cb, userdata, error);
        }

        if (props && storage_props_expire_before(props, location,
                                                 now_realtime_ms() + STORAGE_CREDENTIAL_MARGIN_MS))
                return error_set(
                        error, -EKEYEXPIRED,
                        "%s: the catalog's credentials for it expire within %d s; reload the table",
                        location, STORAGE_CREDENTIAL_MARGIN_MS / 1000);
        storage_s3_settings(s, props, location, &settings);
        if (!settings.access_key_id || !settings.secret_access_key)
                return error_set(
                        error, -EACCES,
                        "%s: no S3 credentials: set s3.access-key-id and s3.secret-access-key, or "
                        "let the "
                        "catalog vend them (catalog.access-delegation = vended-credentials)",
                        location);
        return s3_client_submit(s->s3, &settings,
                                &(S3Request){
                                        .kind = s3_kind,
                                        .location = location,
                                        .bucket = l.bucket,
                                        .key = l.key,
                                        .data = data,
                                        .if_absent = flags & STORAGE_WRITE_IF_ABSENT,
                                        .max_bytes = max,
                                        .deadline_ns = ctx ? ctx->deadline_ns : 0,
                                        .list_scheme =
                                                strncmp(location, "s3a://", 6) == 0   ? "s3a://"
                                                : strncmp(location, "s3n://", 6) == 0 ? "s3n://"
                                                                                      : "s3://",
                                },
                                cb, userdata, error);
}

int storage_read(Storage *s, const StorageContext *ctx, const char *location, uint64_t max_bytes,
                 StorageCallback cb, void *userdata, Error *error) {
        return storage_submit(s, ctx, LOCAL_READ, S3_OP_GET, location, slice_make(NULL, 0), 0,
                              max_bytes, cb, userdata, error);
}

int storage_size(Storage *s, const StorageContext *ctx, const char *location, StorageCallback cb,
                 void *userdata, Error *error) {
        return storage_submit(s, ctx, LOCAL_SIZE, S3_OP_HEAD, location, slice_make(NULL, 0), 0, 0,
                              cb, userdata, error);
}

int storage_read_tail(Storage *s, const StorageContext *ctx, const char *location,
                      uint64_t max_tail_bytes, StorageCallback cb, void *userdata, Error *error) {
        if (max_tail_bytes == 0)
                return error_set(error, -EINVAL, "'%s': a tail of 0 bytes", location);
        return storage_submit(s, ctx, LOCAL_TAIL, S3_OP_GET_TAIL, location, slice_make(NULL, 0), 0,
                              max_tail_bytes, cb, userdata, error);
}

/* A write on its way: its outcome feeds the write health before the caller hears it. */
typedef struct StorageWrite {
        Storage *storage;
        char *location;
        StorageProps *props; /* a copy: the caller's may be gone by the answer */
        StorageCallback cb;
        void *userdata;
} StorageWrite;

static StorageWrite *storage_write_free(StorageWrite *w) {
        if (!w)
                return NULL;
        free(w->location);
        storage_props_free(w->props);
        free(w);
        return NULL;
}

DEFINE_CLEANUP_FUNC(StorageWrite, storage_write_free);

static void storage_on_written(StorageResult *result, void *userdata) {
        StorageWrite *w = userdata;

        if (result->status != -ECANCELED)
                storage_health_note_write(&w->storage->health, w->location, w->props,
                                          result->status, &result->error);
        w->cb(result, w->userdata);
        storage_write_free(w);
}

int storage_write(Storage *s, const StorageContext *ctx, const char *location, Slice data,
                  unsigned flags, StorageCallback cb, void *userdata, Error *error) {
        _cleanup_(storage_write_freep) StorageWrite *w = NULL;
        int r;

        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        *w = (StorageWrite){
                .storage = s, .cb = cb, .userdata = userdata, .location = strdup(location)
        };
        /* Only an S3 probe is signed with the write's settings: local writes copy nothing. */
        if (!w->location || (ctx && !storage_location_is_local(location) &&
                             storage_props_copy(ctx->props, &w->props) < 0))
                return -ENOMEM;
        r = storage_submit(s, ctx, LOCAL_WRITE, S3_OP_PUT, location, data, flags, 0,
                           storage_on_written, w, error);
        if (r < 0)
                return r;
        TAKE_PTR(w); /* storage_on_written frees it */
        return r;
}

bool storage_is_writable(const Storage *s, const char **ret_reason) {
        if (s->health.is_unwritable && ret_reason)
                *ret_reason = s->health.reason;
        return !s->health.is_unwritable;
}

int storage_delete(Storage *s, const StorageContext *ctx, const char *location, StorageCallback cb,
                   void *userdata, Error *error) {
        return storage_submit(s, ctx, LOCAL_DELETE, S3_OP_DELETE, location, slice_make(NULL, 0), 0,
                              0, cb, userdata, error);
}

int storage_list(Storage *s, const StorageContext *ctx, const char *prefix_location,
                 size_t max_names, StorageCallback cb, void *userdata, Error *error) {
        return storage_submit(s, ctx, LOCAL_LIST, S3_OP_LIST, prefix_location, slice_make(NULL, 0),
                              0, max_names, cb, userdata, error);
}

typedef struct StorageReadMany StorageReadMany;

/* The userdata of one read of a storage_read_many(). */
typedef struct StorageReadSlot {
        StorageReadMany *many;
        size_t index;
} StorageReadSlot;

/* A storage_read_many() in progress: owns its copies of the locations and the items. It counts
 * as one operation in flight of the storage until it answered. */
struct StorageReadMany {
        Storage *storage;
        StorageContext ctx;
        char *root; /* ctx.root's copy */
        char **locations;
        StorageReadItem *items;
        StorageReadSlot *slots;
        size_t n, n_started, n_done;
        uint64_t max_bytes;
        unsigned max_concurrent;
        uv_work_t defer; /* answers from the loop when nothing could be sent */
        StorageReadManyCallback cb;
        void *userdata;
};

static StorageReadMany *storage_read_many_free(StorageReadMany *m) {
        if (!m)
                return NULL;
        for (size_t i = 0; i < m->n; i++) {
                free(m->locations[i]);
                buf_deinit(&m->items[i].data);
        }
        free(m->locations);
        free(m->root);
        free(m->items);
        free(m->slots);
        free(m);
        return NULL;
}

DEFINE_CLEANUP_FUNC(StorageReadMany, storage_read_many_free);

static void storage_read_many_finish(StorageReadMany *m) {
        Storage *s = m->storage;

        m->cb(m->items, m->n, m->userdata);
        storage_read_many_free(m);
        s->n_local_in_flight--;
        storage_maybe_closed(s);
}

static void storage_read_many_on_defer_work(uv_work_t *w) {
}

static void storage_read_many_on_defer_after(uv_work_t *w, int status) {
        storage_read_many_finish(w->data);
}

static void storage_read_many_on_item(StorageResult *result, void *userdata);

/* Keeps max_concurrent reads in flight; answers once every item is. Returns true when it
 * answered (m is gone). */
static bool storage_read_many_pump(StorageReadMany *m, bool in_call) {
        while (m->n_started < m->n && m->n_started - m->n_done < m->max_concurrent) {
                size_t i = m->n_started++;
                StorageReadItem *item = &m->items[i];
                int r;

                m->slots[i] = (StorageReadSlot){ .many = m, .index = i };
                r = storage_read(m->storage, &m->ctx, m->locations[i], m->max_bytes,
                                 storage_read_many_on_item, &m->slots[i], &item->error);
                if (r < 0) {
                        item->status = r;
                        m->n_done++;
                }
        }
        if (m->n_done < m->n)
                return false;
        if (in_call) {
                /* Nothing went out (every item failed at once): answer from the loop. */
                m->defer.data = m;
                if (uv_queue_work(m->storage->loop, &m->defer, storage_read_many_on_defer_work,
                                  storage_read_many_on_defer_after) == 0)
                        return true;
        }
        storage_read_many_finish(m);
        return true;
}

static void storage_read_many_on_item(StorageResult *result, void *userdata) {
        StorageReadSlot *slot = userdata;
        StorageReadMany *m = slot->many;
        StorageReadItem *item = &m->items[slot->index];

        item->status = result->status;
        item->error = result->error;
        if (result->status == 0) {
                item->data = result->data;
                buf_init(&result->data, 0);
        }
        m->n_done++;
        (void)storage_read_many_pump(m, /* in_call= */ false);
}

int storage_read_many(Storage *s, const StorageContext *ctx, const char *const *locations, size_t n,
                      uint64_t max_bytes, unsigned max_concurrent, StorageReadManyCallback cb,
                      void *userdata) {
        _cleanup_(storage_read_many_freep) StorageReadMany *m = NULL;

        if (s->is_closing)
                return -ESHUTDOWN;
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->storage = s;
        m->ctx = ctx ? *ctx : (StorageContext){ 0 };
        if (m->ctx.root) {
                m->root = strdup(m->ctx.root);
                if (!m->root)
                        return -ENOMEM;
                m->ctx.root = m->root;
        }
        m->max_bytes = max_bytes;
        m->max_concurrent = max_concurrent ? max_concurrent : 1;
        m->cb = cb;
        m->userdata = userdata;
        m->locations = calloc(n + 1, sizeof(*m->locations));
        m->items = calloc(n + 1, sizeof(*m->items));
        m->slots = calloc(n + 1, sizeof(*m->slots));
        if (!m->locations || !m->items || !m->slots)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                m->locations[i] = strdup(locations[i]);
                m->n = i + 1;
                if (!m->locations[i])
                        return -ENOMEM;
        }
        m->n = n;
        /* Counted as one operation: a close waits for its answer. */
        s->n_local_in_flight++;
        /* The pump owns m from here: it frees m once every read is answered. */
        (void)storage_read_many_pump(TAKE_PTR(m), /* in_call= */ true);
        return 0;
}

void storage_set_roots(Storage *s, StorageRoots *roots) {
        storage_roots_free(s->roots);
        s->roots = roots;
}

const StorageRoots *storage_roots(const Storage *s) {
        return s->roots;
}

uint64_t storage_requests_sent(const Storage *s) {
        return s->s3 ? s3_client_requests_sent(s->s3) : 0;
}

static void storage_on_s3_closed(void *userdata) {
        Storage *s = userdata;

        s->s3 = NULL;
        s->s3_closed = true;
        storage_maybe_closed(s);
}

void storage_close(Storage *s, void (*done)(void *userdata), void *userdata) {
        assert(s && !s->is_closing);
        s->is_closing = true;
        s->close_done = done;
        s->close_userdata = userdata;
        storage_health_close(&s->health, &s->health_pending);
        s3_client_close(s->s3, storage_on_s3_closed, s);
}

/* What the health (health.c) asks of the storage it watches. */
static int storage_health_probe_write(Storage *s, const StorageProps *props, const char *location,
                                      StorageCallback cb, void *userdata) {
        return storage_submit(s, &(StorageContext){ .props = props }, LOCAL_WRITE, S3_OP_PUT,
                              location, slice_make(NULL, 0), STORAGE_WRITE_IF_ABSENT, 0, cb,
                              userdata, NULL);
}

static int storage_health_probe_delete(Storage *s, const StorageProps *props, const char *location,
                                       StorageCallback cb, void *userdata) {
        return storage_delete(s, &(StorageContext){ .props = props }, location, cb, userdata, NULL);
}

static void storage_health_on_closed(Storage *s) {
        s->health_pending = false;
        storage_maybe_closed(s);
}

static const StorageHealthOps storage_health_ops = {
        .write_probe = storage_health_probe_write,
        .delete_probe = storage_health_probe_delete,
        .closed = storage_health_on_closed,
};

int storage_new(uv_loop_t *loop, const StorageConfig *config, Metrics *metrics,
                Storage **ret_storage) {
        _cleanup_(freep) Storage *s = NULL;
        int r;

        assert(loop && config && ret_storage);
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->loop = loop;
        s->config = config;
        s->metrics = metrics;
        storage_health_init(&s->health, s, &storage_health_ops, loop, config->probe_interval_ms);
        r = s3_client_new(loop, &config->s3, metrics, &s->s3);
        if (r < 0)
                return r;
        *ret_storage = TAKE_PTR(s);
        return 0;
}
