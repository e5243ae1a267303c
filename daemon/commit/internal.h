/* SPDX-License-Identifier: Apache-2.0 */
/* Inside the commit engine: the structures engine.c (intake, queues, keys, shutdown) and
 * batch.c (attempts of one batch) share. Nothing outside commit/ includes this. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "commit/engine.h"
#include "commit/key_index.h"
#include "commit/live_index.h"
#include "commit/registry.h"
#include "iceberg/manifest.h"
#include "iceberg/manifest_file.h"
#include "iceberg/manifest_merge.h"
#include "iceberg/snapshot.h"
#include "iceberg/table.h"
#include "storage/storage.h"
#include "util/budget.h"
#include "util/uuid.h"

typedef struct TableQueue TableQueue;
typedef struct TableState TableState;

/* What the engine keeps of one table between commits (table_state.c). */
struct TableState {
        CommitEngine *engine;
        char *name;              /* the table: "ns\x1ftable" */
        json_t *result;          /* the newest LoadTableResult-shaped object; NULL: load first */
        StorageProps *props;     /* the storage settings of the last load */
        uint64_t loaded_ns;      /* when that load answered */
        const char *drop_reason; /* why result is NULL: the reason of the next load */
        KeyIndex keys;           /* the idempotency keys of result's recent snapshots */
        unsigned n_refs;         /* queues (and intakes) holding it */
        TableState *next;
};

/* A parent manifest whose list entry had null (unknown) counts, counted from its entries. */
typedef struct CountedManifest {
        char *path;
        ManifestCounts counts;
} CountedManifest;

typedef struct Batch Batch;
typedef struct Job Job;

/* One storage operation of a job's or batch's fan-out: which item it is for. */
typedef struct IoSlot {
        Job *job;
        Batch *batch;
        size_t index;
} IoSlot;

/* One data file a staged manifest names, to be sized on storage at intake (probe.c). */
typedef struct Probe {
        size_t manifest, entry; /* staged-manifests[manifest] entry */
        char *root;             /* the table root it lies under (owned) */
        int64_t size;           /* its file_size_in_bytes */
} Probe;

/* A manifest icecommitd writes for one request, once, at intake, under a name no one else
 * uses (owned.c): its copy of a staged manifest, or the manifest of its data-files. The table
 * references it, never the writer's file. Owned by its job. */
typedef struct OwnedManifest {
        char *location;     /* NULL: not ours (the staged manifest committed by reference) */
        Buf bytes;          /* its bytes, until written */
        bool is_on_storage; /* written (or maybe half-written): delete it when the request is
                             * known not to be committed */
} OwnedManifest;

/* One accepted writer request. Owned by its queue (pending list) or its batch. */
struct Job {
        CommitEngine *engine;
        WriterRequest *writer;
        KeyEntry *entry;
        StagedManifest **manifests; /* parsed at intake, reused unchanged by every attempt */
        int64_t *manifest_lengths;
        size_t n_manifests;   /* the request's staged ones, then the one for data-files */
        size_t list_offset;   /* index of its first manifest in the attempt's list */
        TableMetadata *table; /* loaded at intake for data-files or object storage */
        StorageProps *props;  /* the storage settings that load gave, or NULL */
        Buf *manifest_bytes;  /* the staged manifests as read, until parsed */
        uint64_t *file_sizes; /* the data-files' sizes on storage */
        uint8_t *file_reads;  /* tail reads of each data-file's footer so far */
        Probe *probes;        /* staged manifests' data files to size, after parsing */
        uint64_t probe_bytes; /* what they (and probe_io) count in intake */
        size_t n_probes, n_probes_started, n_probes_done;
        IoSlot *probe_io;
        int probe_status; /* the first failed probe's status, 0 if none */
        void (*probes_done)(Job *j);
        IoSlot *io; /* intake reads: manifests, then data-file sizes */
        size_t n_io, n_io_started, n_io_done;
        int io_status; /* the first failed read's status, 0 if none */
        /* Per manifest (n_manifests + 1 slots: the staged ones, then the data-files' one):
         * what icecommitd writes for it at intake, committed in its place. */
        OwnedManifest *owned;
        IoSlot *owned_io;
        size_t n_owned_next, n_owned_started, n_owned_done;
        int owned_status; /* the first failed write's status, 0 if none */
        void (*owned_done)(Job *j);
        bool may_be_committed;    /* an attempt got no verdict: keep what is owned */
        bool resolves_unknown;    /* a retry of a key whose commit got no verdict before */
        int intake_status;        /* HTTP status of an intake failure, 0 if fine */
        bool breaks_lineage;      /* equality deletes on a v3 table, allowed by policy */
        const char *refusal_type; /* set on the thread pool when this attempt found the
                                   * request naming what the table or the batch holds
                                   * already; answered (422) by the loop, reason in error */
        const char *intake_type;  /* its error type; NULL: "invalid-manifest" */
        /* What the request holds at intake (docs/design.md section 2.1): its manifests' bytes
         * until parsed, what parsing keeps until the request is answered, the data-files
         * manifest until written, the probe list until probed; within its own bound
         * (commit.intake-max-request-bytes) and the engine's intake_budget. */
        BudgetHold intake;
        Error error;
        uv_work_t work;
        Job *next;
};

