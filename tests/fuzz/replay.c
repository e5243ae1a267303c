/* SPDX-License-Identifier: Apache-2.0 */
/* Replays fuzz corpora without libFuzzer: feeds every file of each directory (or each file)
 * named on the command line to LLVMFuzzerTestOneInput, so the seeds and every past crasher
 * run in the ordinary test suite (meson suite 'fuzz'), under ASan or valgrind when asked. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
        FILE *f = fopen(path, "rbe");
        uint8_t *data = NULL;
        long n;

        if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
                fprintf(stderr, "%s: %s\n", path, strerror(errno));
                if (f)
                        fclose(f);
                return -1;
        }
        /* An exact-size copy: ASan then catches any read past the input's end. */
        data = malloc(n > 0 ? (size_t)n : 1);
        if (!data || fread(data, 1, (size_t)n, f) != (size_t)n) {
                fprintf(stderr, "%s: cannot read\n", path);
                free(data);
                fclose(f);
                return -1;
        }
        fclose(f);
        (void)LLVMFuzzerTestOneInput(data, (size_t)n);
        free(data);
        return 0;
}

int main(int argc, char **argv) {
        unsigned n_inputs = 0;

        for (int i = 1; i < argc; i++) {
                struct stat st;
                DIR *d;
                struct dirent *de;

                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
                        return 1;
                }
                if (!S_ISDIR(st.st_mode)) {
                        if (replay_file(argv[i]) < 0)
                                return 1;
                        n_inputs++;
                        continue;
                }
                d = opendir(argv[i]);
                if (!d)
                        return 1;
                while ((de = readdir(d))) {
                        char path[4096];

                        if (de->d_name[0] == '.')
                                continue;
                        if ((size_t)snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name) >=
                            sizeof(path))
                                continue;
                        if (replay_file(path) < 0) {
                                closedir(d);
                                return 1;
                        }
                        n_inputs++;
                }
                closedir(d);
        }
        printf("replayed %u inputs\n", n_inputs);
        /* An empty corpus is a broken test setup, not a pass. */
        return n_inputs > 0 ? 0 : 1;
}
