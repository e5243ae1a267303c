/* SPDX-License-Identifier: Apache-2.0 */
/* icecommitd: argv -> Config -> Daemon -> run -> exit status. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/tokens.h"
#include "config/config.h"
#include "daemon.h"
#include "storage/roots.h"
#include "util/log.h"

/* meson's sysconfdir decides it (meson.build), so the binary, the unit and meson install agree. */
static const char *arg_config_path = ICECOMMIT_CONFIG_FILE;
static bool arg_check_config;

static void help(void) {
        printf("icecommitd [OPTIONS]\n\n"
               "Commits writers' staged Iceberg manifests to tables through an Iceberg REST "
               "catalog.\n\n"
               "  -c, --config=PATH   configuration file (default %s)\n"
               "      --check-config  load and check the configuration, then exit\n"
               "  -h, --help          show this help\n"
               "      --version       show the version\n",
               arg_config_path);
}

static int parse_argv(int argc, char **argv) {
        enum { ARG_VERSION = 0x100, ARG_CHECK_CONFIG };
        static const struct option options[] = {
                { "config", required_argument, NULL, 'c' },
                { "check-config", no_argument, NULL, ARG_CHECK_CONFIG },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { 0 },
        };
        int c;

        while ((c = getopt_long(argc, argv, "c:h", options, NULL)) >= 0)
                switch (c) {
                case 'c':
                        arg_config_path = optarg;
                        break;
                case ARG_CHECK_CONFIG:
                        arg_check_config = true;
                        break;
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("icecommitd %s\n", ICECOMMIT_VERSION);
                        return 0;
                default:
                        return -EINVAL;
                }
        if (optind < argc) {
                fprintf(stderr, "icecommitd: unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        return 1;
}

int main(int argc, char **argv) {
        _cleanup_(config_freep) Config *config = NULL;
        Error error = { 0 };
        int r;

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;

        r = config_load(arg_config_path, &config, &error);
        if (r < 0) {
                fprintf(stderr, "icecommitd: bad configuration: %s\n", error.message);
                return EXIT_FAILURE;
        }
        log_max_level = config->log_level;
        log_set_format((LogFormat)log_format_from_string(config->log_format));
        if (arg_check_config) {
                _cleanup_(auth_tokens_freep) AuthTokens *tokens = NULL;
                _cleanup_(storage_roots_freep) StorageRoots *roots = NULL;

                if (config->storage.allowed_roots &&
                    storage_roots_parse(config->storage.allowed_roots, &roots, &error) < 0) {
                        fprintf(stderr,
                                "icecommitd: bad configuration: %s: key 'storage.allowed-roots': "
                                "%s\n",
                                arg_config_path, error.message);
                        return EXIT_FAILURE;
                }

                if (config->auth.tokens_file &&
                    auth_tokens_load(config->auth.tokens_file, config->auth.max_tokens_file_bytes,
                                     &tokens, &error) < 0) {
                        fprintf(stderr, "icecommitd: bad tokens file: %s\n", error.message);
                        return EXIT_FAILURE;
                }
                printf("%s: ok\n", arg_config_path);
                return EXIT_SUCCESS;
        }

        r = daemon_run(config);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