/* The manifest list a queue's last commit wrote: the next attempt's parent, as it is on
 * storage (bytes) and decoded (files), so that it is neither read nor decoded again. */
typedef struct ListCache {
        char *location; /* NULL: nothing kept */
        Buf bytes;
        ManifestFile *files;
        size_t n_files;
        uint64_t size; /* what it counts against commit.manifest-list-cache-max-bytes */
} ListCache;
/* A manifest a batch merged from parent manifests (merge.c): written once and kept across the
 * batch's attempts, so that a retry reuses it while its inputs are all still in the parent's
 * list. Owned by the batch; deleted at its end unless a list naming it may have committed. */
typedef struct MergedManifest {
        ManifestFile file; /* its list entry (no first_row_id); file.path: where it lies */
        char **inputs;     /* the parent's manifests it replaces, in list order */
        size_t n_inputs;
        uint64_t n_entries_read;
        bool is_used;          /* in this attempt's list */
        bool may_be_committed; /* in a list that committed or got no verdict */
} MergedManifest;

/* One attempt's merge step (merge.c), reset by every attempt. */
typedef struct MergeAttempt {
        bool is_done;                  /* ran (or was skipped) this attempt */
        size_t *owner;                 /* per parent list entry: 1 + index of the merged
                                        * manifest replacing it, 0 if none */
        ManifestMergePlan plan;        /* over candidates: the entries no merged one claims */
        size_t *candidates;            /* ... as list indices */
        ManifestFile *candidate_files; /* shallow copies for the plan, not owned */
        size_t n_candidates;
        StorageReadItem *items; /* the plan's inputs as read, bins in order */
        size_t n_items;
        Buf *bytes;          /* per bin: the merged manifest until written */
        ManifestFile *files; /* per bin: its list entry until cached */
        ManifestMergeStats *stats;
        int *status;      /* per bin: 0 merged, else left unmerged (the reason logged) */
        size_t n_written; /* bins handled by the write step so far */
        int work_status;
        Error error;
        uv_work_t work;
} MergeAttempt;

struct TableQueue {
        CommitEngine *engine;
        char *name;  /* "ns\x1ftable@branch" (request.h) */
        char *label; /* the same, printable for logs: "ns.table@branch" */
        Job *head, *tail;
        Batch *batch;           /* in flight, at most one */
        uv_timer_t retry_timer; /* the batch's next attempt; with no batch, the idle timeout */
        TableState *state;      /* the table's, shared with its other branches' queues */
        LiveIndex live;         /* the data files live in the table's branch */
        ListCache list_cache;
        TableQueue *next;
};

