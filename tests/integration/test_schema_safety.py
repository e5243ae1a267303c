# SPDX-License-Identifier: Apache-2.0
"""Schema safety (issue 4 item 7): a staged manifest records the schema its files were written
with; when the table's schema changes between staging and committing (through Iceberg Java's
UpdateSchema on the real catalog), compatible changes commit and Java reads the rows with the
predicted _row_id, incompatible ones are refused with 422 schema-mismatch naming the fields and
leave the table unchanged."""
import json
import uuid

from conftest import peer


def metadata(uri, ns, name):
    return peer("metadata", "--uri", uri, "--table", f"{ns}.{name}")


def evolve(uri, ns, name, *ops):
    return peer("evolve", "--uri", uri, "--table", f"{ns}.{name}", "--ops", json.dumps(list(ops)))


def stage(uri, ns, name, start, rows):
    return peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", rows,
                "--start-id", start)


def new_table(uri):
    name = "s_" + uuid.uuid4().hex[:12]
    peer("create-table", "--uri", uri, "--table", f"ns.{name}", "--format-version", 3)
    return "ns", name


def test_compatible_changes_commit(catalog, daemon):
    uri = catalog["uri"]
    ns, name = new_table(uri)
    # Columns to promote later exist when the data is written (null in every row).
    evolve(uri, ns, name, ["add", "n", "int"], ["add", "f", "float"], ["add", "d", "decimal(9,2)"])
    changes = [
        ("new optional column", [["add", "extra", "string"]]),
        ("int to long", [["promote", "n", "long"]]),
        ("float to double", [["promote", "f", "double"]]),
        ("wider decimal precision", [["promote", "d", "decimal(12,2)"]]),
        # Last: the peer's stage writes the column by the name "data".
        ("rename", [["rename", "data", "payload"]]),
    ]
    expected = []           # (id, _row_id, _last_updated_sequence_number)
    next_row_id = 0
    for k, (what, ops) in enumerate(changes):
        staged = stage(uri, ns, name, 100 * k, 3)      # written with the schema before the change
        schema_id = evolve(uri, ns, name, *ops)["schema-id"]
        got, _, receipt = daemon.commit(ns, name, {"idempotency-key": f"c{k}", "staged-manifests": [staged["manifest"]]})
        assert got == 200, (what, receipt)
        assert receipt["manifests"][0]["first-row-id"] == next_row_id, what
        snap = peer("dump", "--uri", uri, "--table", f"{ns}.{name}", "--no-rows")["snapshots"][-1]
        assert snap["schema-id"] == schema_id, what
        expected += [(100 * k + i, next_row_id + i, k + 1) for i in range(3)]
        next_row_id += 3

    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    assert [(r["id"], r["_row_id"], r["_last_updated_sequence_number"]) for r in dump["rows"]] == expected
    # Read through the current schema: the renamed column keeps its values, the promoted and
    # added ones are null in these rows.
    assert all(r["payload"] == f"row-{r['id']}" and r["extra"] is None and r["n"] is None and r["f"] is None
               and r["d"] is None for r in dump["rows"])
    assert dump["next-row-id"] == 15


def refused(daemon, ns, name, key, manifest, *parts):
    got, _, answer = daemon.commit(ns, name, {"idempotency-key": key, "staged-manifests": [manifest]})
    assert got == 422, answer
    assert answer["error"]["type"] == "schema-mismatch", answer
    assert manifest in answer["error"]["message"]
    for part in parts:
        assert part in answer["error"]["message"], answer
    return answer["error"]["message"]


def test_incompatible_changes_are_refused(catalog, daemon):
    uri = catalog["uri"]
    ns, name = new_table(uri)
    staged = stage(uri, ns, name, 0, 3)     # written with {1: id long required, 2: data string}

    # A written field dropped.
    evolve(uri, ns, name, ["drop", "data"])
    before = metadata(uri, ns, name)
    message = refused(daemon, ns, name, "k1", staged["manifest"],
                      "1 field no longer maps: field 'data' (id 2) was dropped from the table schema")
    assert metadata(uri, ns, name) == before, "a refused request changed the table"

    # Its name reused under a new field id (3).
    evolve(uri, ns, name, ["add", "data", "string"])
    before = metadata(uri, ns, name)
    refused(daemon, ns, name, "k2", staged["manifest"], "2 fields no longer map",
            "field 'data' (id 2) was dropped from the table schema",
            "name 'data' now belongs to field id 3, the data wrote field id 2")
    assert metadata(uri, ns, name) == before, "a refused request changed the table"

    # A required field added without default (allowIncompatibleChanges).
    evolve(uri, ns, name, ["add-required", "must", "int"])
    before = metadata(uri, ns, name)
    refused(daemon, ns, name, "k3", staged["manifest"], "3 fields no longer map",
            "required field 'must' (id 4) is not in the data and has no initial-default")
    assert metadata(uri, ns, name) == before, "a refused request changed the table"

    # The table never got a snapshot; data staged against the current schema still commits.
    assert peer("dump", "--uri", uri, "--table", f"{ns}.{name}", "--no-rows")["snapshots"] == []
    assert "table's current schema" in message


def test_required_field_added_without_default_alone(catalog, daemon):
    uri = catalog["uri"]
    ns, name = new_table(uri)
    staged = stage(uri, ns, name, 0, 2)
    evolve(uri, ns, name, ["add-required", "must", "int"])
    before = metadata(uri, ns, name)
    refused(daemon, ns, name, "k1", staged["manifest"],
            "1 field no longer maps: required field 'must' (id 3) is not in the data and has no initial-default")
    assert metadata(uri, ns, name) == before
