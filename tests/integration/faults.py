# SPDX-License-Identifier: Apache-2.0
"""Client for the fault-injection control endpoint of the test REST catalog
(tests/peers/java/src/main/java/org/apache/iceberg/rest/FaultInjector.java, mounted by
LoopbackCatalogServer at /__faults).

    from faults import set_faults, get_faults, clear_faults
    set_faults(catalog["uri"], commit=["conflict"] * 3)        # next 3 commits get 409, then pass
    ...
    assert get_faults(catalog["uri"])["injected"]["conflict"] == 3

Queues: "commit" = POST /v1/namespaces/{ns}/tables/{t}, "load" = GET of the same path. Each matching
request (to `table`, if given, e.g. "ns.t") pops the next fault. Kinds: pass, conflict, error-500,
error-502, error-503, error-504, stale-400, lost-response, reset, reset-before, delay-<ms>.
set_faults REPLACES both queues and the table filter; counters survive unless reset_counters=True.
clear_faults empties queues and filter and zeroes counters. All three return the server's state:
{"commit": [...], "load": [...], "table": ..., "injected": {kind: n},
 "matched": {"commit": n, "load": n}, "events": [...]}.
Uses urllib only."""
import json
import urllib.error
import urllib.request

__all__ = ["set_faults", "get_faults", "clear_faults", "FaultControlError"]


class FaultControlError(RuntimeError):
    """The control endpoint refused a request (e.g. an unknown fault kind) or is absent."""


def _call(catalog_uri, method, body=None, timeout=30):
    url = catalog_uri.rstrip("/") + "/__faults"
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        raw = e.read().decode(errors="replace")
        raise FaultControlError(f"{method} {url}: HTTP {e.code}: {raw}") from None


def set_faults(catalog_uri, commit=(), load=(), table=None, reset_counters=False):
    """Replaces the fault queues (and the table filter); returns the new state."""
    body = {"commit": list(commit), "load": list(load), "table": table}
    if reset_counters:
        body["reset_counters"] = True
    return _call(catalog_uri, "POST", body)


def get_faults(catalog_uri):
    """Returns the remaining queues, the table filter and the counters."""
    return _call(catalog_uri, "GET")


def clear_faults(catalog_uri):
    """Empties both queues, drops the table filter and zeroes the counters."""
    return _call(catalog_uri, "DELETE")