struct Batch {
        TableQueue *queue;
        Job **jobs;
        size_t n_jobs, max_jobs; /* max_jobs: room in jobs */
        int64_t snapshot_id;     /* chosen once, reused by every attempt */
        char commit_uuid[UUID_STRING_MAX];
        unsigned attempt;
        unsigned built_attempt; /* the attempt that built commit_request (replays resend it) */
        uint64_t started_ns;
        TableMetadata *table;
        StorageProps *props; /* this attempt's storage settings from its load */
        TableBranch head;    /* the branch as loaded; not existing = created by this commit */
        TableBranch parent;  /* the head, or for a new branch main's head (as Java does) */
        char *parent_list_location;
        int64_t sequence_number;
        int64_t first_row_id;
        int64_t next_row_id;
        int64_t timestamp_ms;
        ManifestFile *list; /* staged manifests first, then the parent's */
        size_t n_list;
        size_t n_staged;
        char *list_location;        /* as sent to the catalog */
        char *list_cleanup;         /* the same, while ours to delete; NULL once committed
                                     * or handed to deletion */
        Buf parent_bytes;           /* the parent's manifest list as read, until the new one */
        ManifestFile *parent_files; /* ... and parsed */
        size_t n_parent_files;
        bool has_parent_files; /* parent_files came with parent_bytes (the list cache) */
        size_t *to_count;      /* indices into list of manifests to count, this attempt */
        Buf *count_bytes;      /* ... and their bytes */
        size_t n_to_count;
        IoSlot *io;
        size_t n_io_started, n_io_done;
        int io_status;
        Buf list_bytes;                   /* the new manifest list, until written */
        json_t *commit_request;           /* this attempt's CommitTableRequest, kept for replays */
        char commit_key[UUID_STRING_MAX]; /* its Idempotency-Key ("" when none was sent) */
        bool has_unknown;                 /* an attempt got no verdict: it may have landed */
        bool on_state;                    /* this attempt's table is the table state's */
        bool needs_fresh_table;           /* a check on the state would refuse: load first */
        CountedManifest *counted;         /* manifests counted from their entries, kept across
                                           * attempts so that a retry does not read them again */
        size_t n_counted;
        int work_status;
        /* This attempt fills in or merges nothing of the parent's entries: the new list may
         * copy its blocks (batch_append_list). */
        bool is_parent_unchanged;
        LiveIndexAttempt live;  /* this attempt's check against the live files */
        MergedManifest *merged; /* every manifest this batch merged, across attempts */
        size_t n_merged;
        StorageProps *merge_props; /* the storage settings to delete them with */
        MergeAttempt merge;
        Error error;
        uv_work_t work;
};

struct CommitEngine {
        uv_loop_t *loop;
        const CommitConfig *config;
        const StorageConfig *storage_config;
        Storage *storage;
        Catalog *catalog;
        Metrics *metrics;
        KeyRegistry *keys;
        TableQueue *queues;
        TableState *states;
        size_t n_queued;      /* accepted requests not yet answered */
        unsigned n_in_flight; /* thread-pool jobs and catalog calls */
        unsigned n_open_handles;
        Budget live_budget;                  /* shared by every queue's index */
        Budget intake_budget;                /* every request's intake (Job.intake) */
        uint64_t list_cache_bytes;           /* every queue's ListCache */
        uint8_t live_key[SIPHASH_KEY_BYTES]; /* their hash key: random, drawn once */
        bool has_live_key;
        bool is_stopping;
        bool is_closing_handles;
        void (*stop_done)(void *userdata);
        void *stop_userdata;
};

/* engine.c */
Job *engine_job_free(Job *j);
DEFINE_CLEANUP_FUNC(Job, engine_job_free);
/* Answers the job's writer and every waiter on its key, records the outcome, frees the job. */
void engine_job_finish(Job *j, KeyState state, int status, json_t *body);
void engine_job_fail(Job *j, int status, const char *type, const char *fmt, ...) _printf_(4, 5);
/* Sets the job's intake failure after a budget_take() on j->intake refused (r: -EFBIG, the
 * request's own bound: 413 request-too-large; -EBUSY, the daemon's: 503 server-busy), naming
 * `what` and the bound. Returns r. Any thread (the job is its thread's). */
int engine_intake_refuse(Job *j, int r, const char *what);
/* Deletes a file known not to be committed (location stolen; NULL is ignored), in the
 * background; props (borrowed for the call) sign an object-store delete. */
void engine_delete_file_async(CommitEngine *e, const StorageProps *props, char *location);
/* The storage context of an operation for a request accepted at accepted_ns: the commit's
 * deadline (commit.total-timeout-ms). */
StorageContext engine_storage_context(const CommitEngine *e, const StorageProps *props,
                                      uint64_t accepted_ns);
/* The writer-API answer to a failed storage operation: HTTP status and error type. A transient
 * failure is 503 (retry with the same key), never a 4xx. */
int engine_storage_http_status(int status, const char **ret_type, const char *permanent_type);
/* storage_roots_refuse_table() for a loaded table, with the engine's roots. */
int engine_check_table_roots(const CommitEngine *e, const TableMetadata *t, const char **ret_type,
                             Error *error);
