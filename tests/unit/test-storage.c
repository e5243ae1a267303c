/* SPDX-License-Identifier: Apache-2.0 */
/* storage/local.c: location mapping, containment, bounded reads, no-replace writes. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "storage/storage.h"
#include "test.h"

TEST(locations_map_to_normalized_paths) {
        static const struct {
                const char *location, *path;
        } ok[] = {
                { "/wh/t/m.avro", "/wh/t/m.avro" },
                { "file:/wh/t/m.avro", "/wh/t/m.avro" },
                { "file:///wh//t/./m.avro", "/wh/t/m.avro" },
        };
        Error e;

        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                _cleanup_(freep) char *p = NULL;

                ASSERT_OK(storage_path_from_location(ok[i].location, &p, &e));
                ASSERT_STREQ(p, ok[i].path);
        }
        {
                char *p = NULL;

                ASSERT_EQ(storage_path_from_location("s3://bucket/t/m.avro", &p, &e), -EPROTONOSUPPORT);
                ASSERT_CONTAINS(e.message, "only local paths and file:// URIs");
                ASSERT_EQ(storage_path_from_location("relative/m.avro", &p, &e), -EINVAL);
                ASSERT_EQ(storage_path_from_location("/wh/t/../../etc/passwd", &p, &e), -EINVAL);
                ASSERT_EQ(storage_path_from_location("file://host/wh", &p, &e), -EINVAL);
                ASSERT_TRUE(p == NULL);
        }
}

TEST(containment) {
        ASSERT_TRUE(storage_location_is_within("/wh/t/metadata/m.avro", "/wh/t"));
        ASSERT_TRUE(storage_location_is_within("file:///wh/t/m.avro", "/wh/t/"));
        ASSERT_TRUE(!storage_location_is_within("/wh/t2/m.avro", "/wh/t"));
        ASSERT_TRUE(!storage_location_is_within("/wh/t", "/wh/t"));
        ASSERT_TRUE(!storage_location_is_within("/wh/t/../u/m.avro", "/wh/t"));
}

TEST(read_write_delete) {
        char dir[] = "/tmp/icecommit-test-storage-XXXXXX", path[128];
        _cleanup_(buf_deinitp) Buf b;
        Error e;

        ASSERT_TRUE(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/f.avro", dir);
        buf_init(&b, 100);
        ASSERT_OK(storage_write_new_file(path, "hello", 5, &e));
        ASSERT_EQ(storage_write_new_file(path, "again", 5, &e), -EEXIST);
        ASSERT_OK(storage_read_file(path, 100, &b, &e));
        ASSERT_EQ(b.len, 5);
        {
                uint64_t size = 0;

                ASSERT_OK(storage_file_size(path, &size, &e));
                ASSERT_EQ(size, 5);
                ASSERT_EQ(storage_file_size(dir, &size, &e), -EISDIR);
                ASSERT_CONTAINS(e.message, "is a directory");
        }
        ASSERT_TRUE(memcmp(b.data, "hello", 5) == 0);
        ASSERT_EQ(storage_read_file(path, 4, &b, &e), -EFBIG);
        ASSERT_CONTAINS(e.message, "above the limit");
        ASSERT_OK(storage_delete_file(path));
        ASSERT_OK(storage_delete_file(path));
        ASSERT_EQ(storage_read_file(path, 100, &b, &e), -ENOENT);
        ASSERT_CONTAINS(e.message, "cannot open");
        {
                uint64_t size;

                ASSERT_EQ(storage_file_size(path, &size, &e), -ENOENT);
                ASSERT_CONTAINS(e.message, "does not exist");
        }
        ASSERT_TRUE(rmdir(dir) == 0);
}
