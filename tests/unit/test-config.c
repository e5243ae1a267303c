/* SPDX-License-Identifier: Apache-2.0 */
/* config/: defaults, bounds, errors naming file/line/key, and conf/icecommitd.conf documenting
 * exactly the options of the table. */
#include <errno.h>
#include <syslog.h>
#include <unistd.h>

#include "config/config.h"
#include "config/options.h"
#include "test.h"

static char *write_temp(const char *text) {
        static char path[64];
        int fd;

        snprintf(path, sizeof(path), "/tmp/icecommit-test-config-XXXXXX");
        fd = mkstemp(path);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(write(fd, text, strlen(text)), (int64_t)strlen(text));
        close(fd);
        return path;
}

static int load_text(const char *text, Config **ret, Error *e) {
        char *path = write_temp(text);
        int r = config_load(path, ret, e);

        unlink(path);
        return r;
}

TEST(defaults_and_values_load) {
        _cleanup_(config_freep) Config *c = NULL;
        Error e = { 0 };

        ASSERT_OK(load_text("[catalog]\nuri = http://127.0.0.1:8181\nheader.X-Tenant = blue\n"
                            "[commit]\nmax-attempts = 7\n[log]\nlevel = debug\n",
                            &c, &e));
        ASSERT_STREQ(c->catalog.uri, "http://127.0.0.1:8181");
        ASSERT_EQ(c->commit.max_attempts, 7);
        ASSERT_EQ(c->commit.min_backoff_ms, 100);
        ASSERT_EQ(c->http.port, 8080);
        ASSERT_TRUE(c->catalog.tls_verify);
        ASSERT_EQ(c->catalog.n_headers, 1);
        ASSERT_STREQ(c->catalog.headers[0].name, "X-Tenant");
        ASSERT_STREQ(c->catalog.headers[0].value, "blue");
        ASSERT_EQ(c->log_level, 7);
}