/* Drops a reference; the last one of a tree is freed on the thread pool, never the loop. */
void engine_release_json(CommitEngine *e, json_t *json);
/* Frees a table, its metadata tree as engine_release_json() does (t may be NULL). */
void engine_release_table(CommitEngine *e, TableMetadata *t);
/* Starts the queue's idle timeout (nothing waiting, no batch): commit.queue-idle-ms later the
 * queue is dropped with what it holds. */
void engine_queue_idle(TableQueue *q);
/* Calls the stop callback once stopping and nothing is in flight any more. */
void engine_maybe_stopped(CommitEngine *e);

/* owned.c */
/* "copy-" and 32 hex digits, and the NUL. */
#define OWNED_COPY_ID_MAX 38
/* Where the job's k-th manifest is committed from: icecommitd's copy of a staged one (or the
 * staged one itself when not copied), or the one written for its data-files. */
const char *owned_manifest_location(const Job *j, size_t k);
/* What names a staged manifest's copies (the first 128 bits of the SHA-256 of its canonical
 * location): "copy-" and 32 hex digits. Returns 0 or -ENOMEM. */
int owned_copy_id(const char *staged_location, char ret[OWNED_COPY_ID_MAX]);
/* The copy id a manifest list entry's file name starts with, if it is one of our copies. */
bool owned_copy_id_of(const char *list_location, char ret[OWNED_COPY_ID_MAX]);
/* Thread pool: builds icecommitd's copy of staged manifest k (its bytes as read) into
 * j->owned[k], at most max_bytes, and its new location in the table's metadata directory.
 * The copy's bytes are taken from j->intake before it is made. Returns 0, -EFBIG or -EBUSY
 * when the request's or the daemon's intake bound refuses them (the caller words it:
 * engine_intake_refuse()), or another <0 with the reason in j->error (manifest_staged_copy()'s
 * codes). */
int owned_copy_prepare(Job *j, size_t k, Slice staged, uint64_t max_bytes);
/* Loop: writes every owned manifest (create-if-absent), s3.max-concurrent-requests at a time,
 * then calls done(j); on a failure deletes what was written and answers the job instead. */
void owned_write_start(Job *j, void (*done)(Job *j));
/* Deletes the owned manifests that may be on storage: the request is known not committed. */
void owned_delete(Job *j, const StorageProps *props);
void owned_free(Job *j);

/* data_files.c */ /* Before the intake reads: refuses data-files outside the table location
                    * (nothing is asked of storage for them). On failure sets intake_status/_type
                    * and j->error. */
int data_files_check_locations(Job *j);
/* Thread pool: checks the request's data-files against j->table and their sizes on storage
 * (j->file_sizes), builds their manifest into the last of j->owned (written by the loop after;
 * its capacity counted in j->intake until then) and appends it, parsed within `limits`, to
 * j->manifests. On failure sets intake_status/_type and j->error. */
int data_files_intake(Job *j, uint64_t max_manifest_bytes, const ManifestLimits *limits);

/* probe.c */
/* The root of the table a data file lies under: its location, write.data.path (or the older
 * write.folder-storage.path, write.object-storage.path), or an entry of the table property
 * icecommit.allowed-prefixes; NULL when none (or out of memory). Owned by the caller. */
char *probe_confinement_root(const TableMetadata *t, const char *path);
/* The refusal of staged manifest k's entry e as outside the table: the same words whether the
 * path is outside or a symlink leads out, so that nothing about the file shows. */
void probe_outside_message(const Job *j, size_t k, size_t e, char *out, size_t size);
/* Thread pool, after parsing: refuses an entry of a staged manifest outside the table and
 * lists the data files to size (commit.verify-data-files) in j->probes, counted in j->intake.
 * On failure sets intake_status/_type and j->error. */
int probe_plan(Job *j);
/* Loop: sizes the listed files beneath their roots, s3.max-concurrent-requests at a time, then
 * calls done(j); on a missing file, a wrong size or a storage fault answers the job instead. */
void probe_start(Job *j, void (*done)(Job *j));
/* Frees the list (and its I/O slots) and gives back what it counted. */
void probe_list_free(Job *j);
/* Whether 'data-files'[i] gets its footer checked (a PARQUET file, commit.check-parquet-footers).
 */
bool probe_wants_footer(const Job *j, size_t i);
/* Checks 'data-files'[i]'s record-count against the footer in a tail read. Returns 0,
 * PARQUET_FOOTER_E_SHORT with the tail length that holds the footer, or <0 having set
 * intake_status/_type and j->error (not Parquet, a footer too long or malformed, a mismatch). */
