/* SPDX-License-Identifier: Apache-2.0 */
/* Table storage: the one place that knows how an Iceberg location is read and written. Two
 * backends behind one asynchronous interface: local paths and file:// URIs on the uv thread
 * pool (local.c), and S3-compatible object stores (s3://, s3a://, s3n://) on the event loop
 * through libcurl (s3.c). Callers never learn which one answered. Loop thread only. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "config/config.h"
#include "metrics/metrics.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/slice.h"

/* Owned by the daemon: closed by storage_close(), freed by storage_free() once closed. A closed
 * storage refuses every operation with -ESHUTDOWN, so modules may still call it until then. */
typedef struct Storage Storage;
typedef struct StorageRoots StorageRoots;

/* Per-table settings the catalog handed out: its /v1/config properties, then the table's
 * LoadTableResult.config, then the longest-prefix entry of its storage-credentials (REST spec
 * names: s3.endpoint, s3.access-key-id, ..., s3.session-token-expires-at-ms). Owned by whoever
 * loaded the table; operations copy what they need before they return. */
typedef struct StorageProps StorageProps;

/* Builds the settings from a catalog's properties (may be NULL) and a LoadTableResult (may be
 * NULL). Only keys of the storage namespaces (s3.*, client.*) are kept. Returns 0, -ENOMEM or
 * -EBADMSG (not string maps, a malformed storage-credentials entry). */
int storage_props_new(const json_t *catalog_properties, const json_t *load_result,
                      StorageProps **ret_props, Error *error);
StorageProps *storage_props_free(StorageProps *p);
DEFINE_CLEANUP_FUNC(StorageProps, storage_props_free);
/* Whether the catalog's credentials for `location` expire at or before when_ms (wall clock;
 * never for static keys, for credentials without s3.session-token-expires-at-ms, or p NULL). */
bool storage_props_expire_before(const StorageProps *p, const char *location, int64_t when_ms);
/* A deep copy of p (NULL gives NULL). Returns 0 or -ENOMEM. */
int storage_props_copy(const StorageProps *p, StorageProps **ret_copy);

/* What an operation found. Everything is borrowed for the callback, except that the callback
 * may take `data` (buf_steal() or a struct copy followed by buf_init()). */
typedef struct StorageResult {
        /* 0, or: -ENOENT no such object (or bucket); -EEXIST a create-if-absent found one;
         * -EACCES denied or credentials refused; -EKEYEXPIRED credentials expired; -EFBIG
         * larger than max_bytes; -EPROTONOSUPPORT/-EINVAL an unsupported or malformed location;
         * -EXDEV the location is not beneath the context's root (a symlink out of it);
         * -EAGAIN a transient failure that outlived the retries (5xx, SlowDown, resets,
         * timeouts, a full or read-only disk); -ETIMEDOUT the deadline passed; -ECANCELED the
         * storage is closing; -EIO a local I/O error; -EREMOTEIO anything else the store
         * refused (a 4xx of its own); -ENOMEM. A failed write may
         * have left the object behind: delete it when unsure. */
        int status;
        Buf data;      /* read: the object's bytes (NUL-terminated); read_tail: its
                        * last bytes */
        uint64_t size; /* size, read_tail: the object's size in bytes */
        char **names;  /* list: full locations under the prefix, sorted */
        size_t n_names;
        bool is_truncated;   /* list: more than max_names exist; names holds the first ones */
        unsigned n_requests; /* round trips to the store (1 for a local operation) */
        Error error;         /* the location, and for S3 bucket, key, the store's code and
                              * message; never a credential */
} StorageResult;

/* Called exactly once per accepted operation, from the loop, never from inside the call. */
typedef void (*StorageCallback)(StorageResult *result, void *userdata);

/* How one operation runs: whose settings, and by when it must be answered. */
typedef struct StorageContext {
        const StorageProps *props; /* NULL: the daemon's own [s3] settings */
        uint64_t deadline_ns;      /* CLOCK_MONOTONIC; 0: no deadline beyond the retries */
        /* A directory location the object must be reached beneath (reads, sizes and tails),
         * or NULL. Local: opened with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
         * relative to it (an O_NOFOLLOW walk on kernels without openat2), so that a symlink
         * out of it fails with -EXDEV, exactly as a location that is not under it; object
         * stores have no links, so there it is only that lexical check. Borrowed for the
         * call. */
        const char *root;
} StorageContext;

/* Flags of storage_write(). */
enum {
        STORAGE_WRITE_IF_ABSENT = 1 << 0, /* -EEXIST when the object exists; never replaces */
};

/* Creates the storage on `loop` with `config` (borrowed for its lifetime). The S3 client starts
 * on first use. Returns 0, -ENOMEM or -EINVAL. */
int storage_new(uv_loop_t *loop, const StorageConfig *config, Metrics *metrics,
                Storage **ret_storage);
/* Fails every operation in flight with -ECANCELED (S3) or waits for its thread-pool job (local),
 * closes every handle and calls done(userdata) from the loop (may be NULL). */
void storage_close(Storage *s, void (*done)(void *userdata), void *userdata);
/* Frees a closed storage (or NULL). Returns NULL. */
Storage *storage_free(Storage *s);

/* Each operation returns <0 without calling cb (-ESHUTDOWN, -ENOMEM, -EPROTONOSUPPORT or -EINVAL
 * for a location no backend takes, with the reason in *error when error is not NULL), or 0. */

/* Reads a whole object of at most max_bytes. */
int storage_read(Storage *s, const StorageContext *ctx, const char *location, uint64_t max_bytes,
                 StorageCallback cb, void *userdata, Error *error);
