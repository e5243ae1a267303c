/* SPDX-License-Identifier: Apache-2.0 */
/* The process_* figures of the Prometheus client conventions, read from /proc/self when
 * scraped: CPU time, memory, file descriptors and start time. Reads files, never fails a
 * caller beyond returning -errno. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "metrics/metrics.h"
#include "util/parse.h"

static int process_read_file(const char *path, char *buf, size_t size, size_t *ret_len) {
        ssize_t n;
        int fd;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, size - 1);
        if (n < 0) {
                int r = -errno;

                (void)close(fd);
                return r;
        }
        (void)close(fd);
        buf[n] = '\0';
        *ret_len = (size_t)n;
        return 0;
}

/* The k-th space-separated number after the command name of /proc/self/stat (field 3 is k = 0):
 * proc(5) numbers them from 1, the name in parentheses may hold spaces, so count from the last
 * ')'. */
static int process_stat_field(const char *after_name, unsigned k, uint64_t *ret) {
        const char *p = after_name;
        char number[32];
        size_t len;

        for (unsigned i = 0; i <= k; i++) {
                while (*p == ' ')
                        p++;
                len = strcspn(p, " \n");
                if (len == 0)
                        return -EBADMSG;
                if (i < k)
                        p += len;
        }
        if (len >= sizeof(number))
                return -EBADMSG;
        memcpy(number, p, len);
        number[len] = '\0';
        return parse_u64(number, ret);
}

static int process_boot_time(uint64_t *ret) {
        char buf[8192], number[32];
        const char *p;
        size_t len;
        int r;

        r = process_read_file("/proc/stat", buf, sizeof(buf), &len);
        if (r < 0)
                return r;
        p = strstr(buf, "\nbtime ");
        if (!p)
                return -EBADMSG;
        p += strlen("\nbtime ");
        len = strcspn(p, "\n");
        if (len == 0 || len >= sizeof(number))
                return -EBADMSG;
        memcpy(number, p, len);
        number[len] = '\0';
        return parse_u64(number, ret);
}

static double process_count_fds(void) {
        struct dirent *de;
        double n = 0;
        DIR *d;

        d = opendir("/proc/self/fd");
        if (!d)
                return 0;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        n++;
        (void)closedir(d);
        /* The directory stream's own descriptor is not the process's. */
        return n > 0 ? n - 1 : 0;
}

int metrics_process_read(MetricsProcess *ret) {
        uint64_t utime, stime, start_ticks, vsize, rss_pages, boot = 0;
        long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
        char buf[4096];
        struct rlimit limit;
        struct timespec cpu;
        double cpu_seconds;
        const char *after;
        size_t len;
        int r;

        if (ticks <= 0 || page <= 0)
                return -EINVAL;
        r = process_read_file("/proc/self/stat", buf, sizeof(buf), &len);
        if (r < 0)
                return r;
        after = strrchr(buf, ')');
        if (!after)
                return -EBADMSG;
        after++;
        /* proc(5): utime 14, stime 15, starttime 22, vsize 23, rss 24 (field 3 is index 0). */
        if (process_stat_field(after, 11, &utime) < 0 ||
            process_stat_field(after, 12, &stime) < 0 ||
            process_stat_field(after, 19, &start_ticks) < 0 ||
            process_stat_field(after, 20, &vsize) < 0 ||
            process_stat_field(after, 21, &rss_pages) < 0)
                return -EBADMSG;
        (void)process_boot_time(&boot);
        /* CPU to the nanosecond (all threads): utime + stime count whole clock ticks, 10 ms,
         * too coarse for a daemon whose commits cost a few milliseconds each. */
        cpu_seconds = clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu) == 0
                              ? (double)cpu.tv_sec + (double)cpu.tv_nsec / 1e9
                              : (double)(utime + stime) / (double)ticks;

        *ret = (MetricsProcess){
                .cpu_seconds = cpu_seconds,
                .resident_bytes = (double)rss_pages * (double)page,
                .virtual_bytes = (double)vsize,
                .open_fds = process_count_fds(),
                .max_fds = getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY
                                   ? (double)limit.rlim_cur
                                   : 0,
                .start_time_seconds = (double)boot + (double)start_ticks / (double)ticks,
        };
        return 0;
}
