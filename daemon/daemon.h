/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon: owns the loop and every module, their start/stop order, signals and sd_notify.
 * Only main.c includes this header. */
#pragma once

#include "config/config.h"

/* Runs until SIGTERM/SIGINT; SIGHUP reloads config (in place: the options config_reload()
 * applies) and the tokens file. Returns 0 on a clean stop, -errno when startup failed. */
int daemon_run(Config *config);