/* The size of an object (S3: HEAD; local: a regular file's size). */
int storage_size(Storage *s, const StorageContext *ctx, const char *location, StorageCallback cb,
                 void *userdata, Error *error);
/* The last max_tail_bytes (>= 1) of an object, and its size: the whole object when it is
 * smaller (S3: one GET with Range: bytes=-N, 206 or a 200 with the whole object; local: a
 * pread of a regular file). */
int storage_read_tail(Storage *s, const StorageContext *ctx, const char *location,
                      uint64_t max_tail_bytes, StorageCallback cb, void *userdata, Error *error);
/* Writes an object; data is borrowed until the callback. Local files are fsynced with their
 * directory; an S3 PUT is durable once answered. */
int storage_write(Storage *s, const StorageContext *ctx, const char *location, Slice data,
                  unsigned flags, StorageCallback cb, void *userdata, Error *error);
/* Deletes an object; a missing one is success. */
int storage_delete(Storage *s, const StorageContext *ctx, const char *location, StorageCallback cb,
                   void *userdata, Error *error);
/* Lists the objects whose location starts with prefix_location: the first max_names of them in
 * byte order, is_truncated when there are more. Local: the regular files of the prefix's
 * directory whose names start with the rest. */
int storage_list(Storage *s, const StorageContext *ctx, const char *prefix_location,
                 size_t max_names, StorageCallback cb, void *userdata, Error *error);

/* One object of storage_read_many(). */
typedef struct StorageReadItem {
        int status; /* as StorageResult.status */
        Buf data;   /* the bytes; the callback may take them */
        Error error;
} StorageReadItem;

/* Called once with every item answered (in the order of the locations). */
typedef void (*StorageReadManyCallback)(StorageReadItem *items, size_t n_items, void *userdata);

/* Reads n objects of at most max_bytes each, max_concurrent at a time (locations borrowed for
 * the call only). Returns <0 without calling cb (-ENOMEM, -ESHUTDOWN), or 0; each item's
 * failure is its own (an unsupported location fails that item). n may be 0. */
int storage_read_many(Storage *s, const StorageContext *ctx, const char *const *locations, size_t n,
                      uint64_t max_bytes, unsigned max_concurrent, StorageReadManyCallback cb,
                      void *userdata);

/* Whether writes work (GET /readyz): false from a write that failed for a reason of the
 * storage (read-only, full, out of quota, I/O error, denied, unavailable after the retries)
 * until a later write, or the probe (an empty object created and deleted next to the failed
 * location every storage.probe-interval-ms, with that write's settings), succeeds. When false
 * and ret_reason is not NULL, *ret_reason is the last failure (borrowed until the next loop
 * callback). */
bool storage_is_writable(const Storage *s, const char **ret_reason);

/* The storage roots (roots.h) every operation with a context must stay within: table files are
 * never read, sized, listed, written or deleted outside them (-EXDEV, before any I/O; -EAGAIN
 * while the roots are not known yet). Operations without a context are the embedded bucket
 * catalog's own, under its warehouse. Takes `roots` (the old ones are freed; NULL: not known). */
void storage_set_roots(Storage *s, StorageRoots *roots);
/* The roots in force (borrowed until the next storage_set_roots()), or NULL while not known. */
const StorageRoots *storage_roots(const Storage *s);

/* Round trips to object stores so far, for benchmarks and tests. */
uint64_t storage_requests_sent(const Storage *s);

/* --- locations (pure; location.c) ------------------------------------------------------- */

typedef enum StorageScheme {
        STORAGE_SCHEME_LOCAL, /* "/p", "file:/p", "file:///p" */
        STORAGE_SCHEME_S3,    /* s3://, s3a://, s3n:// */
} StorageScheme;

/* A location taken apart. For S3 the key never starts with '/'. Owned strings. */
typedef struct StorageLocation {
        StorageScheme scheme;
        char *path;   /* local: the normalized absolute path */
        char *bucket; /* S3 */
        char *key;    /* S3: may be "" for the bucket itself (a prefix) */
} StorageLocation;

/* Parses a location. Local paths are normalized ("//" and "." collapsed) and ".." refused. An S3
 * key must be canonical already (no empty, "." or ".." segments), since stores do not normalize
 * and two spellings would name two objects; a trailing '/' is allowed (a directory). Returns 0,
 * -EPROTONOSUPPORT (other schemes, naming what is supported) or -EINVAL, with the reason. */
int storage_location_parse(const char *location, StorageLocation *ret, Error *error);
void storage_location_deinit(StorageLocation *l);
/* Whether `location` lies strictly inside the directory `dir_location`: the same store, bucket
 * (s3, s3a and s3n are one) and a key or path below it. */
bool storage_location_is_within(const char *location, const char *dir_location);
/* Whether a location is on the local filesystem (a path or file: URI). */
bool storage_location_is_local(const char *location);
/* One spelling per file, for comparisons: the normalized path of a local location, and
 * "s3://bucket/key" for s3://, s3a:// and s3n:// alike; a location that does not parse is
 * returned as written. NULL when out of memory. Thread-safe. */
char *storage_location_canonical(const char *location);
/* The normalized local path of a location; -EPROTONOSUPPORT for object stores. */
int storage_path_from_location(const char *location, char **ret_path, Error *error);

/* Whether an operation's status is worth retrying later unchanged (the writer gets a 503 or 504,
 * never a 4xx that would make it drop its data). */
bool storage_status_is_transient(int status);