int probe_footer_check(Job *j, size_t i, const StorageResult *result, uint64_t *ret_need);

/* batch.c */
/* Starts the next batch of a queue when none is in flight (group commit). */
void batch_queue_kick(TableQueue *q);
/* Answers every job of the batch with the same error and ends it. */
void batch_fail(Batch *b, KeyState state, int status, const char *type, const char *fmt, ...)
        _printf_(5, 6);
/* After the attempt's list is assembled: goes on with counting and writing the list. */
void batch_continue(Batch *b);
/* Answers (422) the requests an attempt's checks flagged, and starts the next attempt for the
 * others (or ends the batch). */
void batch_refuse_flagged(Batch *b);
/* A storage failure while building the list: transient ones retry the attempt (503), others
 * end the batch. */
void batch_storage_failed(Batch *b, int status, const char *what);

/* table_state.c */
/* The table's state, made empty if new; held until table_state_put(). NULL: out of memory. */
TableState *table_state_get(CommitEngine *e, const char *name);
/* The table's state if the engine has one (not held), else NULL. */
TableState *table_state_find(CommitEngine *e, const char *name);
void table_state_put(TableState *s);
/* Whether a commit may use the state instead of loading: there is one, younger than
 * commit.table-state-max-age-ms, and its vended credentials outlast a commit. */
bool table_state_is_fresh(const TableState *s);
/* Forgets the table (after a 409, an attempt without a verdict, a failure): the next attempt
 * loads it; reason names that load in metrics and logs. s may be NULL. */
void table_state_drop(TableState *s, const char *reason);
/* Why the next attempt loads: "first", "conflict", "unknown", ..., or "age". */
const char *table_state_load_reason(const TableState *s);
/* A load answered: result (a LoadTableResult, referenced; t is it parsed) and its settings
 * (copied) become the state. Returns 0 or -ENOMEM (the state is dropped). */
int table_state_loaded(TableState *s, json_t *result, const TableMetadata *t,
                       const StorageProps *props);
/* A commit landed: the catalog's response (referenced) becomes the state when it shows the
 * table with snapshot_id at the head of branch; else the state is dropped. */
void table_state_adopt(TableState *s, json_t *response, const char *branch, int64_t snapshot_id);
/* Records a key the commit of snapshot_id carried, after table_state_adopt(). */
void table_state_add_key(TableState *s, const char *key, int64_t snapshot_id);
/* The state as a table and storage settings of the caller's own. Returns 0, -EINVAL (the
 * reason in error) or -ENOMEM. */
int table_state_use(const TableState *s, TableMetadata **ret_table, StorageProps **ret_props,
                    Error *error);
/* merge.c */
/* Whether this attempt may merge the parent's manifests (the list is then built only after
 * the merge step). Pure; any thread. */
bool merge_is_possible(const Batch *b);
/* Loop, once per attempt before the list is counted and written: reuses the batch's merged
 * manifests whose inputs are all in the parent's list, plans the rest by the table's
 * commit.manifest-merge properties, reads, rewrites (thread pool) and writes the bins, and
 * replaces their inputs in b->list. Returns false when it did all there was to do inline (the
 * caller goes on); true when it goes on by itself (batch_continue, or a failure). */
bool merge_start(Batch *b);
/* The snapshot summary's manifest counts of this attempt's list. */
void merge_summary(const Batch *b, SnapshotAdded *added);
/* After a commit that landed (is_committed) or got no verdict: this attempt's merged
 * manifests are never deleted. */
void merge_attempt_outcome(Batch *b, bool is_committed);
void merge_attempt_deinit(Batch *b);
/* At the batch's end: deletes the merged manifests no list that may have committed names. */
void merge_batch_deinit(Batch *b);

/* observe.c */
/* After a commit landed: the table's last-commit time and row ids, and the commit's log line
 * (table, branch, keys, snapshot id, attempts, duration; JSON or journal fields too). */
void observe_committed(const Batch *b);
/* From engine_job_finish(): counts a request with an earlier commit without verdict whose
 * outcome is now known (icecommit_unknown_outcomes_resolved_total). */
void observe_job_finished(const Job *j, KeyState state, int status);
/* Before /metrics is exposed: each table's queue depth and oldest request, and the unknown
 * outcomes outstanding (registry entries answered 504, requests in queues being resolved). */
