/* SPDX-License-Identifier: Apache-2.0 */
/* Iceberg's Hadoop-catalog layout, shared by the embedded catalog on local disks (filesystem.c)
 * and on a bucket (bucket.c): <table>/metadata/v<N>.metadata.json plus version-hint.text. Pure
 * naming rules; no I/O. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define HADOOP_LAYOUT_VERSION_HINT "version-hint.text"
#define HADOOP_LAYOUT_METADATA_SUFFIX ".metadata.json"

/* Whether a namespace level or table name can be a path segment: not "", ".", ".." and no '/'. */
bool hadoop_layout_name_is_valid(const char *name);
/* "v<N>.metadata.json" (or a path ending in it) -> N, as Java's VERSION_PATTERN plus
 * Integer.parseInt; -1 for anything else. */
int64_t hadoop_layout_version_from_name(const char *name);
/* "<table_dir>/metadata/v<version>.metadata.json", malloc'ed; NULL when out of memory. */
char *hadoop_layout_version_location(const char *table_dir, int64_t version);
/* The text of version-hint.text (trailing whitespace allowed) -> the version, or -1. */
int64_t hadoop_layout_hint_parse(const char *text, size_t len);
