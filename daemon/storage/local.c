/* SPDX-License-Identifier: Apache-2.0 */
/* Local-filesystem storage (see storage.h). Every fd is O_CLOEXEC; new files are created with
 * O_EXCL so an attempt can never overwrite a file another attempt may have committed. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/storage.h"

int storage_path_from_location(const char *location, char **ret_path, Error *error) {
        const char *p = location;
        _cleanup_(freep) char *out = NULL;
        size_t n = 0;

        if (strncmp(p, "file://", 7) == 0) {
                p += 7;
                /* file://host/p is not local; only an empty authority is. */
                if (*p != '/')
                        return error_set(error, -EINVAL, "'%s': only file:/// URIs with an empty host are local",
                                         location);
        } else if (strncmp(p, "file:", 5) == 0)
                p += 5;
        else if (strchr(p, ':') && strstr(p, "://"))
                return error_set(error, -EPROTONOSUPPORT,
                                 "'%s': only local paths and file:// URIs are supported", location);
        if (*p != '/')
                return error_set(error, -EINVAL, "'%s' is not an absolute path", location);

        out = malloc(strlen(p) + 1);
        if (!out)
                return -ENOMEM;
        /* Normalize segment by segment: collapse "//" and ".", refuse ".." rather than guess. */
        while (*p) {
                const char *seg;
                size_t len;

                while (*p == '/')
                        p++;
                seg = p;
                while (*p && *p != '/')
                        p++;
                len = (size_t)(p - seg);
                if (len == 0 || (len == 1 && seg[0] == '.'))
                        continue;
                if (len == 2 && seg[0] == '.' && seg[1] == '.')
                        return error_set(error, -EINVAL, "'%s' contains '..'", location);
                out[n++] = '/';
                memcpy(out + n, seg, len);
                n += len;
        }
        if (n == 0)
                out[n++] = '/';
        out[n] = 0;
        *ret_path = TAKE_PTR(out);
        return 0;
}

bool storage_location_is_within(const char *location, const char *dir_location) {
        _cleanup_(freep) char *path = NULL, *dir = NULL;
        size_t n;

        if (storage_path_from_location(location, &path, NULL) < 0 ||
            storage_path_from_location(dir_location, &dir, NULL) < 0)
                return false;
        n = strlen(dir);
        if (n == 1)
                return path[1] != 0;
        return strncmp(path, dir, n) == 0 && path[n] == '/' && path[n + 1] != 0;
}

int storage_read_file(const char *path, uint64_t max_bytes, Buf *out, Error *error) {
        _cleanup_(closep) int fd = -1;
        struct stat st;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return error_set(error, -errno, "cannot open '%s': %s", path, strerror(errno));
        if (fstat(fd, &st) < 0)
                return error_set(error, -errno, "cannot stat '%s': %s", path, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return error_set(error, -EINVAL, "'%s' is not a regular file", path);
        if ((uint64_t)st.st_size > max_bytes)
                return error_set(error, -EFBIG, "'%s' is %lld bytes, above the limit of %llu", path,
                                 (long long)st.st_size, (unsigned long long)max_bytes);
        buf_deinit(out);
        buf_init(out, max_bytes);
        for (;;) {
                ssize_t k;
                int r;

                r = buf_reserve(out, 65536 < max_bytes - out->len ? 65536 : max_bytes - out->len);
                if (r < 0 && r != -E2BIG)
                        return r;
                if (out->cap - out->len <= 1) {
                        /* Full at max_bytes: a file that grew meanwhile is still too big. */
                        char probe;

                        k = read(fd, &probe, 1);
                        if (k > 0)
                                return error_set(error, -EFBIG, "'%s' is above the limit of %llu bytes",
                                                 path, (unsigned long long)max_bytes);
                        break;
                }
                k = read(fd, out->data + out->len, out->cap - out->len - 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return error_set(error, -errno, "cannot read '%s': %s", path, strerror(errno));
                if (k == 0)
                        break;
                out->len += (size_t)k;
        }
        if (out->data)
                out->data[out->len] = 0;
        return 0;
}

static int storage_fsync_parent(const char *path) {
        _cleanup_(freep) char *copy = strdup(path);
        _cleanup_(closep) int fd = -1;

        if (!copy)
                return -ENOMEM;
        fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return fsync(fd) < 0 ? -errno : 0;
}

int storage_write_new_file(const char *path, const void *data, size_t len, Error *error) {
        _cleanup_(closep) int fd = -1;
        const uint8_t *p = data;
        int r;

        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0)
                return error_set(error, -errno, "cannot create '%s': %s", path, strerror(errno));
        while (len > 0) {
                ssize_t k = write(fd, p, len);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        r = -errno;
                        (void)unlink(path);
                        return error_set(error, r, "cannot write '%s': %s", path, strerror(-r));
                }
                p += k;
                len -= (size_t)k;
        }
        /* The catalog will point at this file: it must be durable before the commit is sent. */
        if (fsync(fd) < 0) {
                r = -errno;
                (void)unlink(path);
                return error_set(error, r, "cannot fsync '%s': %s", path, strerror(-r));
        }
        r = storage_fsync_parent(path);
        if (r < 0)
                return error_set(error, r, "cannot fsync the directory of '%s': %s", path, strerror(-r));
        return 0;
}

int storage_delete_file(const char *path) {
        if (unlink(path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

int storage_file_size(const char *path, uint64_t *ret_size, Error *error) {
        struct stat st;

        if (stat(path, &st) < 0) {
                int r = -errno;

                if (r == -ENOENT)
                        return error_set(error, r, "'%s' does not exist", path);
                return error_set(error, r, "cannot stat '%s': %s", path, strerror(-r));
        }
        if (S_ISDIR(st.st_mode))
                return error_set(error, -EISDIR, "'%s' is a directory", path);
        if (!S_ISREG(st.st_mode))
                return error_set(error, -EINVAL, "'%s' is not a regular file", path);
        *ret_size = (uint64_t)st.st_size;
        return 0;
}
