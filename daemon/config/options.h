/* SPDX-License-Identifier: Apache-2.0 */
/* The option table behind Config (internal to config/ and its tests). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

typedef enum OptionKind {
        OPTION_KIND_STRING,
        OPTION_KIND_BOOL,
        OPTION_KIND_U32,
        OPTION_KIND_U64,
        OPTION_KIND_LOG_LEVEL,
        OPTION_KIND_POLICY, /* "reject" (false) or "allow" (true), stored as bool */
} OptionKind;

typedef struct ConfigOption {
        const char *section;
        const char *key;
        OptionKind kind;
        size_t offset; /* into Config */
        uint64_t default_number;
        const char *default_string;
        uint64_t min;
        uint64_t max;
} ConfigOption;

extern const ConfigOption config_options[];
extern const size_t config_n_options;

/* Returns the option for section+key, or NULL when there is none. */
const ConfigOption *config_option_find(const char *section, const char *key);
