/* SPDX-License-Identifier: Apache-2.0 */
/* Test registry and runner (see test.h). Each case runs in its own child process so that one
 * crash names its case and the others still run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

typedef struct TestCase {
        const char *name;
        TestFunc func;
} TestCase;

static TestCase test_cases[256];
static size_t test_n_cases;

void test_register(const char *name, TestFunc func) {
        if (test_n_cases >= sizeof(test_cases) / sizeof(test_cases[0]))
                abort();
        test_cases[test_n_cases++] = (TestCase){ name, func };
}

json_t *test_json(const char *text) {
        json_error_t e;
        json_t *j = json_loads(text, 0, &e);

        if (!j)
                TEST_FAIL("bad test JSON: %s", e.text);
        return j;
}

char *test_read_source_file(const char *relative_path, size_t *ret_len) {
        const char *root = getenv("ICECOMMIT_SOURCE_ROOT");
        char path[4096];
        FILE *f;
        char *data;
        long n;

        if (!root)
                root = ".";
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", root, relative_path) >= sizeof(path))
                abort();
        f = fopen(path, "rb");
        if (!f)
                TEST_FAIL("cannot open %s", path);
        if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
                TEST_FAIL("cannot size %s", path);
        data = malloc((size_t)n + 1);
        if (!data || fread(data, 1, (size_t)n, f) != (size_t)n)
                TEST_FAIL("cannot read %s", path);
        data[n] = 0;
        fclose(f);
        if (ret_len)
                *ret_len = (size_t)n;
        return data;
}

static bool test_selected(const char *name, int argc, char **argv) {
        if (argc <= 1)
                return true;
        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], name) == 0)
                        return true;
        return false;
}

int test_main(int argc, char **argv) {
        unsigned n_failed = 0, n_run = 0;

        for (size_t i = 0; i < test_n_cases; i++) {
                int status;
                pid_t pid;

                if (!test_selected(test_cases[i].name, argc, argv))
                        continue;
                n_run++;
                fflush(NULL);
                /* Under valgrind forking keeps its accounting per process, which is what we want.
                 */
                pid = fork();
                if (pid < 0)
                        abort();
                if (pid == 0) {
                        test_cases[i].func();
                        fflush(NULL);
                        _exit(0);
                }
                if (waitpid(pid, &status, 0) < 0)
                        abort();
                if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
                        printf("ok %s\n", test_cases[i].name);
                } else {
                        printf("FAIL %s\n", test_cases[i].name);
                        n_failed++;
                }
        }
        printf("%u cases, %u failed\n", n_run, n_failed);
        return n_failed ? 1 : 0;
}

int main(int argc, char **argv) {
        return test_main(argc, argv);
}
