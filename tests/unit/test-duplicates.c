/* SPDX-License-Identifier: Apache-2.0 */
/* commit/duplicates.c: one data file under several spellings is found, the earliest name first;
 * different files are not. */
#include <errno.h>
#include <string.h>

#include "commit/duplicates.h"
#include "util/cleanup.h"
#include "test.h"

TEST(one_file_under_several_spellings) {
        _cleanup_(duplicates_deinit) Duplicates d = { 0 };
        const DuplicatesRef *first, *again;
        size_t pos = 0, n = 0;

        ASSERT_OK(duplicates_add(&d, "/wh/t/data/a.parquet", 1, 0, 0));
        ASSERT_OK(duplicates_add(&d, "/wh/t/data/b.parquet", 1, 0, 1));
        ASSERT_OK(duplicates_add(&d, "file:///wh/t//data/./a.parquet", 2, 3, 4));
        ASSERT_OK(duplicates_add(&d, "s3://bkt/t/c.parquet", 0, 1, 0));
        ASSERT_OK(duplicates_add(&d, "s3a://bkt/t/c.parquet", 3, 0, 7));
        ASSERT_OK(duplicates_add(&d, "s3://bkt/t/C.parquet", 3, 0, 8));
        ASSERT_OK(duplicates_add(&d, "relative/x", 4, 0, 0));
        ASSERT_OK(duplicates_add(&d, "relative/x", 4, 0, 1));
        duplicates_sort(&d);
        while (duplicates_next(&d, &pos, &first, &again)) {
                n++;
                if (strcmp(first->canonical, "/wh/t/data/a.parquet") == 0) {
                        ASSERT_EQ(first->owner, 1);
                        ASSERT_EQ(again->owner, 2);
                        ASSERT_EQ(again->entry, 4);
                } else if (strcmp(first->canonical, "s3://bkt/t/c.parquet") == 0) {
                        ASSERT_EQ(first->owner, 0);
                        ASSERT_EQ(again->owner, 3);
                        ASSERT_EQ(again->entry, 7);
                } else {
                        ASSERT_STREQ(first->canonical, "relative/x");
                        ASSERT_EQ(first->entry, 0);
                        ASSERT_EQ(again->entry, 1);
                }
        }
        ASSERT_EQ(n, 3);
}

TEST(three_names_pair_each_with_the_first) {
        _cleanup_(duplicates_deinit) Duplicates d = { 0 };
        const DuplicatesRef *first, *again;
        size_t pos = 0, n = 0;

        for (size_t i = 0; i < 3; i++)
                ASSERT_OK(duplicates_add(&d, i == 1 ? "//w/x" : "/w/x", 2 - i, 0, i));
        duplicates_sort(&d);
        while (duplicates_next(&d, &pos, &first, &again)) {
                ASSERT_EQ(first->owner, 0);
                ASSERT_TRUE(again->owner > 0);
                n++;
        }
        ASSERT_EQ(n, 2);
        ASSERT_TRUE(!duplicates_next(&d, &pos, &first, &again));
}

TEST(empty) {
        Duplicates d = { 0 };
        const DuplicatesRef *first, *again;
        size_t pos = 0;

        duplicates_sort(&d);
        ASSERT_TRUE(!duplicates_next(&d, &pos, &first, &again));
        duplicates_deinit(&d);
}
