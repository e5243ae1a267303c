/* SPDX-License-Identifier: Apache-2.0 */
/* The `data-files` of a commit request: data files a writer describes instead of writing a
 * manifest (REST DataFile names and forms, see proto/openapi.yaml). Pure: checks what needs no
 * table (shapes, types, signs, limits, duplicates); values typed by the table's schema stay
 * JSON until iceberg/data_file.c resolves them. */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "iceberg/data_file.h"
#include "util/error.h"

/* Parses the `data-files` array into *ret_files (n entries, owned by the caller; free with
 * data_files_free()). Returns 0, -EINVAL with "'data-files'[i]: ..." naming the rule, -E2BIG
 * above max_files, -ENAMETOOLONG for a file-path of more than max_path_bytes, -ENOMEM. */
int data_files_parse(const json_t *array, size_t max_files, size_t max_path_bytes,
                     DataFile **ret_files, size_t *ret_n, Error *e);
DataFile *data_files_free(DataFile *files, size_t n);
