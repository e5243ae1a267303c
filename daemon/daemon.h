/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon: owns the loop and every module, their start/stop order, signals and sd_notify.
 * Only main.c includes this header. */
#pragma once

#include "config/config.h"

/* Runs until SIGTERM/SIGINT. Returns 0 on a clean stop, -errno when startup failed. */
int daemon_run(const Config *config);