TEST(errors_name_file_line_key_and_reason) {
        Config *c = NULL;
        Error e = { 0 };

        ASSERT_EQ(load_text("[catalog]\nuri = http://x\n[commit]\nmax-attempts = 0\n", &c, &e),
                  -EINVAL);
        ASSERT_CONTAINS(e.message,
                        ":4: key 'commit.max-attempts': '0' is not a whole number from 1 to 1000");
        ASSERT_TRUE(c == NULL);

        ASSERT_EQ(load_text("[catalog]\nuri = http://x\nbogus = 1\n", &c, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, ":3: key 'catalog.bogus': unknown option");

        ASSERT_EQ(load_text("[http]\nport = 80\nport = 81\n", &c, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, ":3: key 'http.port': set twice");

        ASSERT_EQ(load_text("[catalog]\ntype = rest\n", &c, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "key 'catalog.uri': required");

        ASSERT_EQ(load_text("[catalog]\ntype = hive\n", &c, &e), -EINVAL);
        ASSERT_CONTAINS(e.message,
                        "key 'catalog.type': 'hive' is not supported (use rest or filesystem)");

        ASSERT_EQ(load_text("[catalog]\nwarehouse = relative/dir\n", &c, &e), -EINVAL);
        ASSERT_CONTAINS(e.message,
                        "key 'catalog.warehouse': 'relative/dir' must be an absolute path");

        ASSERT_EQ(load_text("[catalog]\ntype = filesystem\nuri = http://x\n", &c, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "key 'catalog.uri': not used by the filesystem catalog");

        ASSERT_EQ(load_text("[catalog]\nuri = http://x\ntls-verify = sometimes\n", &c, &e),
                  -EINVAL);
        ASSERT_CONTAINS(e.message, "'sometimes' is not a boolean");

        ASSERT_EQ(load_text("this is not ini\n", &c, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, ":1: not an INI line");

        ASSERT_EQ(config_load("/nonexistent/icecommitd.conf", &c, &e), -ENOENT);
        ASSERT_CONTAINS(e.message, "/nonexistent/icecommitd.conf: cannot open");
}

/* No catalog section at all: the embedded filesystem catalog in its default warehouse; a uri
 * alone (a config copied from Spark) means REST. */
TEST(catalog_type_follows_the_settings) {
        _cleanup_(config_freep) Config *fs = NULL, *rest = NULL, *custom = NULL;
        Error e = { 0 };

        ASSERT_OK(load_text("[http]\nport = 8080\n", &fs, &e));
        ASSERT_STREQ(catalog_config_type(&fs->catalog), "filesystem");
        ASSERT_STREQ(catalog_config_warehouse(&fs->catalog), "/var/lib/icecommit/warehouse");
        ASSERT_OK(load_text("[catalog]\nuri = http://127.0.0.1:8181\n", &rest, &e));
        ASSERT_STREQ(catalog_config_type(&rest->catalog), "rest");
        ASSERT_OK(load_text("[catalog]\nwarehouse = file:///srv/lake\n", &custom, &e));
        ASSERT_STREQ(catalog_config_type(&custom->catalog), "filesystem");
        ASSERT_STREQ(catalog_config_warehouse(&custom->catalog), "file:///srv/lake");
}

TEST(cross_option_rules) {
        Config *c = NULL;
        Error e = { 0 };

        ASSERT_EQ(load_text("[catalog]\nuri = http://x\n[commit]\nmin-backoff-ms = "
                            "5000\nmax-backoff-ms = 10\n",
                            &c, &e),
                  -EINVAL);
        ASSERT_CONTAINS(e.message, "commit.min-backoff-ms");
        ASSERT_EQ(load_text("[catalog]\nuri = ftp://x\n", &c, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "must start with http:// or https://");
        ASSERT_EQ(load_text("[catalog]\nuri = http://x\ntoken = a\ncredential = b:c\n", &c, &e),
                  -EINVAL);
        ASSERT_CONTAINS(e.message, "set one, not both");
}

/* Protected by default: a listener off loopback needs tokens or client certificates, or the
 * operator's explicit auth.allow-unauthenticated; host names are refused, never resolved. */
TEST(non_loopback_listener_needs_authentication) {
        static const struct {
                const char *settings, *error; /* error NULL: loads */
        } cases[] = {
                { "", NULL },
                { "[http]\nlisten-address = 127.0.0.2\n", NULL },
                { "[http]\nlisten-address = ::1\n", NULL },
                { "[http]\nlisten-address = 0.0.0.0\n",
                  "key 'http.listen-address': 0.0.0.0 is not a loopback address and writer "
                  "authentication is off: set auth.tokens-file" },
                { "[http]\nlisten-address = ::\n", "auth.allow-unauthenticated = true if anyone" },
                { "[http]\nlisten-address = 192.0.2.10\n", "not a loopback address" },
                { "[http]\nlisten-address = ::ffff:10.0.0.1\n", "not a loopback address" },
                { "[http]\nlisten-address = localhost\n",
                  "key 'http.listen-address': 'localhost' is not an IPv4 or IPv6 address (host "
                  "names are not resolved" },
                { "[http]\nlisten-address = 0.0.0.0\n[auth]\nallow-unauthenticated = true\n",
                  NULL },
                { "[http]\nlisten-address = ::\n[auth]\ntokens-file = /etc/t\n", NULL },
                { "[http]\nlisten-address = 0.0.0.0\ntls-certificate-file = /c\ntls-key-file = "
                  "/k\ntls-client-ca-file = /ca\n",
                  NULL },
                /* TLS alone authenticates the server, not the writers. */
                { "[http]\nlisten-address = 0.0.0.0\ntls-certificate-file = /c\ntls-key-file = "
                  "/k\n",
                  "not a loopback address" },
                { "[http]\nlisten-address = 0.0.0.0\n[auth]\nallow-unauthenticated = false\n",
                  "not a loopback address" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char text[512];
                Config *c = NULL;
                Error e = { 0 };
                int r;

                snprintf(text, sizeof(text), "[catalog]\nuri = http://x\n%s", cases[i].settings);
                r = load_text(text, &c, &e);
                if (!cases[i].error) {
                        if (r < 0)
                                TEST_FAIL("case %zu refused: %s", i, e.message);
                        c = config_free(c);
                        continue;
                }
                if (r != -EINVAL)
                        TEST_FAIL("case %zu (%s) was not refused", i, cases[i].settings);
                ASSERT_CONTAINS(e.message, cases[i].error);
        }
}

TEST(equality_delete_policy) {
        _cleanup_(config_freep) Config *c = NULL;
        Error e = { 0 };

        ASSERT_OK(load_text("[catalog]\nuri = http://x\n", &c, &e));
        ASSERT_TRUE(!c->commit.allow_equality_deletes);
        c = config_free(c);
        ASSERT_OK(load_text("[catalog]\nuri = http://x\n[lineage]\nequality-deletes = allow\n", &c,
                            &e));
        ASSERT_TRUE(c->commit.allow_equality_deletes);
        c = config_free(c);
        ASSERT_EQ(load_text("[catalog]\nuri = http://x\n[lineage]\nequality-deletes = maybe\n", &c,
                            &e),
                  -EINVAL);
        ASSERT_CONTAINS(e.message, "'maybe' is not a policy (use reject or allow)");
}

/* Every option of the table is documented in conf/icecommitd.conf as "#key = default" (or set),
 * under its [section], and the example names no option that does not exist. */
TEST(example_config_documents_every_option) {
        _cleanup_(freep) char *text = test_read_source_file("conf/icecommitd.conf", NULL);

        for (size_t i = 0; i < config_n_options; i++) {
                const ConfigOption *o = &config_options[i];
                char section[64], line[128];

                snprintf(section, sizeof(section), "[%s]", o->section);
                snprintf(line, sizeof(line), "\n#%s = ", o->key);
                ASSERT_CONTAINS(text, section);
                if (!strstr(text, line)) {
                        snprintf(line, sizeof(line), "\n%s = ", o->key);
                        ASSERT_CONTAINS(text, line);
                }
        }
}

TEST(example_config_loads) {
        _cleanup_(config_freep) Config *c = NULL;
        const char *root = getenv("ICECOMMIT_SOURCE_ROOT");
        char path[4096];
        Error e = { 0 };

        snprintf(path, sizeof(path), "%s/conf/icecommitd.conf", root ? root : ".");
        ASSERT_OK(config_load(path, &c, &e));
}

TEST(secrets_come_from_the_credentials_directory) {
        _cleanup_(config_freep) Config *c = NULL;
        char dir[] = "/tmp/icecommit-test-credentials-XXXXXX", path[128];
        Error e = { 0 };
        FILE *f;

        ASSERT_TRUE(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/catalog.token", dir);
        f = fopen(path, "w");
        ASSERT_TRUE(f);
        fputs("s3cr3t-token\n", f);
        fclose(f);
        setenv("CREDENTIALS_DIRECTORY", dir, 1);
        ASSERT_OK(load_text("[catalog]\nuri = http://x\n", &c, &e));
        ASSERT_STREQ(c->catalog.token, "s3cr3t-token");

        f = fopen(path, "w");
        fputs("\n", f);
        fclose(f);
        {
                Config *bad = NULL;

                ASSERT_EQ(load_text("[catalog]\nuri = http://x\n", &bad, &e), -EINVAL);
                ASSERT_CONTAINS(e.message, "catalog.token: must hold one non-empty line");
        }
        unlink(path);

        /* The S3 secret from a credential file wins over the file's; the key id stays. */
        snprintf(path, sizeof(path), "%s/s3.secret-access-key", dir);
        f = fopen(path, "w");
        ASSERT_TRUE(f);
        fputs("s3-secret-from-file\n", f);
        fclose(f);
        c = config_free(c);
        ASSERT_OK(load_text("[catalog]\nuri = http://x\n[s3]\naccess-key-id = "
                            "AK\nsecret-access-key = in-file\n",
                            &c, &e));
        ASSERT_STREQ(c->storage.s3.secret_access_key, "s3-secret-from-file");
        ASSERT_STREQ(c->storage.s3.access_key_id, "AK");
        unsetenv("CREDENTIALS_DIRECTORY");
        unlink(path);
        rmdir(dir);
}

TEST(s3_options_are_checked) {
        Config *c = NULL;
        Error e = { 0 };

        ASSERT_EQ(load_text("[catalog]\nuri = http://x\n[s3]\naccess-key-id = AK\n", &c, &e),
                  -EINVAL);
        ASSERT_CONTAINS(e.message, "set both or neither");
        ASSERT_EQ(load_text("[catalog]\nuri = http://x\n[s3]\nendpoint = 127.0.0.1:9000\n", &c, &e),
                  -EINVAL);
        ASSERT_CONTAINS(e.message, "must start with http:// or https://");
        ASSERT_EQ(load_text("[catalog]\nuri = http://x\naccess-delegation = remote-signing\n", &c,
                            &e),
                  -EINVAL);
        ASSERT_CONTAINS(e.message, "remote-signing is not supported");
        ASSERT_EQ(load_text("[catalog]\nwarehouse = gs://b/wh\n", &c, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "s3:// bucket location");
        ASSERT_OK(load_text(
                "[catalog]\nwarehouse = s3://b/wh\n[s3]\nendpoint = http://127.0.0.1:9000\n"
                "path-style-access = true\n[client]\nregion = eu-west-1\n",
                &c, &e));
        ASSERT_TRUE(c->storage.s3.path_style_access);
        ASSERT_STREQ(c->storage.s3.region, "eu-west-1");
        ASSERT_STREQ(catalog_config_type(&c->catalog), "filesystem");
        c = config_free(c);
}

static void rewrite(const char *path, const char *text) {
        FILE *f = fopen(path, "w");

        ASSERT_TRUE(f != NULL);
        ASSERT_EQ(fwrite(text, 1, strlen(text), f), strlen(text));
        ASSERT_OK(fclose(f));
}

/* A reload applies the options read at run time in place, names the others that changed as
 * needing a restart (keeping their values), and changes nothing on a bad file. */
TEST(reload_applies_run_time_options_and_names_the_rest) {
        const char *base = "[catalog]\nuri = http://127.0.0.1:8181\n[commit]\nmax-attempts = 5\n";
        char *path = write_temp(base);
        Config *c = NULL;
        ConfigReload what;
        Error e;

        ASSERT_OK(config_load(path, &c, &e));
        ASSERT_EQ(c->commit.max_attempts, 5);
        rewrite(path, "[catalog]\nuri = http://127.0.0.1:9999\n[commit]\nmax-attempts = "
                      "7\nmax-rows-per-request = 100\n"
                      "[http]\nport = 9000\n[log]\nlevel = debug\n");
        ASSERT_OK(config_reload(c, NULL, NULL, &what, &e));
        ASSERT_EQ(c->commit.max_attempts, 7);
        ASSERT_EQ(c->commit.max_rows_per_request, 100);
        ASSERT_EQ(c->log_level, LOG_DEBUG);
        ASSERT_STREQ(c->catalog.uri, "http://127.0.0.1:8181");
        ASSERT_EQ(c->http.port, 8080);
        ASSERT_EQ(what.n_applied, 3);
        ASSERT_CONTAINS(what.applied, "commit.max-attempts");
        ASSERT_CONTAINS(what.applied, "log.level");
        ASSERT_CONTAINS(what.need_restart, "catalog.uri");
        ASSERT_CONTAINS(what.need_restart, "http.port");
        ASSERT_TRUE(strstr(what.need_restart, "commit.") == NULL);

        /* A bad file: the error names file and line; nothing changed. */
        rewrite(path, "[catalog]\nuri = http://127.0.0.1:8181\n[commit]\nmax-attempts = "
                      "3\nmax-attempts-typo = 1\n");
        ASSERT_TRUE(config_reload(c, NULL, NULL, &what, &e) < 0);
        ASSERT_CONTAINS(e.message, ":5:");
        ASSERT_EQ(c->commit.max_attempts, 7);

        /* A file the next start would refuse is refused now: authentication is read at start
         * only, so a reload that drops allow-unauthenticated off loopback keeps the old file. */
        rewrite(path, "[catalog]\nuri = http://127.0.0.1:8181\n[http]\nlisten-address = "
                      "0.0.0.0\n");
        ASSERT_EQ(config_reload(c, NULL, NULL, &what, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "0.0.0.0 is not a loopback address");
        ASSERT_STREQ(c->http.listen_address, "127.0.0.1");

        /* Nothing changed: nothing to report. */
        rewrite(path, "[catalog]\nuri = http://127.0.0.1:8181\n[commit]\nmax-attempts = "
                      "7\nmax-rows-per-request = 100\n"
                      "[log]\nlevel = debug\n");
        ASSERT_OK(config_reload(c, NULL, NULL, &what, &e));
        ASSERT_EQ(what.n_applied, 0);
        ASSERT_STREQ(what.need_restart, "");
        config_free(c);
        unlink(path);
}

static int refuse_every_file(const Config *fresh, void *userdata, Error *error) {
        (*(int *)userdata)++;
        return error_set(error, -EINVAL, "roots do not parse (max-attempts %u)",
                         fresh->commit.max_attempts);
}

/* A reload is refused whole when the file breaks a rule against what only a restart changes
 * (the daemon-wide intake budget), or when the daemon's own check of it fails (its storage
 * roots): nothing of it is applied. */
TEST(reload_refuses_what_the_running_daemon_could_not_honour) {
        const char *base = "[catalog]\nuri = http://127.0.0.1:8181\n[commit]\nmax-attempts = 5\n"
                           "intake-max-bytes = 2097152\nintake-max-request-bytes = 1048576\n";
        char *path = write_temp(base);
        Config *c = NULL;
        ConfigReload what;
        int calls = 0;
        Error e;

        ASSERT_OK(config_load(path, &c, &e));
        /* Both raised in the file: the request bound would exceed the budget in force. */
        rewrite(path, "[catalog]\nuri = http://127.0.0.1:8181\n[commit]\nmax-attempts = 6\n"
                      "intake-max-bytes = 8388608\nintake-max-request-bytes = 4194304\n");
        ASSERT_EQ(config_reload(c, NULL, NULL, &what, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "commit.intake-max-bytes in force, 2097152");
        ASSERT_EQ(c->commit.max_attempts, 5);
        ASSERT_EQ(c->commit.intake_max_request_bytes, 1048576);

        /* Within the budget in force: applied (the budget itself waits for a restart). */
        rewrite(path, "[catalog]\nuri = http://127.0.0.1:8181\n[commit]\nmax-attempts = 6\n"
                      "intake-max-bytes = 8388608\nintake-max-request-bytes = 2097152\n");
        ASSERT_OK(config_reload(c, NULL, NULL, &what, &e));
        ASSERT_EQ(c->commit.intake_max_request_bytes, 2097152);
        ASSERT_EQ(c->commit.intake_max_bytes, 2097152);
        ASSERT_CONTAINS(what.need_restart, "commit.intake-max-bytes");

        /* The daemon's check refuses the file: nothing applied, the file named. */
        rewrite(path, "[catalog]\nuri = http://127.0.0.1:8181\n[commit]\nmax-attempts = 7\n"
                      "intake-max-bytes = 8388608\nintake-max-request-bytes = 2097152\n");
        ASSERT_EQ(config_reload(c, refuse_every_file, &calls, &what, &e), -EINVAL);
        ASSERT_EQ(calls, 1);
        ASSERT_CONTAINS(e.message, path);
        ASSERT_CONTAINS(e.message, "roots do not parse (max-attempts 7)");
        ASSERT_EQ(c->commit.max_attempts, 6);
        config_free(c);
        unlink(path);
}
