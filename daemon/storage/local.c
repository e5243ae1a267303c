/* SPDX-License-Identifier: Apache-2.0 */
/* Local-filesystem storage, blocking (see local.h): the thread-pool side of storage.c's local
 * backend, and the filesystem catalog's own file work. Every fd is O_CLOEXEC; new files are
 * created with O_EXCL so an attempt can never overwrite a file another attempt may have
 * committed. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <dirent.h>

#include "storage/local.h"

/* Whether path lies strictly beneath the directory root (both normalized); the part below it. */
static const char *storage_local_below(const char *root, const char *path) {
        size_t n = strlen(root);

        while (n > 1 && root[n - 1] == '/')
                n--;
        if (n == 1 && root[0] == '/')
                return path[0] == '/' && path[1] ? path + 1 : NULL;
        if (strncmp(path, root, n) != 0 || path[n] != '/' || !path[n + 1])
                return NULL;
        return path + n + 1;
}

int storage_local_open_walk(int root_fd, const char *relative, int flags, int *ret_fd) {
        _cleanup_(closep) int fd = -1;
        const char *p = relative;
        int dir_fd = root_fd;

        for (;;) {
                const char *slash = strchr(p, '/');
                size_t n = slash ? (size_t)(slash - p) : strlen(p);
                char name[NAME_MAX + 1];
                struct stat st;
                int next;

                if (n == 0 || n > NAME_MAX || (n == 1 && p[0] == '.') ||
                    (n == 2 && p[0] == '.' && p[1] == '.'))
                        return -EXDEV; /* never in a normalized path; refused like an escape */
                memcpy(name, p, n);
                name[n] = 0;
                /* Every symlink is refused: without openat2 there is no telling where it ends. */
                if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
                if (S_ISLNK(st.st_mode))
                        return -EXDEV;
                next = openat(dir_fd, name,
                              (slash ? O_PATH | O_DIRECTORY : flags) | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0)
                        /* ELOOP: a symlink swapped in since the fstatat. */
                        return errno == ELOOP ? -EXDEV : -errno;
                if (fd >= 0)
                        (void)close(fd);
                fd = dir_fd = next;
                if (!slash)
                        break;
                p = slash + 1;
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* Opens path with flags (beneath root when it is not NULL) and checks it is a regular file. */
static int storage_local_open(const char *root, const char *path, int flags, int *ret_fd,
                              struct stat *ret_st, Error *error) {
        _cleanup_(closep) int fd = -1, root_fd = -1;
        struct stat st;
        int r = 0;

        /* openat2 refuses O_PATH with any flag beyond O_PATH_FLAGS (O_NOCTTY is one). */
        flags |= O_CLOEXEC | (flags & O_PATH ? 0 : O_NOCTTY);
        if (!root) {
                fd = open(path, flags);
                if (fd < 0)
                        r = -errno;
        } else {
                const char *relative = storage_local_below(root, path);

                if (!relative)
                        return error_set(error, -EXDEV, "'%s' is not beneath '%s'", path, root);
                root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (root_fd < 0)
                        /* No root, no file under it: the same answer as for a missing file. */
                        r = errno == ENOTDIR ? -ENOENT : -errno;
                else {
                        struct open_how how = {
                                .flags = (uint64_t)flags,
                                .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
                        };

                        fd = (int)syscall(SYS_openat2, root_fd, relative, &how, sizeof(how));
                        r = fd < 0 ? -errno : 0;
                        if (r == -ENOSYS ||
                            r == -EPERM) /* old kernels; seccomp filters say EPERM */
                                r = storage_local_open_walk(root_fd, relative, flags, &fd);
                }
        }
        if (fd < 0) {
                if (r == -EXDEV)
                        return error_set(error, r, "'%s' leads out of '%s'", path,
                                         root ? root : "/");
                if (r == -ENOENT && (flags & O_PATH))
                        return error_set(error, r, "'%s' does not exist", path);
                return error_set(error, r, "cannot open '%s': %s", path, strerror(-r));
        }
        if (fstat(fd, &st) < 0)
                return error_set(error, -errno, "cannot stat '%s': %s", path, strerror(errno));
        if (S_ISDIR(st.st_mode))
                return error_set(error, -EISDIR, "'%s' is a directory", path);
        if (!S_ISREG(st.st_mode))
                return error_set(error, -EINVAL, "'%s' is not a regular file", path);
        *ret_fd = TAKE_FD(fd);
        *ret_st = st;
        return 0;
}

int storage_local_read_file(const char *path, uint64_t max_bytes, Buf *out, Error *error) {
        return storage_local_read_beneath(/* root= */ NULL, path, max_bytes, out, error);
}

int storage_local_read_beneath(const char *root, const char *path, uint64_t max_bytes, Buf *out,
                               Error *error) {
        _cleanup_(closep) int fd = -1;
        struct stat st = { 0 };
        int r;

        /* O_NONBLOCK: a FIFO given as a manifest must not hold a thread-pool thread in open();
         * it is refused as no regular file. Regular files ignore the flag. */
        r = storage_local_open(root, path, O_RDONLY | O_NONBLOCK, &fd, &st, error);
        if (r < 0)
                return r;
        if ((uint64_t)st.st_size > max_bytes)
                return error_set(error, -EFBIG, "'%s' is %lld bytes, above the limit of %llu", path,
                                 (long long)st.st_size, (unsigned long long)max_bytes);
        buf_deinit(out);
        buf_init(out, max_bytes);
        for (;;) {
                ssize_t k;

                r = buf_reserve(out, 65536 < max_bytes - out->len ? 65536 : max_bytes - out->len);
                if (r < 0 && r != -E2BIG)
                        return r;
                if (out->cap - out->len <= 1) {
                        /* Full at max_bytes: a file that grew meanwhile is still too big. */
                        char probe;

                        k = read(fd, &probe, 1);
                        if (k > 0)
                                return error_set(error, -EFBIG,
                                                 "'%s' is above the limit of %llu bytes", path,
                                                 (unsigned long long)max_bytes);
                        break;
                }
                k = read(fd, out->data + out->len, out->cap - out->len - 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return error_set(error, -errno, "cannot read '%s': %s", path,
                                         strerror(errno));
                if (k == 0)
                        break;
                out->len += (size_t)k;
        }
        if (out->data)
                out->data[out->len] = 0;
        return 0;
}

static int storage_local_fsync_parent(const char *path) {
        _cleanup_(freep) char *copy = strdup(path);
        _cleanup_(closep) int fd = -1;

        if (!copy)
                return -ENOMEM;
        fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return fsync(fd) < 0 ? -errno : 0;
}

int storage_local_write_new_file(const char *path, const void *data, size_t len, Error *error) {
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
        r = storage_local_fsync_parent(path);
        if (r < 0)
                return error_set(error, r, "cannot fsync the directory of '%s': %s", path,
                                 strerror(-r));
        return 0;
}

int storage_local_delete_file(const char *path) {
        if (unlink(path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

int storage_local_file_size(const char *path, uint64_t *ret_size, Error *error) {
        return storage_local_size_beneath(/* root= */ NULL, path, ret_size, error);
}

int storage_local_size_beneath(const char *root, const char *path, uint64_t *ret_size,
                               Error *error) {
        _cleanup_(closep) int fd = -1;
        struct stat st = { 0 };
        int r;

        /* O_PATH: nothing is opened for reading, so not even a device notices the question. */
        r = storage_local_open(root, path, O_PATH, &fd, &st, error);
        if (r < 0)
                return r;
        *ret_size = (uint64_t)st.st_size;
        return 0;
}

int storage_local_read_tail(const char *root, const char *path, uint64_t max_tail_bytes,
                            uint64_t *ret_size, Buf *out, Error *error) {
        _cleanup_(closep) int fd = -1;
        uint64_t size, offset;
        size_t want, got = 0;
        struct stat st = { 0 };
        int r;

        assert(max_tail_bytes > 0);
        r = storage_local_open(root, path, O_RDONLY | O_NONBLOCK, &fd, &st, error);
        if (r == -ENOENT)
                return error_set(error, r, "'%s' does not exist", path); /* as a size says it */
        if (r < 0)
                return r;
        size = (uint64_t)st.st_size;
        offset = size > max_tail_bytes ? size - max_tail_bytes : 0;
        want = (size_t)(size - offset);
        buf_deinit(out);
        buf_init(out, want + 1);
        r = buf_reserve(out, want + 1);
        if (r < 0)
                return error_set(error, -ENOMEM, "out of memory");
        while (got < want) {
                ssize_t k = pread(fd, out->data + got, want - got, (off_t)(offset + got));

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return error_set(error, -errno, "cannot read '%s': %s", path,
                                         strerror(errno));
                if (k == 0)
                        /* Shorter than its size a moment ago: being rewritten; ask again later. */
                        return error_set(error, -EAGAIN, "'%s' changed while it was read", path);
                got += (size_t)k;
        }
        out->len = got;
        out->data[got] = 0;
        *ret_size = size;
        return 0;
}

static inline void closedirp(DIR **d) {
        if (*d)
                (void)closedir(*d);
}

static int storage_local_compare_names(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

int storage_local_list(const char *prefix, size_t max_names, char ***ret_names, size_t *ret_n,
                       bool *ret_truncated, Error *error) {
        _cleanup_(freep) char *dir_path = strdup(prefix);
        _cleanup_(closedirp) DIR *dir = NULL;
        char **names = NULL, *slash;
        const char *base;
        size_t n = 0, n_base;
        struct dirent *de;
        bool truncated = false;
        int r = 0;

        if (!dir_path)
                return -ENOMEM;
        slash = strrchr(dir_path, '/');
        if (!slash)
                return error_set(error, -EINVAL, "'%s' is not an absolute path", prefix);
        base = prefix + (slash - dir_path) + 1;
        n_base = strlen(base);
        slash[slash == dir_path ? 1 : 0] = 0;
        dir = opendir(dir_path);
        if (!dir)
                return error_set(error, -errno, "cannot list '%s': %s", dir_path, strerror(errno));
        while ((errno = 0, de = readdir(dir))) {
                struct stat st;
                char *full, **grown;

                if (strncmp(de->d_name, base, n_base) != 0 || strcmp(de->d_name, ".") == 0 ||
                    strcmp(de->d_name, "..") == 0)
                        continue;
                if (fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !S_ISREG(st.st_mode))
                        continue;
                if (asprintf(&full, "%s%s%s", dir_path, strcmp(dir_path, "/") == 0 ? "" : "/",
                             de->d_name) < 0) {
                        r = -ENOMEM;
                        break;
                }
                grown = reallocarray(names, n + 1, sizeof(*names));
                if (!grown) {
                        free(full);
                        r = -ENOMEM;
                        break;
                }
                names = grown;
                names[n++] = full;
        }
        if (r == 0 && errno != 0)
                r = error_set(error, -errno, "cannot list '%s': %s", dir_path, strerror(errno));
        if (r < 0) {
                for (size_t i = 0; i < n; i++)
                        free(names[i]);
                free(names);
                return r;
        }
        /* readdir has no order: sort, then keep the first max_names, as S3 would. */
        if (n > 1)
                qsort(names, n, sizeof(*names), storage_local_compare_names);
        while (n > max_names) {
                free(names[--n]);
                truncated = true;
        }
        *ret_names = names;
        *ret_n = n;
        *ret_truncated = truncated;
        return 0;
}