void observe_scrape(CommitEngine *e);

/* receipt.c */
/* What a receipt says, from the committing attempt or rebuilt from the table. */
typedef struct ReceiptSource {
        const char *key;         /* as the writer sent it */
        const json_t *namespace; /* its levels, a JSON array */
        const char *table;
        const char *branch; /* NULL: not recorded */
        int64_t snapshot_id;
        int64_t sequence_number;
        bool has_first_row_id; /* a v3 snapshot */
        int64_t first_row_id;
        size_t n_requests;                   /* in the snapshot */
        unsigned attempt;                    /* the attempt that built it; 0: not recorded */
        bool has_manifests;                  /* false: the request's manifests are not known */
        const ManifestFile *manifests;       /* the request's list entries, in list order */
        const StagedManifest *const *staged; /* their entries, the same order */
        size_t n_manifests;
} ReceiptSource;
/* The receipt s describes. NULL when out of memory. */
json_t *receipt_from(const ReceiptSource *s);
/* The receipt of job j, committed by b's attempt (its list holds j's manifests from
 * j->list_offset on). NULL when out of memory. */
json_t *receipt_build(const Batch *b, const Job *j);

/* history_receipt.c */
typedef struct HistoryReceipt HistoryReceipt;
/* What history_receipt_start() rebuilds a receipt from; borrowed for the call. */
typedef struct HistoryReceiptArgs {
        const json_t *snapshot;   /* the snapshot whose record holds the key */
        const char *recorded_key; /* as recorded: "principal/key" with auth */
        const char *key;          /* as the writer sent it */
        const json_t *namespace;  /* the table's namespace levels, a JSON array */
        const char *table;
        const char *root;         /* the table location, which staged manifests lie beneath */
        const char *metadata_dir; /* the table's, which icecommitd's own manifests lie beneath */
        const StorageProps *props;
} HistoryReceiptArgs;
/* Called once from the loop: the receipt (owned), or NULL with a retryable failure (status <0,
 * the reason in error). */
typedef void (*HistoryReceiptFn)(json_t *receipt, int status, const Error *error, void *userdata);
/* Rebuilds the receipt of a key a snapshot records: the request's list entries and manifests
 * read from storage. A snapshot that records the key without the rest (an older icecommitd),
 * or whose files are gone, gives the receipt without manifests. Returns 0 (done will be
 * called, never from inside this call), -ENOENT (the snapshot does not record the key),
 * -ENOMEM or a storage error. */
int history_receipt_start(CommitEngine *e, const HistoryReceiptArgs *a, HistoryReceiptFn done,
                          void *userdata);
/* The response header that tells a receipt was found in the table history. */
#define HISTORY_RECEIPT_HEADER "Icecommit-Found-In-History"
/* Answers job j (taken; out of every queue and batch) with the receipt of its key, which
 * snapshot records: 200 with HISTORY_RECEIPT_HEADER, or 503 when it cannot be read now. */
void history_receipt_answer_job(Job *j, const json_t *snapshot, const TableMetadata *t,
                                const StorageProps *props);

/* list_cache.c */
/* Frees what a queue's list cache holds and empties it. */
void list_cache_clear(TableQueue *q);
/* After a commit: the list it wrote (b->list, b->list_bytes, taken) becomes the queue's cache
 * when it fits commit.manifest-list-cache-max-bytes. */
void list_cache_keep(Batch *b);
/* When the attempt's parent is the cached list: moves it into b->parent_bytes/parent_files
 * (has_parent_files) and returns true. The cache is empty afterwards either way. */
bool list_cache_take(Batch *b);

/* live_index.c */
/* After the list is assembled (b->list holds the parent's manifests): brings the queue's
 * live-file index to the parent snapshot and looks up the batch's data files, refusing with
 * 422 data-file-already-committed the requests naming a live one. Returns false when there is
 * nothing to do (the check is off or dropped for the table): the caller goes on; true when it
 * goes on by itself (batch_continue, batch_refuse_flagged, or a failure). */
bool live_index_check_start(Batch *b);
/* After the batch's snapshot was committed: the index follows it (adds what was staged). */
void live_index_committed(Batch *b);
void live_index_attempt_deinit(LiveIndexAttempt *a);
/* Frees a queue's index and gives its memory back. */
void live_index_deinit(CommitEngine *e, LiveIndex *ix);
