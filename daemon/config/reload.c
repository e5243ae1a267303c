/* SPDX-License-Identifier: Apache-2.0 */
/* Reloading the configuration file at run time (SIGHUP): the new file is loaded and checked
 * as at start; only then are the settings that may change applied to the live Config, in
 * place. That is safe because every module reads those fields through its borrowed Config
 * pointer when it uses them (per request, per attempt, per audit), never from a copy taken at
 * start; the exceptions are re-applied by the daemon (log level, the writer API's request
 * limits, the storage roots). Everything else (addresses, the catalog, storage clients, sizes of
 * structures made at start) is reported as needing a restart and left as it was. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/options.h"

/* The options applied by a reload: read live where they are used. */
static const char *const config_reloadable[] = {
        "log.level",
        "commit.max-attempts",
        "commit.min-backoff-ms",
        "commit.max-backoff-ms",
        "commit.total-timeout-ms",
        "commit.max-batch-requests",
        "commit.max-batch-manifests",
        "commit.max-summary-bytes",
        "commit.max-queue-requests",
        "commit.max-manifests-per-request",
        "commit.max-data-files-per-request",
        "commit.max-path-bytes",
        "commit.max-snapshot-properties",
        "commit.max-snapshot-properties-bytes",
        "commit.max-rows-per-request",
        "commit.verify-data-files",
        "commit.copy-staged-manifests",
        "commit.max-verified-files-per-request",
        "commit.check-parquet-footers",
        "commit.parquet-tail-bytes",
        "commit.max-parquet-footer-bytes",
        "commit.retry-after-s",
        "commit.intake-max-request-bytes",
        "commit.max-waiters-per-key",
        "commit.history-lookback",
        "commit.shutdown-timeout-ms",
        "commit.live-file-index",
        "commit.table-state-max-age-ms",
        "commit.linger-ms",
        "commit.manifest-list-cache-max-bytes",
        "commit.queue-idle-ms",
        "storage.max-manifest-bytes",
        "storage.max-manifest-entries",
        "storage.allowed-roots", /* applied by the daemon (storage_set_roots) */
        "storage.max-manifest-entry-bytes",
        "audit.max-snapshots",
        "audit.max-manifests",
        "audit.max-findings",
        "audit.max-concurrent",
        "lineage.equality-deletes",
        "tables.upgrade-lookback",
        "auth.health-requires-token",
        "auth.metrics-requires-token",
        "auth.max-tokens-file-bytes",
};

static bool config_option_is_reloadable(const ConfigOption *o) {
        char name[128];

        (void)snprintf(name, sizeof(name), "%s.%s", o->section, o->key);
        for (size_t i = 0; i < ELEMENTSOF(config_reloadable); i++)
                if (strcmp(config_reloadable[i], name) == 0)
                        return true;
        return false;
}

static size_t config_option_size(const ConfigOption *o) {
        switch (o->kind) {
        case OPTION_KIND_STRING:
                return sizeof(char *);
        case OPTION_KIND_BOOL:
        case OPTION_KIND_POLICY:
                return sizeof(bool);
        case OPTION_KIND_U32:
                return sizeof(uint32_t);
        case OPTION_KIND_U64:
                return sizeof(uint64_t);
        case OPTION_KIND_LOG_LEVEL:
                return sizeof(int);
        }
        return 0;
}

static bool config_option_equal(const Config *a, const Config *b, const ConfigOption *o) {
        const void *x = (const uint8_t *)a + o->offset, *y = (const uint8_t *)b + o->offset;

        if (o->kind == OPTION_KIND_STRING) {
                const char *s = *(char *const *)x, *t = *(char *const *)y;

                return s == t || (s && t && strcmp(s, t) == 0);
        }
        return memcmp(x, y, config_option_size(o)) == 0;
}

static bool config_headers_equal(const CatalogConfig *a, const CatalogConfig *b) {
        if (a->n_headers != b->n_headers)
                return false;
        for (size_t i = 0; i < a->n_headers; i++)
                if (strcmp(a->headers[i].name, b->headers[i].name) != 0 ||
                    strcmp(a->headers[i].value, b->headers[i].value) != 0)
                        return false;
        return true;
}

static int config_report_add(char *list, size_t size, const char *section, const char *key) {
        size_t len = strlen(list);
        int n = snprintf(list + len, size - len, "%s%s.%s", len ? ", " : "", section, key);

        return n < 0 || (size_t)n >= size - len ? -ENOBUFS : 0;
}

int config_reload(Config *live, ConfigVerifyFunc verify, void *userdata, ConfigReload *ret,
                  Error *error) {
        _cleanup_(config_freep) Config *fresh = NULL;
        int r;

        *ret = (ConfigReload){ 0 };
        r = config_load(live->path, &fresh, error);
        if (r < 0)
                return r;
        /* The daemon-wide budget is sized at start: a request's own limit above the budget in
         * force could never be met, and every such request would be told to retry for good. */
        if (fresh->commit.intake_max_request_bytes > live->commit.intake_max_bytes)
                return error_set(error, -EINVAL,
                                 "%s: key 'commit.intake-max-request-bytes': %" PRIu64
                                 " is above commit.intake-max-bytes in force, %" PRIu64
                                 " (changed by a restart only)",
                                 live->path, fresh->commit.intake_max_request_bytes,
                                 live->commit.intake_max_bytes);
        if (verify) {
                r = verify(fresh, userdata, error);
                if (r < 0)
                        return error_prefix(error, r, "%s", live->path);
        }
        for (size_t i = 0; i < config_n_options; i++) {
                const ConfigOption *o = &config_options[i];
                uint8_t *to = (uint8_t *)live + o->offset, *from = (uint8_t *)fresh + o->offset;
                bool reloadable = config_option_is_reloadable(o);
                char *list = reloadable ? ret->applied : ret->need_restart;
                size_t size = reloadable ? sizeof(ret->applied) : sizeof(ret->need_restart);

                if (config_option_equal(live, fresh, o))
                        continue;
                if (config_report_add(list, size, o->section, o->key) < 0)
                        ret->is_truncated = true;
                if (!reloadable)
                        continue;
                if (o->kind == OPTION_KIND_STRING) {
                        /* swap: the old string is freed with `fresh` */
                        char *old = *(char **)to;

                        *(char **)to = *(char **)from;
                        *(char **)from = old;
                } else
                        memcpy(to, from, config_option_size(o));
                ret->n_applied++;
        }
        if (!config_headers_equal(&live->catalog, &fresh->catalog) &&
            config_report_add(ret->need_restart, sizeof(ret->need_restart), "catalog", "header.*") <
                    0)
                ret->is_truncated = true;
        return 0;
}
