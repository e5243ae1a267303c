/* SPDX-License-Identifier: Apache-2.0 */
/* Field ids of manifest_entry and data_file (spec "Manifests"; Java's ManifestEntry and
 * DataFile), and the entry status values: one list for every reader and writer of manifests. */
#pragma once

enum {
        MANIFEST_FIELD_STATUS = 0,
        MANIFEST_FIELD_SNAPSHOT_ID = 1,
        MANIFEST_FIELD_DATA_FILE = 2,
        MANIFEST_FIELD_SEQUENCE_NUMBER = 3,
        MANIFEST_FIELD_FILE_SEQUENCE_NUMBER = 4,
        MANIFEST_FIELD_FILE_PATH = 100,
        MANIFEST_FIELD_FILE_FORMAT = 101,
        MANIFEST_FIELD_PARTITION = 102,
        MANIFEST_FIELD_RECORD_COUNT = 103,
        MANIFEST_FIELD_FILE_SIZE = 104,
        MANIFEST_FIELD_COLUMN_SIZES = 108,
        MANIFEST_FIELD_VALUE_COUNTS = 109,
        MANIFEST_FIELD_NULL_VALUE_COUNTS = 110,
        MANIFEST_FIELD_LOWER_BOUNDS = 125,
        MANIFEST_FIELD_UPPER_BOUNDS = 128,
        MANIFEST_FIELD_SPLIT_OFFSETS = 132,
        MANIFEST_FIELD_CONTENT = 134,
        MANIFEST_FIELD_EQUALITY_IDS = 135,
        MANIFEST_FIELD_NAN_VALUE_COUNTS = 137,
        MANIFEST_FIELD_SORT_ORDER_ID = 140,
        MANIFEST_FIELD_FIRST_ROW_ID = 142,
};

/* manifest_entry.status */
enum {
        MANIFEST_ENTRY_EXISTING = 0,
        MANIFEST_ENTRY_ADDED = 1,
        MANIFEST_ENTRY_DELETED = 2,
};
