/* SPDX-License-Identifier: Apache-2.0 */
/* Parquet footers (parquet-format's FileMetaData in the Thrift compact protocol), read from
 * untrusted bytes: the trailing "PAR1", the footer length, and what is cheap to cross-check
 * against a writer's description. Pure: no I/O, no allocation, bounds checked everywhere. */
#pragma once

#include <stdint.h>

#include "util/error.h"
#include "util/slice.h"

/* The last bytes of a file: its 4-byte little-endian footer length and the magic "PAR1". */
#define PARQUET_FOOTER_TRAILER_BYTES 8
/* Thrift nesting the reader follows (FileMetaData -> row_groups -> RowGroup -> columns ->
 * ColumnChunk -> ColumnMetaData -> Statistics is 7); deeper input is refused. */
#define PARQUET_FOOTER_MAX_DEPTH 32

enum {
        _PARQUET_FOOTER_E_SUCCESS,
        PARQUET_FOOTER_E_SHORT, /* the tail holds the trailer, not the whole footer:
                                 * read *ret_need bytes from the end, then again */
};

/* What a footer says (FileMetaData field ids in comments). */
typedef struct ParquetFooter {
        uint64_t footer_bytes;      /* the Thrift FileMetaData's length */
        int32_t version;            /* 1 version */
        int64_t num_rows;           /* 3 num_rows */
        uint64_t n_schema_elements; /* 2 schema: the flattened schema's length */
        uint64_t n_row_groups;      /* 4 row_groups */
        int64_t row_group_rows;     /* the sum of each RowGroup's 3 num_rows */
} ParquetFooter;

/* Parses the footer of a file of file_size bytes whose last tail.len bytes are tail (the whole
 * file when tail.len == file_size). Returns 0; PARQUET_FOOTER_E_SHORT with *ret_need (the tail
 * length that holds the footer, at most max_footer_bytes + 8) when the tail is too short;
 * -EFBIG when the footer is longer than max_footer_bytes; -EBADMSG with the reason when it is
 * not a Parquet file, its footer is malformed or encrypted, or its row counts disagree. */
int parquet_footer_parse(Slice tail, uint64_t file_size, uint64_t max_footer_bytes,
                         ParquetFooter *ret_footer, uint64_t *ret_need, Error *error);
